#!/usr/bin/env bash
# The scaled-out service on this machine, from nothing:
#   scripts/cluster.sh up     a Redis Cluster of 3 masters + 3 replicas (redis-server
#                             processes, AOF always, data under .data/cluster/), three API
#                             instances and two workers on it, nginx in front; prints the
#                             URL and tokens, then stays in the foreground (Ctrl-C stops
#                             the APIs and workers; the cluster and nginx stay for the next
#                             run, and `make stop` stops them)
#   scripts/cluster.sh down   stop everything it started, by pid file
# Called by `make run-cluster` after scripts/services.sh up (MariaDB, packages) and the
# build. Ports (environment): SECKILL_CLUSTER_PORTS [7001 7002 7003 7004 7005 7006],
# SECKILL_API_PORTS [8081 8082 8083], SECKILL_WORKER_METRICS_PORTS [9092 9093],
# SECKILL_FRONT_ADDR [127.0.0.1:8080] (nginx).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
data="$root/.data/cluster"
run="$data/run"
read -r -a redis_ports <<<"${SECKILL_CLUSTER_PORTS:-7001 7002 7003 7004 7005 7006}"
read -r -a api_ports <<<"${SECKILL_API_PORTS:-8081 8082 8083}"
read -r -a worker_ports <<<"${SECKILL_WORKER_METRICS_PORTS:-9092 9093}"
front=${SECKILL_FRONT_ADDR:-127.0.0.1:8080}

