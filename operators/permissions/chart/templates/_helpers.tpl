{{/* The Lease of leader election; the operator names it so (src/operator.ts, LEASE_NAME). */}}
{{- define "permissions.lease" -}}
stp-controller.permissions.shturval.tech
{{- end -}}

{{/* The five CRDs of chart/crds/, by name. */}}
{{- define "permissions.crdNames" -}}
permissions.permissions.shturval.tech scopes.permissions.shturval.tech userroles.permissions.shturval.tech grouproles.permissions.shturval.tech tenants.permissions.shturval.tech
{{- end -}}

{{/*
The chart's labels. Never app.kubernetes.io/managed-by=permissions.shturval.tech: that label
marks the objects the operator writes itself.
*/}}
{{- define "permissions.labels" -}}
app.kubernetes.io/name: stp-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* What the Services select: every replica (each serves /bundle and the webhooks). */}}
{{- define "permissions.selector" -}}
app.kubernetes.io/name: stp-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest is set (the
digest pins the image, the tag is then ignored), else repository:tag, the tag defaulting to the
chart's appVersion. A digest must be sha256: and 64 lowercase hex digits.
*/}}
{{- define "permissions.imageRef" -}}
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

{{- define "permissions.image" -}}
{{ include "permissions.imageRef" (list .Values.image .Chart) }}
{{- end -}}

{{/* The operator's ServiceAccount as a binding subject. */}}
{{- define "permissions.subject" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The webhooks' Service, and the names its certificate is valid for. */}}
{{- define "permissions.webhookService" -}}
stp-controller-webhook
{{- end -}}

{{- define "permissions.webhookSecret" -}}
stp-controller-webhook-tls
{{- end -}}

{{- define "permissions.webhookDnsNames" -}}
{{- $svc := include "permissions.webhookService" . -}}
{{ $svc }} {{ $svc }}.{{ .Release.Namespace }} {{ $svc }}.{{ .Release.Namespace }}.svc {{ $svc }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end -}}

{{/* Where the Deployment mounts the webhook Secret (--webhook-cert-dir). */}}
{{- define "permissions.webhookCertDir" -}}
/var/run/stp-controller/webhook-certs
{{- end -}}
