//! The emulator carrying real traffic: kernel TCP both ways with every
//! byte checked, IPv6, ICMP (ping), burst errors and the queue
//! discipline, parallel channels, reports about a pinned circuit that is
//! down, timeline replay and recording, and Prometheus metrics over HTTP.

mod common;

use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use common::{bench, config, probe, quantile};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt};
use scps_emulator::Change;
use scps_testbed::{EMU, ipv4, ipv6};

/// A checksum over the byte stream (FNV-1a, 64 bits).
fn fnv(bytes: &[u8], mut hash: u64) -> u64 {
    for &b in bytes {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Pseudo-random bytes from a seed (xorshift), so both ends can agree.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn emulated_link_carries_kernel_tcp_both_ways_byte_for_byte() {
    // Bit errors in drop mode and a small buffer: TCP has to recover.
    let link = "rate = \"20Mbit\"\ndelay = \"10ms\"\nber = 1e-6\nbuffer = \"64KB\"";
    let seed = 11;
    println!("seed {seed}");
    let bench = bench(config(link, "", seed));
    let server_addr: SocketAddr = "10.99.2.2:7100".parse().unwrap();
    let listener = bench
        .testbed
        .node("server")
        .unwrap()
        .run(move || TcpListener::bind(server_addr))
        .unwrap();
    let upload = pattern(1, 2_000_000);
    let download = pattern(2, 1_000_000);
    let expected_up = fnv(&upload, FNV_START);
    let down_len = download.len();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut received = vec![0u8; 2_000_000];
        stream.read_exact(&mut received).unwrap();
        stream.write_all(&download).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        fnv(&received, FNV_START)
    });
    let mut client = bench
        .testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(5)))
        .unwrap();
    client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let start = Instant::now();
    client.write_all(&upload).unwrap();
    let mut back = Vec::new();
    client.read_to_end(&mut back).unwrap();
    println!("2 MB up and 1 MB down in {:?}", start.elapsed());
    assert_eq!(server.join().unwrap(), expected_up, "upload damaged");
    assert_eq!(back.len(), down_len);
    assert_eq!(
        fnv(&back, FNV_START),
        fnv(&pattern(2, down_len), FNV_START),
        "download damaged"
    );
    let stats = bench.emulator.stats();
    let errors: u64 = stats.channels.iter().map(|c| c.dropped_bit_errors).sum();
    println!("packets lost to bit errors: {errors}");
    assert!(errors > 0, "BER 1e-6 over 3 MB loses packets");
}

#[test]
fn emulated_link_carries_ipv6() {
    let bench = bench(config("rate = \"10Mbit\"\ndelay = \"20ms\"", "", 12));
    let server = SocketAddr::new(ipv6(2, 2).into(), 7200);
    let client = SocketAddr::new(ipv6(1, 2).into(), 0);
    let receiver = bench.udp("server", server);
    receiver.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let sender = bench.udp("client", client);
    let sent = Instant::now();
    sender.send_to(b"six", server).unwrap();
    let mut buf = [0u8; 8];
    let n = receiver.recv(&mut buf).expect("IPv6 datagram arrives");
    assert_eq!(&buf[..n], b"six");
    assert!(sent.elapsed() >= Duration::from_millis(20));
    assert_eq!(bench.emulator.stats().channels[0].packets_out, 1);
}

/// ICMP crosses as any other protocol: `ping` (the kernel answers the echo
/// requests) over IPv4 and IPv6, each way through the 20 ms delay.
#[test]
fn emulated_link_carries_icmp_ping_both_families() {
    let bench = bench(config("rate = \"10Mbit\"\ndelay = \"20ms\"", "", 15));
    let client = bench.testbed.node("client").unwrap();
    for target in [ipv4(2, 2).to_string(), ipv6(2, 2).to_string()] {
        let output = client
            .output("ping", &["-n", "-c", "3", "-i", "0.2", "-W", "2", &target])
            .expect("ping answered through the emulator");
        println!("{output}");
        assert!(output.contains("3 packets transmitted, 3 received"), "{output}");
        // "rtt min/avg/max/mdev = 40.3/40.4/40.5/0.1 ms": the round trip
        // takes both directions' delay.
        let min_ms: f64 = output
            .split("= ")
            .nth(1)
            .and_then(|figures| figures.split('/').next())
            .and_then(|min| min.parse().ok())
            .unwrap_or_else(|| panic!("no rtt line in {output}"));
        assert!(min_ms >= 40.0, "round trip {min_ms} ms through 2 x 20 ms");
    }
    let stats = bench.emulator.stats();
    // Echo requests forward, replies back (and nothing else on this link:
    // neighbour discovery stays on each side of the router).
    assert_eq!(stats.channels[0].packets_out, 6, "{stats:?}");
    assert_eq!(stats.channels[1].packets_out, 6, "{stats:?}");
}

