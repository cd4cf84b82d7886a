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

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest is set (the
digest pins the image, the tag is then ignored), else repository:tag, the tag defaulting to the
chart's appVersion. A digest must be sha256: and 64 lowercase hex digits.
*/}}
{{- define "gitops-reverser.imageRef" -}}
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

{{- define "gitops-reverser.image" -}}
{{ include "gitops-reverser.imageRef" (list .Values.image .Chart) }}
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
