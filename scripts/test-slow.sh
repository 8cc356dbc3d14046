#!/usr/bin/env bash
# The slower tier: every test the workspace marks #[ignore] (today those of
# crates/cli/tests/docs_as_written.rs, which run README.md's quick start,
# docs/saratoga.md's examples and docs/satellite-gateways.md's blocks as
# written, in network namespaces: about ten minutes, the quick start's
# bench five of them; and those of crates/cli/tests/gateway_compression.rs,
# the transparent gateway's header compression facing a peer configured as
# a standard SCPS gateway, clean and at BER 1e-5: half a minute). Needs
# root, like the namespace tests of `cargo test --workspace`, and the
# programs scripts/test-deps.sh installs.
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
