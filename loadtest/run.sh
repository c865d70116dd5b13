#!/usr/bin/env bash
# Runs load scenarios against an API and a worker of its own, and stops them afterwards.
#
#   loadtest/run.sh [audit] [variants] [waitlist] [ratios] [compare] [overload] [hot] [soak] [drops] [waiting] [k6] [ab]
#   (default: audit variants waitlist ratios, about a minute)
#
# ratios ends with a group-buy phase (seats taken/s against the purchases/s of the same
# run, then an audit of the group sale); RATIOS_FLAGS='-group-size 0' leaves it out.
# waiting talks to the APIs and to a private nginx in front of them (started for it
# whatever LOADTEST_FRONT says; k6's waiting_crowd.js too).
#
# It starts, on free ports: a private redis-server (AOF, appendfsync always as
# scripts/services.sh runs it, or LOADTEST_APPENDFSYNC), API_INSTANCES API processes
# (default 1) and one worker, with
# SECKILL_RATE_IP=0 and SECKILL_RATE_USER=0, on a fresh MySQL database seckill_loadtest
# on a private mariadbd (LOADTEST_MYSQL). A private Redis keeps the orders queue away from
# any other worker on this machine; a private MariaDB keeps other clients' work (tests
# run beside) out of mysqld's CPU and status counters, which the ratios report per order. Logs go to .data/loadtest/. Every process it started
# is stopped by its PID when it ends, however it ends.
#
# Environment:
#   API_INSTANCES=1       API processes; the crowd spreads its requests over all of them
#   SECKILL_API_BIN, SECKILL_WORKER_BIN   binaries to run [bin/api, bin/worker, built from the work tree]
#   AUDIT_FLAGS, VARIANTS_FLAGS, WAITLIST_FLAGS, RATIOS_FLAGS, COMPARE_FLAGS, OVERLOAD_FLAGS, HOT_FLAGS,
#   SOAK_FLAGS, DROPS_FLAGS, WAITING_FLAGS, K6_FLAGS, AB_FLAGS   extra flags for each scenario
#   K6_SCRIPT=flash_sale.js               k6's script in loadtest/k6 (waiting_crowd.js: through the front)
#   LOADTEST_DROPS                        a number N: crowd drops runs N short sales to their end beside
#                                         the scenarios, and waits for the worker (its
#                                         SECKILL_SALE_RETENTION 1s then) to archive them; its
#                                         report follows the scenarios' (logs/drops.txt)
#   LOADTEST_OTHER_URL                    compare: another service's purchase endpoint, running on this
#                                         machine (started by you; {user} in it or the body: a number
#                                         of its own per request); LOADTEST_OTHER_NAME [other],
#                                         LOADTEST_OTHER_METHOD [POST],
#                                         LOADTEST_OTHER_BODY, LOADTEST_OTHER_OK (a substring of its
#                                         successful answer), LOADTEST_OTHER_SOLD_OUT (the same endpoint of
#                                         an instance with nothing left), LOADTEST_OTHER_WATCH (name=pid,...
#                                         of its processes, for their CPU)
#   LOADTEST_MYSQL=private                private: a mariadbd of the run's own on a free port (data
#                                         in a temporary folder, 256 MB buffer pool as
#                                         scripts/services.sh runs it, no binary log), stopped at
#                                         the end; shared: the server of SECKILL_MYSQL_DSN
#   LOADTEST_DB=seckill_loadtest          database to (re)create on the MySQL server
#   LOADTEST_APPENDFSYNC=always           the private Redis's appendfsync (everysec: faster, and
#                                         acknowledged writes can be lost; docs/concepts.md, Durability)
#   LOADTEST_REDIS=single                 single: one redis-server; cluster: a private Redis
#                                         Cluster of 3 masters + 3 replicas (SECKILL_REDIS_CLUSTER)
#   LOADTEST_REDIS_TLS=0                  1: the single redis-server speaks TLS alone, with a
#                                         certificate made for the run (openssl), and the API and
#                                         the worker verify it (SECKILL_REDIS_TLS): TLS's cost
#   LOADTEST_RATE=0                       SECKILL_RATE_USER and SECKILL_RATE_IP (0: off)
#   LOADTEST_MIN_REPLICAS=0               SECKILL_REDIS_MIN_REPLICAS of the APIs; with a cluster,
#                                         also the masters' min-replicas-to-write
#   LOADTEST_LIMITS=both                  both: one more API process with SECKILL_RATE_USER and
#                                         SECKILL_RATE_IP as shipped (the crowd's addresses passed in
#                                         X-Forwarded-For, SECKILL_TRUSTED_PROXIES=127.0.0.1/32); ratios
#                                         runs its sold-out and purchase loads on both, in turns;
#                                         off: none
#   LOADTEST_FRONT=none                   nginx: the crowd talks to a private nginx in front of the
#                                         API processes (deploy/nginx/render.sh, access log off, no
#                                         per-IP limit), whose bound on purchases in flight from one
#                                         address (the crowd's) is
#                                         LOADTEST_FRONT_IN_FLIGHT [192 per API]; its workers' CPU is
#                                         reported as nginx1, nginx2
#   LOADTEST_PPROF_PORT                   unset: no profiling, each API's /metrics on a free port; a
#                                         port: API i serves /metrics and /debug/pprof/ on
#                                         127.0.0.1:PORT+i-1 (SECKILL_METRICS_ADDR, SECKILL_PPROF), the
#                                         API with the limits on PORT+10
#                                         (go tool pprof http://127.0.0.1:PORT/debug/pprof/profile)
#   LOADTEST_TRACES                       a ratio (0.01): the API and the worker export traces to a
#                                         private Jaeger (scripts/jaeger.sh, its CPU reported as
#                                         jaeger), sampling that share of the purchases
#                                         (OTEL_TRACES_SAMPLER=parentbased_traceidratio); unset: off,
#                                         as shipped (no OTEL_ endpoint)
#   LOADTEST_PROFILE                      a folder: ratios writes the first API's and the worker's CPU
#                                         profiles of its purchase phase there (api1.pprof,
#                                         worker.pprof); `make profile` sets .data/profile
# Called by `make loadtest` (audit variants waitlist ratios) and `make k6` (k6).
set -euo pipefail
# A command that fails ends the run (set -e); say which, rather than end silently.
trap 'echo "loadtest/run.sh: line $LINENO failed (exit $?): $BASH_COMMAND; logs in .data/loadtest" >&2' ERR
cd "$(dirname "$0")/.."
root=$(pwd)

scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(audit variants waitlist ratios)
for s in "${scenarios[@]}"; do
	case $s in audit | variants | waitlist | ratios | compare | overload | hot | soak | drops | waiting | k6 | ab) ;; *)
		echo "usage: $0 [audit] [variants] [waitlist] [ratios] [compare] [overload] [hot] [soak] [drops] [waiting] [k6] [ab]" >&2
		exit 2
		;;
	esac
done

logs="$root/.data/loadtest"
mkdir -p "$logs"

# One run at a time on this machine: each recreates its database (two runs on
# seckill_loadtest drop each other's tables) and they would share the cores they
# measure. A second run waits for the first; the servers started below do not hold
# the lock (9>&-).
exec 9>"${TMPDIR:-/tmp}/seckill-loadtest.lock"
if ! flock -n 9; then
	echo "loadtest: another loadtest/run.sh is running on this machine; waiting for it to end" >&2
	flock 9
fi
# bin/ is built from the work tree every time (go build is quick when nothing changed),
# so the banner's commit is what runs; given binaries must exist.
api_bin=${SECKILL_API_BIN:-bin/api}
worker_bin=${SECKILL_WORKER_BIN:-bin/worker}
[ -n "${SECKILL_API_BIN:-}" ] || go build -o bin/api ./cmd/api
[ -n "${SECKILL_WORKER_BIN:-}" ] || go build -o bin/worker ./cmd/worker
for b in "$api_bin" "$worker_bin"; do
	[ -x "$b" ] || { echo "$b is not an executable" >&2; exit 1; }
done
go build -o bin/crowd ./loadtest/crowd

