#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "t1-geo": the five cases of the Xiphos paper
# (seeds/001, tables 1 and 2) at every BER of the scenario, then the
# ablation at BER 1e-5: the full SCPS-TP case (SNACK, header compression,
# no congestion control) with one extension switched off at a time.
#
#   scripts/t1-geo-cases.sh [RUNS]      (default 8)
#
# Every command uses the same seeds, so each row meets the same errors.
# What any SNACK sender could reach in these windows:
#   cargo run --release -p scps-sim --example snack_window_ceiling
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-8}
cargo build --release -q -p scps
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps

# The scenario's [tcp] is case 1A (Windows 2000: 64 kB window, initial
# window 2 MSS, initial RTO 3 s, SACK, no timestamps).
# In the SCPS cases SNACK "supersedes" SACK: the RI ignores SACK.
big_window=(--set tcp.send_buffer=241kB --set tcp.recv_buffer=241kB --set tcp.sack=false)
case_1a=(--set protocol=tcp-vj)
case_1b=(--set protocol=scps-vj --set tcp.snack=false --set tcp.header_compression=true)
case_1c=(--set protocol=scps-vj --set tcp.header_compression=true "${big_window[@]}")
case_2a=(--set protocol=scps-vegas --set tcp.header_compression=true "${big_window[@]}"
  --set tcp.initial_window=8)
# 80 kB of initial window, in 1460-byte segments.
case_2b=(--set protocol=scps-rate --set tcp.header_compression=true "${big_window[@]}"
  --set tcp.initial_window=55)

run() {
  local title=$1
  shift
  echo "### $title"
  "$scps" sim t1-geo --runs "$runs" "$@"
  echo
}

run "1A baseline TCP" "${case_1a[@]}"
run "1B SCPS-TP, header compression" "${case_1b[@]}"
run "1C SCPS-TP, SNACK, header compression" "${case_1c[@]}"
run "2A SCPS-TP, Vegas, SNACK, header compression" "${case_2a[@]}"
run "2B SCPS-TP, SNACK, no congestion control, header compression" "${case_2b[@]}"

ber=(--set link.ber=1e-5)
run "ablation: 2B in full" "${case_2b[@]}" "${ber[@]}"
run "ablation: 2B without SNACK" "${case_2b[@]}" "${ber[@]}" --set tcp.snack=false
run "ablation: 2B without header compression" "${case_2b[@]}" "${ber[@]}" --set tcp.header_compression=false
run "ablation: 2B with congestion control (VJ) back" "${case_2b[@]}" "${ber[@]}" --set protocol=scps-vj
run "ablation: 2B with congestion control (VJ), losses put down to corruption" \
  "${case_2b[@]}" "${ber[@]}" --set protocol=scps-vj --set tcp.loss_source=corruption
run "ablation: 2B with SACK beside SNACK" "${case_2b[@]}" "${ber[@]}" --set tcp.sack=true
run "ablation: 2B without the RI's RTO margin" "${case_2b[@]}" "${ber[@]}" --set tcp.rto_margin_min=0s
run "ablation: 2B with a 64 kB window" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.send_buffer=64KiB --set tcp.recv_buffer=64KiB
run "beyond the paper: 2B with a 330 kB window" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.send_buffer=330kB --set tcp.recv_buffer=330kB
run "beyond the paper: 2B with a 500 kB window" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.send_buffer=500kB --set tcp.recv_buffer=500kB
run "beyond the paper: 2B with the adaptive ACK policy" "${case_2b[@]}" "${ber[@]}" --set tcp.ack_adaptive=true
run "beyond the paper: 2B with the segment size adapted to the error rate" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.mss_adapt=true
run "beyond the paper: 2B with adapted segments and SACK" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.mss_adapt=true --set tcp.sack=true
run "beyond the paper: 2B with adapted segments, SACK and a 1 MB window" "${case_2b[@]}" "${ber[@]}" \
  --set tcp.mss_adapt=true --set tcp.sack=true --set tcp.send_buffer=1MB --set tcp.recv_buffer=1MB
