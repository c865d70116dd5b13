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

{{/*
The files the binaries read, one per line: the variable that names the file, the
volume it is mounted from and its key in that volume's Secret. Every secret comes as
a file (<NAME>_FILE), and so do the TLS authorities, certificate and key. A volume is
"secrets" (the Secret secrets.name, made by the chart with secrets.create), "redis-tls"
(redis.tls.secretName) or "mysql-tls" (mysql.tls.secretName).
*/}}
{{- define "seckill.files" -}}
{{- $r := .Values.redis -}}
- {env: SECKILL_JWT_SECRET_FILE, volume: secrets, key: {{ required "secrets.jwtSecretKey is required" .Values.secrets.jwtSecretKey | quote }}}
- {env: SECKILL_MYSQL_DSN_FILE, volume: secrets, key: {{ required "secrets.mysqlDSNKey is required" .Values.secrets.mysqlDSNKey | quote }}}
{{- if $r.passwordKey }}
- {env: SECKILL_REDIS_PASSWORD_FILE, volume: secrets, key: {{ $r.passwordKey | quote }}}
{{- end }}
{{- if $r.sentinel.passwordKey }}
{{- if ne $r.mode "sentinel" }}
{{- fail "redis.sentinel.passwordKey is for redis.mode sentinel" }}
{{- end }}
- {env: SECKILL_REDIS_SENTINEL_PASSWORD_FILE, volume: secrets, key: {{ $r.sentinel.passwordKey | quote }}}
{{- end }}
{{- $tls := ternary "redis-tls" "secrets" (ne $r.tls.secretName "") }}
{{- if and (or $r.tls.caKey $r.tls.certKey $r.tls.keyKey $r.tls.serverName) (not $r.tls.enabled) }}
{{- fail "redis.tls files or serverName are set but redis.tls.enabled is not true: the binaries refuse that (a forgotten switch must not send the password in clear)" }}
{{- end }}
{{- if ne (empty $r.tls.certKey) (empty $r.tls.keyKey) }}
{{- fail "redis.tls.certKey and redis.tls.keyKey go together: set both (client certificates) or neither" }}
{{- end }}
{{- if $r.tls.caKey }}
- {env: SECKILL_REDIS_TLS_CA_FILE, volume: {{ $tls }}, key: {{ $r.tls.caKey | quote }}}
{{- end }}
{{- if $r.tls.certKey }}
- {env: SECKILL_REDIS_TLS_CERT_FILE, volume: {{ $tls }}, key: {{ $r.tls.certKey | quote }}}
- {env: SECKILL_REDIS_TLS_KEY_FILE, volume: {{ $tls }}, key: {{ $r.tls.keyKey | quote }}}
{{- end }}
{{- if .Values.mysql.tls.caKey }}
- {env: SECKILL_MYSQL_TLS_CA_FILE, volume: {{ ternary "mysql-tls" "secrets" (ne .Values.mysql.tls.secretName "") }}, key: {{ .Values.mysql.tls.caKey | quote }}}
{{- end }}
{{- end -}}

{{/* Where each volume of files is mounted, and which Secret it is. */}}
{{- define "seckill.fileVolumes" -}}
secrets: {dir: /var/run/secrets/seckill, secret: {{ required "secrets.name is required" .Values.secrets.name | quote }}}
redis-tls: {dir: /var/run/secrets/seckill-redis-tls, secret: {{ .Values.redis.tls.secretName | quote }}}
mysql-tls: {dir: /var/run/secrets/seckill-mysql-tls, secret: {{ .Values.mysql.tls.secretName | quote }}}
{{- end -}}

{{/* The keys each volume holds, without repeats: {volume: [key, ...]}. */}}
{{- define "seckill.fileKeys" -}}
{{- $keys := dict -}}
{{- range include "seckill.files" . | fromYamlArray -}}
{{- $have := get $keys .volume | default list -}}
{{- if not (has .key $have) -}}
{{- $_ := set $keys .volume (append $have .key) -}}
{{- end -}}
{{- end -}}
{{- toYaml $keys -}}
{{- end -}}

