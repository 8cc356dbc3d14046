//! `scps emulate` as a user runs it: started in the emulator's namespace
//! of a testbed, controlled with `scps emulate ctl`, stopped with Ctrl-C.

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::emulation::{Emulation, ctl, write_config};
use common::{TempDir, text};
use nix::sys::signal::Signal;
use scps_testbed::{EMU, Output as Io, Testbed};

const SCPS: &str = env!("CARGO_BIN_EXE_scps");

/// Runs `scps emulate --config <config>`, which must refuse it (exit
/// status 2); returns what it said on stderr.
fn refused(config: &Path) -> String {
    let output = Command::new(SCPS)
        .args(["emulate", "--config"])
        .arg(config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    text(&output.stderr)
}

fn datagram_crosses(testbed: &Testbed) -> bool {
    let server = testbed
        .node("server")
        .unwrap()
        .run(|| UdpSocket::bind("10.99.2.2:6000"))
        .unwrap();
    server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let client = testbed
        .node("client")
        .unwrap()
        .run(|| UdpSocket::bind("10.99.1.2:0"))
        .unwrap();
    client.send_to(b"through scps emulate", "10.99.2.2:6000").unwrap();
    let mut buf = [0u8; 64];
    matches!(server.recv(&mut buf), Ok(n) if &buf[..n] == b"through scps emulate")
}

#[test]
fn emulate_runs_in_a_namespace_obeys_ctl_and_stops_on_ctrl_c() {
    let emulation = Emulation::start(
        "emulate-ctl",
        "",
        "rate = \"10Mbit\"\ndelay = \"5ms\"\nchannels = 2\n",
        Io::Piped,
    );
    let (emulator, testbed, socket) = (&emulation.emulator, &emulation.testbed, &emulation.socket);
    assert!(datagram_crosses(testbed));

    let set = ctl(
        socket,
        &[
            "set",
            "--channel",
            "1",
            "--direction",
            "return",
            "delay=300ms",
            "rate=2Mbit",
        ],
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    let stats = emulation.stats();
    let channels = stats["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 4);
    let ret1 = channels
        .iter()
        .find(|c| c["channel"] == 1 && c["direction"] == "return")
        .unwrap();
    assert_eq!(
        (ret1["delay_s"].as_f64(), ret1["rate_bps"].as_u64()),
        (Some(0.3), Some(2_000_000))
    );
    assert!(stats["directions"][0]["packets_out"].as_u64().unwrap() >= 1);

    // Mistakes are refused with the reason; the emulator runs on.
    let missing = ctl(socket, &["outage", "start", "--channel", "7"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("no channel 7: this link has 2 (0 to 1)"),
        "{}",
        text(&missing.stderr)
    );
    let bad = ctl(socket, &["set", "ber=1.5"]);
    assert!(
        text(&bad.stderr).contains("ber: invalid bit-error rate \"1.5\""),
        "{}",
        text(&bad.stderr)
    );
    assert!(emulator.try_wait().unwrap().is_none());
    assert!(datagram_crosses(testbed));

    // Both circuits dropped: nothing crosses until they come back.
    assert!(ctl(socket, &["outage", "start"]).status.success());
    assert!(!datagram_crosses(testbed));
    assert!(ctl(socket, &["outage", "end"]).status.success());
    assert!(datagram_crosses(testbed));
    // Into a pipe nobody reads (`... stats | head` once head has gone):
    // a quiet success, not a panic.
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end);
    let closed = Command::new(SCPS)
        .args(["emulate", "ctl", "--socket"])
        .arg(socket)
        .arg("stats")
        .stdout(std::process::Stdio::from(write_end))
        .output()
        .unwrap();
    assert!(
        closed.status.success() && closed.stderr.is_empty(),
        "{}",
        text(&closed.stderr)
    );
    let metrics = ctl(socket, &["metrics"]);
    let metrics = text(&metrics.stdout);
    assert!(
        metrics.contains(
            "scps_emulator_packets_dropped_total{channel=\"0\",direction=\"forward\",cause=\"outage\"} 1"
        ) || metrics.contains(
            "scps_emulator_packets_dropped_total{channel=\"1\",direction=\"forward\",cause=\"outage\"} 1"
        ),
        "{metrics}"
    );

    emulator.signal(Signal::SIGINT).unwrap();
    let status = emulator
        .wait_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("stops on Ctrl-C");
    assert!(status.success(), "{status}");
    let last: serde_json::Value = serde_json::from_str(emulator.read_stdout().unwrap().trim()).unwrap();
    assert!(last["uptime_s"].as_f64().unwrap() > 0.0);
    // Its rules and its socket are gone.
    let emu = testbed.node(EMU).unwrap();
    assert!(!emu.ip(&["rule"]).unwrap().contains("lookup 23000"));
    assert!(!socket.exists());
}

#[test]
fn a_second_emulator_in_a_namespace_is_refused_saying_one_runs_there() {
    let emulation = Emulation::start("emulate-second", "", "rate = \"10Mbit\"\n", Io::Null);
    let dir = TempDir::new("emulate-second-config");
    let config = write_config(&dir, "", "", "rate = \"10Mbit\"\n");
    let second = emulation
        .testbed
        .node(EMU)
        .unwrap()
        .run(move || {
            Command::new(SCPS)
                .args(["emulate", "--config"])
                .arg(config)
                .output()
        })
        .unwrap();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another emulator runs in this network namespace"),
        "{stderr}"
    );
    emulation.assert_running("the first goes on");
}

#[test]
fn emulate_refuses_a_bad_configuration_naming_the_key() {
    let dir = TempDir::new("emulate-bad");
    let config = write_config(&dir, "", "", "rate = \"10Mbit\"\nbuffer = 100\n");
    assert_eq!(
        refused(&config).trim(),
        format!(
            "scps: {}: link.buffer = 100B: at least the MTU (1500 bytes)",
            config.display()
        )
    );
}

#[test]
fn emulate_refuses_a_timeline_with_bad_lines_listing_them() {
    let dir = TempDir::new("emulate-timeline");
    let timeline = dir.path().join("timeline.jsonl");
    std::fs::write(
        &timeline,
        "{\"at\": \"1s\", \"op\": \"outage_start\", \"channel\": 0}\n\
         {\"at\": \"2s\", \"op\": \"outage_end\", \"channel\": 3}\n\
         {\"at\": \"3s\", \"op\": \"set\", \"keys\": {\"delay\": \"fast\"}}\n\
         {\"at\": \"4s\", \"op\": \"outage_end\", \"channel\": 0}\n",
    )
    .unwrap();
    let config = write_config(
        &dir,
        "",
        &format!("replay = \"{}\"\n", timeline.display()),
        "rate = \"10Mbit\"\n",
    );
    let stderr = refused(&config);
    assert!(
        stderr.starts_with(&format!(
            "scps: start the emulator of {}: {}: the timeline is refused, 2 of its 4 entries are bad:\n  \
             line 2: no channel 3: this link has 1 (0 to 0)\n  line 3: delay: invalid duration \"fast\"",
            config.display(),
            timeline.display()
        )),
        "{stderr}"
    );
}

/// Mean and sample standard deviation.
fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// The same transfer, our stack at both ends, in the simulator and through
/// the live emulator: plain TCP (`tcp-vj`) with 4 MiB buffers, 4 MB over
/// 8 Mbit/s with a 100 ms RTT and a 256 KB drop-tail buffer. Through the
/// emulator the stack rides UDP (`scps send --udp`): 1472-byte inner
/// packets in 1500-byte outer ones, which the simulated link charges as 28
/// bytes of framing.
///
/// The window outgrows the path's BDP plus buffer (356 KB) in slow start,
/// so both worlds overflow the buffer and recover: the check covers the
/// rate, the delay, the queue and its drops, and loss recovery. (Before
/// the engine found lost retransmissions by later arrivals, the outcome
/// hung on whether one retransmission met a full queue, a matter of
/// sub-millisecond timing, and the two worlds could not agree:
/// docs/BENCHMARKS.md, "Cross-check with our stack at both ends".)
#[test]
#[ignore = "slower tier: a transfer through the emulator in namespaces, real time, ~20 s"]
fn emulated_transfer_of_our_stack_beside_the_simulator() {
    const LINK: &str = "rate = \"8Mbit\"\nrtt = \"100ms\"";
    const BUFFER_BYTES: u64 = 256_000;
    const ONE_WAY_DELAY_S: f64 = 0.05;
    const EMULATED_RUNS: u64 = 4;
    // The emulator's buffer counts the bytes of the packets it sees, the
    // 1500-byte outer ones; the simulated link sees the 1472-byte inner
    // ones, so its buffer is scaled to hold as many packets.
    let simulated_buffer_bytes = BUFFER_BYTES * 1472 / 1500;
    let scenario = format!(
        "name = \"crosscheck\"\nprotocol = \"tcp-vj\"\n[link]\n{LINK}\nbuffer = \"{simulated_buffer_bytes}B\"\n\
         mtu = 1472\nframing = 28\n[workload]\nkind = \"bulk\"\nbytes = \"4MB\"\n\
         [tcp]\nsend_buffer = \"4MiB\"\nrecv_buffer = \"4MiB\"\n"
    );
    let scenario = scps_config::Scenario::from_text(&scenario, "crosscheck", &[]).unwrap();
    let simulated: Vec<f64> = (1..=3)
        .map(|seed| {
            let result = scps_sim::run(&scenario.points[0], seed, &scps_sim::RunOptions::default()).unwrap();
            println!(
                "simulated run {seed}: {:.0} bit/s, {} bytes retransmitted, {} timeouts, {} fast recoveries",
                result.goodput_bps, result.retransmitted_bytes, result.timeouts, result.fast_recoveries
            );
            assert_eq!(result.error, None);
            assert!(
                result.link.forward.dropped_buffer > 0,
                "the simulated buffer never overflowed"
            );
            result.goodput_bps
        })
        .collect();

    let emulation = Emulation::start(
        "emulate-crosscheck",
        "",
        &format!("{LINK}\nbuffer = \"{BUFFER_BYTES}B\"\n"),
        Io::Null,
    );
    let testbed = &emulation.testbed;
    let mut emulated = Vec::new();
    for run in 0..EMULATED_RUNS {
        let port = format!("{}", 7168 + run);
        let receiver = testbed
            .node("server")
            .unwrap()
            .spawn(
                SCPS,
                &[
                    "recv",
                    "--udp",
                    &format!("10.99.2.2:{port}"),
                    "--once",
                    "--set",
                    "tcp.send_buffer=4MiB",
                    "--set",
                    "tcp.recv_buffer=4MiB",
                    "--stack",
                    "tcp-vj",
                ],
                Io::Null,
            )
            .unwrap();
        let output = testbed
            .node("client")
            .unwrap()
            .output(
                SCPS,
                &[
                    "send",
                    "10.99.2.2:5001",
                    "--udp",
                    &format!("10.99.2.2:{port}"),
                    "--bytes",
                    "4MB",
                    "--set",
                    "tcp.send_buffer=4MiB",
                    "--set",
                    "tcp.recv_buffer=4MiB",
                    "--stack",
                    "tcp-vj",
                    "--json",
                    "--connect-timeout",
                    "10s",
                ],
            )
            .expect("scps send completes");
        let result: serde_json::Value = serde_json::from_str(output.trim()).unwrap();
        assert_eq!(result["verified"], true, "{result}");
        // The sender's clock runs from just before its SYN, as the
        // simulator's, to the receiver's report, which leaves when the last
        // byte (and the 32-byte digest) is read and takes one one-way delay
        // (the queue is empty by then) to come back; the simulator's clock
        // stops at the last byte read.
        let seconds = result["duration_s"].as_f64().unwrap() - ONE_WAY_DELAY_S;
        let goodput_bps = result["bytes"].as_f64().unwrap() * 8.0 / seconds;
        println!(
            "emulated run {run}: {goodput_bps:.0} bit/s ({} as the sender timed it), {} bytes retransmitted, \
             {} timeouts, {} fast recoveries",
            result["goodput_bps"],
            result["retransmitted_bytes"],
            result["timeouts"],
            result["fast_recoveries"]
        );
        emulated.push(goodput_bps);
        let status = receiver
            .wait_timeout(Duration::from_secs(10))
            .unwrap()
            .expect("scps recv ends");
        assert!(status.success(), "scps recv: {status}");
    }
    emulation.assert_running("the emulator kept running");
    let stats = emulation.stats();
    let forward = &stats["channels"][0];
    println!(
        "emulator, all runs: {} buffer drops, longest queueing delay {} s",
        forward["dropped_buffer"], forward["queue_delay_max_s"]
    );
    assert!(
        forward["dropped_buffer"].as_u64().unwrap() > 0,
        "the emulated buffer never overflowed"
    );

    let ((sim, sim_sd), (emu, emu_sd)) = (mean_sd(&simulated), mean_sd(&emulated));
    // Agreement within the spread of repeated runs: the means differ by
    // less than two standard deviations of either side (a run-to-run
    // spread that large would make a difference of that size unremarkable),
    // and the allowance is never below 3%: the simulator has no spread here
    // (no random process at BER 0), the emulator's rate is held to 2% (the
    // accuracy tests), and real hosts on two busy cores slow slow start
    // (segments delivered in batches draw stretch ACKs: 6 to 100 ms later
    // to 256 KiB in a 4.8 s transfer, up to 2%), which the simulator's
    // ideal hosts do not. Measured: 1 to 2% apart (docs/BENCHMARKS.md).
    let allowed = (2.0 * sim_sd).max(2.0 * emu_sd).max(0.03 * sim);
    println!(
        "simulator {sim:.0} +- {sim_sd:.0} bit/s, emulator {emu:.0} +- {emu_sd:.0} bit/s: ratio {:.3}, \
         difference {:.0}, allowed {allowed:.0}",
        emu / sim,
        (emu - sim).abs()
    );
    assert!(
        (emu - sim).abs() <= allowed,
        "the simulated ({simulated:?}) and emulated ({emulated:?}) goodputs disagree: means {sim:.0} and \
         {emu:.0} bit/s differ by more than {allowed:.0}"
    );
}

/// The link's forward figures at one moment of a run.
struct Sample {
    at_s: f64,
    bytes_in: u64,
    backlog_bytes: u64,
}

/// The emulated link's rate, set for both directions.
fn set_rate(socket: &Path, rate: &str) {
    let change = scps_emulator::Request::Change(scps_emulator::Change::Set {
        channel: None,
        direction: scps_emulator::Directions::Both,
        keys: [("rate".to_owned(), rate.to_owned())].into(),
    });
    let response = scps_emulator::request(socket, &change).unwrap();
    assert!(response.ok, "{:?}", response.error);
}

/// The rate packets arrived at the link (what the sender sent) over the
/// `window_s` seconds before each sample, with the sample's time.
fn arrival_rates(samples: &[Sample], window_s: f64) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|now| {
            let before = samples.iter().rev().find(|s| s.at_s <= now.at_s - window_s)?;
            let bits = (now.bytes_in - before.bytes_in) as f64 * 8.0;
            Some((now.at_s, bits / (now.at_s - before.at_s)))
        })
        .collect()
}

