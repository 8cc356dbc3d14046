#!/usr/bin/env bash
# The slower tier: every test the workspace marks
# #[ignore = "slower tier: ..."], each saying why and about how long it
# takes. `cargo test --workspace` leaves them out to stay within a few
# minutes; this runs them. They are:
# - the documents' commands as written (crates/cli/tests/docs_as_written.rs:
#   README.md's quick start, docs/saratoga.md's examples,
#   docs/satellite-gateways.md's blocks), in network namespaces, about
#   five minutes;
# - runs in namespaces that take real time: gateways killed mid-transfer
#   (gateway_killed.rs), attacks on the link (gateway_hostile.rs), `scps
#   bench` in the testbed (bench_testbed.rs), transfers through the live
#   emulator (emulate.rs), ssh and HTTP through the shipped gateway pair
#   (gateway_examples.rs), the transparent gateway's header compression
#   facing a standard SCPS gateway (gateway_compression.rs), all in
#   crates/cli/tests;
# - benchmarks and performance checks: docs/BENCHMARKS.md's simulator
#   tables rerun (benchmarks_doc.rs), the receiver's autotuning over a long
#   fat path (transfer.rs), and `rate = "auto"` on 100 MB simulated
#   transfers, over eight seeds too (crates/sim/tests/auto_rate.rs).
# Together about fifteen minutes on two cores. Needs root, like the namespace
# tests of `cargo test --workspace`, and the programs scripts/test-deps.sh
# installs.
#
#   scripts/test-slow.sh [TESTNAME...]    # extra words go to the test harness
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "scripts/test-slow.sh: run it as root (the tests make namespaces, mounts and gateways)" >&2
  exit 2
fi
scripts/test-deps.sh
cargo test --workspace --locked -- --ignored "$@"
