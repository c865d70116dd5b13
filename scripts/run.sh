#!/usr/bin/env bash
# Runs the API and the worker in the foreground (Ctrl-C stops both). Dev mode unless
# SECKILL_ENV says otherwise. Called by `make run` after the services are up.
set -euo pipefail
cd "$(dirname "$0")/.."
export SECKILL_ENV=${SECKILL_ENV-dev}
addr=${SECKILL_HTTP_ADDR:-127.0.0.1:8080}
mkdir -p .data/logs

bin/api migrate
bin/api >.data/logs/api.log 2>&1 &
api=$!
bin/worker >.data/logs/worker.log 2>&1 &
worker=$!
stop() {
	kill "$api" "$worker" 2>/dev/null || true
	wait "$api" "$worker" 2>/dev/null || true
}
trap stop EXIT INT TERM

for _ in $(seq 100); do
	curl -fs "http://$addr/healthz" >/dev/null 2>&1 && break
	kill -0 "$api" 2>/dev/null || { cat .data/logs/api.log; exit 1; }
	sleep 0.1
done

admin=$(bin/api token -user 1 -admin -ttl 24h)
buyer=$(bin/api token -user 42 -ttl 24h)
# A server listening on all interfaces is reached on this machine at 127.0.0.1.
page=$addr
case $page in 0.0.0.0:* | :*) page=127.0.0.1:${addr##*:} ;; esac
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
cat <<MSG

  Flash sale running at http://$addr   (logs: .data/logs/api.log, .data/logs/worker.log)
  API pid $api, worker pid $worker. Ctrl-C stops both.

  Web pages (dev mode sign-in links, valid 24h; open them in a browser):
    Buyer: http://$page/#token=$buyer
    Admin: http://$page/admin#token=$admin

  Tokens (dev mode, valid 24h):
    export ADMIN=$admin
    export BUYER=$buyer

  Create a sale (admin):
    curl -s -X POST http://$addr/api/v1/admin/activities -H "Authorization: Bearer \$ADMIN" \\
      -d '{"name":"Launch","product_name":"Phone","price_cents":49900,"stock":100,"per_user_limit":2,"starts_at":"$start","ends_at":"$end"}'
  Buy (buyer; use the id the line above printed):
    curl -s -X POST http://$addr/api/v1/activities/1/orders -H "Authorization: Bearer \$BUYER" \\
      -H 'Idempotency-Key: first-try' -d '{"quantity":1}'
  See the order move from queued to created:
    curl -s http://$addr/api/v1/orders -H "Authorization: Bearer \$BUYER"
  Sale figures (admin):
    curl -s http://$addr/api/v1/admin/activities/1/stats -H "Authorization: Bearer \$ADMIN"

MSG
wait -n "$api" "$worker" || true
echo "a process stopped; see .data/logs" >&2
