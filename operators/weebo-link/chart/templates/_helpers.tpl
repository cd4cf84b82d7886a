{{/* The plural Kubernetes derives for a CRD kind, as the controller's pluralOf(). */}}
{{- define "weebo-link.plural" -}}
{{- $k := lower . -}}
{{- if or (hasSuffix "s" $k) (hasSuffix "x" $k) (hasSuffix "z" $k) (hasSuffix "ch" $k) (hasSuffix "sh" $k) -}}
{{ $k }}es
{{- else if regexMatch "[^aeiou]y$" $k -}}
{{ trimSuffix "y" $k }}ies
{{- else -}}
{{ $k }}s
{{- end -}}
{{- end -}}

{{- define "weebo-link.group" -}}
{{- if contains "/" . }}{{ (split "/" .)._0 }}{{ end -}}
{{- end -}}

{{- define "weebo-link.resource" -}}
{{- if .resource }}{{ .resource }}{{ else }}{{ include "weebo-link.plural" .kind }}{{ end -}}
{{- end -}}

{{- define "weebo-link.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ .Values.serviceAccount.name }}
{{- end -}}

{{- define "weebo-link.labels" -}}
app.kubernetes.io/name: weebo-link
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "weebo-link.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
