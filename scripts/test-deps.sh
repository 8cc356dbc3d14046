#!/usr/bin/env bash
# Installs the system programs the tests use, if any is missing, so that
# the README's test command works on a fresh Debian machine that has only
# Rust. Installs nothing when everything is there; needs root (or sudo)
# only when something is missing.
#
#   scripts/test-deps.sh && cargo test --workspace
set -euo pipefail

# program -> Debian package
needs=(
  "tshark tshark"              # captures decoded in the sim, net and cli tests
  "ip iproute2"                # namespaces, veth, TUN addresses and routes
  "unshare util-linux"         # user and network namespaces
  "setpriv util-linux"         # tests that give up root
  "ping iputils-ping"          # ICMP through the emulator
  "nft nftables"               # the gateway's transparent mode (TPROXY)
  "curl curl"                  # real applications through the gateways
  "nginx nginx"
  "iperf3 iperf3"
  "wget wget"
  "ssh openssh-client"         # scp, sftp, rsync and a session through the gateways
  "sshd openssh-server"
  "rsync rsync"
  "vsftpd vsftpd"              # FTP, passive and active
  "telnet telnet"
  "telnetd inetutils-telnetd"
  "chromium-headless-shell chromium-headless-shell"  # the bench report, checked in a real browser
)
missing=()
for entry in "${needs[@]}"; do
  read -r program package <<<"$entry"
  # Daemons are in /usr/sbin, which a user's PATH may not hold.
  command -v "$program" >/dev/null || [ -x "/usr/sbin/$program" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

sudo=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "scripts/test-deps.sh: missing ${missing[*]}; run this as root (apt-get install ${missing[*]})" >&2
    exit 2
  fi
  sudo=(sudo)
fi
echo "scripts/test-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
