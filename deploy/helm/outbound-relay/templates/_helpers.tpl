{{/* The chart's names and labels, as `helm create` makes them. */}}
{{- define "outbound-relay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "outbound-relay.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "outbound-relay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "outbound-relay.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "outbound-relay.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "outbound-relay.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding the admin token: the user's, or the chart's own. */}}
{{- define "outbound-relay.adminSecret" -}}
{{- default (include "outbound-relay.fullname" .) .Values.adminToken.existingSecret }}
{{- end }}

{{- define "outbound-relay.replicas" -}}
{{- if eq .Values.mode "fleet" }}{{ .Values.replicas }}{{ else }}1{{ end }}
{{- end }}

{{/* Checks that fail the render with a reason rather than make a relay that cannot start. */}}
{{- define "outbound-relay.validate" -}}
{{- if not (has .Values.mode (list "single" "fleet")) }}
{{- fail (printf "mode: %q is not single or fleet" .Values.mode) }}
{{- end }}
{{- if eq .Values.mode "fleet" }}
{{- if and (not .Values.redis.url) (not .Values.redis.existingSecret) }}
{{- fail "mode fleet needs redis.url or redis.existingSecret (the fleet's shared spool)" }}
{{- end }}
{{- if lt (int .Values.replicas) 1 }}
{{- fail "replicas must be at least 1" }}
{{- end }}
{{- else if or .Values.redis.url .Values.redis.existingSecret }}
{{- fail "redis.url and redis.existingSecret are for mode fleet (single keeps its spool on its volume)" }}
{{- end }}
{{- range $k, $_ := .Values.settings }}
{{- if has $k (list "listen" "data_dir" "spool" "admin_token" "metrics_token" "sources") }}
{{- fail (printf "settings.%s is the chart's (see values.yaml)" $k) }}
{{- end }}
{{- end }}
{{- end }}
