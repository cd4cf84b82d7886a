{{/* The Lease of leader election; the operator names it so (src/operator.ts, LEASE_NAME). */}}
{{- define "exoledge.lease" -}}
exoledge-operator.edge.exoledge.io
{{- end -}}

{{- define "exoledge.labels" -}}
app.kubernetes.io/name: exoledge
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "exoledge.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The operator's ServiceAccount as a binding subject. */}}
{{- define "exoledge.subject" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The Valkey URL deciders are given: valkey.url, else the chart's own, else none. */}}
{{- define "exoledge.valkeyUrl" -}}
{{- if .Values.valkey.url -}}
{{ .Values.valkey.url }}
{{- else if .Values.valkey.deploy -}}
redis://exoledge-valkey.{{ .Release.Namespace }}.svc.cluster.local:6379
{{- end -}}
{{- end -}}
