#!/usr/bin/env bash
# Runs the interoperation tests (`cargo test interop`) as an unprivileged
# user, as a developer without root runs them: each test then runs itself
# again inside a user namespace of its own (crates/net/tests/common/netns.rs,
# crates/cli/tests/interop_cli.rs). CI runs as root, so without this the
# fallback would never run there.
#
#   scripts/interop-unprivileged.sh        (as root; builds the tests first)
#
# The tests run as `nobody`, in a private mount namespace where
# /dev/net/tun is open to all users (Debian's default mode, 0666; some
# hosts and containers make it 0600, and in a user namespace the TUN
# device must be opened as the unprivileged user). Nothing outside that
# mount namespace changes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "run as root (it switches to nobody itself); without root, run: cargo test interop" >&2
  exit 2
fi
# The test harnesses (`"test":true`), not the binaries they run.
mapfile -t binaries < <(cargo test --workspace --locked --no-run --message-format=json |
  grep '"test":true' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4)
if [ ${#binaries[@]} -eq 0 ]; then
  echo "no test binaries built" >&2
  exit 1
fi
home=$(mktemp -d)
chown nobody "$home"
trap 'rm -rf "$home"' EXIT
export home
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private -- sh -euc '
  tun=$(mktemp)
  mknod -m 666 "$tun.dev" c 10 200
  mount --bind "$tun.dev" /dev/net/tun
  for binary in "$@"; do
    echo "== $binary interop (as nobody)"
    (cd /tmp && env HOME="$home" setpriv --reuid=nobody --regid=nogroup --clear-groups \
      "$binary" interop --test-threads 2)
  done
  umount /dev/net/tun
  rm -f "$tun" "$tun.dev"
' sh "${binaries[@]}"
