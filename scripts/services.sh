#!/usr/bin/env bash
# Brings up what the service needs on this machine, from nothing:
#   scripts/services.sh up     install Redis, MariaDB, nginx (the front of make run-cluster
#                              and of the tests), chromium (for the browser tests),
#                              docker-compose and promtool (the checks of deploy/)
#                              from Debian packages when missing,
#                              start them (data under .data/) when nothing answers on the
#                              configured ports, create the database and the user.
#   scripts/services.sh down   stop the servers this script started (by their pid files).
#   scripts/services.sh status say what answers where.
# Addresses come from SECKILL_REDIS_ADDR and SECKILL_MYSQL_DSN, as for the service.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data="$root/.data"
redis_addr=${SECKILL_REDIS_ADDR:-127.0.0.1:6379}
mysql_dsn=${SECKILL_MYSQL_DSN:-'seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true'}

redis_host=${redis_addr%:*}
redis_port=${redis_addr##*:}
# user:password@tcp(host:port)/dbname?params
mysql_user=$(sed -E 's/^([^:@]*).*/\1/' <<<"$mysql_dsn")
mysql_pass=$(sed -E 's/^[^:@]*:?([^@]*)@.*/\1/' <<<"$mysql_dsn")
mysql_host=$(sed -E 's/.*@tcp\(([^:)]*).*/\1/' <<<"$mysql_dsn")
mysql_port=$(sed -E 's/.*@tcp\([^:)]*:?([0-9]*)\).*/\1/' <<<"$mysql_dsn")
mysql_port=${mysql_port:-3306}
mysql_db=$(sed -E 's/.*\)\/([^?]*).*/\1/' <<<"$mysql_dsn")

log() { printf 'services: %s\n' "$*" >&2; }

answers() { # host port
	(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

install_missing() {
	local pkgs=()
	command -v redis-server >/dev/null || pkgs+=(redis-server)
	command -v redis-cli >/dev/null || pkgs+=(redis-tools)
	command -v mariadbd >/dev/null || pkgs+=(mariadb-server)
	command -v mariadb >/dev/null || pkgs+=(mariadb-client)
	command -v chromium >/dev/null || pkgs+=(chromium fonts-liberation) # the browser tests of web/
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs+=(nginx) # the front of make run-cluster and the e2e tests
	command -v docker-compose >/dev/null || pkgs+=(docker-compose) # deploy/: docker-compose.yml checked without an engine
	command -v promtool >/dev/null || pkgs+=(prometheus)           # deploy/: the alert rules' unit tests
	[ ${#pkgs[@]} -eq 0 ] && return 0
	log "installing ${pkgs[*]} from Debian packages"
	if [ "$(id -u)" -ne 0 ]; then
		log "not root: install ${pkgs[*]} yourself (sudo apt-get install ${pkgs[*]})"
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

start_redis() {
	if answers "$redis_host" "$redis_port"; then
		log "redis answers on $redis_addr"
		return 0
	fi
	mkdir -p "$data/redis"
	log "starting redis-server on $redis_addr (data in .data/redis, AOF fsynced before every answer)"
	redis-server --bind "$redis_host" --port "$redis_port" --dir "$data/redis" \
		--daemonize yes --pidfile "$data/redis/redis.pid" --logfile "$data/redis/redis.log" \
		--appendonly yes --appendfsync always --save "" --protected-mode no
	for _ in $(seq 100); do
		answers "$redis_host" "$redis_port" && return 0
		sleep 0.1
	done
	log "redis did not start: see .data/redis/redis.log"
	exit 1
}

mysql_socket="$data/mariadb/mysqld.sock"

start_mariadb() {
	if answers "$mysql_host" "$mysql_port"; then
		log "mariadb answers on $mysql_host:$mysql_port"
		return 0
	fi
	local dir="$data/mariadb"
	# its own tmpdir: bootstraps side by side in /tmp can clash on temporary tables' names
	mkdir -p "$dir/tmp"
	if [ ! -d "$dir/db/mysql" ]; then
		log "creating a MariaDB data directory in .data/mariadb"
		mariadb-install-db --no-defaults --datadir="$dir/db" --tmpdir="$dir/tmp" --user="$(id -un)" \
			--auth-root-authentication-method=socket --skip-test-db >"$dir/install.log" 2>&1
	fi
	log "starting mariadbd on $mysql_host:$mysql_port (data in .data/mariadb)"
	# setsid: the server outlives the make target that started it; `make stop` ends it.
	setsid mariadbd --no-defaults --datadir="$dir/db" --tmpdir="$dir/tmp" --socket="$mysql_socket" \
		--port="$mysql_port" --bind-address="$mysql_host" --user="$(id -un)" \
		--pid-file="$dir/mariadbd.pid" --log-error="$dir/error.log" \
		--innodb-buffer-pool-size=256M --max-connections=500 \
		</dev/null >/dev/null 2>&1 &
	for _ in $(seq 300); do
		answers "$mysql_host" "$mysql_port" && [ -S "$mysql_socket" ] && return 0
		sleep 0.1
	done
	log "mariadbd did not start: see .data/mariadb/error.log"
	exit 1
}

# The service's user may create its own database and the test schemas (seckill_test_*).
create_database() {
	if mariadb -h "$mysql_host" -P "$mysql_port" -u "$mysql_user" -p"$mysql_pass" \
		-e "CREATE DATABASE IF NOT EXISTS \`$mysql_db\`; CREATE DATABASE IF NOT EXISTS \`${mysql_db}_probe\`; DROP DATABASE \`${mysql_db}_probe\`" 2>/dev/null; then
		log "database $mysql_db and user $mysql_user ready"
		return 0
	fi
	local sock=""
	for s in "$mysql_socket" /run/mysqld/mysqld.sock /var/run/mysqld/mysqld.sock; do
		[ -S "$s" ] && { sock=$s; break; }
	done
	if [ -z "$sock" ]; then
		log "cannot log in as $mysql_user, and no local root socket to create it with"
		exit 1
	fi
	log "creating database $mysql_db and user $mysql_user (as root through $sock)"
	mariadb --socket="$sock" -u root <<SQL
CREATE DATABASE IF NOT EXISTS \`$mysql_db\`;
CREATE USER IF NOT EXISTS '$mysql_user'@'localhost' IDENTIFIED BY '$mysql_pass';
CREATE USER IF NOT EXISTS '$mysql_user'@'%' IDENTIFIED BY '$mysql_pass';
GRANT ALL PRIVILEGES ON \`${mysql_db}%\`.* TO '$mysql_user'@'localhost';
GRANT ALL PRIVILEGES ON \`${mysql_db}%\`.* TO '$mysql_user'@'%';
FLUSH PRIVILEGES;
SQL
}

stop_pidfile() { # pidfile name
	[ -f "$1" ] || return 0
	local pid
	pid=$(cat "$1")
	if kill -0 "$pid" 2>/dev/null; then
		log "stopping $2 (pid $pid)"
		kill "$pid"
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$1"
}

case "${1:-up}" in
up)
	install_missing
	start_redis
	start_mariadb
	create_database
	;;
down)
	stop_pidfile "$data/redis/redis.pid" redis-server
	stop_pidfile "$data/mariadb/mariadbd.pid" mariadbd
	;;
status)
	answers "$redis_host" "$redis_port" && log "redis: $redis_addr answers" || log "redis: nothing on $redis_addr"
	answers "$mysql_host" "$mysql_port" && log "mariadb: $mysql_host:$mysql_port answers" || log "mariadb: nothing on $mysql_host:$mysql_port"
	;;
*)
	echo "usage: $0 up|down|status" >&2
	exit 2
	;;
esac