/// The two-state (Gilbert-Elliott) burst model through the live emulator:
/// an error-free good state and a bad state that loses nearly every
/// 1000-byte packet, 20 ms bad every 200 ms good on average. Losses come
/// in runs, about a bad period's worth of probes each, and their share is
/// near the time spent in the bad state; independent losses at that rate
/// would come one at a time.
#[test]
fn emulated_burst_errors_come_in_runs() {
    let seed = 17;
    println!("seed {seed}");
    let link = "rate = \"100Mbit\"\nber = 0\nburst_ber = 1e-3\nburst_duration = \"20ms\"\n\
                burst_interval = \"200ms\"";
    let bench = bench(config(link, "", seed));
    let count = 3000;
    let probes = probe(
        &bench,
        count,
        1000 - 28,
        Duration::from_millis(1),
        Duration::from_millis(100),
    );
    let lost: Vec<bool> = probes.arrived.iter().map(Option::is_none).collect();
    let losses = lost.iter().filter(|l| **l).count();
    let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count() + usize::from(lost[0]);
    let share = losses as f64 / count as f64;
    let mean_run = losses as f64 / runs.max(1) as f64;
    println!("{losses} of {count} lost in {runs} runs: share {share:.3}, mean run {mean_run:.1} probes");
    assert_eq!(
        bench.emulator.stats().channels[0].dropped_bit_errors as usize,
        losses
    );
    // 3 s hold about 14 bad periods of 20 ms (exponential lengths): the
    // share is loosely bounded around 20/220 = 9%.
    assert!(runs >= 3, "too few bad periods: {runs}");
    assert!((0.02..0.25).contains(&share), "share {share}");
    // Each run spans a bad period (mean 20 ms = 20 probes).
    assert!(mean_run >= 5.0, "losses are not bursty: mean run {mean_run}");
}

/// The queue discipline is the configuration's choice: the same overload
/// (15 Mbit/s of 1500-byte packets into 10 Mbit/s, a 150 KB buffer) fills
/// a drop-tail buffer to the brim (120 ms of queue) while RED, dropping
/// early as its average backlog passes 15 to 45 KB, keeps the queue
/// shorter. (The average follows the backlog slowly, weight 0.002, so the
/// first burst still reaches deep into the buffer: compared on the mean.)
#[test]
fn emulated_queue_discipline_droptail_fills_red_drops_early() {
    let mut delays = Vec::new();
    for qdisc in ["droptail", "red\"\nred_min = \"15KB\"\nred_max = \"45KB"] {
        let link = format!("rate = \"10Mbit\"\nbuffer = \"150KB\"\nqdisc = \"{qdisc}\"");
        let bench = bench(config(&link, "", 18));
        let probes = probe(
            &bench,
            1500,
            1500 - 28,
            Duration::from_micros(800),
            Duration::from_millis(300),
        );
        let forward = bench.emulator.stats().channels[0].clone();
        println!(
            "{}: {} dropped, queueing delay mean {:.1} ms, max {:.1} ms",
            qdisc.split('"').next().unwrap(),
            forward.dropped_buffer,
            forward.queue_delay_mean_s * 1e3,
            forward.queue_delay_max_s * 1e3
        );
        assert_eq!(forward.dropped_buffer as usize, probes.lost());
        assert!(forward.dropped_buffer > 0);
        delays.push((forward.queue_delay_mean_s, forward.queue_delay_max_s));
    }
    let (droptail, red) = (delays[0], delays[1]);
    // Drop-tail: within a packet (1.2 ms) of the full buffer (150 KB =
    // 120 ms).
    assert!(droptail.1 >= 0.118, "drop-tail max {} s", droptail.1);
    // RED: the typical packet queues far less.
    assert!(
        red.0 < 0.6 * droptail.0,
        "RED mean {} s, drop-tail {} s",
        red.0,
        droptail.0
    );
}

