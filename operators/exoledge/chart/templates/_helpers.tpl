{{/* The Lease of leader election; the operator names it so (src/operator.ts, LEASE_NAME). */}}
{{- define "exoledge.lease" -}}
exoledge-operator.edge.exoledge.io
{{- end -}}

{{- define "exoledge.labels" -}}
app.kubernetes.io/name: exoledge
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest is set (the
digest pins the image, the tag is then ignored), else repository:tag, the tag defaulting to the
chart's appVersion. A digest must be sha256: and 64 lowercase hex digits.
*/}}
{{- define "exoledge.imageRef" -}}
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

{{- define "exoledge.image" -}}
{{ include "exoledge.imageRef" (list .Values.image .Chart) }}
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
