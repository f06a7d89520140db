{{- define "common.images.image" -}}
{{- printf "%s/%s:%s" .imageRoot.registry .imageRoot.repository .imageRoot.tag -}}
{{- end -}}
