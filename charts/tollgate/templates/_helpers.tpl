{{/* Chart name. */}}
{{/* OTEL_* variables as a dict (empty while tracing.endpoint is empty), without the service name. */}}
{{- define "tollgate.otelVars" -}}
{{- $vars := dict -}}
{{- with .Values.tracing -}}
{{- if .endpoint -}}
{{- $_ := set $vars "OTEL_EXPORTER_OTLP_ENDPOINT" .endpoint -}}
{{- $_ := set $vars "OTEL_EXPORTER_OTLP_PROTOCOL" .protocol -}}
{{- $_ := set $vars "OTEL_TRACES_SAMPLER" .sampler -}}
{{- if .samplerArg }}{{- $_ := set $vars "OTEL_TRACES_SAMPLER_ARG" (toString .samplerArg) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $vars -}}
{{- end -}}

{{/* Container env entries of the OTEL_* variables for one component (`name`: OTEL_SERVICE_NAME). */}}
{{- define "tollgate.otelEnv" -}}
{{- $vars := include "tollgate.otelVars" .root | fromJson -}}
{{- if $vars -}}
- name: OTEL_SERVICE_NAME
  value: {{ .name | quote }}
{{- range $k, $v := $vars }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource name prefix: fullnameOverride, or the release name (+ "-tollgate" unless contained). */}}
{{- define "tollgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Common labels; pass (dict "ctx" $ "component" "service"). */}}
{{- define "tollgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tollgate.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/component: {{ .component }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels; pass (dict "ctx" $ "component" "service"). */}}
{{- define "tollgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Image reference; pass (dict "image" .Values.x.image "ctx" $). */}}
{{- define "tollgate.image" -}}
{{- printf "%s:%s" .image.repository (default .ctx.Chart.AppVersion .image.tag) }}
{{- end }}

{{/* Names shared by templates, the operator's environment and its RBAC resourceNames. */}}
{{- define "tollgate.secretsName" -}}
{{- default (printf "%s-secrets" (include "tollgate.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}
{{- define "tollgate.operatorName" -}}
{{- printf "%s-operator" (include "tollgate.fullname" .) }}
{{- end }}
{{- define "tollgate.webhookConfigurationName" -}}
{{- printf "%s-sidecar-injector" (include "tollgate.fullname" .) }}
{{- end }}
{{- define "tollgate.policyValidatorName" -}}
{{- printf "%s-policy-validator" (include "tollgate.fullname" .) }}
{{- end }}
{{- define "tollgate.webhookTlsSecretName" -}}
{{- printf "%s-webhook-tls" (include "tollgate.fullname" .) }}
{{- end }}
{{- define "tollgate.serviceUrl" -}}
{{- printf "http://%s.%s.svc:%d" (include "tollgate.fullname" .) .Release.Namespace (int .Values.service.port) }}
{{- end }}

{{/*
  ServiceAccount name of a component; pass (dict "sa" .Values.x.serviceAccount "default" "<name>"):
  serviceAccount.name, else the component's name when the chart creates it, else "default".
*/}}
{{- define "tollgate.serviceAccountName" -}}
{{- if .sa.create -}}
{{- default .default .sa.name -}}
{{- else -}}
{{- default "default" .sa.name -}}
{{- end -}}
{{- end -}}
{{- define "tollgate.serviceServiceAccountName" -}}
{{- include "tollgate.serviceAccountName" (dict "sa" .Values.service.serviceAccount "default" (include "tollgate.fullname" .)) -}}
{{- end -}}
{{- define "tollgate.operatorServiceAccountName" -}}
{{- include "tollgate.serviceAccountName" (dict "sa" .Values.operator.serviceAccount "default" (include "tollgate.operatorName" .)) -}}
{{- end -}}

{{/*
  Pod template labels: the selector labels plus podLabels (the selector labels win on a clash, so
  the Deployment keeps selecting its pods); pass (dict "ctx" $ "component" "service" "podLabels" map).
*/}}
{{- define "tollgate.podLabels" -}}
{{- $selector := include "tollgate.selectorLabels" (dict "ctx" .ctx "component" .component) | fromYaml }}
{{- toYaml (merge $selector (.podLabels | default dict)) }}
{{- end -}}

{{/*
  Pod scheduling fields shared by the Deployments: priorityClassName, topologySpreadConstraints (a
  constraint without labelSelector gets the component's selector labels), nodeSelector,
  tolerations, affinity; pass (dict "ctx" $ "component" "service" "values" .Values.service).
*/}}
{{- define "tollgate.podScheduling" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if .values.topologySpreadConstraints }}
{{- $selector := include "tollgate.selectorLabels" (dict "ctx" .ctx "component" .component) | fromYaml }}
topologySpreadConstraints:
{{- range .values.topologySpreadConstraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
  - {{ toYaml $c | nindent 4 | trim }}
{{- end }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
  Base URL of approval and verification links: service.publicUrl, else the first Ingress host
  (https when a tls entry lists it), else empty (the service then uses http://localhost:PORT).
*/}}
{{- define "tollgate.publicUrl" -}}
{{- if .Values.service.publicUrl -}}
{{- .Values.service.publicUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- $host := (first .Values.ingress.hosts).host -}}
{{- $tls := false -}}
{{- range .Values.ingress.tls -}}
{{- if has $host (.hosts | default list) -}}{{- $tls = true -}}{{- end -}}
{{- end -}}
{{- if not (hasPrefix "*" $host) -}}
{{- printf "%s://%s" (ternary "https" "http" $tls) $host -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Fails the render on combinations the schema cannot express. */}}
{{- define "tollgate.validate" -}}
{{- if and (not .Values.database.existingSecret) (gt (int .Values.service.replicas) 1) }}
{{- fail "service.replicas > 1 needs an external PostgreSQL: set database.existingSecret (embedded PGlite is single-replica, development only)" }}
{{- end }}
{{- if ge (int .Values.operator.leaderElection.renewDeadlineSeconds) (int .Values.operator.leaderElection.leaseDurationSeconds) }}
{{- fail "operator.leaderElection.renewDeadlineSeconds must be less than leaseDurationSeconds" }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.ingress.hosts) }}
{{- fail "ingress.enabled needs at least one entry in ingress.hosts" }}
{{- end }}
{{- with .Values.sidecar.ports }}
{{- if or (eq (int .grpc) (int .http)) (eq (int .grpc) (int .metrics)) (eq (int .http) (int .metrics)) }}
{{- fail "sidecar.ports.grpc, sidecar.ports.http and sidecar.ports.metrics must differ (the sidecar listens on all three in one pod)" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Service container resources: service.resources when set, else by database mode. */}}
{{- define "tollgate.serviceResources" -}}
{{- if .Values.service.resources -}}
{{- toYaml .Values.service.resources -}}
{{- else if .Values.database.existingSecret -}}
{{- toYaml .Values.service.resourcesByDatabase.postgres -}}
{{- else -}}
{{- toYaml .Values.service.resourcesByDatabase.embedded -}}
{{- end -}}
{{- end -}}

{{/* Sidecar injection mode: auto is native on Kubernetes >= 1.29 (SidecarContainers on by default), else container. */}}
{{- define "tollgate.sidecarMode" -}}
{{- if eq .Values.sidecar.mode "auto" -}}
{{- if semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version -}}native{{- else -}}container{{- end -}}
{{- else -}}
{{- .Values.sidecar.mode -}}
{{- end -}}
{{- end -}}