#[test]
fn emulated_parallel_channels_stripe_round_robin_each_with_its_own_model() {
    // Three circuits with delays 10, 20 and 30 ms.
    let link = "rate = \"10Mbit\"\nchannels = 3\n[[channel]]\ndelay = \"10ms\"\n[[channel]]\ndelay = \"20ms\"\n[[channel]]\ndelay = \"30ms\"\n";
    let link = link.replace("[[channel]]", "[[link.channel]]");
    let bench = bench(config(&link, "", 13));
    let probes = probe(
        &bench,
        300,
        100,
        Duration::from_millis(3),
        Duration::from_millis(200),
    );
    assert_eq!(probes.lost(), 0);
    for circuit in 0..3 {
        let delays: Vec<Duration> = probes
            .sent
            .iter()
            .zip(&probes.arrived)
            .skip(circuit)
            .step_by(3)
            .map(|(s, a)| a.unwrap() - *s)
            .collect();
        let expected = Duration::from_millis(10 * (circuit as u64 + 1));
        let p50 = quantile(&delays, 0.5);
        println!("channel {circuit}: median one-way delay {p50:?}");
        assert!(
            p50 >= expected && p50 - expected < Duration::from_millis(1),
            "channel {circuit}: {p50:?}"
        );
    }
    let stats = bench.emulator.stats();
    let forward: Vec<u64> = stats
        .channels
        .iter()
        .filter(|c| c.direction == "forward")
        .map(|c| c.packets_in)
        .collect();
    assert_eq!(forward, [100, 100, 100]);
}

#[test]
fn a_pinned_circuit_whose_call_is_down_is_reported_unreachable_to_the_sender() {
    // Two circuits, a UDP port pinned to each. While the second circuit's
    // call is down, a datagram for its port is answered with ICMP host
    // unreachable (ICMPv6 address unreachable) from the emulator's address
    // on the sender's side: the kernel takes the report (its checksums
    // and quote right) and a connected socket listening for reports hears
    // "no route to host", from that router. The first circuit carries on.
    let v4 = |host| IpAddr::V4(ipv4(1, host));
    let v6 = |host| IpAddr::V6(ipv6(1, host));
    for (sender, server, router, icmp) in [
        (v4(2), IpAddr::V4(ipv4(2, 2)), v4(1), (3, 1)),
        (v6(2), IpAddr::V6(ipv6(2, 2)), v6(1), (1, 3)),
    ] {
        let (reported, from) = reported_unreachable(sender, server);
        assert_eq!((reported.ee_type, reported.ee_code), icmp, "{sender}");
        assert_eq!(from, Some(router), "from the emulator's side a");
    }
}

/// What a socket at `sender`, listening for reports, hears after sending
/// into a pinned circuit whose call is down: the report and its sender.
fn reported_unreachable(sender: IpAddr, server: IpAddr) -> (nix::libc::sock_extended_err, Option<IpAddr>) {
    let link = "rate = \"2400bps\"\nchannels = 2\n";
    let bench = bench(config(link, "circuit_ports = [7000, 7001]", 17));
    let receiver = bench.udp("server", SocketAddr::new(server, 7000));
    receiver.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let connected = |port: u16| {
        let socket = bench.udp("client", SocketAddr::new(sender, 0));
        match sender {
            IpAddr::V4(_) => setsockopt(&socket, sockopt::Ipv4RecvErr, &true).unwrap(),
            IpAddr::V6(_) => setsockopt(&socket, sockopt::Ipv6RecvErr, &true).unwrap(),
        }
        socket.connect(SocketAddr::new(server, port)).unwrap();
        socket
    };
    let (up, down) = (connected(7000), connected(7001));
    bench
        .emulator
        .apply(&Change::OutageStart { channel: Some(1) })
        .unwrap();
    down.send(b"into a dead circuit").unwrap();
    up.send(b"through a live one").unwrap();
    let mut buf = [0u8; 64];
    let len = receiver
        .recv(&mut buf)
        .expect("the live circuit carries its datagram");
    assert_eq!(&buf[..len], b"through a live one");
    // The report sets the socket's error: poll wakes on it.
    let mut fds = [PollFd::new(down.as_fd(), PollFlags::empty())];
    let woken = poll(&mut fds, PollTimeout::from(2000u16)).unwrap();
    assert_eq!(
        woken,
        1,
        "no report within 2 s: {:?}",
        bench.emulator.stats().directions
    );
    let error = down.take_error().unwrap().expect("the socket's error");
    assert_eq!(error.raw_os_error(), Some(nix::libc::EHOSTUNREACH), "{error}");
    let reports: Vec<u64> = bench
        .emulator
        .stats()
        .directions
        .iter()
        .map(|d| d.unreachable_reports)
        .collect();
    assert_eq!(reports, [1, 0]);
    let mut quoted = [0u8; 64];
    let mut control = nix::cmsg_space!(nix::libc::sock_extended_err, nix::libc::sockaddr_in6);
    let mut iov = [std::io::IoSliceMut::new(&mut quoted)];
    let message = recvmsg::<SockaddrStorage>(
        down.as_raw_fd(),
        &mut iov,
        Some(&mut control),
        MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
    )
    .expect("the report is in the error queue");
    let mut messages = message.cmsgs().unwrap();
    messages
        .find_map(|cmsg| match cmsg {
            ControlMessageOwned::Ipv4RecvErr(error, from) => Some((
                error,
                from.map(|a| IpAddr::V4(u32::from_be(a.sin_addr.s_addr).into())),
            )),
            ControlMessageOwned::Ipv6RecvErr(error, from) => {
                Some((error, from.map(|a| IpAddr::V6(a.sin6_addr.s6_addr.into()))))
            }
            _ => None,
        })
        .expect("an IP_RECVERR message")
}