pids=()
redis_dir=""
mysql_dir=""
stop() { # the API and the worker first, Redis and MariaDB (started first) last
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	[ -z "$redis_dir" ] || rm -rf "$redis_dir"
	[ -z "$mysql_dir" ] || rm -rf "$mysql_dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
taken_ports=" "
free_port() { # sets port to one nothing listens on, not handed out before
	# Nor its cluster bus port (+10000, which a cluster node binds too), nor one that is
	# another's bus port: 20000-22767, so the bus ports are 30000-32767, below the kernel's
	# ephemeral ports (32768 and up), which an outgoing connection may hold (a node once
	# failed to bind its bus port 37694: in use).
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 2768))
		if [[ $taken_ports != *" $p "* ]] && ! answers "$p" && ! answers $((p + 10000)); then
			taken_ports+="$p "
			port=$p
			return 0
		fi
	done
	echo "no free port found" >&2
	exit 1
}

# MySQL: a fresh database on a private server (LOADTEST_MYSQL=private), or on the
# configured one.
base_dsn=${SECKILL_MYSQL_DSN:-'seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true'}
case ${LOADTEST_MYSQL:-private} in
private)
	mysql_dir=$(mktemp -d)
	free_port
	mkdir "$mysql_dir/tmp" # its own tmpdir: bootstraps side by side in /tmp can clash
	mariadb-install-db --no-defaults --datadir="$mysql_dir/db" --tmpdir="$mysql_dir/tmp" --user="$(id -un)" \
		--auth-root-authentication-method=socket --skip-test-db >"$mysql_dir/install.log" 2>&1
	mariadbd --no-defaults --datadir="$mysql_dir/db" --tmpdir="$mysql_dir/tmp" --socket="$mysql_dir/mysqld.sock" \
		--port="$port" --bind-address=127.0.0.1 --user="$(id -un)" --log-error="$mysql_dir/error.log" \
		--innodb-buffer-pool-size=256M --max-connections=500 --skip-log-bin 9>&- &
	pids+=($!)
	for _ in $(seq 300); do
		answers "$port" && [ -S "$mysql_dir/mysqld.sock" ] && break
		sleep 0.1
	done
	mariadb --socket="$mysql_dir/mysqld.sock" -u root \
		-e "CREATE USER seckill@'%' IDENTIFIED BY 'seckill'; GRANT ALL ON *.* TO seckill@'%';
			CREATE USER seckill@localhost IDENTIFIED BY 'seckill'; GRANT ALL ON *.* TO seckill@localhost"
	base_dsn="seckill:seckill@tcp(127.0.0.1:$port)/seckill?$(sed -nE 's/[^?]*\?//p' <<<"$base_dsn")"
	;;
shared) ;;
*)
	echo "LOADTEST_MYSQL: want private or shared" >&2
	exit 2
	;;
