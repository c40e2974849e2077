#!/usr/bin/env bash
# Starts a local cluster on this machine: N service instances over one PostgreSQL database, rate
# limits shared through Redis, and nginx in front of them on $PORT. Stops everything on Ctrl-C.
#
#   scripts/cluster.sh                       # 3 instances, http://127.0.0.1:8080
#   INSTANCES=5 PORT=9000 scripts/cluster.sh
#
# Needs: nginx (Debian: apt-get install nginx-light), a PostgreSQL server and Redis. The database of
# DATABASE_URL is created when missing, migrated, and loaded with the demo data when empty.
set -euo pipefail
cd "$(dirname "$0")/.."

INSTANCES=${INSTANCES:-3}
PORT=${PORT:-8080}
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/nonsense}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
RUN_DIR=${RUN_DIR:-$(mktemp -d /tmp/nonsense-cluster.XXXXXX)}
export DATABASE_URL REDIS_URL TRUST_PROXY=127.0.0.1 BASE_URL=${BASE_URL:-http://127.0.0.1:$PORT} LOG_LEVEL=${LOG_LEVEL:-warn}

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx is needed: apt-get install nginx-light" >&2; exit 1; }

# The database: created when missing (connecting to the server's "postgres" database to do it).
db_name=$(node -e 'console.log(new URL(process.argv[1]).pathname.slice(1))' "$DATABASE_URL")
server_url=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/postgres"; console.log(u.href)' "$DATABASE_URL")
if ! psql "$server_url" -tAc "select 1 from pg_database where datname = '$db_name'" | grep -q 1; then
  psql "$server_url" -qc "create database \"$db_name\""
fi
node bin/nonsense.js migrate
node bin/nonsense.js demo

pids=()
cleanup() {
  trap - EXIT INT TERM
  [ -f "$RUN_DIR/nginx.pid" ] && kill "$(cat "$RUN_DIR/nginx.pid")" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# The allocator's settings of `npm start` (package.json; docs/deployment.md, "Memory"), unless set.
tunables=${GLIBC_TUNABLES-$(node -p 'require("./package.json").scripts.start.match(/GLIBC_TUNABLES=(\S+)/)[1]')}
upstreams=""
for i in $(seq 1 "$INSTANCES"); do
  port=$((PORT + i))
  PORT=$port GLIBC_TUNABLES=$tunables node bin/nonsense.js serve >"$RUN_DIR/instance-$i.log" 2>&1 &
  pids+=("$!")
  echo "$!" >"$RUN_DIR/instance-$i.pid"
  upstreams+="    server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n'
done

cat >"$RUN_DIR/nginx.conf" <<CONF
worker_processes 1;
pid $RUN_DIR/nginx.pid;
error_log $RUN_DIR/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $RUN_DIR/client_body;
  proxy_temp_path $RUN_DIR/proxy;
  fastcgi_temp_path $RUN_DIR/fastcgi;
  uwsgi_temp_path $RUN_DIR/uwsgi;
  scgi_temp_path $RUN_DIR/scgi;
  upstream nonsense {
$upstreams    keepalive 32;
  }
  server {
    listen 127.0.0.1:$PORT;
    client_max_body_size 1m;
    location / {
      proxy_pass http://nonsense;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      # A killed instance: reads go to the next one. Writes are retried only when the instance never
      # received them (connection refused), so an acknowledged write is never sent twice.
      proxy_next_upstream error timeout http_502 http_503;
      proxy_next_upstream_tries 3;
      proxy_buffering off;
    }
  }
}
CONF

for i in $(seq 1 "$INSTANCES"); do
  until curl -fs "http://127.0.0.1:$((PORT + i))/readyz" >/dev/null; do sleep 0.2; done
done
"$NGINX" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
echo "cluster ready: http://127.0.0.1:$PORT ($INSTANCES instances, logs and pids in $RUN_DIR)"
wait