#[test]
fn emulated_timeline_replays_and_records() {
    let dir = std::env::temp_dir().join(format!("scps-emulator-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let replay = dir.join("replay.jsonl");
    let record = dir.join("record.jsonl");
    std::fs::write(
        &replay,
        "# delay up at 0.5 s, a call drop from 1 s to 1.2 s, bit errors from\n\
         # 1.3 s, then none but a line slower than the probes from 1.45 s\n\
         {\"at\": \"500ms\", \"op\": \"set\", \"direction\": \"forward\", \"keys\": {\"delay\": \"30ms\"}}\n\
         {\"at\": \"1s\", \"op\": \"outage_start\", \"channel\": 0}\n\
         {\"at\": \"1.2s\", \"op\": \"outage_end\", \"channel\": 0}\n\
         {\"at\": \"1.3s\", \"op\": \"set\", \"direction\": \"forward\", \"keys\": {\"ber\": \"1e-3\"}}\n\
         {\"at\": \"1.45s\", \"op\": \"set\", \"direction\": \"forward\", \"keys\": {\"ber\": \"0\", \"rate\": \"256kbit\"}}\n",
    )
    .unwrap();
    let extra = format!(
        "replay = \"{}\"\nrecord = \"{}\"",
        replay.display(),
        record.display()
    );
    let bench = bench(config("rate = \"50Mbit\"\ndelay = \"5ms\"", &extra, 14));
    let epoch = bench.emulator.epoch();
    // 128-byte packets (100 bytes of payload) every 2 ms: 512 kbit/s.
    let probes = probe(
        &bench,
        800,
        100,
        Duration::from_millis(2),
        Duration::from_millis(400),
    );
    let margin = Duration::from_millis(10);
    let ms = Duration::from_millis;
    let within = |at: Duration, from: Duration, to: Duration| at > from + margin && at + margin < to;
    let (mut errored, mut errored_lost) = (0, 0);
    for ((sent, arrived), seq) in probes.sent.iter().zip(&probes.arrived).zip(0..) {
        let at = *sent - epoch;
        if within(at, ms(500), ms(1000)) || within(at, ms(1200), ms(1300)) {
            let delay = arrived.expect("up") - *sent;
            assert!(delay >= ms(30), "probe {seq} at {at:?}: {delay:?}");
        } else if at + margin < ms(500) {
            let delay = arrived.expect("up") - *sent;
            // Under 30 ms: the old delay (5 ms) plus whatever a busy
            // machine adds (the first probe also waits for ARP).
            assert!(delay < ms(30), "probe {seq} at {at:?}: {delay:?}");
        } else if within(at, ms(1000), ms(1200)) {
            assert!(arrived.is_none(), "probe {seq} at {at:?} crossed a dropped call");
        } else if within(at, ms(1300), ms(1450)) {
            errored += 1;
            errored_lost += usize::from(arrived.is_none());
        } else if at > ms(1550) {
            // 512 kbit/s into 256 kbit/s: the queue grows by 2 ms per
            // probe, 50 ms after 100 ms of it.
            let delay = arrived.expect("no errors any more") - *sent;
            assert!(delay >= ms(30 + 40), "probe {seq} at {at:?}: {delay:?}");
        }
    }
    // BER 1e-3 over 128-byte packets: PER 0.64.
    println!("{errored_lost} of {errored} probes lost to bit errors");
    assert!(errored_lost * 10 >= errored * 3, "{errored_lost} of {errored}");
    drop(bench);
    let recorded = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<serde_json::Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{recorded}");
    assert_eq!(lines[1]["op"], "outage_start");
    let at: f64 = lines[1]["at"]
        .as_str()
        .unwrap()
        .trim_end_matches('s')
        .parse()
        .unwrap();
    assert!((at - 1.0).abs() < 0.01, "recorded at {at}");
    // A recording is itself a timeline.
    scps_emulator::Timeline::parse(&recorded, "recording").unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn emulated_counters_are_served_to_prometheus() {
    let bench = bench(config(
        "rate = \"10Mbit\"\nbuffer = 1500",
        "metrics = \"127.0.0.1:0\"",
        15,
    ));
    // Sent at once: most of the burst overflows a one-packet buffer.
    let probes = probe(&bench, 50, 1400, Duration::ZERO, Duration::from_millis(100));
    assert!(probes.lost() > 0);
    let address = bench.emulator.metrics_address().unwrap();
    let text = bench
        .testbed
        .node(EMU)
        .unwrap()
        .run(move || {
            let mut stream = TcpStream::connect(address)?;
            stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: emu\r\n\r\n")?;
            let mut text = String::new();
            BufReader::new(stream).read_to_string(&mut text)?;
            Ok::<_, std::io::Error>(text)
        })
        .unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    let buffer_drops = format!(
        "scps_emulator_packets_dropped_total{{channel=\"0\",direction=\"forward\",cause=\"buffer\"}} {}",
        probes.lost()
    );
    assert!(text.contains(&buffer_drops), "{text}");
    assert!(
        text.contains("scps_emulator_in_bytes_total{channel=\"0\",direction=\"forward\"} 71400"),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "# EOF"), "{text}");
}

const UNPRIVILEGED: &str = "SCPS_EMULATOR_UNPRIVILEGED";

/// Run in a user namespace of its own by the test below: a testbed and an
/// emulator that delays probes by 20 ms.
#[test]
fn unprivileged_child() {
    if std::env::var(UNPRIVILEGED).is_err() {
        return;
    }
    let bench = bench(config("rate = \"10Mbit\"\ndelay = \"20ms\"", "", 16));
    let probes = probe(
        &bench,
        20,
        100,
        Duration::from_millis(5),
        Duration::from_millis(100),
    );
    assert_eq!(probes.lost(), 0);
    assert!(probes.delays().iter().all(|d| *d >= Duration::from_millis(20)));
    println!("EMULATED {} probes", probes.delays().len());
}

/// With no capability but those of a user namespace of its own. (Not as
/// `nobody`: the TUN devices need /dev/net/tun, which Debian leaves open to
/// every user but some machines, this one included, keep to root; the
/// testbed's own test covers an ordinary user.)
#[test]
fn emulated_without_root_inside_a_user_namespace() {
    // As user `nobody`, in a user namespace of its own, with no privilege
    // of the host's. The emulator opens /dev/net/tun, which Debian leaves
    // open to all (0666); a host that closed it (this project's build
    // machine has 0600) lets only root's uid open it, so there the child
    // keeps root's uid, still without any capability outside its
    // namespaces.
    use std::os::unix::fs::PermissionsExt;
    let tun_open_to_all =
        std::fs::metadata("/dev/net/tun").is_ok_and(|m| m.permissions().mode() & 0o006 == 0o006);
    let user = if tun_open_to_all { "65534" } else { "0" };
    println!("the child runs as uid {user} (/dev/net/tun open to all: {tun_open_to_all})");
    let output = std::process::Command::new("setpriv")
        .args([
            format!("--reuid={user}"),
            format!("--regid={user}"),
            "--clear-groups".into(),
            "--".into(),
        ])
        .args(["unshare", "--user", "--map-root-user", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "unprivileged_child", "--nocapture", "--test-threads=1"])
        .env(UNPRIVILEGED, "1")
        .output()
        .expect("run setpriv");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("EMULATED 20 probes"),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn emulated_link_sits_between_the_gateways_of_the_long_topology() {
    let testbed = scps_testbed::Testbed::build(scps_testbed::Topology::with_gateways()).unwrap();
    let config = config("rate = \"10Mbit\"\ndelay = \"25ms\"", "", 17);
    let emulator = testbed
        .node(EMU)
        .unwrap()
        .run(move || scps_emulator::Emulator::start(&config))
        .unwrap();
    let server: SocketAddr = "10.99.4.2:7500".parse().unwrap();
    let receiver = testbed
        .node("server")
        .unwrap()
        .run(move || std::net::UdpSocket::bind(server))
        .unwrap();
    receiver.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let sender = testbed
        .node("client")
        .unwrap()
        .run(|| std::net::UdpSocket::bind("10.99.1.2:0"))
        .unwrap();
    let mut buf = [0u8; 16];
    for _ in 0..3 {
        let sent = Instant::now();
        sender.send_to(b"via gwA and gwB", server).unwrap();
        let n = receiver.recv(&mut buf).expect("arrives");
        assert_eq!(&buf[..n], b"via gwA and gwB");
        assert!(sent.elapsed() >= Duration::from_millis(25));
    }
    assert_eq!(emulator.stats().channels[0].packets_out, 3);
    drop(emulator);
}
