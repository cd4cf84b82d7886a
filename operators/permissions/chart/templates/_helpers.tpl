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

{{- define "permissions.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
