{{/* The chart's name, or nameOverride. */}}
{{- define "seckill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: RELEASE-seckill, or fullnameOverride. */}}
{{- define "seckill.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "seckill.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "seckill.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "seckill.labels" -}}
app.kubernetes.io/name: {{ include "seckill.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component (api, worker, nginx): call with (list . "api"). */}}
{{- define "seckill.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "seckill.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "seckill.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Where the secret files are mounted. */}}
{{- define "seckill.secretsDir" -}}/var/run/secrets/seckill{{- end -}}

{{/*
The environment both binaries share: Redis, MySQL and the secrets as files
(<NAME>_FILE), then the values' env. Every name is one of docs/configuration.md.
*/}}
{{- define "seckill.env" -}}
{{- $r := .Values.redis -}}
- name: SECKILL_REDIS_ADDR
  value: {{ join "," $r.addrs | quote }}
{{- if eq $r.mode "cluster" }}
- name: SECKILL_REDIS_CLUSTER
  value: "true"
{{- else if eq $r.mode "sentinel" }}
- name: SECKILL_REDIS_MASTER_NAME
  value: {{ required "redis.masterName is required with redis.mode sentinel" $r.masterName | quote }}
{{- else if ne $r.mode "single" }}
{{- fail "redis.mode must be single, sentinel or cluster" }}
{{- end }}
- name: SECKILL_MYSQL_DSN_FILE
  value: {{ include "seckill.secretsDir" . }}/{{ .Values.secrets.mysqlDSNKey }}
- name: SECKILL_JWT_SECRET_FILE
  value: {{ include "seckill.secretsDir" . }}/{{ .Values.secrets.jwtSecretKey }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* The volume of the secret files, and /tmp (the root file system is read-only). */}}
{{- define "seckill.volumes" -}}
- name: secrets
  secret:
    secretName: {{ .Values.secrets.name }}
    defaultMode: 0440
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "seckill.volumeMounts" -}}
- name: secrets
  mountPath: {{ include "seckill.secretsDir" . }}
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* The image's user (distroless nonroot), no privilege, nothing written but /tmp. */}}
{{- define "seckill.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "seckill.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