log() { printf 'cluster: %s\n' "$*" >&2; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
nginx_bin() { command -v nginx || echo /usr/sbin/nginx; }

stop_pid() { # pidfile
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0 # gone meanwhile: its process stopped with the foreground run
	if kill -0 "$pid" 2>/dev/null; then
		log "stopping $(basename "$1" .pid) (pid $pid)"
		kill "$pid"
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$1"
}

down() {
	for f in "$run"/*.pid "$data"/nginx/nginx.pid "$data"/redis-*/redis.pid; do
		[ -e "$f" ] && stop_pid "$f"
	done
	return 0
}

# Six nodes. Masters refuse writes without a replica in sync (min-replicas-to-write 1),
# so an isolated master cannot take purchases alone; a master down stops its own slots
# only (cluster-require-full-coverage no). docs/scale-out.md says why.
start_nodes() {
	local p
	for p in "${redis_ports[@]}"; do
		answers "$p" && continue
		mkdir -p "$data/redis-$p"
		redis-server --bind 127.0.0.1 --port "$p" --dir "$data/redis-$p" --daemonize yes \
			--pidfile "$data/redis-$p/redis.pid" --logfile "$data/redis-$p/redis.log" \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
			--cluster-require-full-coverage no --appendonly yes --appendfsync always --save "" \
			--min-replicas-to-write 1 --min-replicas-max-lag 10 --repl-diskless-sync-delay 0
	done
	for p in "${redis_ports[@]}"; do
		for _ in $(seq 100); do answers "$p" && break; sleep 0.1; done
		answers "$p" || { log "redis-server on :$p did not start: see .data/cluster/redis-$p/redis.log"; exit 1; }
	done
	if [ "$(redis-cli -p "${redis_ports[0]}" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')" = 1 ]; then
		log "creating the cluster (3 masters, 3 replicas)"
		redis-cli --cluster create "${redis_ports[@]/#/127.0.0.1:}" --cluster-replicas 1 --cluster-yes >"$data/create.log"
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

start_nginx() {
	mkdir -p "$data/nginx"
	local upstream="" p
	for p in "${api_ports[@]}"; do upstream+="server 127.0.0.1:$p; "; done
	sed -e "s|\${SECKILL_NGINX_LISTEN}|$front|" -e "s|\${SECKILL_NGINX_UPSTREAM}|$upstream|" \
		deploy/nginx/seckill.conf.template >"$data/nginx/seckill.conf"
	cat >"$data/nginx/nginx.conf" <<CONF
worker_processes 2;
pid $data/nginx/nginx.pid;
error_log $data/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $data/nginx/body;
  proxy_temp_path $data/nginx/proxy;
  fastcgi_temp_path $data/nginx/fastcgi;
  uwsgi_temp_path $data/nginx/uwsgi;
  scgi_temp_path $data/nginx/scgi;
  include $data/nginx/seckill.conf;
}
CONF
	stop_pid "$data/nginx/nginx.pid" # a new config on every run
	"$(nginx_bin)" -p "$data/nginx" -c "$data/nginx/nginx.conf" -e "$data/nginx/error.log"
}

up() {
	mkdir -p "$run"
	local p
	for p in "${api_ports[@]}" "${worker_ports[@]}"; do
		answers "$p" && { log "something already listens on :$p (a run-cluster still running? make stop ends it)"; exit 1; }
	done
	start_nodes
	export SECKILL_ENV=${SECKILL_ENV-dev}
	export SECKILL_REDIS_CLUSTER=true
	SECKILL_REDIS_ADDR=$(IFS=,; echo "${redis_ports[*]/#/127.0.0.1:}")
	export SECKILL_REDIS_ADDR
	export SECKILL_REDIS_MIN_REPLICAS=${SECKILL_REDIS_MIN_REPLICAS:-1}
	export SECKILL_TRUSTED_PROXIES=${SECKILL_TRUSTED_PROXIES:-127.0.0.1/32}
	bin/api migrate
	local pids=() i
	for i in "${!api_ports[@]}"; do
		SECKILL_HTTP_ADDR=127.0.0.1:${api_ports[i]} bin/api >"$run/api$((i + 1)).log" 2>&1 &
		pids+=($!)
		echo $! >"$run/api$((i + 1)).pid"
	done
	for i in "${!worker_ports[@]}"; do
		SECKILL_WORKER_METRICS_ADDR=127.0.0.1:${worker_ports[i]} bin/worker >"$run/worker$((i + 1)).log" 2>&1 &
		pids+=($!)
		echo $! >"$run/worker$((i + 1)).pid"
	done
	trap 'for f in "$run"/*.pid; do [ -e "$f" ] && stop_pid "$f"; done' EXIT INT TERM
	for p in "${api_ports[@]}"; do
		for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
		curl -fs "http://127.0.0.1:$p/readyz" >/dev/null || { log "API on :$p not ready: see .data/cluster/run/"; exit 1; }
	done
	start_nginx

	local admin buyer start end
	admin=$(bin/api token -user 1 -admin -ttl 24h)
	buyer=$(bin/api token -user 42 -ttl 24h)
	start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	end=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
	cat <<MSG

  Flash sale running at http://$front   (nginx in front of APIs on :${api_ports[*]})
  Redis Cluster on :${redis_ports[*]} (3 masters, 3 replicas; purchases confirmed by $SECKILL_REDIS_MIN_REPLICAS replica)
  Two workers (metrics on :${worker_ports[*]}). Logs: .data/cluster/run/, .data/cluster/redis-*/
  Ctrl-C stops the APIs and workers; \`make stop\` stops the cluster and nginx too.

  Web pages (dev mode sign-in links, valid 24h):
    Buyer: http://$front/#token=$buyer
    Admin: http://$front/admin#token=$admin

  Tokens (dev mode, valid 24h):
    export ADMIN=$admin
    export BUYER=$buyer

  Create a sale (admin):
    curl -s -X POST http://$front/api/v1/admin/activities -H "Authorization: Bearer \$ADMIN" \\
      -d '{"name":"Launch","product_name":"Phone","price_cents":49900,"stock":100,"per_user_limit":2,"starts_at":"$start","ends_at":"$end"}'
  Buy (buyer; use the id the line above printed):
    curl -s -X POST http://$front/api/v1/activities/1/orders -H "Authorization: Bearer \$BUYER" \\
      -H 'Idempotency-Key: first-try' -d '{"quantity":1}'
  Which master holds sale 1:
    redis-cli -p ${redis_ports[0]} cluster keyslot '{act:1}'; redis-cli -p ${redis_ports[0]} cluster nodes

MSG
	wait -n "${pids[@]}" || true
	log "a process stopped; see .data/cluster/run/"
}

case "${1:-up}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