#[test]
#[ignore = "slower tier: a 60 s transfer through the emulator's rate steps, real time, ~70 s"]
fn an_auto_rate_follows_the_emulated_links_rate_steps() {
    // 8 Mbit/s at 600 ms, halved 20 s into the transfer, doubled back at
    // 40 s: our stack's `scps-rate` with `rate = "auto"` must follow
    // each step within a few round trips and keep the queue it builds
    // small.
    const STEP_DOWN_S: f64 = 20.0;
    const STEP_UP_S: f64 = 40.0;
    const RTT_S: f64 = 0.6;
    let emulation = Emulation::start(
        "emulate-rate-step",
        "",
        "rate = \"8Mbit\"\nrtt = \"600ms\"\nbuffer = \"1500KB\"\n",
        Io::Null,
    );
    let (testbed, socket) = (&emulation.testbed, &emulation.socket);
    let stack = [
        "--stack",
        "scps-rate",
        "--set",
        "tcp.rate=\"auto\"",
        "--set",
        "tcp.send_buffer=8MiB",
        "--set",
        "tcp.recv_buffer=8MiB",
    ];
    let receiver = testbed
        .node("server")
        .unwrap()
        .spawn(
            SCPS,
            &[&["recv", "--udp", "10.99.2.2:7300", "--once"][..], &stack].concat(),
            Io::Null,
        )
        .unwrap();
    let sender = testbed
        .node("client")
        .unwrap()
        .spawn(
            SCPS,
            &[
                &[
                    "send",
                    "10.99.2.2:5001",
                    "--udp",
                    "10.99.2.2:7300",
                    "--bytes",
                    "50MB",
                    "--json",
                    "--connect-timeout",
                    "10s",
                ][..],
                &stack,
            ]
            .concat(),
            Io::Piped,
        )
        .unwrap();
    let started = Instant::now();
    let mut samples = Vec::new();
    let (mut stepped_down, mut stepped_up) = (false, false);
    // A sample every 100 ms until the sender exits: the wait for its exit
    // is the clock of the samples.
    loop {
        let at_s = started.elapsed().as_secs_f64();
        assert!(at_s < 120.0, "the transfer did not end in two minutes");
        if at_s >= STEP_DOWN_S && !stepped_down {
            set_rate(socket, "4Mbit");
            stepped_down = true;
        }
        if at_s >= STEP_UP_S && !stepped_up {
            set_rate(socket, "8Mbit");
            stepped_up = true;
        }
        let stats = scps_emulator::request(
            socket,
            &scps_emulator::Request::Query(scps_emulator::Query::Stats),
        )
        .unwrap()
        .stats
        .expect("stats answer a stats query");
        let forward = stats
            .channels
            .iter()
            .find(|c| c.direction == "forward")
            .expect("a forward channel");
        samples.push(Sample {
            at_s,
            bytes_in: forward.bytes_in,
            backlog_bytes: forward.backlog_bytes,
        });
        if sender.wait_timeout(Duration::from_millis(100)).unwrap().is_some() {
            break;
        }
    }
    let result: serde_json::Value = serde_json::from_str(sender.read_stdout().unwrap().trim()).unwrap();
    assert_eq!(result["verified"], true, "{result}");
    assert!(stepped_up, "the transfer ended before the second step: {result}");
    let status = receiver.wait_timeout(Duration::from_secs(10)).unwrap();
    assert!(status.is_some_and(|s| s.success()), "scps recv: {status:?}");

    // What the sender sent, over a round trip at a time.
    let rates = arrival_rates(&samples, RTT_S);
    let first_after = |from: f64, until: f64, ok: &dyn Fn(f64) -> bool| {
        rates
            .iter()
            .find(|&&(t, rate)| t >= from + RTT_S && t < until && ok(rate))
            .map(|&(t, _)| t - from)
    };
    let down = first_after(STEP_DOWN_S, STEP_UP_S, &|rate| rate <= 1.1 * 4e6);
    let up = first_after(STEP_UP_S, f64::INFINITY, &|rate| rate >= 0.9 * 8e6);
    let peak_queue_s = samples
        .iter()
        .filter(|s| (STEP_DOWN_S..STEP_UP_S).contains(&s.at_s))
        .map(|s| s.backlog_bytes as f64 * 8.0 / 4e6)
        .fold(0.0, f64::max);
    let settled: Vec<f64> = rates
        .iter()
        .filter(|(t, _)| (STEP_DOWN_S + 8.0..STEP_UP_S).contains(t))
        .map(|&(_, rate)| rate)
        .collect();
    let settled_mean = settled.iter().sum::<f64>() / settled.len() as f64;
    println!(
        "rate step 8 -> 4 -> 8 Mbit/s at 600 ms: followed the step down in {down:?} s, the step up in {up:?} s; \
         peak queue after the step down {peak_queue_s:.2} s; sending at {settled_mean:.0} bit/s once settled at \
         4 Mbit/s; goodput {} bit/s",
        result["goodput_bps"]
    );
    assert!(
        down.is_some_and(|s| s < 10.0 * RTT_S),
        "step down followed in {down:?} s"
    );
    assert!(
        up.is_some_and(|s| s < 15.0 * RTT_S),
        "step up followed in {up:?} s"
    );
    // The least a sender that learns of the step from its ACKs can queue
    // is a round trip at the old rate less the new, 0.6 s at 4 Mbit/s; a
    // TCP that fills the buffer queues its 3 s.
    assert!(peak_queue_s < 2.0, "peak queue {peak_queue_s} s");
    assert!(
        (0.85 * 4e6..1.15 * 4e6).contains(&settled_mean),
        "settled at {settled_mean} bit/s"
    );
}

