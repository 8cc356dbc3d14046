//! A bundle of UDP channels between two of our endpoints, through a relay
//! that can silence a channel or close it: the bytes arrive intact over the
//! channels that are left, a silent channel is marked down within two probe
//! intervals and back up when it answers again, a channel whose peer is
//! gone, or that a router reports unreachable, is marked down at once with
//! what the network reported, and channels bound to routed interfaces
//! (`device`) outlive one interface going down. Sealed by the secure link,
//! the same holds, and the relay's copies of datagrams (a replay on the
//! path) are refused.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use common::{PORT, content, seed};
use scps_bond::{BondConfig, ChannelState};
use scps_net::{
    BundleChannelAddrs, BundleMonitor, BundlePath, BundleReport, LinkSecurity, Net, NetOptions, PacketPath,
    SecureMonitor,
};
use scps_proto::cc::CongestionAlgorithm;
use scps_secure::{PrivateKey, SecureConfig};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const PROBE_INTERVAL: Duration = Duration::from_millis(100);
const CHANNELS: usize = 3;

/// What the relay does with one channel.
const PASS: u8 = 0;
const SILENT: u8 = 1;
const CLOSED: u8 = 2;
/// Passes, and sends every tenth datagram twice.
const REPLAY: u8 = 3;

/// One channel of the relay: end A's channel sends to `a`, end B's to
/// `b`; each end's address is learned from the first datagram it sends.
struct RelayChannel {
    a: SocketAddr,
    b: SocketAddr,
    mode: Arc<AtomicU8>,
}

impl RelayChannel {
    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::Relaxed);
    }
}

fn relay_channel() -> RelayChannel {
    let sockets = [
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        UdpSocket::bind("127.0.0.2:0").unwrap(),
    ];
    let mode = Arc::new(AtomicU8::new(PASS));
    let channel = RelayChannel {
        a: sockets[0].local_addr().unwrap(),
        b: sockets[1].local_addr().unwrap(),
        mode: mode.clone(),
    };
    let ends = Arc::new(std::sync::Mutex::new([None::<SocketAddr>; 2]));
    for side in 0..2 {
        let from = sockets[side].try_clone().unwrap();
        let to = sockets[1 - side].try_clone().unwrap();
        let (mode, ends) = (mode.clone(), ends.clone());
        std::thread::spawn(move || {
            from.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut buf = vec![0u8; 65536];
            let mut copies = 0u64;
            // Closed: the sockets are dropped, and the ends' datagrams
            // meet a closed port.
            while mode.load(Ordering::Relaxed) != CLOSED {
                let Ok((len, source)) = from.recv_from(&mut buf) else {
                    continue;
                };
                let far = {
                    let mut ends = ends.lock().unwrap();
                    ends[side] = Some(source);
                    ends[1 - side]
                };
                let mode = mode.load(Ordering::Relaxed);
                if let Some(far) = far
                    && (mode == PASS || mode == REPLAY)
                {
                    let _ = to.send_to(&buf[..len], far);
                    copies += 1;
                    if mode == REPLAY && copies.is_multiple_of(10) {
                        let _ = to.send_to(&buf[..len], far);
                    }
                }
            }
        });
    }
    channel
}

/// A bundle of `channels` and the monitor it reports to.
fn watched(channels: &[BundleChannelAddrs], config: BondConfig) -> (BundlePath, BundleMonitor) {
    let monitor = BundleMonitor::default();
    (
        BundlePath::open(channels, config, None, monitor.clone()).unwrap(),
        monitor,
    )
}

fn settings() -> BondConfig {
    let mut config = BondConfig::new(vec![8_000_000; CHANNELS]);
    config.probe_interval = PROBE_INTERVAL;
    config.hold_bytes = 1 << 20;
    config
}

