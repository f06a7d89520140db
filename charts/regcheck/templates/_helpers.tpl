{{/*
The prefix of every name: the release's name when it holds "regcheck"
(helm install regcheck … gives the names deploy/ has), else
RELEASE-regcheck; fullnameOverride replaces it.
*/}}
{{- define "regcheck.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The history ConfigMap's name. */}}
{{- define "regcheck.history" -}}
{{- .Values.history.configMap | default (printf "%s-history" (include "regcheck.fullname" .)) -}}
{{- end -}}

{{/* The Lease the watcher's replicas elect a leader on. */}}
{{- define "regcheck.lease" -}}
{{- printf "%s-watch" (include "regcheck.fullname" .) -}}
{{- end -}}

{{/* Labels of every object: kustomize's deploy/ adds part-of too. */}}
{{- define "regcheck.labels" -}}
app.kubernetes.io/part-of: regcheck
{{- end -}}

{{/* The labels that select one component's pods; dict "component" C. */}}
{{- define "regcheck.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
regcheck's image: REPOSITORY@DIGEST (with :TAG before it when both are
set), REPOSITORY:TAG with a tag alone; neither is an error.
*/}}
{{- define "regcheck.image" -}}
{{- $i := .Values.image -}}
{{- if $i.digest -}}
{{- $i.repository }}{{ with $i.tag }}:{{ . }}{{ end }}@{{ $i.digest -}}
{{- else if $i.tag -}}
{{- $i.repository }}:{{ $i.tag -}}
{{- else -}}
{{- fail "set image.digest (sha256:…, as `make image` prints it), or image.tag" -}}
{{- end -}}
{{- end -}}

{{/* Which namespaces regcheck reads: -A, or -n NAMESPACE; as YAML list items. */}}
{{- define "regcheck.scope" -}}
{{- if .Values.namespace }}
- -n
- {{ .Values.namespace | quote }}
{{- else }}
- -A
{{- end }}
{{- end -}}

{{/* The pod's securityContext: the image's non-root user. */}}
{{- define "regcheck.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Each container's securityContext. */}}
{{- define "regcheck.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
The flags and mounts of the registry side (scan and watch): the CA
bundle (--ca-file) and the kubelet's credential providers. "args" and
"mounts" and "volumes" render each list's items.
*/}}
{{- define "regcheck.registryArgs" -}}
{{- with .Values.caBundle }}{{ if or .configMap .secret }}
- --ca-file
- /etc/regcheck/ca/{{ .key }}
{{- end }}{{ end }}
{{- with .Values.credentialProvider }}{{ if .enabled }}
- --image-credential-provider-config
- {{ .config | quote }}
- --image-credential-provider-bin-dir
- {{ .binDir | quote }}
{{- end }}{{ end }}
{{- end -}}

{{- define "regcheck.registryMounts" -}}
{{- with .Values.caBundle }}{{ if or .configMap .secret }}
- name: ca-bundle
  mountPath: /etc/regcheck/ca
  readOnly: true
{{- end }}{{ end }}
{{- with .Values.credentialProvider }}{{ if .enabled }}
- name: credential-provider-config
  mountPath: {{ .config | quote }}
  readOnly: true
- name: credential-provider-bin
  mountPath: {{ .binDir | quote }}
  readOnly: true
{{- end }}{{ end }}
{{- end -}}

{{- define "regcheck.registryVolumes" -}}
{{- with .Values.caBundle }}
{{- if .configMap }}
- name: ca-bundle
  configMap:
    name: {{ .configMap | quote }}
{{- else if .secret }}
- name: ca-bundle
  secret:
    secretName: {{ .secret | quote }}
{{- end }}
{{- end }}
{{- with .Values.credentialProvider }}{{ if .enabled }}
- name: credential-provider-config
  hostPath:
    path: {{ .config | quote }}
- name: credential-provider-bin
  hostPath:
    path: {{ .binDir | quote }}
    type: Directory
{{- end }}{{ end }}
{{- end -}}

{{/*
A container's env: GOMEMLIMIT when .gomemlimit is set, then .env; as
YAML list items.
*/}}
{{- define "regcheck.env" -}}
{{- if .gomemlimit }}
- name: GOMEMLIMIT
  value: {{ .gomemlimit | quote }}
{{- end }}
{{- with .env }}
{{ toYaml . }}
{{- end }}
{{- end -}}
