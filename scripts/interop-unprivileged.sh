#!/usr/bin/env bash
# Runs the interoperation tests (`cargo test interop`) without privileges,
# as a developer without root runs them: each test then runs itself again
# inside a user namespace of its own (crates/net/tests/common/netns.rs,
# crates/cli/tests/interop_cli.rs). CI runs as root, so without this the
# fallback would never run there.
#
#   scripts/interop-unprivileged.sh        (as root; builds the tests first)
#
# The tests run as `nobody`, in a private mount namespace where
# /dev/net/tun is open to all users (Debian's default mode, 0666; some
# hosts and containers make it 0600). Nothing outside that mount namespace
# changes. If `nobody` cannot reach the test binaries (a clone under
# /root, say), they run instead as uid 65534 of a user namespace of their
# own: no capabilities and not root, so the same fallback runs, but files
# are reached as root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "run as root (it gives up root itself); without root, run: cargo test interop" >&2
  exit 2
fi
# The test harnesses (profile `"test":true`), not the binaries they run.
mapfile -t binaries < <(cargo test --workspace --locked --no-run --message-format=json |
  grep '"profile":{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4)
if [ ${#binaries[@]} -eq 0 ]; then
  echo "no test binaries built" >&2
  exit 1
fi
home=$(mktemp -d)
chown nobody "$home"
trap 'rm -rf "$home"' EXIT
export home

if setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "${binaries[0]}"; then
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount --propagation private -- sh -euc '
    tun=$(mktemp -d)
    mknod -m 666 "$tun/tun" c 10 200
    mount --bind "$tun/tun" /dev/net/tun
    for binary in "$@"; do
      echo "== $binary interop (as nobody)"
      (cd /tmp && env HOME="$home" setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$binary" interop --test-threads 2)
    done
    umount /dev/net/tun
    rm -r "$tun"
  ' sh "${binaries[@]}"
else
  echo "nobody cannot reach ${binaries[0]}: running as uid 65534 of a user namespace instead"
  for binary in "${binaries[@]}"; do
    echo "== $binary interop (uid 65534 of a user namespace)"
    (cd /tmp && unshare --user --map-user=65534 --map-group=65534 -- \
      "$binary" interop --test-threads 2)
  done
fi
