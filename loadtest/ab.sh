#!/usr/bin/env bash
# ApacheBench (Debian's apache2-utils) on one hot endpoint of a running API.
#
#   loadtest/ab.sh [soldout|activity|healthz]        (default soldout)
#   loadtest/run.sh ab                               (starts its own API and worker first)
#
#   soldout   POST /api/v1/activities/{id}/orders on a sold-out sale: the answer most of
#             a flash crowd gets, one user's token (the sold-out flag answers before any
#             per-user state is read)
#   activity  GET /api/v1/activities/{id}: the product page everyone refreshes
#   healthz   GET /healthz: the yardstick
#
# Environment: BASE_URL [http://127.0.0.1:8080], CONNS [100], SECONDS_ [10],
# CROWD [bin/crowd; built when missing] signs the tokens and creates the sale, with
# SECKILL_JWT_SECRET (the dev secret when unset). The API needs SECKILL_RATE_IP=0 and
# SECKILL_RATE_USER=0.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ab >/dev/null || {
	echo "ab is missing: apt-get install -y apache2-utils" >&2
	exit 1
}
base=${BASE_URL:-http://127.0.0.1:8080}
conns=${CONNS:-100}
secs=${SECONDS_:-10}
crowd=${CROWD:-bin/crowd}
[ -x "$crowd" ] || go build -o "$crowd" ./loadtest/crowd
what=${1:-soldout}

# ab speaks HTTP/1.0 with -k keep-alive, needs an absolute URL with a path, and stops
# at -n requests or -t seconds, whichever comes first.
case $what in
soldout)
	id=$("$crowd" sale -api "$base" -stock 1 -limit 1 -sold-out)
	token=$("$crowd" token -user 7 -api "$base")
	body=$(mktemp)
	trap 'rm -f "$body"' EXIT
	printf '{"quantity":1}' >"$body"
	echo "ab: POST $base/api/v1/activities/$id/orders (sold out), $conns connections, ${secs}s"
	ab -k -q -c "$conns" -t "$secs" -n 10000000 -p "$body" -T application/json \
		-H "Authorization: Bearer $token" "$base/api/v1/activities/$id/orders"
	;;
activity)
	id=$("$crowd" sale -api "$base" -stock 1000 -limit 1)
	echo "ab: GET $base/api/v1/activities/$id, $conns connections, ${secs}s"
	ab -k -q -c "$conns" -t "$secs" -n 10000000 "$base/api/v1/activities/$id"
	;;
healthz)
	echo "ab: GET $base/healthz, $conns connections, ${secs}s"
	ab -k -q -c "$conns" -t "$secs" -n 10000000 "$base/healthz"
	;;
*)
	echo "usage: $0 [soldout|activity|healthz]" >&2
	exit 2
	;;
esac
