#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "The secure link's handshake and the first
# connection": what the secure link's handshake adds to the first
# connection across geo-8mbit's link at RTT $1 (600ms unless given),
# against the plain link. For each link (`none`, then `noise`), two
# transparent gateways (scps-rate) start; curl fetches 1 kB from nginx
# behind gwB at once when both say they are ready (the tunnel's
# handshake may still be under way), again right after, and, with the
# gateways started afresh, once both say the secure link is up. Each line gives
# curl's time to connect and to the first byte of the answer. Needs root
# (namespaces, TPROXY).
#
#   scripts/bench-first-connection.sh [RTT]
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-600ms}
ber=0
cargo build --release -q -p scps
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps

. scripts/lib/gateway-topology.sh
. scripts/lib/emulated-link.sh

mkdir -p "$work/www" "$work/tmp"
head -c 1000 /dev/urandom >"$work/www/1kB.bin"
printf '%s\n' "worker_processes 1;" "user root;" "pid $work/nginx.pid;" "error_log $work/nginx.log;" \
  "events { worker_connections 64; }" \
  "http { access_log off; client_body_temp_path $work/tmp; proxy_temp_path $work/tmp;" \
  "  fastcgi_temp_path $work/tmp; uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;" \
  "  server { listen 10.96.4.2:8080; root $work/www; } }" >"$work/nginx.conf"
ip netns exec "$s" nginx -p "$work" -e "$work/nginx.log" -c "$work/nginx.conf" -g 'daemon off;' &
server_pids="$!"
for _ in $(seq 200); do
  [ -n "$(ip netns exec "$s" ss -Hltn "sport = :8080")" ] && break
  sleep 0.05
done

fetch() {
  ip netns exec "$c" curl -sS -o /dev/null --max-time 30 \
    -w "%{time_connect} %{time_starttransfer}" http://10.96.4.2:8080/1kB.bin |
    awk -v what="$1" -v link="$link_security" \
      '{printf "%-6s %-28s connect %6.3f s  first byte %6.3f s\n", link, what, $1, $2}'
}
pair() {
  gateway "$a" scps-rate 10.96.1.0/24 10.96.4.0/24
  gateway "$b" scps-rate 10.96.4.0/24 10.96.1.0/24
}

for link_security in none noise; do
  pair
  fetch "first, at ready"
  fetch "second"
  fetch "third"
  stop_gateways
  pair
  link_up
  fetch "first, once the link is up"
  stop_gateways
done