/// End A's and end B's bundles through the relay's channels (A on
/// 127.0.0.1, B on 127.0.0.2), the bond set as `config` says.
fn bundles(relay: &[RelayChannel], config: BondConfig) -> [(BundlePath, BundleMonitor); 2] {
    let end = |ip: &str, peer: fn(&RelayChannel) -> SocketAddr| {
        let channels: Vec<BundleChannelAddrs> = relay
            .iter()
            .map(|r| BundleChannelAddrs {
                local: format!("{ip}:0").parse().unwrap(),
                peer: peer(r),
                device: None,
            })
            .collect();
        watched(&channels, config.clone())
    };
    [end("127.0.0.1", |r| r.a), end("127.0.0.2", |r| r.b)]
}

/// Waits (at most `within`) until `monitor` shows `channel` in `state`.
async fn until_state(monitor: &BundleMonitor, channel: usize, state: ChannelState, within: Duration) -> bool {
    until(monitor, within, |report| report.channels[channel].state == state).await
}

/// Whether the bundle's report shows `condition` within `within`.
async fn until(monitor: &BundleMonitor, within: Duration, condition: impl Fn(&BundleReport) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if condition(&monitor.report()) {
            return true;
        }
        tokio::time::sleep(PROBE_INTERVAL / 4).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_carries_bytes_intact_and_outlives_a_silent_channel() {
    carries_bytes_intact_and_outlives_a_silent_channel(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_bundle_carries_bytes_intact_outlives_a_silent_channel_and_refuses_replays() {
    carries_bytes_intact_and_outlives_a_silent_channel(true).await;
}

async fn carries_bytes_intact_and_outlives_a_silent_channel(sealed: bool) {
    let data = content(seed(), 6 << 20);
    let relay: Vec<RelayChannel> = (0..CHANNELS).map(|_| relay_channel()).collect();
    let [(mut path_a, monitor_a), (mut path_b, _)] = bundles(&relay, settings());
    let secure_monitors = [SecureMonitor::default(), SecureMonitor::default()];
    if sealed {
        let keys = [PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap()];
        let security = |end: usize| LinkSecurity {
            config: SecureConfig::new(keys[end].clone(), keys[1 - end].public_key()),
            monitor: secure_monitors[end].clone(),
        };
        path_a = path_a.secured(security(0)).unwrap();
        path_b = path_b.secured(security(1)).unwrap();
        relay.iter().for_each(|r| r.set(REPLAY));
    }
    let opened = tokio::time::Instant::now();
    let net_a = Net::start(path_a, NetOptions::default()).unwrap();
    let net_b = Net::start(path_b, NetOptions::default()).unwrap();
    let server = SocketAddr::new("127.0.0.2".parse().unwrap(), PORT);
    let listener = net_b.listen(server).unwrap();
    // The reader says when a third has arrived.
    let (third, mut third_arrived) = mpsc::channel(1);
    let len = data.len();
    let reader = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        let mut buf = vec![0u8; 65536];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            if received.len() >= len / 3 {
                let _ = third.try_send(());
            }
        }
        Sha256::digest(&received)
    });
    let mut stream = net_a.connect(server).await.unwrap();
    let writer = tokio::spawn(async move {
        stream.write_all(&data).await.unwrap();
        stream.shutdown().await.unwrap();
        (stream, Sha256::digest(&data))
    });
    third_arrived.recv().await.unwrap();
    relay[1].set(SILENT);
    let silenced = tokio::time::Instant::now();
    assert!(
        until_state(&monitor_a, 1, ChannelState::Down, 10 * PROBE_INTERVAL).await,
        "the silent channel was not marked down: {:?}",
        monitor_a.report().channels[1]
    );
    let (_stream, sent) = writer.await.unwrap();
    assert_eq!(reader.await.unwrap(), sent, "what arrived is what was sent");
    let report = monitor_a.report();
    let down = report
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == "down")
        .expect("a down event");
    // The event's time is since A's path opened, which was before `opened`.
    let noticed = (opened + down.at).saturating_duration_since(silenced);
    println!("channel 1 silenced; marked down after {noticed:?}: {}", down.why);
    assert!(
        noticed <= 2 * PROBE_INTERVAL + Duration::from_millis(100),
        "marked down {noticed:?} after it went silent: within two probe intervals of its last answer (and \
         100 ms for a busy machine) expected"
    );
    for (index, channel) in report.channels.iter().enumerate() {
        println!("channel {index}: {channel:?}");
        assert!(
            channel.sent_bytes > (len / 10) as u64,
            "channel {index} carried a share"
        );
    }
    relay[1].set(if sealed { REPLAY } else { PASS });
    assert!(
        until_state(&monitor_a, 1, ChannelState::Up, 10 * PROBE_INTERVAL).await,
        "the channel did not come back when its probes were answered again: {:?}",
        monitor_a.report()
    );
    assert_eq!(report.damaged, 0);
    if sealed {
        // Every tenth datagram came twice, on every channel; the window
        // took the channels' reordering, and refused nothing else.
        let received_by_b = secure_monitors[1].stats();
        println!("B's secure link: {received_by_b:?}");
        let failures = &received_by_b.auth_failures;
        assert!(failures.get("replay").copied().unwrap_or(0) > 100, "{failures:?}");
        assert_eq!(
            failures.keys().copied().collect::<Vec<_>>(),
            ["replay"],
            "{failures:?}"
        );
    }
    net_a.close(Duration::from_secs(2)).await.unwrap();
    net_b.close(Duration::from_secs(2)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_whose_peer_is_gone_is_marked_down_with_what_the_network_reported() {
    let data = content(seed(), 1 << 20);
    let relay: Vec<RelayChannel> = (0..CHANNELS).map(|_| relay_channel()).collect();
    relay[2].set(CLOSED);
    let [(path_a, monitor_a), (path_b, _)] = bundles(&relay, settings());
    let net_a = Net::start(path_a, NetOptions::default()).unwrap();
    let net_b = Net::start(path_b, NetOptions::default()).unwrap();
    let server = SocketAddr::new("127.0.0.2".parse().unwrap(), PORT);
    let listener = net_b.listen(server).unwrap();
    let reader = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        Sha256::digest(&received)
    });
    let mut stream = net_a.connect(server).await.unwrap();
    stream.write_all(&data).await.unwrap();
    stream.shutdown().await.unwrap();
    assert_eq!(reader.await.unwrap(), Sha256::digest(&data));
    let report = monitor_a.report();
    let down = report
        .events
        .iter()
        .find(|e| e.channel == 2 && e.to == "down")
        .unwrap_or_else(|| panic!("the closed channel was not marked down: {report:?}"));
    println!("{down:?}");
    // The kernel's report of the ICMP port unreachable, with its sender.
    assert!(down.why.contains("ICMP type 3 code 3"), "{}", down.why);
    assert!(down.why.to_lowercase().contains("refused"), "{}", down.why);
    assert_eq!(report.channels[2].state, ChannelState::Down);
    drop(stream);
    net_a.close(Duration::from_secs(2)).await.unwrap();
    net_b.close(Duration::from_secs(2)).await.unwrap();
}

