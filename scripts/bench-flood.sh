#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "A receiver under a flood": `scps recv
# --udp` on loopback flooded with spoofed SYNs to its port and with
# garbage datagrams; its resident memory before,
# at the peak and after, and the time `scps send --bytes SIZE` takes
# during each flood against without one. No privileges needed.
#
#   scripts/bench-flood.sh [SYNS] [GARBAGE] [SIZE] [SCPS]
#
# Defaults: 100000 1000000 50MB, and the scps of this tree (SCPS names
# another binary, an older build to compare with). The flood itself comes
# from the example flood_memory.
set -euo pipefail
cd "$(dirname "$0")/.."
syns=${1:-100000}
garbage=${2:-1000000}
size=${3:-50MB}
cargo build --release -q -p scps
cargo build --release -q -p scps-net --example flood_memory
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=${4:-$target/release/scps}
flooder=$target/release/examples/flood_memory
work=$(mktemp -d)
cleanup() {
  [ -n "${receiver:-}" ] && kill "$receiver" 2>/dev/null && wait "$receiver" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$scps" recv --udp 127.0.0.1:0 --json >"$work/recv.json" 2>"$work/recv.log" &
receiver=$!
for _ in $(seq 100); do
  grep -q listening "$work/recv.log" && break
  sleep 0.05
done
udp=$(grep -o '(UDP [^)]*)' "$work/recv.log" | cut -c6- | tr -d ')')
mb() { awk -v f="$1" '$1 == f { printf "%.1f", $2 / 1000 }' "/proc/$receiver/status"; }
send() {
  local started=$(date +%s.%N)
  "$scps" send --udp "$udp" 127.0.0.1:5001 --bytes "$size" --json >"$work/send.json" || true
  local verified=$(grep -o '"verified":[a-z]*' "$work/send.json" | head -n 1 | cut -d: -f2)
  printf '%.2f s (verified %s)' "$(awk "BEGIN{print $(date +%s.%N)-$started}")" "$verified"
}

echo "scps recv --udp on loopback ($scps); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  resident before anything: $(mb VmRSS:) MB"
echo "  scps send --bytes $size alone: $(send); resident $(mb VmRSS:) MB"
for flood in "syns $syns" "garbage $garbage"; do
  set -- $flood
  "$flooder" "$udp" "$1" "$2" &
  flooder_pid=$!
  during=$(send)
  started=$(date +%s.%N)
  wait "$flooder_pid"
  echo "  during $2 $1: send $during; resident $(mb VmRSS:) MB after, peak so far $(mb VmHWM:) MB"
done
sleep 1
echo "  resident a second later: $(mb VmRSS:) MB (peak $(mb VmHWM:) MB)"