{{/*
The environment both binaries share: Redis, MySQL and the files above, then the
values' env. Every name is one of docs/configuration.md.
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
{{- if $r.username }}
- name: SECKILL_REDIS_USERNAME
  value: {{ $r.username | quote }}
{{- end }}
{{- if $r.sentinel.username }}
{{- if ne $r.mode "sentinel" }}
{{- fail "redis.sentinel.username is for redis.mode sentinel" }}
{{- end }}
- name: SECKILL_REDIS_SENTINEL_USERNAME
  value: {{ $r.sentinel.username | quote }}
{{- end }}
{{- if $r.tls.enabled }}
- name: SECKILL_REDIS_TLS
  value: "true"
{{- end }}
{{- if $r.tls.serverName }}
- name: SECKILL_REDIS_TLS_SERVER_NAME
  value: {{ $r.tls.serverName | quote }}
{{- end }}
{{- $volumes := include "seckill.fileVolumes" . | fromYaml }}
{{- range include "seckill.files" . | fromYamlArray }}
- name: {{ .env }}
  value: {{ printf "%s/%s" (get (get $volumes .volume) "dir") .key | quote }}
{{- end }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/*
The volumes of the files, each projecting only the keys the binaries read (a key
missing from its Secret stops the pod before it starts, naming it), and /tmp (the
root file system is read-only).
*/}}
{{- define "seckill.volumes" -}}
{{- $volumes := include "seckill.fileVolumes" . | fromYaml }}
{{- range $volume, $keys := include "seckill.fileKeys" . | fromYaml }}
- name: {{ $volume }}
  secret:
    secretName: {{ get (get $volumes $volume) "secret" }}
    defaultMode: 0440
    items:
      {{- range $keys }}
      - key: {{ . | quote }}
        path: {{ . | quote }}
      {{- end }}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "seckill.volumeMounts" -}}
{{- $volumes := include "seckill.fileVolumes" . | fromYaml }}
{{- range $volume, $keys := include "seckill.fileKeys" . | fromYaml }}
- name: {{ $volume }}
  mountPath: {{ get (get $volumes $volume) "dir" }}
  readOnly: true
{{- end }}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Pod annotations: a Secret the chart makes rolls the pods when it changes. */}}
{{- define "seckill.secretChecksum" -}}
{{- if .Values.secrets.create }}
checksum/secrets: {{ toYaml .Values.secrets.stringData | sha256sum }}
{{- end }}
{{- end -}}

{{/* Pod annotations for a Prometheus that finds its targets by them (without the
Operator's ServiceMonitor): scrape /metrics on the given port, the operations port,
never the buyers'. */}}
{{- define "seckill.scrape" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ . | quote }}
prometheus.io/path: /metrics
{{- end -}}

{{/* A whole number of seconds >= 0 from a value: (list VALUE "its.name"). */}}
{{- define "seckill.seconds" -}}
{{- $v := index . 0 -}}
{{- if not (regexMatch "^[0-9]+$" (toString $v)) -}}
{{- fail (printf "%s must be a whole number of seconds >= 0, got %v" (index . 1) $v) -}}
{{- end -}}
{{- int $v -}}
{{- end -}}

{{/*
The grace periods: Kubernetes kills a pod this long after SIGTERM. An API needs its
shutdown's delay and timeout, a worker its timeout, each with a margin for the process
to start stopping and to exit (docs/deploying.md#choosing-the-timings).
*/}}
{{- define "seckill.graceMargin" -}}5{{- end -}}
{{- define "seckill.apiGrace" -}}
{{- $s := .Values.api.shutdown -}}
{{- add (include "seckill.seconds" (list $s.delaySeconds "api.shutdown.delaySeconds")) (include "seckill.seconds" (list $s.timeoutSeconds "api.shutdown.timeoutSeconds")) (include "seckill.graceMargin" .) -}}
{{- end -}}
{{- define "seckill.workerGrace" -}}
{{- add (include "seckill.seconds" (list .Values.worker.shutdown.timeoutSeconds "worker.shutdown.timeoutSeconds")) (include "seckill.graceMargin" .) -}}
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

{{/*
Purchases and seats in flight through nginx from one client address
(nginx.purchasesInFlight): 1 to 65535.
*/}}
{{- define "seckill.nginxInFlight" -}}
{{- $set := .Values.nginx.purchasesInFlight | int -}}
{{- if or (lt $set 1) (gt $set 65535) -}}
{{- fail (printf "nginx.purchasesInFlight: %d per client address, want 1 to 65535" $set) -}}
{{- end -}}
{{- $set -}}
{{- end -}}