#[tokio::test]
async fn a_bundle_that_cannot_start_says_which_channel_and_why() {
    let channel = |local: &str| BundleChannelAddrs {
        local: local.parse().unwrap(),
        peer: "127.0.0.1:9".parse().unwrap(),
        device: None,
    };
    // An address this host does not have.
    let error = BundlePath::open(
        &[channel("192.0.2.1:0")],
        BondConfig::new(vec![2400]),
        None,
        BundleMonitor::default(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("channel 192.0.2.1:0 -> 127.0.0.1:9: cannot bind"),
        "{error}"
    );
    // Settings for another number of channels.
    let error = BundlePath::open(
        &[channel("127.0.0.1:0")],
        BondConfig::new(vec![2400, 2400]),
        None,
        BundleMonitor::default(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("rates for 2 channels, but 1 were given"),
        "{error}"
    );
    let error = BundlePath::open(
        &[channel("127.0.0.1:0")],
        BondConfig::new(vec![0]),
        None,
        BundleMonitor::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("at least 8 bit/s"), "{error}");
}

/// One end of a bundle over routed interfaces, in its own namespace: a
/// thread with a runtime of its own (namespaces are per thread) that opens
/// the channels (each bound to its device) and runs `work` on the stack.
fn end_in<R: Send + 'static>(
    namespace: &common::netns::Namespace,
    channels: Vec<BundleChannelAddrs>,
    config: BondConfig,
    work: impl FnOnce(Net, BundleMonitor) -> std::pin::Pin<Box<dyn Future<Output = R>>> + Send + 'static,
) -> std::thread::JoinHandle<R> {
    namespace.spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (path, monitor) = watched(&channels, config);
            let net = Net::start(path, NetOptions::default()).unwrap();
            work(net, monitor).await
        })
    })
}

