#!/usr/bin/env bash
# Figures of docs/BENCHMARKS.md "Real applications across geo-8mbit": scp
# (OpenSSH), curl over HTTP (nginx) and over FTP (vsftpd, passive), each
# downloading a file checked by SHA-256, and the keystroke echo time of an
# interactive ssh session, across geo-8mbit's link through `scps emulate`:
# directly over kernel TCP, and through two transparent gateways whose
# link connections run our stack. Needs root (namespaces, TPROXY).
#
#   scripts/bench-gateway-apps.sh [RTT] [BER] [RUN...]
#
# RUN is MODE:APP:SIZE. MODE is `direct-CONTROLLER` (kernel TCP with that
# congestion control end to end, the gateways plain routers) or
# `gw-LABEL` (kernel CUBIC at the client and the server, our stack with
# LABEL across the link). APP is `scp`, `http` or `ftp` (SIZE: the file, e.g. 20MB) or
# `echo` (SIZE: keystrokes). For `ftp` the client's and the server's
# windows are held at 12 kB, as the NASA paper's FTP had them: buffers of
# 24 kB (tcp_rmem and tcp_wmem of their namespaces), of which Linux
# advertises about half as its window. Defaults: 600ms 1e-5 and every MODE
# with every APP at 20MB.
#
# Goodput is over the transfer itself: curl's time from `pretransfer` to
# the end; for scp and sftp, the whole command less the time `ssh HOST
# true` took just before (the login's round trips). The ratio is to the physical
# limit (docs/scenarios.md) for the point, as `scps sim` computes it.
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-600ms}
ber=${2:-1e-5}
shift $(($# < 2 ? $# : 2))
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  for mode in direct-cubic direct-bbr gw-scps-rate gw-scps-vegas; do
    for app in scp:20MB sftp:20MB http:20MB ftp:20MB echo:50; do runs+=("$mode:$app"); done
  done
fi
cargo build --release -q -p scps --bin scps --example keystroke_echo
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
scps=$target/release/scps
keystroke_echo=$target/release/examples/keystroke_echo

. scripts/lib/gateway-topology.sh
. scripts/lib/emulated-link.sh

# The servers, in the server's namespace.
mkdir -p "$work/www" "$work/ftp-empty" "$work/tmp" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
printf '%s\n' "ListenAddress 10.96.4.2:22" "HostKey $work/host_key" \
  "AuthorizedKeysFile $work/authorized_keys" "PermitRootLogin yes" "PasswordAuthentication no" \
  "KbdInteractiveAuthentication no" "UsePAM no" "StrictModes no" "PidFile none" \
  "Subsystem sftp internal-sftp" >"$work/sshd_config"
printf '%s\n' "worker_processes 1;" "user root;" "pid $work/nginx.pid;" "error_log $work/nginx.log;" \
  "events { worker_connections 64; }" \
  "http { access_log off; client_body_temp_path $work/tmp; proxy_temp_path $work/tmp;" \
  "  fastcgi_temp_path $work/tmp; uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;" \
  "  server { listen 10.96.4.2:8080; root $work/www; } }" >"$work/nginx.conf"
printf '%s\n' "listen=YES" "listen_address=10.96.4.2" "background=NO" "anonymous_enable=YES" \
  "no_anon_password=YES" "anon_root=$work/www" "local_enable=NO" "write_enable=NO" "pasv_enable=YES" \
  "pasv_address=10.96.4.2" "secure_chroot_dir=$work/ftp-empty" "seccomp_sandbox=NO" >"$work/vsftpd.conf"
ip netns exec "$s" /usr/sbin/sshd -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
server_pids="$!"
ip netns exec "$s" nginx -p "$work" -e "$work/nginx.log" -c "$work/nginx.conf" -g 'daemon off;' &
server_pids="$server_pids $!"
ip netns exec "$s" vsftpd "$work/vsftpd.conf" &
server_pids="$server_pids $!"
# Waits until something in the server's namespace listens on TCP PORT.
listening() {
  for _ in $(seq 200); do
    [ -n "$(ip netns exec "$s" ss -Hltn "sport = :$1")" ] && return
    sleep 0.05
  done
}
for port in 22 8080 21; do listening "$port"; done
ssh_options=(-i "$work/client_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
  -o BatchMode=yes -o LogLevel=ERROR)

# A namespace may only choose among the controllers the host allows:
# allow cubic too while the benchmark runs.
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"
trap 'sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed"; cleanup' EXIT INT TERM

# The kernel's TCP settings of the client and the server, restored after
# each run.
settings=(net.ipv4.tcp_congestion_control net.ipv4.tcp_rmem net.ipv4.tcp_wmem)
declare -A saved
for ns in "$c" "$s"; do
  for key in "${settings[@]}"; do saved[$ns/$key]=$(ip netns exec "$ns" sysctl -n "$key"); done
done
set_ends() { for ns in "$c" "$s"; do ip netns exec "$ns" sysctl -q -w "$1=$2"; done; }
restore_ends() {
  for ns in "$c" "$s"; do
    for key in "${settings[@]}"; do ip netns exec "$ns" sysctl -q -w "$key=${saved[$ns/$key]}"; done
  done
}

# A file of SIZE in the served directory (made once); its path.
served() {
  local file=$work/www/$1.bin
  [ -e "$file" ] || head -c "$(numfmt --from=si "${1%B}")" /dev/urandom >"$file"
  echo "$file"
}

elapsed() { awk "BEGIN{print $(date +%s.%N) - $1}"; }

for run in "${runs[@]}"; do
  IFS=: read -r mode app size <<<"$run"
  case $mode in
    direct-*) set_ends net.ipv4.tcp_congestion_control "${mode#direct-}" ;;
    gw-*)
      set_ends net.ipv4.tcp_congestion_control cubic
      gateway "$a" "${mode#gw-}" 10.96.1.0/24 10.96.4.0/24
      gateway "$b" "${mode#gw-}" 10.96.4.0/24 10.96.1.0/24
      link_up
      ;;
    *) echo "unknown mode in $run" >&2; exit 2 ;;
  esac
  if [ "$app" = ftp ]; then
    set_ends net.ipv4.tcp_rmem "4096 24576 24576"
    set_ends net.ipv4.tcp_wmem "4096 24576 24576"
  fi
  out=$work/out.bin
  rm -f "$out"
  case $app in
    shell)
      echo "a shell in the client's namespace ($mode); the servers are at 10.96.4.2. For example:"
      echo "  ssh ${ssh_options[*]} root@10.96.4.2"
      echo "  curl -o /dev/null -w '%{speed_download}\\n' http://10.96.4.2:8080/$(basename "$(served 20MB)")"
      ip netns exec "$c" bash -i || true
      ;;
    parallel)
      dropped() { emulator_stats | awk '{ for (i = 1; i <= NF; i++) if ($i == "return") print $(i + 6) }'; }
      before=$(dropped)
      # A server for this test alone: it exits when the test ends.
      ip netns exec "$s" iperf3 -s -1 -B 10.96.4.2 >/dev/null 2>&1 &
      listening 5201
      ip netns exec "$c" iperf3 -c 10.96.4.2 -R -P "$size" -t 30 -J >"$work/iperf.json"
      streams=$(tr -d ' \n\t' <"$work/iperf.json" | grep -o '"receiver":{[^}]*}' | head -n "$size" |
        grep -o '"bits_per_second":[0-9.e+]*' | cut -d: -f2)
      sum=$(echo "$streams" | awk '{ s += $1 } END { print s }')
      least=$(echo "$streams" | sort -g | head -n 1)
      most=$(echo "$streams" | sort -g | tail -n 1)
      printf '%-16s %-8s %3s  sum %7.3f Mbit/s  ratio %.3f  per stream %.3f to %.3f Mbit/s  link queue drops %d\n' \
        "$mode" parallel "$size" "$(awk "BEGIN{print $sum/1e6}")" "$(awk "BEGIN{print $sum/$limit}")" \
        "$(awk "BEGIN{print $least/1e6}")" "$(awk "BEGIN{print $most/1e6}")" $(($(dropped) - before))
      ;;
    echo)
      printf '%-16s %-5s %6s  %s\n' "$mode" echo "$size" \
        "$(ip netns exec "$c" "$keystroke_echo" "$size" "${ssh_options[@]}" root@10.96.4.2)"
      ;;
    scp | sftp | http | ftp)
      file=$(served "$size")
      bytes=$(stat -c %s "$file")
      if [ "$app" = scp ] || [ "$app" = sftp ]; then
        legacy=()
        [ "$app" = scp ] && legacy=(-O)
        started=$(date +%s.%N)
        ip netns exec "$c" ssh "${ssh_options[@]}" root@10.96.4.2 true
        login=$(elapsed "$started")
        started=$(date +%s.%N)
        ip netns exec "$c" scp "${legacy[@]}" "${ssh_options[@]}" "root@10.96.4.2:$file" "$out"
        seconds=$(awk "BEGIN{print $(elapsed "$started") - $login}")
      else
        url=http://10.96.4.2:8080/$size.bin
        [ "$app" = ftp ] && url=ftp://10.96.4.2/$size.bin
        read -r pre total < <(ip netns exec "$c" curl -sS --fail -o "$out" \
          -w '%{time_pretransfer} %{time_total}\n' "$url")
        seconds=$(awk "BEGIN{print $total - $pre}")
      fi
      verified=no
      [ "$(sha256sum <"$out")" = "$(sha256sum <"$file")" ] && verified=yes
      goodput=$(awk "BEGIN{print $bytes * 8 / $seconds}")
      printf '%-16s %-5s %6s  goodput %7.3f Mbit/s  ratio %.3f  verified %s  (%.1f s)\n' \
        "$mode" "$app" "$size" "$(awk "BEGIN{print $goodput/1e6}")" "$(awk "BEGIN{print $goodput/$limit}")" \
        "$verified" "$seconds"
      ;;
    *) echo "unknown application in $run" >&2; exit 2 ;;
  esac
  restore_ends
  stop_gateways
done
echo "emulator: $(emulator_stats)"
