{{/* The Lease of leader election; the operator names it so (src/operator.ts, LEASE_NAME). */}}
{{- define "gitops-reverser.lease" -}}
gitops-reverser.configbutler.ai
{{- end -}}

{{/* The six CRDs of chart/crds/, by name. */}}
{{- define "gitops-reverser.crdNames" -}}
clusterproviders.configbutler.ai gitproviders.configbutler.ai gittargets.configbutler.ai watchrules.configbutler.ai clusterwatchrules.configbutler.ai commitrequests.configbutler.ai
{{- end -}}

{{- define "gitops-reverser.labels" -}}
app.kubernetes.io/name: gitops-reverser
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "gitops-reverser.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The operator's ServiceAccount as a binding subject. */}}
{{- define "gitops-reverser.subject" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/*
The default ClusterProvider's spec.accessFrom: the value as given, or, when empty,
`selector: {}` (every namespace). The default lives here rather than in values.yaml because
helm merges a user's map into the default one: a user's `names: [team-a]` would otherwise
keep `selector: {}` beside it, and still admit every namespace.
*/}}
{{- define "gitops-reverser.accessFrom" -}}
{{- toYaml (.Values.clusterProvider.accessFrom | default (dict "selector" (dict))) }}
{{- end -}}
