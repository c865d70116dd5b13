#!/usr/bin/env bash
# Prints how to use a running service at ADDR (host:port): sign-in links for the web
# pages, an admin and a buyer token (dev mode, valid 24h) and the curl lines of a first
# sale. Used by scripts/run.sh (make run) and scripts/cluster.sh (make run-cluster),
# after their own first lines; needs bin/api (or SECKILL_BIN_DIR/api) and the environment
# the service runs with.
#   scripts/howto.sh ADDR
set -euo pipefail
cd "$(dirname "$0")/.."
addr=${1:?usage: $0 host:port}

api=${SECKILL_BIN_DIR:-bin}/api
admin=$("$api" token -user 1 -admin -ttl 24h)
buyer=$("$api" token -user 42 -ttl 24h)
# A server listening on all interfaces is reached on this machine at 127.0.0.1.
page=$addr
case $page in 0.0.0.0:* | :*) page=127.0.0.1:${addr##*:} ;; esac
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
cat <<MSG
  Web pages (dev mode sign-in links, valid 24h; open them in a browser):
    Buyer: http://$page/#token=$buyer
    Admin: http://$page/admin#token=$admin

  Tokens (dev mode, valid 24h):
    export ADMIN=$admin
    export BUYER=$buyer

  Create a sale (admin), keeping its id in ID:
    ID=\$(curl -s -X POST http://$addr/api/v1/admin/activities -H "Authorization: Bearer \$ADMIN" \\
      -d '{"name":"Launch","product_name":"Phone","price_cents":49900,"stock":100,"per_user_limit":2,"starts_at":"$start","ends_at":"$end"}' \\
      | sed -E 's/^[{]"id":([0-9]+).*/\1/'); echo "sale \$ID"
  Buy (buyer):
    curl -s -X POST http://$addr/api/v1/activities/\$ID/orders -H "Authorization: Bearer \$BUYER" \\
      -H 'Idempotency-Key: first-try' -d '{"quantity":1}'
  See the order move from queued to created:
    curl -s http://$addr/api/v1/orders -H "Authorization: Bearer \$BUYER"
  Sale figures (admin):
    curl -s http://$addr/api/v1/admin/activities/\$ID/stats -H "Authorization: Bearer \$ADMIN"

MSG