esac
db=${LOADTEST_DB:-seckill_loadtest}
mysql_user=$(sed -E 's/^([^:@]*).*/\1/' <<<"$base_dsn")
mysql_pass=$(sed -E 's/^[^:@]*:?([^@]*)@.*/\1/' <<<"$base_dsn")
mysql_host=$(sed -E 's/.*@tcp\(([^:)]*).*/\1/' <<<"$base_dsn")
mysql_port=$(sed -E 's/.*@tcp\([^:)]*:?([0-9]*)\).*/\1/' <<<"$base_dsn")
MYSQL_PWD=$mysql_pass mariadb -h "$mysql_host" -P "${mysql_port:-3306}" -u "$mysql_user" \
	-e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`"
dsn=$(sed -E "s#\)/[^?]*#)/$db#" <<<"$base_dsn")

# Redis: private, on free ports; one server, or a cluster of 3 masters + 3 replicas.
redis_dir=$(mktemp -d)
redis_ports=()
redis_tls=() # redis-server's TLS arguments, with LOADTEST_REDIS_TLS=1
cli_tls=()   # redis-cli's
start_redis() { # name, extra redis-server arguments...
	local name=$1
	shift
	free_port
	redis_ports+=("$port")
	mkdir -p "$redis_dir/$port"
	local listen=(--port "$port")
	[ ${#redis_tls[@]} -eq 0 ] || listen=(--port 0 --tls-port "$port" "${redis_tls[@]}")
	redis-server --bind 127.0.0.1 "${listen[@]}" --dir "$redis_dir/$port" --appendonly yes \
		--appendfsync "${LOADTEST_APPENDFSYNC:-always}" --save "" --protected-mode no \
		--logfile "$logs/redis-$port.log" "$@" 9>&- &
	pids+=($!)
	watch+="${watch:+,}$name=$!"
	for _ in $(seq 100); do answers "$port" && break; sleep 0.1; done
}
watch=""
min_replicas=${LOADTEST_MIN_REPLICAS:-0}
if [ "${LOADTEST_REDIS_TLS:-0}" = 1 ]; then
	[ "${LOADTEST_REDIS:-single}" = single ] || { echo "LOADTEST_REDIS_TLS=1 wants LOADTEST_REDIS=single" >&2; exit 2; }
	command -v openssl >/dev/null || { echo "LOADTEST_REDIS_TLS=1 makes its certificate with openssl: apt-get install openssl" >&2; exit 2; }
	# A certificate authority and a server certificate for 127.0.0.1, made for this run.
	tls=$redis_dir/tls
	mkdir -p "$tls"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=loadtest-ca \
		-keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
		-keyout "$tls/redis.key" -out "$tls/redis.csr" 2>/dev/null
	openssl x509 -req -in "$tls/redis.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 1 \
		-extfile <(echo subjectAltName=IP:127.0.0.1) -out "$tls/redis.crt" 2>/dev/null
	redis_tls=(--tls-cert-file "$tls/redis.crt" --tls-key-file "$tls/redis.key" --tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients no)
	cli_tls=(--tls --cacert "$tls/ca.crt")
	export SECKILL_REDIS_TLS=true SECKILL_REDIS_TLS_CA_FILE=$tls/ca.crt
fi
case ${LOADTEST_REDIS:-single} in
single)
	start_redis redis
	export SECKILL_REDIS_ADDR=127.0.0.1:${redis_ports[0]}
	;;
cluster)
	for i in 1 2 3 4 5 6; do
		start_redis "redis$i" --cluster-enabled yes --cluster-config-file nodes.conf \
			--cluster-node-timeout 2000 --repl-diskless-sync-delay 0 --cluster-require-full-coverage no \
			--min-replicas-to-write "$min_replicas" --min-replicas-max-lag 10
	done
	nodes=("${redis_ports[@]/#/127.0.0.1:}")
	redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$logs/cluster-create.log" 2>&1
	# Every replica synced before the load: a purchase waits for one with MIN_REPLICAS=1.
	for _ in $(seq 300); do
		linked=0
		for p in "${redis_ports[@]}"; do
			info=$(redis-cli -p "$p" info replication)
			[[ $info == *role:master* || $info == *master_link_status:up* ]] && linked=$((linked + 1))
		done
		[ "$linked" -eq 6 ] && [[ $(redis-cli -p "${redis_ports[0]}" cluster info) == *cluster_state:ok* ]] && break
		sleep 0.1
	done
	export SECKILL_REDIS_CLUSTER=true SECKILL_REDIS_ADDR=$(IFS=,; echo "${nodes[*]}")
	;;
*)
	echo "LOADTEST_REDIS: want single or cluster" >&2
	exit 2
	;;
esac
redis_port=${redis_ports[0]}
export SECKILL_REDIS_MIN_REPLICAS=$min_replicas

export SECKILL_ENV=${SECKILL_ENV-dev}
export SECKILL_REDIS_ADDR=127.0.0.1:$redis_port SECKILL_MYSQL_DSN=$dsn
# LOADTEST_RATE: both limits at this rate (a rate no buyer reaches measures what the
# shared limits cost); unset, both are off, as a crowd from one address needs.
export SECKILL_RATE_IP=${LOADTEST_RATE:-0} SECKILL_RATE_USER=${LOADTEST_RATE:-0}
free_port
export SECKILL_WORKER_METRICS_ADDR=127.0.0.1:$port

# LOADTEST_TRACES: a Jaeger takes the traces of both processes (tracing's cost).
if [ -n "${LOADTEST_TRACES:-}" ]; then
	free_port
	otlp=$port
	free_port
	query=$port
	jports=()
	for _ in 1 2 3; do free_port; jports+=("$port"); done
	JAEGER_OTLP_HTTP_ADDR=127.0.0.1:$otlp JAEGER_QUERY_ADDR=127.0.0.1:$query JAEGER_OTLP_GRPC_ADDR=127.0.0.1:${jports[0]} \
		JAEGER_QUERY_GRPC_ADDR=127.0.0.1:${jports[1]} JAEGER_HEALTH_ADDR=127.0.0.1:${jports[2]} \
		"$(scripts/jaeger.sh)" --config deploy/jaeger/config.yaml >"$logs/jaeger.log" 2>&1 9>&- &
	pids+=($!)
	watch+=",jaeger=$!"
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:${jports[2]}/status" >/dev/null 2>&1 && break; sleep 0.1; done
	export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$otlp OTEL_TRACES_SAMPLER=parentbased_traceidratio \
		OTEL_TRACES_SAMPLER_ARG=$LOADTEST_TRACES
	echo "traces: ${LOADTEST_TRACES} of the purchases to Jaeger (query API http://127.0.0.1:$query/api/traces)"
fi

"$api_bin" migrate >"$logs/migrate.log" 2>&1
urls=()
api_pids=()
# Sets metrics to an API's metrics settings: LOADTEST_PPROF_PORT's address, with
# profiles, or a free port (not in a subshell: free_port remembers what it handed out).
metrics_addr() { # the API's offset from LOADTEST_PPROF_PORT
	if [ -n "${LOADTEST_PPROF_PORT:-}" ]; then
		metrics="SECKILL_METRICS_ADDR=127.0.0.1:$((LOADTEST_PPROF_PORT + $1)) SECKILL_PPROF=true"
		metrics_url=http://127.0.0.1:$((LOADTEST_PPROF_PORT + $1))
	else
		free_port
		metrics="SECKILL_METRICS_ADDR=127.0.0.1:$port${LOADTEST_PROFILE:+ SECKILL_PPROF=true}"
		metrics_url=http://127.0.0.1:$port
	fi
}
# LOADTEST_PROFILE: ratios records the CPU profiles of the first API and the worker over
# its purchase phase into that folder (profile_from: name=metrics URL of each).
profile_from=""
metrics_urls=() # each API's /metrics, for waiting
for i in $(seq "${API_INSTANCES:-1}"); do
	metrics_addr $((i - 1))
	free_port
	# shellcheck disable=SC2086 # metrics is one or two VAR=value words
	env SECKILL_HTTP_ADDR=127.0.0.1:$port $metrics \
		"$api_bin" >"$logs/api$i.log" 2>&1 9>&- &
	pids+=($!)
	watch+=",api$i=$!"
	api_pids+=($!)
	[ "$i" != 1 ] || profile_from="api1=$metrics_url"
	metrics_urls+=("$metrics_url/metrics")
	urls+=("http://127.0.0.1:$port")
done
limited=""
if [ "${LOADTEST_LIMITS:-both}" = both ]; then
	metrics_addr 10
	free_port
	# shellcheck disable=SC2086 # metrics is one or two VAR=value words
	env -u SECKILL_RATE_USER -u SECKILL_RATE_IP SECKILL_TRUSTED_PROXIES=127.0.0.1/32 \
		SECKILL_HTTP_ADDR=127.0.0.1:$port $metrics \
		"$api_bin" >"$logs/api-limits.log" 2>&1 9>&- &
	pids+=($!)
	watch+=",limits=$!"
	limited=http://127.0.0.1:$port
fi
# Sales archived during the run (drops) need a short retention; others end in an hour.
if [ -n "${LOADTEST_DROPS:-}" ] || [[ " ${scenarios[*]} " == *" drops "* ]]; then export SECKILL_SALE_RETENTION=1s; fi
[ -z "${LOADTEST_PROFILE:-}" ] || profile_from+=",worker=http://$SECKILL_WORKER_METRICS_ADDR"
SECKILL_PPROF=${LOADTEST_PROFILE:+true} "$worker_bin" >"$logs/worker.log" 2>&1 9>&- &
pids+=($!)
worker_pid=$!
watch+=",worker=$!"
# The MySQL server of the DSN: the one listening on its port (tests may run private ones).
mysql_port=$(sed -nE 's/.*@tcp\([^:)]*:([0-9]+)\).*/\1/p' <<<"$dsn")
mysqld=$(pgrep -f -- "(mariadbd|mysqld) .*--port=${mysql_port:-3306}\b" | head -1 || true)
[ -n "$mysqld" ] || mysqld=$(pidof mariadbd mysqld 2>/dev/null | awk '{print $1}') || true
[ -z "$mysqld" ] || watch+=",mysqld=$mysqld"
for u in "${urls[@]}" $limited; do
	for _ in $(seq 200); do curl -fs "$u/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
	curl -fs "$u/readyz" >/dev/null || {
		echo "API at $u not ready; see $logs" >&2
		exit 1
	}
done
apis=("${urls[@]}")
front=""
# start_front runs a private nginx, the project's front, before the APIs, and sets front.
start_front() {
	free_port
	front_dir="$redis_dir/nginx"
	deploy/nginx/render.sh "$front_dir" "127.0.0.1:$port" 1000000 "${LOADTEST_FRONT_IN_FLIGHT:-$((192 * ${#apis[@]}))}" off "${apis[@]#http://}"
	"$(command -v nginx || echo /usr/sbin/nginx)" -p "$front_dir" -c "$front_dir/nginx.conf" -e "$logs/nginx-error.log" \
		-g 'daemon off;' 9>&- &
	pids+=($!)
	front=http://127.0.0.1:$port
	for _ in $(seq 100); do curl -fs "$front/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
	curl -fs "$front/readyz" >/dev/null || {
		echo "nginx at $front does not pass /readyz on; see $logs/nginx-error.log" >&2
		exit 1
	}
	i=0
	for w in $(pgrep -P "${pids[-1]}"); do watch+=",nginx$((i += 1))=$w"; done
}
case ${LOADTEST_FRONT:-none} in
none)
	if [[ " ${scenarios[*]} " == *" waiting "* || ${K6_SCRIPT:-} == waiting_crowd.js ]]; then start_front; fi
	;;
nginx)
	start_front
	urls=("$front")
	;;
*)
	echo "LOADTEST_FRONT: want none or nginx" >&2
	exit 2
	;;
esac
api_list=$(IFS=,; echo "${urls[*]}")
if [ -n "${SECKILL_API_BIN:-}${SECKILL_WORKER_BIN:-}" ]; then
	built="binaries $api_bin $worker_bin"
else
	built="binaries bin/ of the work tree at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
	git diff --quiet HEAD -- cmd internal migrations go.mod 2>/dev/null || built+=" with uncommitted changes"
fi
echo "loadtest: API ${apis[*]}${front:+ behind nginx at $front}${limited:+ and $limited with the limits as shipped}, worker, redis ${LOADTEST_REDIS:-single}${SECKILL_REDIS_TLS:+ over TLS} on :${redis_ports[*]} (min replicas $min_replicas), MySQL database $db; $built"

status=0
# The drops' Redis figures need the one server (a cluster's keys are spread over masters).
drops_redis=""
[ "${LOADTEST_REDIS:-single}" != single ] || drops_redis=127.0.0.1:$redis_port
# Redis's commands per order (ratios) from the one plaintext server: a cluster's replicas
# would count each command again.
work_redis=""
[ ${#cli_tls[@]} -gt 0 ] || work_redis=$drops_redis
drops_pid=""
if [ -n "${LOADTEST_DROPS:-}" ]; then
	echo "drops: $LOADTEST_DROPS short sales run to their end and archived beside the scenarios (report at the end)"
	# shellcheck disable=SC2086
	bin/crowd drops -api "$api_list" -mysql "$dsn" -sales "$LOADTEST_DROPS" ${drops_redis:+-redis "$drops_redis"} \
		${DROPS_FLAGS:-} >"$logs/drops.txt" 2>&1 9>&- &
	drops_pid=$!
	pids+=($!)
fi
# On the way out, keep the worker's metrics and Redis's per-command figures for a look.
trap 'curl -fs "http://$SECKILL_WORKER_METRICS_ADDR/metrics" 2>/dev/null | grep "^seckill_" >"$logs/worker-metrics.txt" || true
for p in "${redis_ports[@]}"; do redis-cli -p "$p" "${cli_tls[@]}" info commandstats; done >"$logs/redis-commandstats.txt" 2>/dev/null || true; stop' EXIT
for s in "${scenarios[@]}"; do
	echo
	case $s in
	audit)
		# shellcheck disable=SC2086
		bin/crowd audit -api "$api_list" -mysql "$dsn" ${AUDIT_FLAGS:-} || status=1
		;;
	variants)
		# the audit's crowd on a sale of 10 variants, audited per variant
		# shellcheck disable=SC2086
		bin/crowd audit -api "$api_list" -mysql "$dsn" -variants 10 -first-user 500000 ${VARIANTS_FLAGS:-} || status=1
		;;
	waitlist)
		# shellcheck disable=SC2086
		bin/crowd waitlist -api "$api_list" -mysql "$dsn" ${WAITLIST_FLAGS:-} || status=1
		;;
	ratios)
		# shellcheck disable=SC2086
		bin/crowd ratios -api "$api_list" ${limited:+-limited "$limited"} -mysql "$dsn" -watch "$watch" \
			${work_redis:+-redis "$work_redis"} \
			${LOADTEST_PROFILE:+-profile "$LOADTEST_PROFILE" -profile-from "$profile_from"} ${RATIOS_FLAGS:-} || status=1
		;;
	compare)
		[ -n "${LOADTEST_OTHER_URL:-}" ] || { echo "compare: LOADTEST_OTHER_URL names no service to compare with" >&2; exit 2; }
		# shellcheck disable=SC2086
		bin/crowd compare -api "$api_list" -mysql "$dsn" -watch "$watch${LOADTEST_OTHER_WATCH:+,$LOADTEST_OTHER_WATCH}" \
			-other "$LOADTEST_OTHER_URL" -other-name "${LOADTEST_OTHER_NAME:-other}" -other-method "${LOADTEST_OTHER_METHOD:-POST}" -other-body "${LOADTEST_OTHER_BODY:-}" \
			-other-ok "${LOADTEST_OTHER_OK:-}" -other-sold-out "${LOADTEST_OTHER_SOLD_OUT:-}" ${COMPARE_FLAGS:-} || status=1
		;;
	hot)
		nodes=""
		for i in "${!redis_ports[@]}"; do
			nodes+="${nodes:+,}$([ ${#redis_ports[@]} -gt 1 ] && echo "redis$((i + 1))" || echo redis)=127.0.0.1:${redis_ports[i]}"
		done
		# shellcheck disable=SC2086
		bin/crowd hot -api "$api_list" -mysql "$dsn" -watch "$watch" -nodes "$nodes" ${HOT_FLAGS:-} || status=1
		;;
	overload)
		# shellcheck disable=SC2086
		bin/crowd overload -api "${urls[0]}" -mysql "$dsn" -rss-pid "${api_pids[0]}" -watch "$watch" ${OVERLOAD_FLAGS:-} || status=1
		;;
	drops)
		# shellcheck disable=SC2086
		bin/crowd drops -api "$api_list" -mysql "$dsn" ${drops_redis:+-redis "$drops_redis"} ${DROPS_FLAGS:-} || status=1
		;;
	waiting)
		# shellcheck disable=SC2086
		bin/crowd waiting -api "$(IFS=,; echo "${apis[*]}")" -front "$front" -metrics "$(IFS=,; echo "${metrics_urls[*]}")" \
			-mysql "$dsn" -watch "$watch" ${WAITING_FLAGS:-} || status=1
		;;
	soak)
		# shellcheck disable=SC2086
		bin/crowd soak -api "${urls[0]}" -mysql "$dsn" -redis "127.0.0.1:$redis_port" -api-pid "${api_pids[0]}" \
			-worker-pid "$worker_pid" ${SOAK_FLAGS:-} || status=1
		;;
	k6)
		k6=$(command -v k6 || echo "$(go env GOPATH)/bin/k6")
		[ -x "$k6" ] || { echo "k6 is missing: make k6 installs it" >&2; exit 1; }
		# shellcheck disable=SC2086
		script=${K6_SCRIPT:-flash_sale.js}
		base=${urls[0]}
		[ "$script" != waiting_crowd.js ] || base=$front # the waiting crowd is the front's
		"$k6" run -e BASE_URL="$base" -e SECKILL_JWT_SECRET="${SECKILL_JWT_SECRET:-}" \
			${K6_FLAGS:-} "loadtest/k6/$script" || status=1
		;;
	ab)
		# shellcheck disable=SC2086
		BASE_URL=${urls[0]} CROWD=bin/crowd loadtest/ab.sh ${AB_FLAGS:-} || status=1
		;;
	esac
done
if [ -n "$drops_pid" ]; then
	echo
	wait "$drops_pid" || status=1
	cat "$logs/drops.txt"
fi
exit $status
