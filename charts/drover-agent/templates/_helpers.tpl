{{/*
The image of drover's pod: repository:tag, the tag defaulting to the chart's appVersion (the
release's version); with a digest, repository@digest, or repository:tag@digest when a tag is given.
*/}}
{{- define "drover.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}{{ with .Values.image.tag }}:{{ . }}{{ end }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
A map of resource names to quantities as a flag of `drover agent` takes it: name=quantity,...
in the names' order.
*/}}
{{- define "drover.resourceList" -}}
{{- $items := list -}}
{{- range $name, $q := . -}}
{{- $items = append $items (printf "%s=%v" $name $q) -}}
{{- end -}}
{{- join "," $items -}}
{{- end -}}
