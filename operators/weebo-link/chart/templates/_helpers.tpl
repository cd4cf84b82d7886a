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

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest is set (the
digest pins the image, the tag is then ignored), else repository:tag, the tag defaulting to the
chart's appVersion. A digest must be sha256: and 64 lowercase hex digits.
*/}}
{{- define "weebo-link.imageRef" -}}
{{- $img := index . 0 -}}
{{- $chart := index . 1 -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" (toString $img.digest)) -}}
{{- fail (printf "image digest %q of %s is malformed: expected sha256: followed by 64 lowercase hex digits" (toString $img.digest) $img.repository) -}}
{{- end -}}
{{ $img.repository }}@{{ $img.digest }}
{{- else -}}
{{ $img.repository }}:{{ $img.tag | default $chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "weebo-link.image" -}}
{{ include "weebo-link.imageRef" (list .Values.image .Chart) }}
{{- end -}}

{{/*
The install order of RFC 0002 (Ce qui est installé): wave 0 the rules ConfigMap, the
ServiceAccount, the RBAC and the admission policies; wave 1 the Deployment. Argo CD applies
a wave only once the previous one is healthy (argocd.argoproj.io/sync-wave). Plain Helm
ignores the annotation and installs everything of a release at once, sorted by kind: the
ConfigMap, ServiceAccount and RBAC before the Deployment, the policies (kinds Helm does
not rank) after it, seconds apart. They are not turned into hooks to force the order:
hooks are not part of the release (not upgraded, not diffed, not deleted with it), and the
policies must follow the rules on every upgrade. The only hook is the helm test pod, whose
helm.sh/hook-weight puts it after the Deployment (Argo CD reads that weight as a wave).
*/}}
{{- define "weebo-link.wave" -}}
argocd.argoproj.io/sync-wave: {{ . | quote }}
{{- end -}}
