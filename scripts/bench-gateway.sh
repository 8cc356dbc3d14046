#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "The gateway across geo-8mbit: kernel TCP":
# applications (`scps send`/`scps recv --tcp=CONTROLLER`, a bulk transfer
# checked by SHA-256) across geo-8mbit's link through `scps emulate`,
# directly and through two transparent gateways whose link connections run
# our stack with a protocol label and the scenario's settings. Needs root
# (namespaces, TPROXY).
#
#   scripts/bench-gateway.sh [RTT] [BER] [RUN...]
#
# RUN is MODE:BYTES: `direct-CONTROLLER` (kernel TCP end to end, the
# gateways plain routers), `gw-LABEL` (kernel CUBIC on each LAN, our
# stack with LABEL across the secure link between the gateways, the
# default) or `gwplain-LABEL` (the same on the plain link, `link.security
# = "none"`). Defaults: 600ms 1e-5
# direct-cubic:1MB direct-bbr:20MB gw-scps-rate:20MB gw-scps-vegas:20MB.
# Each run prints the goodput the application saw, whether its data was
# verified, and the ratio to the physical limit (docs/scenarios.md) as
# `scps sim` computes it for the point.
#
# Topology: scripts/lib/gateway-topology.sh, the emulator in the middle.
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-600ms}
ber=${2:-1e-5}
shift $(($# < 2 ? $# : 2))
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(direct-cubic:1MB direct-bbr:20MB gw-scps-rate:20MB gw-scps-vegas:20MB)
cargo build --release -q -p scps
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps

. scripts/lib/gateway-topology.sh

. scripts/lib/emulated-link.sh

for run in "${runs[@]}"; do
  mode=${run%%:*}
  bytes=${run#*:}
  case $mode in
    direct-*) controller=${mode#direct-} ;;
    gw-* | gwplain-*)
      controller=cubic
      link_security=noise
      [[ $mode == gwplain-* ]] && link_security=none
      gateway "$a" "${mode#*-}" 10.96.1.0/24 10.96.4.0/24
      gateway "$b" "${mode#*-}" 10.96.4.0/24 10.96.1.0/24
      link_up
      ;;
    *) echo "unknown run $run" >&2; exit 2 ;;
  esac
  ip netns exec "$s" "$scps" recv --once --json --tcp="$controller" --port 5001 >"$work/recv.json" 2>"$work/recv.log" &
  recv_pid=$!
  for _ in $(seq 100); do
    grep -q listening "$work/recv.log" && break
    sleep 0.05
  done
  started=$(date +%s.%N)
  ip netns exec "$c" "$scps" send --json --bytes "$bytes" 10.96.4.2:5001 --tcp="$controller" >"$work/send.json" || true
  wait "$recv_pid" || true
  stop_gateways
  field() { grep -o "\"$1\":[^,}]*" "$work/send.json" | head -n 1 | cut -d: -f2 | tr -d '"'; }
  goodput=$(field goodput_bps)
  printf '%-16s %6s  goodput %7.3f Mbit/s  ratio %.3f  verified %s  (wall %.0f s)\n' \
    "$mode" "$bytes" "$(awk "BEGIN{print $goodput/1e6}")" "$(awk "BEGIN{print $goodput/$limit}")" \
    "$(field verified)" "$(awk "BEGIN{print $(date +%s.%N)-$started}")"
  grep -q '"error"' "$work/send.json" && grep -o '"error":"[^"]*"' "$work/send.json"
  [[ $mode == gw* ]] && grep -h "stopped;" "$work/$a.log" "$work/$b.log" | sed 's/^/   /'
done
echo "emulator: $(emulator_stats)"
