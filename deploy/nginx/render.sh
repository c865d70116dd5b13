#!/usr/bin/env bash
# Writes a private nginx's configuration into DIR: DIR/seckill.conf, the project's front
# (deploy/nginx/seckill.conf.template) with the values below, and DIR/nginx.conf, which
# includes it and keeps its pid file (DIR/nginx.pid), error log, temporary files and
# cache (DIR/cache) in DIR.
#
#   deploy/nginx/render.sh DIR LISTEN RATE_IP IN_FLIGHT ACCESS_LOG BACKEND...
#
# LISTEN host:port; RATE_IP requests per second per client address (bursts of twice that
# more); IN_FLIGHT purchases and seats in flight from one client address (1..65535);
# ACCESS_LOG a file (with each request's upstream and time), or off; BACKEND host:port
# of each API.
# SECKILL_CORS_ORIGINS in the environment [empty], the APIs' list of origins whose pages
# may call the API: the front's own refusals carry the CORS headers for them.
# SECKILL_NGINX_REAL_IP_FROM [unix:, none], one CIDR of a balancer in front of nginx whose
# X-Forwarded-For names the client.
# Then: nginx -p DIR -c DIR/nginx.conf [-g 'daemon off;']. Used by scripts/cluster.sh,
# loadtest/run.sh and the tests (internal/testutil/nginx.go).
set -euo pipefail
[ $# -ge 6 ] || { echo "usage: $0 DIR LISTEN RATE_IP IN_FLIGHT ACCESS_LOG BACKEND..." >&2; exit 2; }
dir=$1 listen=$2 rate_ip=$3 in_flight=$4 access_log=$5
shift 5
cors_origins=${SECKILL_CORS_ORIGINS:-}
real_ip_from=${SECKILL_NGINX_REAL_IP_FROM:-unix:}
[[ $real_ip_from =~ ^(unix:|[0-9a-fA-F.:]+(/[0-9]+)?)$ ]] || { echo "$0: SECKILL_NGINX_REAL_IP_FROM: want one CIDR or unix:, got $real_ip_from" >&2; exit 2; }
# Only what origins are made of (the APIs check each entry at start).
origin_chars='^[][a-z0-9.:/, -]*$'
[[ $cors_origins =~ $origin_chars ]] || { echo "$0: SECKILL_CORS_ORIGINS: want origins such as https://shop.example, comma-separated; got $cors_origins" >&2; exit 2; }
upstream=""
# max_fails=1 fail_timeout=1s: an API that refuses a connection (it is restarting) is
# left out for 1 to 2 s, then tried again (deploy/nginx/seckill.conf.template says why).
for b in "$@"; do upstream+="server $b max_fails=1 fail_timeout=1s; "; done
mkdir -p "$dir"
# Started as root (a container's or a CI's shell), nginx would run its workers as
# nobody, who cannot reach a DIR inside a private temporary directory: they run as root.
workers_user=""
[ "$(id -u)" != 0 ] || workers_user="user root;"
sed -e "s|\${SECKILL_NGINX_LISTEN}|$listen|" -e "s|\${SECKILL_NGINX_REAL_IP_FROM}|$real_ip_from|" -e "s|\${SECKILL_NGINX_UPSTREAM}|$upstream|" \
	-e "s|\${SECKILL_NGINX_RATE_IP}|$rate_ip|" -e "s|\${SECKILL_NGINX_BURST_IP}|$((2 * rate_ip))|" \
	-e "s|\${SECKILL_NGINX_PURCHASES_IN_FLIGHT}|$in_flight|" -e "s|\${SECKILL_CORS_ORIGINS}|$cors_origins|" \
	-e "s|\${SECKILL_NGINX_CACHE_DIR}|$dir/cache|" \
	"$(dirname "$0")/seckill.conf.template" >"$dir/seckill.conf"
if [ "$access_log" = off ]; then
	logging="access_log off;"
else
	logging="log_format upstream '\$remote_addr [\$time_local] \"\$request\" \$status upstream \$upstream_addr \$request_time';
  access_log $access_log upstream;"
fi
cat >"$dir/nginx.conf" <<CONF
$workers_user
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
  $logging
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  include $dir/seckill.conf;
}
CONF
