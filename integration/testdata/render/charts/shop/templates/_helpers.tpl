{{- define "shop.name" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end -}}
