#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "Real I/O: one connection on real packet
# paths": one connection of ours over UDP encapsulation on loopback and over a TUN pair between two network
# namespaces, kernel TCP between the same namespaces, and message-stream
# latency at 1024 and 8192 bit/s offered (Nagle off, the tools' default
# for messages, then on with --nagle). Needs root (namespaces, TUN).
#
#   scripts/bench-net.sh [BYTES] [MESSAGE_WINDOW] [PARTS]
#
# Defaults: 2GB 30s udp,tun,tcp,messages (PARTS: any of those, comma
# separated). The load average is printed before each part: other work on
# the machine moves the figures. With SCPS_BENCH_PCAP=DIR our senders
# capture every packet to DIR/PART.pcap (capture on); SCPS_BIN=PATH runs
# another build of scps (an older one, to compare) instead of this tree's.
#
# Topology (removed on exit, also on failure or Ctrl-C):
#
#   [ours 10.89.1.1]-tun-[scpsbench-a 10.88.0.1]==veth==[scpsbench-b 10.88.0.2]-tun-[ours 10.89.2.1]
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${1:-2GB}
window=${2:-30s}
parts=${3:-udp,tun,tcp,messages}
part() { [[ ",$parts," == *",$1,"* ]]; }
load() { echo "   (load average: $(cut -d' ' -f1-3 /proc/loadavg))"; }
if [ -n "${SCPS_BIN:-}" ]; then
  scps=$SCPS_BIN
else
  cargo build --release -q -p scps
  target=${CARGO_TARGET_DIR:-target}
  case $target in /*) ;; *) target=$PWD/$target ;; esac
  scps=$target/release/scps
fi
# The sender's capture of part $1, if asked for.
pcap() { [ -n "${SCPS_BENCH_PCAP:-}" ] && echo "--pcap $SCPS_BENCH_PCAP/$1.pcap"; true; }

a=scpsbench-a
b=scpsbench-b
cleanup() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
cleanup
ip netns add "$a"
ip netns add "$b"
ip link add veth-a netns "$a" type veth peer name veth-b netns "$b"
ip -n "$a" link set lo up
ip -n "$b" link set lo up
ip -n "$a" addr add 10.88.0.1/24 dev veth-a
ip -n "$b" addr add 10.88.0.2/24 dev veth-b
ip -n "$a" link set veth-a up
ip -n "$b" link set veth-b up
ip -n "$a" route add 10.89.2.0/24 via 10.88.0.2
ip -n "$b" route add 10.89.1.0/24 via 10.88.0.1
ip netns exec "$a" sysctl -q -w net.ipv4.ip_forward=1
ip netns exec "$b" sysctl -q -w net.ipv4.ip_forward=1

# Runs `scps recv ARGS` in namespace $1 (empty: this one) in the background
# until it has said where it listens.
start_recv() {
  local ns=$1
  shift
  local log
  log=$(mktemp)
  if [ -n "$ns" ]; then
    ip netns exec "$ns" "$scps" recv --once "$@" >"$log.out" 2>"$log" &
  else
    "$scps" recv --once "$@" >"$log.out" 2>"$log" &
  fi
  recv_pid=$!
  recv_log=$log
  for _ in $(seq 100); do
    grep -q listening "$log" && return 0
    sleep 0.05
  done
  cat "$log" >&2
  return 1
}

finish_recv() {
  wait "$recv_pid"
  echo "  receiver: $(head -n 1 "$recv_log.out") $(grep cpu "$recv_log.out" | head -n 1 | sed 's/^ *//')"
  rm -f "$recv_log" "$recv_log.out"
}

if part udp; then
  echo "== bulk $bytes, one connection of ours, UDP encapsulation on loopback"
  load
  start_recv "" --udp 127.0.0.1:7168
  "$scps" send 127.0.0.1:5001 --udp 127.0.0.1:7168 --bytes "$bytes" $(pcap udp) | grep -E '^send|^  (retransmitted|cpu)'
  finish_recv
fi

if part tun; then
  echo "== bulk $bytes, one connection of ours, TUN pair between namespaces"
  load
  start_recv "$a" --tun scps0 --addr 10.89.1.1/24
  ip netns exec "$b" "$scps" send 10.89.1.1:5001 --tun scps0 --addr 10.89.2.1/24 --bytes "$bytes" $(pcap tun) |
    grep -E '^send|^  (retransmitted|cpu)'
  finish_recv
fi

if part tcp; then
  echo "== bulk $bytes, kernel TCP ($(ip netns exec "$b" sysctl -n net.ipv4.tcp_congestion_control), Linux $(uname -r)) between the same namespaces"
  load
  start_recv "$a" --tcp
  ip netns exec "$b" "$scps" send 10.88.0.1:5001 --tcp --bytes "$bytes" | grep -E '^send|^  (retransmitted|cpu)'
  finish_recv
fi

if part messages; then
  for nagle in "" --nagle; do
    for rate in 1024 8192; do
      echo "== messages ${nagle:-(Nagle off)}, 64 bytes at ${rate} bit/s for $window, ours over the TUN pair"
      load
      start_recv "$a" --tun scps0 --addr 10.89.1.1/24
      ip netns exec "$b" "$scps" send 10.89.1.1:5001 --tun scps0 --addr 10.89.2.1/24 $nagle \
        --messages --size 64 --rate "${rate}bps" --duration "$window" | grep -E '^  forward'
      finish_recv
      echo "== messages ${nagle:-(Nagle off)}, 64 bytes at ${rate} bit/s for $window, kernel TCP"
      start_recv "$a" --tcp
      ip netns exec "$b" "$scps" send 10.88.0.1:5001 --tcp $nagle \
        --messages --size 64 --rate "${rate}bps" --duration "$window" | grep -E '^  forward'
      finish_recv
    done
  done
fi
