{{/* The Lease of leader election; the operator names it so (src/operator.ts, LEASE_NAME). */}}
{{- define "terdut.lease" -}}
terdut-operator.terdut.ryuvia.com
{{- end -}}

{{/* The five CRDs of chart/crds/, by name. */}}
{{- define "terdut.crdNames" -}}
terdutservers.terdut.ryuvia.com terdutteams.terdut.ryuvia.com terdutescalationrules.terdut.ryuvia.com terdutdeadmanswitches.terdut.ryuvia.com terdutalertsources.terdut.ryuvia.com
{{- end -}}

{{/*
The chart's labels. Never app.kubernetes.io/managed-by=terdut-operator: that label marks the
objects the operator makes itself, and its caches select on it.
*/}}
{{- define "terdut.labels" -}}
app.kubernetes.io/name: terdut-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "terdut.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The operator's ServiceAccount as a binding subject. */}}
{{- define "terdut.subject" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The namespace of the TerdutServer from values. */}}
{{- define "terdut.serverNamespace" -}}
{{ .Values.server.namespace | default .Release.Namespace }}
{{- end -}}