fn settings_for(channels: usize) -> BondConfig {
    let mut config = BondConfig::new(vec![8_000_000; channels]);
    config.probe_interval = PROBE_INTERVAL;
    config.hold_bytes = 1 << 20;
    config
}

#[test]
fn a_bundle_over_two_routed_interfaces_outlives_one_going_down() {
    // Two namespaces joined by two veth pairs, a subnet on each: each
    // channel is bound to its interface (`device`). Mid-transfer one
    // interface goes down: its channel is marked down and the bytes
    // arrive over the other; back up, the channel returns.
    if common::netns::in_user_namespace("a_bundle_over_two_routed_interfaces_outlives_one_going_down") {
        return;
    }
    use common::netns::{Namespace, veth};
    let (a, b) = (Namespace::new("bundle-a"), Namespace::new("bundle-b"));
    for i in 0..2 {
        veth(&a, &format!("ch{i}a"), &b, &format!("ch{i}b"));
        a.ip(&format!("addr add 10.31.{i}.1/24 dev ch{i}a"));
        b.ip(&format!("addr add 10.31.{i}.2/24 dev ch{i}b"));
    }
    let channels = |side: &str, me: u8, peer: u8| -> Vec<BundleChannelAddrs> {
        (0..2)
            .map(|i| BundleChannelAddrs {
                local: format!("10.31.{i}.{me}:{}", 7000 + i).parse().unwrap(),
                peer: format!("10.31.{i}.{peer}:{}", 7000 + i).parse().unwrap(),
                device: Some(format!("ch{i}{side}")),
            })
            .collect()
    };
    let data = content(seed(), 8 << 20);
    let digest = Sha256::digest(&data);
    let (ready, listening) = std::sync::mpsc::channel();
    let (arrived, digest_of_arrived) = std::sync::mpsc::channel();
    let (finished, sender_finished) = std::sync::mpsc::channel::<()>();
    let receiver = end_in(&b, channels("b", 2, 1), settings_for(2), move |net, _| {
        Box::pin(async move {
            let listener = net.listen("10.31.0.2:5001".parse().unwrap()).unwrap();
            ready.send(()).unwrap();
            let mut stream = listener.accept().await.unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            arrived.send(Sha256::digest(&received)).unwrap();
            // This end answers the other's probes until it is done.
            let _ = tokio::task::spawn_blocking(move || sender_finished.recv()).await;
            let _ = net.close(Duration::from_secs(2)).await;
        })
    });
    listening.recv().unwrap();
    let (third, third_sent) = std::sync::mpsc::channel();
    let (link_down, was_down) = std::sync::mpsc::channel::<()>();
    let sender = end_in(&a, channels("a", 1, 2), settings_for(2), move |net, monitor| {
        Box::pin(async move {
            let mut stream = net.connect("10.31.0.2:5001".parse().unwrap()).await.unwrap();
            let (first, rest) = data.split_at(data.len() / 3);
            stream.write_all(first).await.unwrap();
            third.send(()).unwrap();
            // The interface is down by now; the rest goes over the other.
            let _ = tokio::task::spawn_blocking(move || was_down.recv()).await;
            stream.write_all(rest).await.unwrap();
            stream.shutdown().await.unwrap();
            // The channel must come back once the test brings its
            // interface up again.
            let up_again = until_state(&monitor, 1, ChannelState::Up, Duration::from_secs(10)).await;
            let _ = net.close(Duration::from_secs(2)).await;
            (monitor.report(), up_again)
        })
    });
    third_sent.recv().unwrap();
    a.ip("link set ch1a down");
    link_down.send(()).unwrap();
    let received = digest_of_arrived.recv().unwrap();
    // Everything arrived: the interface comes back (its address kept, its
    // subnet's route restored).
    a.ip("link set ch1a up");
    let (report, up_again) = sender.join().unwrap();
    finished.send(()).unwrap();
    receiver.join().unwrap();
    assert_eq!(received, digest, "what arrived is what was sent");
    println!("{:?}", report.events);
    let down = report
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == "down")
        .expect("the channel whose interface went down was marked down");
    println!("marked down: {}", down.why);
    assert!(
        report.channels[0].sent_bytes > 4 << 20,
        "the other channel carried the rest: {:?}",
        report.channels[0]
    );
    assert!(
        up_again,
        "the channel came back once its interface was up: {:?}",
        report.channels[1]
    );
}

