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

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest is set (the
digest pins the image, the tag is then ignored), else repository:tag, the tag defaulting to the
chart's appVersion. A digest must be sha256: and 64 lowercase hex digits.
*/}}
{{- define "terdut.imageRef" -}}
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

{{- define "terdut.image" -}}
{{ include "terdut.imageRef" (list .Values.image .Chart) }}
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
