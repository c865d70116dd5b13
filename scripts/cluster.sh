#!/usr/bin/env bash
# The scaled-out service on this machine, from nothing:
#   scripts/cluster.sh up     a Redis Cluster of 3 masters + 3 replicas (redis-server
#                             processes, AOF always, data under .data/cluster/<port>/;
#                             created once, reused by the next run), three API instances
#                             and two workers on it, a private nginx in front; prints the
#                             URL and tokens, then stays in the foreground like make run:
#                             Ctrl-C stops the APIs, workers and nginx; the cluster stays
#                             for the next run (as make run's Redis does) until make stop
#   scripts/cluster.sh down   stop everything it started, by pid file (.data/cluster/)
# Called by `make run-cluster` after scripts/services.sh up (MariaDB, packages) and the
# build. JAEGER=1: a Jaeger (deploy/jaeger/config.yaml; OTLP on :4318, its query API on
# :16686) takes every API's and worker's traces, and stops with them. Ports (environment): SECKILL_CLUSTER_PORTS [7001 7002 7003 7004 7005 7006],
# SECKILL_API_PORTS [8081 8082 8083], SECKILL_API_METRICS_PORTS [9081 9082 9083] (each
# API's /metrics, SECKILL_METRICS_ADDR), SECKILL_WORKER_METRICS_PORTS [9092 9093],
# SECKILL_FRONT_ADDR [127.0.0.1:8080] (nginx), SECKILL_CLUSTER_DATA [.data/cluster] (the
# nodes' data, pid files, logs), SECKILL_BIN_DIR [bin] (where api and worker are). The per-IP limit is nginx's:
# SECKILL_NGINX_RATE_IP [200] requests per second per client address (bursts of twice
# that more); the APIs run with SECKILL_RATE_IP=0 and the per-user limit as configured.
# Purchases and seats in flight from one client address through nginx:
# SECKILL_NGINX_PURCHASES_IN_FLIGHT [192 per API, the APIs' own bound of one sale: a load
# tool on this machine is one address], past which nginx answers 429 rate_limited at once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
data=${SECKILL_CLUSTER_DATA:-$root/.data/cluster}
bin=${SECKILL_BIN_DIR:-bin}
run="$data/run"
read -r -a redis_ports <<<"${SECKILL_CLUSTER_PORTS:-7001 7002 7003 7004 7005 7006}"
read -r -a api_ports <<<"${SECKILL_API_PORTS:-8081 8082 8083}"
read -r -a api_metrics_ports <<<"${SECKILL_API_METRICS_PORTS:-9081 9082 9083}"
read -r -a worker_ports <<<"${SECKILL_WORKER_METRICS_PORTS:-9092 9093}"
front=${SECKILL_FRONT_ADDR:-127.0.0.1:8080}
nginx_rate_ip=${SECKILL_NGINX_RATE_IP:-200}
nginx_in_flight=${SECKILL_NGINX_PURCHASES_IN_FLIGHT:-$((192 * ${#api_ports[@]}))}

log() { printf 'cluster: %s\n' "$*" >&2; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
nginx_bin() { command -v nginx || echo /usr/sbin/nginx; }
nginx_pid="$data/nginx/nginx.pid"

alive() { # pidfile: its process runs
	local pid
	pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
}

stop_pids() { # pidfile...: SIGTERM to all, then wait for each (15 s at most)
	local f pid pids=()
	for f in "$@"; do
		pid=$(cat "$f" 2>/dev/null) || continue # gone meanwhile: another stop got there first
		rm -f "$f"
		kill -0 "$pid" 2>/dev/null || continue
		log "stopping $(basename "$(dirname "$f")")/$(basename "$f" .pid) (pid $pid)"
		kill "$pid" 2>/dev/null || true
		pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && log "pid $pid still runs after 15 s"
	done
	return 0
}

# What the foreground run started: the APIs, the workers, nginx.
stop_run() {
	stop_pids "$run"/*.pid "$nginx_pid"
}

# Everything, the cluster's nodes too (*/redis.pid: .data/cluster/<port>/, and the
# redis-<port>/ of earlier versions of this script).
down() {
	stop_run
	stop_pids "$data"/*/redis.pid
}

# Six nodes. Masters refuse writes without a replica in sync (min-replicas-to-write 1),
# so an isolated master cannot take purchases alone; a master down stops its own slots
# only (cluster-require-full-coverage no). docs/topologies.md says why.
start_nodes() {
	local p
	for p in "${redis_ports[@]}"; do
		answers "$p" && continue
		mkdir -p "$data/$p"
		log "starting redis-server on 127.0.0.1:$p (data in .data/cluster/$p)"
		redis-server --bind 127.0.0.1 --port "$p" --dir "$data/$p" --daemonize yes \
			--pidfile "$data/$p/redis.pid" --logfile "$data/$p/redis.log" \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
			--cluster-require-full-coverage no --appendonly yes --appendfsync always --save "" \
			--min-replicas-to-write 1 --min-replicas-max-lag 10 --repl-diskless-sync-delay 0
	done
	for p in "${redis_ports[@]}"; do
		for _ in $(seq 100); do answers "$p" && break; sleep 0.1; done
		answers "$p" || { log "redis-server on :$p did not start: see .data/cluster/$p/redis.log"; exit 1; }
		redis-cli -p "$p" cluster info >/dev/null 2>&1 ||
			{ log "the server on :$p is no cluster node (SECKILL_CLUSTER_PORTS picks other ports)"; exit 1; }
	done
	if [ "$(redis-cli -p "${redis_ports[0]}" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')" = 1 ]; then
		log "creating the cluster (3 masters, 3 replicas; redis-cli output in .data/cluster/create.log)"
		redis-cli --cluster create "${redis_ports[@]/#/127.0.0.1:}" --cluster-replicas 1 --cluster-yes >"$data/create.log"
	else
		log "the cluster on :${redis_ports[*]} exists already: reusing it"
	fi
	log "waiting until every slot is served and every replica is in sync"
	for _ in $(seq 300); do
		local ok=1
		for p in "${redis_ports[@]}"; do
			redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
			redis-cli -p "$p" info replication | grep -Eq 'role:master|master_link_status:up' || ok=0
		done
		[ $ok = 1 ] && return 0
		sleep 0.2
	done
	log "the cluster did not become healthy: see .data/cluster/"
	exit 1
}

# A private nginx (its own prefix, config, pid file and logs under .data/cluster/nginx),
# from the one template the tests and the compose profile use too.
start_nginx() {
	local backends=("${api_ports[@]/#/127.0.0.1:}")
	deploy/nginx/render.sh "$data/nginx" "$front" "$nginx_rate_ip" "$nginx_in_flight" "$data/nginx/access.log" "${backends[@]}"
	log "starting nginx on $front (config .data/cluster/nginx/nginx.conf)"
	"$(nginx_bin)" -p "$data/nginx" -c "$data/nginx/nginx.conf" -e "$data/nginx/error.log"
	for _ in $(seq 50); do alive "$nginx_pid" && answers "${front##*:}" && return 0; sleep 0.1; done
	log "nginx did not start: see .data/cluster/nginx/error.log"
	exit 1
}

free_port() { # port
	answers "$1" || return 0
	log "something already listens on :$1 (a run-cluster or make run still running? make stop ends them)"
	exit 1
}

up() {
	mkdir -p "$run"
	local p
	for p in "${api_ports[@]}" "${api_metrics_ports[@]}" "${worker_ports[@]}"; do free_port "$p"; done
	stop_pids "$nginx_pid" # one left by a run that was killed outright
	free_port "${front##*:}"
	start_nodes
	export SECKILL_ENV=${SECKILL_ENV-dev}
	export SECKILL_REDIS_CLUSTER=true
	SECKILL_REDIS_ADDR=$(IFS=,; echo "${redis_ports[*]/#/127.0.0.1:}")
	export SECKILL_REDIS_ADDR
	export SECKILL_REDIS_MIN_REPLICAS=${SECKILL_REDIS_MIN_REPLICAS:-1}
	export SECKILL_TRUSTED_PROXIES=${SECKILL_TRUSTED_PROXIES:-127.0.0.1/32}
	export SECKILL_RATE_IP=0 # nginx limits per address (start_nginx)
	unset SECKILL_REDIS_MASTER_NAME
	local jaeger_bin=""
	[ -z "${JAEGER:-}" ] || jaeger_bin=$(scripts/jaeger.sh) # built once, before anything starts
	"$bin/api" migrate
	# From here on, leaving (Ctrl-C, a process that stopped, an error) stops what this run started.
	trap stop_run EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local pids=() i
	if [ -n "$jaeger_bin" ]; then
		"$jaeger_bin" --config deploy/jaeger/config.yaml >"$run/jaeger.log" 2>&1 &
		pids+=($!)
		echo $! >"$run/jaeger.pid"
		export OTEL_EXPORTER_OTLP_ENDPOINT=${OTEL_EXPORTER_OTLP_ENDPOINT:-http://127.0.0.1:4318}
	fi
	for i in "${!api_ports[@]}"; do
		SECKILL_HTTP_ADDR=127.0.0.1:${api_ports[i]} SECKILL_METRICS_ADDR=127.0.0.1:${api_metrics_ports[i]} \
			"$bin/api" >"$run/api$((i + 1)).log" 2>&1 &
		pids+=($!)
		echo $! >"$run/api$((i + 1)).pid"
	done
	for i in "${!worker_ports[@]}"; do
		SECKILL_WORKER_METRICS_ADDR=127.0.0.1:${worker_ports[i]} "$bin/worker" >"$run/worker$((i + 1)).log" 2>&1 &
		pids+=($!)
		echo $! >"$run/worker$((i + 1)).pid"
	done
	for i in "${!api_ports[@]}"; do
		p=${api_ports[i]}
		for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
		curl -fs "http://127.0.0.1:$p/readyz" >/dev/null || { log "API on :$p not ready: see .data/cluster/run/api$((i + 1)).log"; exit 1; }
	done
	start_nginx

	local traces=""
	[ -z "${jaeger_bin:-}" ] || traces=$'\n  Traces: Jaeger\'s query API at http://127.0.0.1:16686/api/traces?service=seckill-api'
	cat <<MSG

  Flash sale running at http://$front   (nginx in front of the APIs on :${api_ports[*]})
  Redis Cluster on :${redis_ports[*]} (3 masters, 3 replicas; purchases confirmed by $SECKILL_REDIS_MIN_REPLICAS replica)
  API metrics on :${api_metrics_ports[*]}; two workers (metrics on :${worker_ports[*]}). Logs: .data/cluster/run/, .data/cluster/<port>/, .data/cluster/nginx/${traces}
  Ctrl-C stops the APIs, workers and nginx; the cluster stays for the next run. \`make stop\` stops all of it.

MSG
	scripts/howto.sh "$front"
	cat <<MSG
  Which master holds sale 1:
    redis-cli -p ${redis_ports[0]} cluster keyslot '{act:1}'; redis-cli -p ${redis_ports[0]} cluster nodes

MSG
	local status=0
	wait -n "${pids[@]}" || status=$?
	log "a process stopped (exit status $status; Ctrl-C, make stop, or see .data/cluster/run/): stopping the others"
	exit "$status"
}

case "${1:-up}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