#[test]
fn a_channel_a_router_reports_unreachable_is_down_at_once() {
    // A host and a router, in namespaces of their own. The router has an
    // `unreachable` route to the first channel's peer, for which it
    // answers ICMP host unreachable (code 1), as a router whose circuit is
    // down does, and a route to the second's that leads nowhere (its
    // probes vanish). 2400 bit/s channels are probed every 10 s:
    // unanswered, a channel is down after 20 s; reported, within a round
    // trip of its first probe, with the router named.
    if common::netns::in_user_namespace("a_channel_a_router_reports_unreachable_is_down_at_once") {
        return;
    }
    let (host, router) = host_behind_router(["icmp-host", "icmp-router"], 32);
    router.ip("route add unreachable 10.33.0.2/32");
    router.ip("route add 10.33.1.2/32 dev down0");
    let channels = channels_from("10.32.0.2", &["10.33.0.2:7000", "10.33.1.2:7001"]);
    let (down, took, report) = end_in(&host, channels, BondConfig::new(vec![2400; 2]), |net, monitor| {
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let down = until_state(&monitor, 0, ChannelState::Down, Duration::from_secs(3)).await;
            let took = started.elapsed();
            let report = monitor.report();
            let _ = net.close(Duration::from_secs(1)).await;
            (down, took, report)
        })
    })
    .join()
    .unwrap();
    println!("{:?} after {took:?}", report.events);
    assert!(down, "the reported channel was not down within 3 s: {report:?}");
    assert_eq!(
        report.channels[1].state,
        ChannelState::Up,
        "the silent one is not down yet"
    );
    let event = report
        .events
        .iter()
        .find(|e| e.channel == 0 && e.to == "down")
        .expect("a state change of the reported channel");
    assert!(
        event.why.contains("unreachable")
            && event.why.contains("ICMP type 3 code 1")
            && event.why.contains("from 10.32.0.1"),
        "{}",
        event.why
    );
}