/// One `scps send` of `bytes` through the emulation (from the client to
/// `scps recv` at the server) with our stack as `stack`: its JSON report.
fn send_through(emulation: &Emulation, port: u16, stack: &str, bytes: &str) -> serde_json::Value {
    let udp = format!("10.99.2.2:{port}");
    let receiver = emulation
        .testbed
        .node("server")
        .unwrap()
        .spawn(
            SCPS,
            &["recv", "--udp", &udp, "--once", "--stack", stack],
            Io::Null,
        )
        .unwrap();
    let output = emulation
        .testbed
        .node("client")
        .unwrap()
        .output(
            SCPS,
            &[
                "send",
                "10.99.2.2:5001",
                "--udp",
                &udp,
                "--bytes",
                bytes,
                "--stack",
                stack,
                "--json",
                "--connect-timeout",
                "20s",
            ],
        )
        .expect("scps send completes");
    let status = receiver
        .wait_timeout(Duration::from_secs(20))
        .unwrap()
        .expect("scps recv ends");
    assert!(status.success(), "scps recv: {status}");
    serde_json::from_str(output.trim()).unwrap()
}

#[test]
#[ignore = "slower tier: a transfer over emulated 64 kbit/s circuits, real time, ~35 s"]
fn the_emulator_stripes_circuits_of_different_delays_with_the_scheduler() {
    // The simulator's bonding case, live: three clean 64 kbit/s
    // circuits of 0.8, 1.2 and 2.0 s round trip, striped by a bond at
    // each side of the emulated link. What the bonds' probes and answers
    // add stays inside the link; the transfer arrives intact and in
    // order, so nothing is resent.
    let link = "rate = \"64kbit\"\nchannels = 3\nbond = \"scheduler\"\nbond_probe_interval = \"200ms\"\n\
                [[link.channel]]\nrtt = \"800ms\"\n[[link.channel]]\nrtt = \"1.2s\"\n[[link.channel]]\nrtt = \"2s\"\n";
    let emulation = Emulation::start("emulate-scheduler", "", link, Io::Null);
    let result = send_through(&emulation, 7168, "tcp-cubic", "600KB");
    println!("through the scheduler: {result}");
    assert_eq!(result["verified"], true, "{result}");
    assert_eq!(result["retransmitted_bytes"], 0, "nothing resent: {result}");
    // Three circuits' worth: more than two could carry (128 kbit/s, less
    // headers), in a transfer of about 30 s with its slow start.
    let goodput = result["goodput_bps"].as_f64().unwrap();
    assert!(goodput > 100_000.0, "{goodput} bit/s");
    // The bonds as the control socket gives them: every circuit up at
    // both sides, each carrying a share of the 600 KB forward.
    let stats = emulation.stats();
    let bonds = stats["bonds"].as_array().expect("the stats give the bonds");
    assert_eq!(bonds.len(), 2, "{stats}");
    let (a, b) = (&bonds[0], &bonds[1]);
    assert_eq!((&a["side"], &a["sends"]), (&"a".into(), &"forward".into()));
    for bond in bonds {
        let states: Vec<&str> = bond["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["state"].as_str().unwrap())
            .collect();
        assert_eq!(states, ["up"; 3], "{bond}");
    }
    for channel in 0..3 {
        let sent = a["channels"][channel]["sent_bytes"].as_u64().unwrap();
        assert!(sent > 100_000, "circuit {channel} carried {sent} bytes: {a}");
        let received = b["channels"][channel]["received_bytes"].as_u64().unwrap();
        assert!(received <= sent && received > 100_000, "{b}");
    }
    let table = text(&ctl(&emulation.socket, &["stats"]).stdout);
    println!("{table}");
    assert!(table.contains("bond at side b (sends return)"), "{table}");
    let metrics = text(&ctl(&emulation.socket, &["metrics"]).stdout);
    let up = "scps_emulator_bond_channel_state{side=\"a\",channel=\"2\",state=\"up\"} 1.0";
    assert!(metrics.lines().any(|l| l == up), "{metrics}");
    emulation.assert_running("the emulator kept running");
}

#[test]
#[ignore = "slower tier: a 10 MB Saratoga put through the emulator at BER 1e-5, real time, ~15 s"]
fn a_saratoga_put_through_the_emulator_beside_the_simulator() {
    // A real Saratoga transfer: `scps saratoga put` from the client to
    // `scps saratoga serve` at the server across geo-8mbit's link at
    // 600 ms and BER 1e-5, emulated; and the simulator's figure for the
    // same link and file size. Both hold Saratoga's rate.
    const LINK: &str = "rate = \"8Mbit\"\nrtt = \"600ms\"\nber = 1e-5\nbuffer = \"2MB\"";
    // 10 MB by default; SCPS_SARATOGA_BYTES=100000000 for the
    // scenario's 100 MB.
    let bytes: usize = std::env::var("SCPS_SARATOGA_BYTES")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(10_000_000);
    let scenario = format!(
        "name = \"saratoga\"\nprotocol = \"saratoga\"\n[link]\n{LINK}\n[workload]\nkind = \"bulk\"\nbytes = \"{bytes}B\"\n"
    );
    let scenario = scps_config::Scenario::from_text(&scenario, "saratoga", &[]).unwrap();
    let simulated = scps_sim::run(&scenario.points[0], 1, &scps_sim::RunOptions::default()).unwrap();
    assert_eq!(simulated.error, None);

    let emulation = Emulation::start("emulate-saratoga", "", &format!("{LINK}\n"), Io::Null);
    let dir = TempDir::new("emulate-saratoga-files");
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let file = dir.path().join("file.bin");
    let data: Vec<u8> = (0..bytes as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &data).unwrap();
    let server = emulation
        .testbed
        .node("server")
        .unwrap()
        .spawn(
            SCPS,
            &[
                "saratoga",
                "serve",
                served.to_str().unwrap(),
                "--listen",
                "10.99.2.2:7542",
            ],
            Io::Null,
        )
        .unwrap();
    let output = emulation
        .testbed
        .node("client")
        .unwrap()
        .output(
            SCPS,
            &[
                "saratoga",
                "put",
                file.to_str().unwrap(),
                "10.99.2.2:7542",
                "--rate",
                "8Mbit",
                "--json",
            ],
        )
        .expect("scps saratoga put completes");
    let report: serde_json::Value = serde_json::from_str(output.trim()).unwrap();
    server.signal(Signal::SIGINT).unwrap();
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(
        std::fs::read(served.join("file.bin")).unwrap(),
        data,
        "the served directory holds the file as sent"
    );
    let emulated_bps = report["goodput_bps"].as_f64().unwrap();
    println!(
        "saratoga at 600 ms, BER 1e-5, {bytes} bytes: emulated {emulated_bps:.0} bit/s ({} bytes re-sent), \
         simulated {:.0} bit/s (ratio {:.3} of the limit, {} bytes re-sent)",
        report["retransmitted_bytes"], simulated.goodput_bps, simulated.ratio, simulated.retransmitted_bytes
    );
    // The emulator's link carries the datagrams whole (8 Mbit/s of IP
    // packets), the same model as the simulator's; the real put's time
    // also counts the process starting, the file's MD5 at both ends and
    // the hosts' scheduling on two busy cores (measured: 0.92 of the
    // simulator's goodput), so a fifth is allowed.
    assert!(
        emulated_bps > 0.8 * simulated.goodput_bps,
        "emulated {emulated_bps:.0} bit/s against simulated {:.0}",
        simulated.goodput_bps
    );
}
