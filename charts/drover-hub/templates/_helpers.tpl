{{/*
The image of drover's pod: repository@digest when a digest is given, else repository:tag, the
tag defaulting to the chart's appVersion (the release's version).
*/}}
{{- define "drover.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}
