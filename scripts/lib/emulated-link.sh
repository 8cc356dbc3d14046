# Sourced by the gateway benchmarks after gateway-topology.sh: runs `scps
# emulate` in the middle node with geo-8mbit's link at RTT $rtt and BER
# $ber, and computes the physical limit (docs/scenarios.md) for the point as
# `scps sim` does (the emulator's seed $emulator_seed, 1 unless set). Defines $link_keys (the link, which the gateways'
# engine takes too: their route rate, buffers and timers), $limit (bit/s)
# and `emulator_stats`.

link_keys="rate = \"100Mbit\"
buffer = \"1500KB\"
rtt = \"$rtt\"
ber = $ber
shaper = { rate = \"8Mbit\", ceiling = \"10Mbit\", burst = \"128KiB\" }"
cat >"$work/emulate.toml" <<EOT
seed = ${emulator_seed:-1}
[emulate]
side_a = "a0"
side_b = "b0"
control = "$work/ctl.sock"
[link]
$link_keys
EOT
ip netns exec "$e" "$scps" emulate --config "$work/emulate.toml" >"$work/emulator.log" 2>&1 &
emulator_pid=$!
for _ in $(seq 100); do
  [ -S "$work/ctl.sock" ] && break
  sleep 0.05
done
limit=$("$scps" sim scenarios/geo-8mbit.toml --set protocol=scps-rate --set "link.rtt=$rtt" --set "link.ber=$ber" \
  --set workload.bytes=1MB --json | grep -o '"limit_bps":[0-9.e+]*' | cut -d: -f2)
echo "geo-8mbit through scps emulate: RTT $rtt, BER $ber; limit $(awk "BEGIN{printf \"%.3f\", $limit/1e6}") Mbit/s"
echo "   (load average: $(cut -d' ' -f1-3 /proc/loadavg); Linux $(uname -r))"

emulator_stats() {
  ip netns exec "$e" "$scps" emulate ctl --socket "$work/ctl.sock" stats | head -n 3 | tr '\n' ' '
}
