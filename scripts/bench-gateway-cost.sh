#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "What the gateways cost on a clean path":
# iperf3 (one TCP connection, SECONDS long) and the connection set-up rate
# (COUNT sequential curl fetches of a small file from nginx), directly and
# through two transparent gateways, with no impairment between them; and
# the CPU time each gateway spent per GB carried. Needs root.
#
#   scripts/bench-gateway-cost.sh [LABEL] [SECONDS] [COUNT]
#
# Defaults: scps-vj 10 200. Topology: scripts/lib/gateway-topology.sh,
# the middle node a plain router.
set -euo pipefail
cd "$(dirname "$0")/.."
label=${1:-scps-vj}
seconds=${2:-10}
count=${3:-200}
cargo build --release -q -p scps
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps
. scripts/lib/gateway-topology.sh

mkdir -p "$work/www" "$work/tmp"
head -c 1024 /dev/urandom >"$work/www/small"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
user root;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  server { listen 10.96.4.2:8080; root $work/www; }
}
EOF
ip netns exec "$s" nginx -p "$work" -e "$work/error.log" -c "$work/nginx.conf"
ip netns exec "$s" iperf3 -s -D -B 10.96.4.2 --pidfile "$work/iperf3.pid"
for _ in $(seq 100); do
  ip netns exec "$s" ss -Hltn 'sport = :5201' | grep -q . && break
  sleep 0.05
done
server_cleanup() {
  kill "$(cat "$work/iperf3.pid" 2>/dev/null)" 2>/dev/null || true
  kill "$(cat "$work/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  cleanup
}
trap server_cleanup EXIT INT TERM

# CPU seconds (user and system) process $1 has used.
cpu() { awk -v tck="$(getconf CLK_TCK)" '{print ($14 + $15) / tck}' "/proc/$1/stat"; }

# One measurement of the current path: iperf3's rate, and COUNT fetches.
measure() {
  local report rate bytes started elapsed
  report=$(ip netns exec "$c" iperf3 -c 10.96.4.2 -t "$seconds" -J)
  # iperf3's JSON puts a tab after each colon.
  rate=$(grep -A8 '"sum_received"' <<<"$report" | grep -o '"bits_per_second":[^,]*' | head -n 1 | cut -d: -f2 | tr -d '[:space:]')
  bytes=$(grep -A8 '"sum_received"' <<<"$report" | grep -o '"bytes":[^,]*' | head -n 1 | cut -d: -f2 | tr -d '[:space:]')
  started=$(date +%s.%N)
  for _ in $(seq "$count"); do
    ip netns exec "$c" curl -sS --fail -o /dev/null http://10.96.4.2:8080/small
  done
  elapsed=$(awk "BEGIN{print $(date +%s.%N) - $started}")
  printf '%-22s iperf3 %6.2f Gbit/s (%.2f GB)   %d fetches in %.2f s: %.0f connections/s\n' \
    "$1" "$(awk "BEGIN{print $rate/1e9}")" "$(awk "BEGIN{print $bytes/1e9}")" "$count" "$elapsed" \
    "$(awk "BEGIN{print $count/$elapsed}")"
  measured_bytes=$bytes
}

echo "gateway cost on a clean path: $label across, iperf3 ${seconds}s, $count fetches"
echo "   (load average: $(cut -d' ' -f1-3 /proc/loadavg); Linux $(uname -r))"
measure direct
gateway "$a" "$label" 10.96.1.0/24 10.96.4.0/24
gateway "$b" "$label" 10.96.4.0/24 10.96.1.0/24
read -r pid_a pid_b <<<"$gateway_pids"
before_a=$(cpu "$pid_a")
before_b=$(cpu "$pid_b")
measure "through the gateways"
used_a=$(awk "BEGIN{print $(cpu "$pid_a") - $before_a}")
used_b=$(awk "BEGIN{print $(cpu "$pid_b") - $before_b}")
printf 'CPU per GB carried (iperf3 and fetches): gwA %.2f s, gwB %.2f s\n' \
  "$(awk "BEGIN{print $used_a / ($measured_bytes/1e9)}")" "$(awk "BEGIN{print $used_b / ($measured_bytes/1e9)}")"
stop_gateways
grep -h "stopped;" "$work/$a.log" "$work/$b.log" | sed 's/^/   /'