#[test]
fn a_forged_unreachable_report_does_not_take_a_channel_down() {
    // As above, a host and a router: the first channel's peer is
    // unreachable (the router reports it, quoting the probe), the second's
    // is routed into a black hole (its probes vanish, unanswered for 40 s
    // at 2400 bit/s). From the router's namespace, reports of "host
    // unreachable" about the second channel's addresses and ports are
    // forged, one quoting nothing past the UDP header, one quoting bytes
    // the channel never sent: both are counted and ignored, and the
    // channel stays up; the router's own report about the first still
    // takes it down.
    if common::netns::in_user_namespace("a_forged_unreachable_report_does_not_take_a_channel_down") {
        return;
    }
    let (host, router) = host_behind_router(["forge-host", "forge-router"], 34);
    router.ip("route add unreachable 10.35.0.2/32");
    router.ip("route add blackhole 10.35.1.2/32");
    let channels = channels_from("10.34.0.2", &["10.35.0.2:7000", "10.35.1.2:7001"]);
    let (opened, local) = std::sync::mpsc::channel();
    let watching = end_in(
        &host,
        channels,
        BondConfig::new(vec![2400; 2]),
        move |net, monitor| {
            Box::pin(async move {
                opened.send(monitor.report().addrs[1]).unwrap();
                let heard = until(&monitor, Duration::from_secs(5), |report| {
                    report.icmp_ignored >= 2 && report.channels[0].state == ChannelState::Down
                })
                .await;
                let report = monitor.report();
                let _ = net.close(Duration::from_secs(1)).await;
                (heard, report)
            })
        },
    );
    let (local, peer) = local.recv().expect("the bundle opened");
    router
        .spawn(move || {
            let forger = socket2::Socket::new(
                socket2::Domain::IPV4,
                socket2::Type::RAW,
                Some(socket2::Protocol::ICMPV4),
            )
            .expect("a raw ICMP socket (the tests run as root)");
            let to: SocketAddr = SocketAddr::new(local.ip(), 0);
            for quoted in [&[][..], &[0x45; 48][..]] {
                forger
                    .send_to(&host_unreachable_about(local, peer, quoted), &to.into())
                    .expect("forged report sent");
            }
        })
        .join()
        .unwrap();
    let (heard, report) = watching.join().unwrap();
    println!("{:?}, {} reports ignored", report.events, report.icmp_ignored);
    assert!(
        heard,
        "the forged reports were not both counted, or the genuine one not heard: {report:?}"
    );
    assert_eq!(report.icmp_ignored, 2, "{report:?}");
    assert!(
        report.events.iter().all(|e| e.channel != 1),
        "the channel the forged reports named changed state: {:?}",
        report.events
    );
    let genuine = report
        .events
        .iter()
        .find(|e| e.channel == 0)
        .expect("the genuine report heard");
    assert!(genuine.why.contains("from 10.34.0.1"), "{}", genuine.why);
}

