# Sourced by the gateway benchmarks (scripts/bench-gateway*.sh): five
# namespaces, two transparent gateways' places, and their teardown.
#
#   [client 10.96.1.2]==[lan0 gwA sat0]==[a0 middle b0]==[sat0 gwB lan0]==[server 10.96.4.2]
#                       10.96.1.1  10.96.2.2  .2.1   .3.1  10.96.3.2  10.96.4.1
#
# The middle node routes; `scps emulate` there turns it into the link.
# Expects $scps (the binary). Defines $c $a $e $b $s (the namespaces),
# $work (a temporary directory), `gateway`, `link_up` and `stop_gateways`; removes
# everything on exit, also on failure or Ctrl-C, and stops the processes
# listed in $server_pids.

# One benchmark at a time: a second would delete the first's namespaces.
exec 9>/run/lock/scps-gateway-bench.lock
flock -n 9 || { echo "another gateway benchmark is running (/run/lock/scps-gateway-bench.lock)" >&2; exit 1; }

c=scpsgw-client
a=scpsgw-a
e=scpsgw-emu
b=scpsgw-b
s=scpsgw-server
nodes=("$c" "$a" "$e" "$b" "$s")
work=$(mktemp -d)
stop_gateways() {
  for pid in ${gateway_pids:-}; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  gateway_pids=
}
cleanup() {
  stop_gateways
  # Servers a benchmark started in the namespaces.
  for pid in ${server_pids:-}; do kill "$pid" 2>/dev/null || true; done
  [ -n "${emulator_pid:-}" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
  for ns in "${nodes[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
for ns in "${nodes[@]}"; do
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
ip link add eth0 netns "$c" type veth peer name lan0 netns "$a"
ip link add sat0 netns "$a" type veth peer name a0 netns "$e"
ip link add b0 netns "$e" type veth peer name sat0 netns "$b"
ip link add lan0 netns "$b" type veth peer name eth0 netns "$s"
ip -n "$c" addr add 10.96.1.2/24 dev eth0
ip -n "$a" addr add 10.96.1.1/24 dev lan0
ip -n "$a" addr add 10.96.2.2/24 dev sat0
ip -n "$e" addr add 10.96.2.1/24 dev a0
ip -n "$e" addr add 10.96.3.1/24 dev b0
ip -n "$b" addr add 10.96.3.2/24 dev sat0
ip -n "$b" addr add 10.96.4.1/24 dev lan0
ip -n "$s" addr add 10.96.4.2/24 dev eth0
for dev in "$c eth0" "$a lan0" "$a sat0" "$e a0" "$e b0" "$b sat0" "$b lan0" "$s eth0"; do
  set -- $dev
  ip -n "$1" link set "$2" up
done
ip -n "$c" route add default via 10.96.1.1
ip -n "$a" route add default via 10.96.2.1
ip -n "$e" route add 10.96.1.0/24 via 10.96.2.2
ip -n "$e" route add 10.96.4.0/24 via 10.96.3.2
ip -n "$b" route add default via 10.96.3.1
ip -n "$s" route add default via 10.96.4.1
for ns in "$a" "$e" "$b"; do ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1; done


# link_section NS: the [link] of the gateway in NS: the secure link
# between the gateways' sat0 addresses (the default; each gateway's key
# made once in $work), or, with $link_security = none, the plain link
# routed out of sat0.
link_section() {
  if [ "${link_security:-noise}" = none ]; then
    printf '[link]\nsecurity = "none"\n'
    return
  fi
  local own=10.96.2.2 far=10.96.3.2 key=$work/gwA.key peer_key=$work/gwB.key
  if [ "$1" = "$b" ]; then own=10.96.3.2 far=10.96.2.2 key=$work/gwB.key peer_key=$work/gwA.key; fi
  for k in "$work/gwA.key" "$work/gwB.key"; do
    [ -f "$k" ] || "$scps" gateway keygen "$k" 2>/dev/null >"$k.pub"
  done
  printf '[link]\nudp = "%s:7100"\npeer = "%s:7100"\nprivate_key_file = "%s"\npeer_public_key = "%s"\n' \
    "$own" "$far" "$key" "$(cat "$peer_key.pub")"
}

# gateway NS LABEL LOCAL REMOTE: a transparent gateway whose link
# connections run our stack with LABEL, the link keys $link_keys (if any)
# and the scenario's buffers, on the link of link_section, relay buffers
# of $relay_buffer (4MB unless set), $relay_extra (more [relay] keys, if
# any) and $gateway_extra (more tables, if any); returns once it says it
# is ready.
gateway() {
  local routed=
  [ "${link_security:-noise}" = none ] && routed='link = "sat0"'
  cat >"$work/$1.toml" <<EOF
$(link_section "$1")
[transparent]
lan = "lan0"
$routed
local = ["$3"]
remote = ["$4"]
[relay]
buffer = "${relay_buffer:-4MB}"
${relay_extra:-}
[engine]
protocol = "$2"
[engine.link]
${link_keys:-}
[engine.tcp]
send_buffer = "4MiB"
recv_buffer = "6MiB"
${gateway_extra:-}
EOF
  # The secure link says when it is up at level info (link_up reads it).
  RUST_LOG=${RUST_LOG:-warn,scps_net::path::secured=info} \
    ip netns exec "$1" "$scps" gateway --config "$work/$1.toml" ${gateway_args:-} >"$work/$1.log" 2>&1 &
  gateway_pids="${gateway_pids:-} $!"
  for _ in $(seq 200); do
    grep -q "scps gateway: ready" "$work/$1.log" && return
    sleep 0.05
  done
  echo "the gateway in $1 did not start:" >&2
  cat "$work/$1.log" >&2
  exit 1
}


# link_up: on the secure link, returns once both gateways say it is up
# (the first handshake, a round trip after they start), so that a
# measurement does not count it; at once on the plain link.
link_up() {
  [ "${link_security:-noise}" = none ] && return
  for _ in $(seq 200); do
    grep -q "the secure link is up" "$work/$a.log" && grep -q "the secure link is up" "$work/$b.log" && return
    sleep 0.05
  done
  echo "the secure link did not come up:" >&2
  cat "$work/$a.log" "$work/$b.log" >&2
  exit 1
}
