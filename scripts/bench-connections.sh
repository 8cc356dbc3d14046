#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "Capacity: new connections and memory": how
# many new connections a second two transparent gateways carry, and what
# they refuse. ApacheBench (`ab`, Debian's apache2-utils) fetches a 1 kB
# file from nginx behind gwB for SECONDS with CONCURRENCY fetches under
# way, each on a new connection (no keep-alive), first directly and then
# through the gateways on a clean path (the middle node a plain router).
# Prints ab's rate and failures, and each gateway's counts as it stops
# (the few connections reset are those under way when ab stops). Then
# memory: each gateway's resident size idle, after the fetches, with HELD
# connections open at once through it (crates/cli/examples/
# hold_connections.rs, keep-alive), right after they close, and one and
# two minutes later (the link connections wait out TIME-WAIT, 60 s, in
# between).
# Needs root (namespaces, TPROXY).
#
#   scripts/bench-connections.sh [SECONDS] [CONCURRENCY] [HELD] [LABEL] [ROUNDS]
#
# Defaults: 60 64 10000 scps-vj 1. With ROUNDS, the connections are held
# and closed that many times (memory that grows round after round leaks).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
concurrency=${2:-64}
held=${3:-10000}
label=${4:-scps-vj}
rounds=${5:-1}
command -v ab >/dev/null || { echo "needs ab: apt install apache2-utils" >&2; exit 1; }
cargo build --release -q -p scps --example hold_connections
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps
holder=$target/release/examples/hold_connections
. scripts/lib/gateway-topology.sh
# Room for every connection held: small relay buffers (a 1 kB answer
# needs no more), and a limit above $held.
relay_buffer=64KB
relay_extra="max_connections = $((held + 1000))
memory = \"4GB\""

mkdir -p "$work/www" "$work/tmp"
head -c 1000 /dev/urandom >"$work/www/1kB.bin"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 65536;
user root;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_timeout 0;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  server { listen 10.96.4.2:8080 backlog=4096; root $work/www; }
  server { listen 10.96.4.2:8081 backlog=4096; root $work/www; keepalive_timeout 600s; }
}
EOF
ip netns exec "$s" nginx -p "$work" -e "$work/error.log" -c "$work/nginx.conf"
server_cleanup() {
  kill "$(cat "$work/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  cleanup
}
trap server_cleanup EXIT INT TERM
# The client reuses its ports as fast as the kernel lets it.
ip netns exec "$c" sysctl -q -w net.ipv4.ip_local_port_range="1024 65000" net.ipv4.tcp_tw_reuse=1

# One run of ab from the client: its rate, failures and non-2xx answers.
fetches() {
  local report
  report=$(ip netns exec "$c" ab -q -r -s 10 -t "$seconds" -n 10000000 -c "$concurrency" \
    http://10.96.4.2:8080/1kB.bin 2>&1) || true
  awk -v what="$1" '
    /^Complete requests:/ {done = $3}
    /^Failed requests:/ {failed = $3}
    /^Non-2xx responses:/ {non2xx = $3}
    /^Requests per second:/ {rate = $4}
    /^Time taken for tests:/ {took = $5}
    END {printf "%-22s %8.0f connections/s  %d fetched in %.1f s, %d failed, %d not 2xx\n",
         what, rate, done, took, failed, non2xx}' <<<"$report"
}

echo "new connections: ab -c $concurrency for ${seconds}s, 1 kB each, $label across a clean path"
echo "   (load average: $(cut -d' ' -f1-3 /proc/loadavg); Linux $(uname -r); $(nproc) CPUs)"
fetches direct
gateway "$a" "$label" 10.96.1.0/24 10.96.4.0/24
gateway "$b" "$label" 10.96.4.0/24 10.96.1.0/24
link_up
read -r pid_a pid_b <<<"$gateway_pids"
# Each gateway's resident size in MB, labelled $1.
resident() {
  printf '%-34s gwA %6.1f MB   gwB %6.1f MB\n' "$1" \
    "$(awk '/^VmRSS/ {print $2 / 1024}' "/proc/$pid_a/status")" \
    "$(awk '/^VmRSS/ {print $2 / 1024}' "/proc/$pid_b/status")"
}
# Waits up to $2 seconds for the holder to print $1.
holder_says() {
  for _ in $(seq $(($2 * 10))); do
    grep -q "^$1" "$work/hold.out" && return
    sleep 0.1
  done
  echo "the holder did not say '$1':" >&2
  cat "$work/hold.out" >&2
  exit 1
}
resident "memory idle"
fetches "through the gateways"
resident "memory after the fetches"
for round in $(seq "$rounds"); do
  [ "$rounds" -gt 1 ] && echo "round $round of $rounds"
  rm -f "$work/hold.in" "$work/hold.out"
  mkfifo "$work/hold.in"
  ip netns exec "$c" "$holder" 10.96.4.2:8081 /1kB.bin "$held" <"$work/hold.in" >"$work/hold.out" 2>&1 &
  server_pids="${server_pids:-} $!"
  exec 8>"$work/hold.in"
  holder_says held 300
  resident "memory with $held held"
  exec 8>&-
  holder_says closed 60
  resident "memory right after they close"
  sleep 60
  resident "memory one minute later"
  sleep 60
  resident "memory two minutes later"
done
stop_gateways
grep -h "stopped;" "$work/$a.log" "$work/$b.log" | sed 's/^/   /'
for g in "$a" "$b"; do
  printf '   %s: %d warnings and errors logged\n' "$g" "$(grep -c "WARN\|ERROR" "$work/$g.log" || true)"
  grep -h "WARN\|ERROR" "$work/$g.log" | cut -c1-300 | sort | uniq -c | sort -rn | head -n 3 | sed 's/^/      /' || true
done
