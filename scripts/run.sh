#!/usr/bin/env bash
# Runs the API and the worker in the foreground (Ctrl-C stops both). Dev mode unless
# SECKILL_ENV says otherwise. Called by `make run` after the services are up.
set -euo pipefail
cd "$(dirname "$0")/.."
export SECKILL_ENV=${SECKILL_ENV-dev}
# One API and no front to take it out of rotation: Ctrl-C need not wait the 5 s a
# deploy gives load balancers (docs/deploying.md).
export SECKILL_SHUTDOWN_DELAY=${SECKILL_SHUTDOWN_DELAY:-0s}
addr=${SECKILL_HTTP_ADDR:-127.0.0.1:8080}
mkdir -p .data/logs

# JAEGER=1: a Jaeger (deploy/jaeger/config.yaml) takes both processes' traces, and its
# query API answers on 127.0.0.1:16686 (docs/metrics.md, "Traces").
jaeger=
if [ -n "${JAEGER:-}" ]; then
	"$(scripts/jaeger.sh)" --config deploy/jaeger/config.yaml >.data/logs/jaeger.log 2>&1 &
	jaeger=$!
	export OTEL_EXPORTER_OTLP_ENDPOINT=${OTEL_EXPORTER_OTLP_ENDPOINT:-http://127.0.0.1:4318}
fi

bin/api migrate
bin/api >.data/logs/api.log 2>&1 &
api=$!
bin/worker >.data/logs/worker.log 2>&1 &
worker=$!
stop() {
	kill "$api" "$worker" $jaeger 2>/dev/null || true
	wait "$api" "$worker" $jaeger 2>/dev/null || true
}
trap stop EXIT INT TERM

for _ in $(seq 100); do
	curl -fs "http://$addr/healthz" >/dev/null 2>&1 && break
	kill -0 "$api" 2>/dev/null || { cat .data/logs/api.log; exit 1; }
	sleep 0.1
done

cat <<MSG

  Flash sale running at http://$addr   (logs: .data/logs/api.log, .data/logs/worker.log)
  API pid $api, worker pid $worker. Ctrl-C stops both.${jaeger:+
  Traces: Jaeger pid $jaeger, query API http://127.0.0.1:16686/api/traces?service=seckill-api}

MSG
scripts/howto.sh "$addr"
wait -n "$api" "$worker" || true
echo "a process stopped; see .data/logs" >&2
