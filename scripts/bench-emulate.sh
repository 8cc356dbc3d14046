#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "The real tools configured like the
# simulator, through the emulator": geo-8mbit's link through `scps emulate`, and across it `scps
# send`/`scps recv` from the command line only: our stack with a protocol
# label and the scenario's settings (--config), and the kernel's TCP with
# a named congestion control (--tcp=CONTROLLER). Needs root (namespaces).
#
#   scripts/bench-emulate.sh [RTT] [BER] [RUN...]
#
# RUN is LABEL:BYTES, LABEL one of our stack's labels (scps-rate, ...) or
# kernel-CONTROLLER (kernel-cubic, kernel-bbr). Defaults: 600ms 1e-5
# scps-rate:100MB kernel-bbr:100MB kernel-cubic:100MB. Each run prints the
# sender's goodput, whether the data was verified, and the ratio to the
# physical limit (docs/scenarios.md) as `scps sim` computes it for the point.
#
# Topology (removed on exit, also on failure or Ctrl-C):
#
#   [client 10.97.1.2]==veth==[a0 10.97.1.1  emulator  10.97.2.1 b0]==veth==[server 10.97.2.2]
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-600ms}
ber=${2:-1e-5}
shift $(($# < 2 ? $# : 2))
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(scps-rate:100MB kernel-bbr:100MB kernel-cubic:100MB)
cargo build --release -q -p scps
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps
scenario=scenarios/geo-8mbit.toml
point=(--set "link.rtt=$rtt" --set "link.ber=$ber")

c=scpsemu-client
e=scpsemu-emu
s=scpsemu-server
work=$(mktemp -d)
cleanup() {
  [ -n "${emulator_pid:-}" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
  for ns in "$c" "$e" "$s"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
for ns in "$c" "$e" "$s"; do
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
ip link add eth0 netns "$c" type veth peer name a0 netns "$e"
ip link add b0 netns "$e" type veth peer name eth0 netns "$s"
ip -n "$c" addr add 10.97.1.2/24 dev eth0
ip -n "$e" addr add 10.97.1.1/24 dev a0
ip -n "$e" addr add 10.97.2.1/24 dev b0
ip -n "$s" addr add 10.97.2.2/24 dev eth0
for dev in "$c eth0" "$e a0" "$e b0" "$s eth0"; do
  set -- $dev
  ip -n "$1" link set "$2" up
done
ip -n "$c" route add default via 10.97.1.1
ip -n "$s" route add default via 10.97.2.1

# The emulator's link is the scenario's [link] at this point.
cat >"$work/emulate.toml" <<EOF
seed = 1
[emulate]
side_a = "a0"
side_b = "b0"
control = "$work/ctl.sock"
[link]
rate = "100Mbit"
buffer = "1500KB"
rtt = "$rtt"
ber = $ber
shaper = { rate = "8Mbit", ceiling = "10Mbit", burst = "128KiB" }
EOF
ip netns exec "$e" "$scps" emulate --config "$work/emulate.toml" >"$work/emulator.log" 2>&1 &
emulator_pid=$!
for _ in $(seq 100); do
  [ -S "$work/ctl.sock" ] && break
  sleep 0.05
done

limit=$("$scps" sim "$scenario" --set protocol=scps-rate "${point[@]}" --set workload.bytes=1MB --json |
  grep -o '"limit_bps":[0-9.e+]*' | cut -d: -f2)
echo "geo-8mbit through scps emulate: RTT $rtt, BER $ber; limit $(awk "BEGIN{printf \"%.3f\", $limit/1e6}") Mbit/s"
echo "   (load average: $(cut -d' ' -f1-3 /proc/loadavg); Linux $(uname -r))"

for run in "${runs[@]}"; do
  label=${run%%:*}
  bytes=${run#*:}
  case $label in
    kernel-*)
      recv=(--tcp="${label#kernel-}" --port 5001)
      send=(10.97.2.2:5001 --tcp="${label#kernel-}")
      ;;
    *)
      recv=(--udp 10.97.2.2:7168 --config "$scenario" --stack "$label" "${point[@]}")
      send=(10.97.2.2:5001 --udp 10.97.2.2:7168 --config "$scenario" --stack "$label" "${point[@]}")
      ;;
  esac
  ip netns exec "$s" "$scps" recv --once --json "${recv[@]}" >"$work/recv.json" 2>"$work/recv.log" &
  recv_pid=$!
  for _ in $(seq 100); do
    grep -q listening "$work/recv.log" && break
    sleep 0.05
  done
  started=$(date +%s.%N)
  ip netns exec "$c" "$scps" send --json --bytes "$bytes" "${send[@]}" >"$work/send.json" || true
  wait "$recv_pid" || true
  field() { grep -o "\"$1\":[^,}]*" "$work/send.json" | head -n 1 | cut -d: -f2 | tr -d '"'; }
  goodput=$(field goodput_bps)
  printf '%-14s %6s  goodput %7.3f Mbit/s  ratio %.3f  verified %s  retransmitted %s bytes  (%s; wall %.0f s)\n' \
    "$label" "$bytes" "$(awk "BEGIN{print $goodput/1e6}")" "$(awk "BEGIN{print $goodput/$limit}")" \
    "$(field verified)" "$(field retransmitted_bytes)" "$(field stack)" "$(awk "BEGIN{print $(date +%s.%N)-$started}")"
  grep -q '"error"' "$work/send.json" && grep -o '"error":"[^"]*"' "$work/send.json"
done
echo "emulator: $(ip netns exec "$e" "$scps" emulate ctl --socket "$work/ctl.sock" stats | head -n 3 | tr '\n' ' ')"