/// A host and a router, each in a namespace named as `names` says, on
/// 10.`net`.0.0/24 (the host .2 on `up0`, the router .1 on `down0`): the
/// host's default route is the router, which forwards.
fn host_behind_router(
    names: [&'static str; 2],
    net: u8,
) -> (common::netns::Namespace, common::netns::Namespace) {
    use common::netns::{Namespace, veth};
    let (host, router) = (Namespace::new(names[0]), Namespace::new(names[1]));
    veth(&host, "up0", &router, "down0");
    host.ip(&format!("addr add 10.{net}.0.2/24 dev up0"));
    host.ip(&format!("route add default via 10.{net}.0.1"));
    router.ip(&format!("addr add 10.{net}.0.1/24 dev down0"));
    router.sysctl("net.ipv4.ip_forward=1");
    (host, router)
}

/// A channel from `local` (any port) to each of `peers`.
fn channels_from(local: &str, peers: &[&str]) -> Vec<BundleChannelAddrs> {
    peers
        .iter()
        .map(|peer| BundleChannelAddrs {
            local: format!("{local}:0").parse().unwrap(),
            peer: peer.parse().unwrap(),
            device: None,
        })
        .collect()
}

/// An ICMP "host unreachable" message (RFC 792 type 3 code 1) about a UDP
/// datagram from `local` to `peer`, quoting its IPv4 and UDP headers and
/// then `quoted` as its payload.
fn host_unreachable_about(local: SocketAddr, peer: SocketAddr, quoted: &[u8]) -> Vec<u8> {
    let (SocketAddr::V4(local), SocketAddr::V4(peer)) = (local, peer) else {
        panic!("IPv4 addresses");
    };
    let udp_length = 8 + quoted.len() as u16;
    let mut message = vec![3, 1, 0, 0, 0, 0, 0, 0];
    // The datagram's IPv4 header (protocol 17, UDP), then its UDP header.
    message.extend_from_slice(&[0x45, 0]);
    message.extend_from_slice(&(20 + udp_length).to_be_bytes());
    message.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    message.extend_from_slice(&local.ip().octets());
    message.extend_from_slice(&peer.ip().octets());
    message.extend_from_slice(&local.port().to_be_bytes());
    message.extend_from_slice(&peer.port().to_be_bytes());
    message.extend_from_slice(&udp_length.to_be_bytes());
    message.extend_from_slice(&[0, 0]);
    message.extend_from_slice(quoted);
    let mut sum = scps_node::checksum::Checksum::new();
    sum.add_bytes(&message);
    message[2..4].copy_from_slice(&sum.finish().to_be_bytes());
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_rate_above_the_bundle_paces_at_what_its_channels_carry() {
    // Two channels of 4 Mbit/s; the route is configured at 200 Mbit/s with
    // no congestion control (`scps-rate`): paced at that, it would fill
    // the bond's hold and lose the rest. It follows the bundle instead.
    let relay: Vec<RelayChannel> = (0..2).map(|_| relay_channel()).collect();
    let mut config = BondConfig::new(vec![4_000_000; 2]);
    config.probe_interval = PROBE_INTERVAL;
    config.hold_bytes = 256 << 10;
    let [(path_a, monitor_a), (path_b, _)] = bundles(&relay, config);
    let capacity = path_a.capacity().expect("a bundle knows what it carries");
    let carried = capacity.get().expect("known from the start");
    assert!(
        (7_900_000..8_000_000).contains(&carried),
        "both channels, at their rates less their probes: {carried}"
    );
    let mut options = NetOptions::default();
    options.endpoint.connection.rate_bps = Some(200_000_000);
    options.endpoint.connection.congestion = CongestionAlgorithm::Rate;
    let net_a = Net::start(path_a, options).unwrap();
    let net_b = Net::start(path_b, NetOptions::default()).unwrap();
    let server = SocketAddr::new("127.0.0.2".parse().unwrap(), PORT);
    let listener = net_b.listen(server).unwrap();
    let data = content(seed(), 3 << 20);
    let reader = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        Sha256::digest(&received)
    });
    let started = tokio::time::Instant::now();
    let mut stream = net_a.connect(server).await.unwrap();
    stream.write_all(&data).await.unwrap();
    stream.shutdown().await.unwrap();
    assert_eq!(
        reader.await.unwrap(),
        Sha256::digest(&data),
        "what arrived is what was sent"
    );
    let seconds = started.elapsed().as_secs_f64();
    let report = monitor_a.report();
    let retransmitted = stream
        .stats()
        .expect("the connection's figures")
        .bytes_retransmitted;
    println!(
        "3 MiB in {seconds:.2} s ({:.2} Mbit/s), {retransmitted} bytes resent, bond: {:?}",
        data.len() as f64 * 8.0 / seconds / 1e6,
        report.bond
    );
    assert_eq!(
        report.bond.dropped_full, 0,
        "nothing lost to the bond's full hold"
    );
    assert!(
        retransmitted < (data.len() / 50) as u64,
        "paced at the bundle, little is resent: {retransmitted}"
    );
    assert!(seconds > 2.9, "no faster than 8 Mbit/s: {seconds:.2} s");
    net_a.close(Duration::from_secs(2)).await.unwrap();
    net_b.close(Duration::from_secs(2)).await.unwrap();
}
