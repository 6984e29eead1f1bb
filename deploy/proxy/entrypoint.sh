#!/bin/sh
# Runs nginx in the foreground on the configuration `sim deploy nginx` wrote, and reloads it when
# the address of a shard changes: nginx 1.22 resolves the shards' names only when it loads its
# configuration, and a restarted shard (container or pod) comes back on another address.
# Waits first until every shard's name resolves (the shards and the proxy start together).
set -eu
CONF=${SIM_PROXY_CONF:-/etc/sim-proxy/nginx.conf}
PREFIX=${SIM_PROXY_PREFIX:-/var/lib/sim-proxy}
INTERVAL=${SIM_PROXY_RESOLVE_SECONDS:-5}

hosts() { sed -n 's/^ *server \([^ ]*\):[0-9]* max_fails=0;$/\1/p' "$CONF" | sort -u; }
addresses() { for h in $(hosts); do getent hosts "$h" | awk '{ print $1 }' | sort | head -n 1; done | tr '\n' ' '; }
unresolved() { for h in $(hosts); do getent hosts "$h" >/dev/null || echo "$h"; done; }

[ -r "$CONF" ] || { echo "sim-proxy: no configuration at $CONF: mount the output of sim deploy nginx there" >&2; exit 2; }
# The prefix may be a fresh volume (a read-only root file system mounts one there): its error log
# still goes to the container's stderr.
mkdir -p "$PREFIX"
[ -e "$PREFIX/error.log" ] || ln -s /dev/stderr "$PREFIX/error.log"
while [ -n "$(unresolved)" ]; do
  echo "sim-proxy: waiting for $(unresolved | tr '\n' ' ')to resolve" >&2
  sleep 1
done

nginx -p "$PREFIX" -c "$CONF" -e stderr -g 'daemon off;' &
nginx_pid=$!
trap 'kill -TERM "$nginx_pid" 2>/dev/null; wait "$nginx_pid"; exit 0' TERM INT
seen=$(addresses)
while kill -0 "$nginx_pid" 2>/dev/null; do
  sleep "$INTERVAL" &
  wait $! || true
  now=$(addresses)
  if [ "$now" != "$seen" ] && [ -z "$(unresolved)" ]; then
    echo "sim-proxy: a shard's address changed ($seen-> $now): reloading nginx" >&2
    nginx -p "$PREFIX" -c "$CONF" -e stderr -s reload && seen=$now
  fi
done
wait "$nginx_pid"
