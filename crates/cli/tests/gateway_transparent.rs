//! The transparent mode in the testbed's gateway topology:
//!
//! ```text
//! client 10.99.1.2 ── lan0 [gwA] sat0 ── emu ── sat0 [gwB] lan0 ── server 10.99.4.2
//! ```
//!
//! `scps gateway` runs in gwA and gwB with mirrored configurations; Linux
//! TCP in the client connects to the server's own address and port with
//! nothing configured: gwA intercepts it, carries it across as SCPS-TP
//! keeping the client's address and port, gwB answers as the server and
//! connects to it from the client's address. The server sees the client's
//! address, the content is checked both ways, each gateway counted the
//! connection, and SIGTERM leaves nothing installed behind; its hosts are
//! set up as the operator's guide says, from loose reverse-path filtering
//! everywhere. A gateway that cannot run the mode (forwarding off,
//! reverse-path filtering on) says why and leaves nothing. A
//! pair whose link rides a bundle of two UDP channels instead carries the
//! same, each channel a share, with no TUN device or steering; so does a
//! pair on the secure link, whose datagrams are all that crosses the
//! emulator.
//!
//! As root (CI) it runs as it is; otherwise the testbed enters a user
//! namespace of its own.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use common::TempDir;
use common::gateways::{
    SCPS, assert_nothing_installed, capture, config, config_bundled, config_prefixes, config_secured,
    config_with, end_capture, reload, serve_digest, start, start_pair, start_pair_with, start_with, stop,
    wait_ready,
};
use common::metrics::{sample, scrape};
use scps_testbed::{Node, Output, Testbed, Topology};
use sha2::{Digest, Sha256};

const SERVER: &str = "10.99.4.2:5001";

#[test]
fn transparent_gateways_carry_kernel_tcp_keeping_the_client_address() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent");
    let configs = [
        config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24"),
        config(&dir, "b.toml", "10.99.4.0/24", "10.99.1.0/24"),
    ];
    carry_keeping_the_client_address(&testbed, &dir, configs);
}

/// The same over the secure link (the default): the link connections'
/// packets, addresses and all, sealed in UDP between the gateways' link
/// addresses; a capture on the emulator's side sees nothing else, while
/// the gateway's own capture of its link connections decodes as before.
#[test]
fn transparent_gateways_on_the_secure_link_carry_kernel_tcp_keeping_the_client_address() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-secure");
    let (keys_b, keys_a) = common::link_keys(dir.path());
    let configs = [
        config_secured(
            &dir,
            "a.toml",
            ("10.99.1.0/24", "10.99.4.0/24"),
            ("10.99.2.2:7100", "10.99.3.2:7100"),
            &keys_a,
            "",
        ),
        config_secured(
            &dir,
            "b.toml",
            ("10.99.4.0/24", "10.99.1.0/24"),
            ("10.99.3.2:7100", "10.99.2.2:7100"),
            &keys_b,
            "",
        ),
    ];
    let wire = dir.path().join("wire.pcap");
    let dumpcap = capture(testbed.node("emu").unwrap(), "a0", &wire);
    carry_keeping_the_client_address(&testbed, &dir, configs);
    end_capture(dumpcap);
    // Between the gateways: their UDP, nothing of the link connections.
    let udp = common::tshark(&wire, &["-Y", "udp.port == 7100"]).lines().count();
    // (Several datagrams may cross as one segmentation-offload packet.)
    assert!(udp > 100, "{udp} datagrams of the secure link crossed");
    let plain = common::tshark(&wire, &["-Y", "tcp or ip.proto == 105 or ip.proto == 106"]);
    assert!(
        plain.is_empty(),
        "SCPS-TP in the clear between the gateways:\n{plain}"
    );
}

/// A `sysctl -w KEY=VALUE...` command's settings, as the path under
/// /proc/sys and the value: a key with slashes is a path already (an
/// interface name may hold dots), one with dots has them for slashes.
fn sysctl_settings(command: &str) -> Vec<(String, String)> {
    let words = command
        .trim()
        .strip_prefix("sysctl -w ")
        .unwrap_or_else(|| panic!("not a `sysctl -w` command: {command:?}"));
    words
        .split_whitespace()
        .map(|setting| {
            let (key, value) = setting
                .split_once('=')
                .unwrap_or_else(|| panic!("not KEY=VALUE: {setting:?}"));
            let path = if key.contains('/') {
                key.to_owned()
            } else {
                key.replace('.', "/")
            };
            (path, value.to_owned())
        })
        .collect()
}

/// The settings docs/satellite-gateways.md tells an operator to make on
/// a gateway host: each of its `sysctl -w` lines, with the guide's
/// interfaces named as the testbed's (the modem's eth0 is sat0, the LAN's
/// eth1 is lan0).
fn the_guides_settings() -> Vec<(String, String)> {
    let guide = include_str!("../../../docs/satellite-gateways.md");
    let settings: Vec<(String, String)> = guide
        .lines()
        .filter(|line| line.trim().starts_with("sysctl -w "))
        .flat_map(|line| sysctl_settings(&line.replace("eth0", "sat0").replace("eth1", "lan0")))
        .collect();
    assert!(
        settings.iter().any(|(key, _)| key.ends_with("rp_filter")),
        "the guide sets reverse-path filtering: {settings:?}"
    );
    settings
}

/// Makes `node`'s reverse-path filtering loose everywhere, as many
/// distributions leave a host (`all`, `default`, and the interfaces
/// there are): what the guide's settings must undo.
fn loose_everywhere(node: &Node) {
    for device in ["all", "default", "lan0", "sat0"] {
        node.sysctl(&format!("net/ipv4/conf/{device}/rp_filter"), "2")
            .unwrap();
    }
}

/// Sets up `node` as the guide says, from loose filtering everywhere.
fn as_the_guide_says(node: &Node) {
    loose_everywhere(node);
    for (key, value) in the_guides_settings() {
        node.sysctl(&key, &value).unwrap();
    }
}

/// A client's connection to the server through the pair configured by
/// `configs` (gwA's, gwB's), on hosts set up as the operator's guide says
/// (`as_the_guide_says`): the server sees the client's own address,
/// the content arrives whole both ways, each gateway counts it, nothing is
/// left installed, and gwA's capture of its link connection decodes with
/// the SCPS capabilities option in both SYNs.
fn carry_keeping_the_client_address(testbed: &Testbed, dir: &TempDir, configs: [std::path::PathBuf; 2]) {
    let gw_a = testbed.node("gwA").unwrap();
    let gw_b = testbed.node("gwB").unwrap();
    as_the_guide_says(gw_a);
    as_the_guide_says(gw_b);
    let capture = dir.path().join("link.pcap");
    let a = start_with(gw_a, &configs[0], &["--pcap".as_ref(), capture.as_os_str()]);
    let b = start(gw_b, &configs[1]);
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);

    let download: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let server = serve_digest(testbed, SERVER, download.clone());
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let mut stream = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .expect("the client connects to the server's own address");
    let client_addr = stream.local_addr().unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let upload: Vec<u8> = (0..4_000_000u32).map(|i| (i * 13 % 251) as u8).collect();
    stream.write_all(&upload).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let peer = server.join().unwrap();

    assert_eq!(
        peer.ip(),
        client_addr.ip(),
        "the server sees the client's own address"
    );
    assert_eq!(answer.len(), 32 + download.len(), "bytes through the gateways");
    assert_eq!(
        &answer[..32],
        &Sha256::digest(&upload)[..],
        "the server read the upload whole"
    );
    assert_eq!(&answer[32..], &download[..], "the client read the download whole");

    let said_a = stop(&a);
    let said_b = stop(&b);
    assert!(
        said_a.contains("connections closed 1,"),
        "gwA intercepted it: {said_a}"
    );
    assert!(
        said_b.contains("connections closed 1,"),
        "gwB took it over: {said_b}"
    );
    assert_nothing_installed(gw_a);
    assert_nothing_installed(gw_b);
    // gwA's capture of the link connection decodes clean, and its SYN and
    // SYN-ACK both carry the SCPS capabilities option.
    common::assert_capture_clean(&capture, 1000);
    // (A SYN may be sent twice, if the first found the far side's
    // neighbour entry still being resolved.)
    let syns = common::syns(&capture);
    assert!(syns.iter().all(|&(_, scps)| scps), "{syns:?}");
    assert!(
        syns.contains(&(false, true)) && syns.contains(&(true, true)),
        "{syns:?}"
    );
}

#[test]
fn ipv6_and_ipv4_are_carried_by_the_same_pair() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-ipv6");
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let (side_a, side_b) = (
        ["10.99.1.0/24", "fd00:99:1::/64"],
        ["10.99.4.0/24", "fd00:99:4::/64"],
    );
    let a = start(gw_a, &config_prefixes(&dir, "a.toml", &side_a, &side_b, ""));
    let b = start(gw_b, &config_prefixes(&dir, "b.toml", &side_b, &side_a, ""));
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    for (server, client) in [("[fd00:99:4::2]:5001", "fd00:99:1::2"), (SERVER, "10.99.1.2")] {
        let listening = digest_server(&testbed, server);
        let upload: Vec<u8> = (0..1_500_000u32).map(|i| (i * 29 % 247) as u8).collect();
        let answer = exchange(&testbed, server, &upload).unwrap_or_else(|e| panic!("{server}: {e:?}"));
        assert_eq!(answer, Sha256::digest(&upload).to_vec(), "{server}");
        assert_eq!(
            listening.join().unwrap().ip().to_string(),
            client,
            "the server sees the client's own address"
        );
    }
    for said in [stop(&a), stop(&b)] {
        assert!(
            said.contains("connections closed 2,"),
            "both families carried: {said}"
        );
    }
    assert_nothing_installed(gw_a);
    assert_nothing_installed(gw_b);
}

/// `[[engine.bundle.channel]]` for each (local, peer) of a gateway's end
/// of the link, with the gateway's metrics (on its namespace's loopback,
/// port 9464) and probes frequent enough to find every channel up at
/// once.
fn bundle(channels: [(&str, &str); 2]) -> String {
    let mut text = "[engine.link]\nbond_probe_interval = \"100ms\"\n".to_owned();
    for (local, peer) in channels {
        text += &format!(
            "[[engine.bundle.channel]]\nlocal = \"{local}\"\npeer = \"{peer}\"\nrate = \"20Mbit\"\n"
        );
    }
    text + "[metrics]\nlisten = \"127.0.0.1:9464\"\n"
}

#[test]
fn a_bundle_of_two_channels_carries_the_transparent_link() {
    // The gateways' link rides two UDP channels, one per address of each
    // gateway's link interface (through the emulator's node, which routes
    // them): gwA 10.99.2.2 and .3, gwB 10.99.3.2 and .3.
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-bundle");
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    gw_a.ip(&["addr", "add", "10.99.2.3/24", "dev", "sat0"]).unwrap();
    gw_b.ip(&["addr", "add", "10.99.3.3/24", "dev", "sat0"]).unwrap();
    let ends_a = [
        ("10.99.2.2:7001", "10.99.3.2:7001"),
        ("10.99.2.3:7002", "10.99.3.3:7002"),
    ];
    let ends_b = ends_a.map(|(local, peer)| (peer, local));
    let a = start(
        gw_a,
        &config_bundled(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24", &bundle(ends_a)),
    );
    let b = start(
        gw_b,
        &config_bundled(&dir, "b.toml", "10.99.4.0/24", "10.99.1.0/24", &bundle(ends_b)),
    );
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    for gateway in [gw_a, gw_b] {
        // The interception, and nothing of the routed link: no TUN device,
        // no steering into it.
        let rules = gateway
            .output("nft", &["list", "table", "inet", "scps_gateway_7301"])
            .unwrap();
        assert!(rules.contains("tproxy ip to :7301"), "{rules}");
        assert!(!rules.contains("steer"), "{rules}");
        assert!(
            gateway.ip(&["link", "show", "scps-gw"]).is_err(),
            "no TUN device in {}",
            gateway.name()
        );
    }

    let server = digest_server(&testbed, SERVER);
    let upload: Vec<u8> = (0..4_000_000u32).map(|i| (i * 17 % 241) as u8).collect();
    let answer = exchange(&testbed, SERVER, &upload).expect("through the bundled gateways");
    assert_eq!(
        answer,
        Sha256::digest(&upload).to_vec(),
        "the server read the upload whole"
    );
    assert_eq!(
        server.join().unwrap().ip().to_string(),
        "10.99.1.2",
        "the server sees the client's own address"
    );
    // What is not carried is still routed by the kernel: ICMP, across the
    // same link interfaces.
    testbed
        .node("client")
        .unwrap()
        .output("ping", &["-c", "1", "-W", "5", "10.99.4.2"])
        .expect("the client pings the server through the gateways");

    // Each channel carried a share of the upload, out of gwA and into gwB
    // (the bundle's metrics, as in the explicit modes).
    let metrics_at = |gateway: &scps_testbed::Node| gateway.run(|| scrape("127.0.0.1:9464".parse().unwrap()));
    let (metrics_a, metrics_b) = (metrics_at(gw_a), metrics_at(gw_b));
    for channel in ["0", "1"] {
        for (metrics, direction) in [(&metrics_a, "sent"), (&metrics_b, "received")] {
            let series =
                format!("scps_gateway_bundle_channel_{direction}_bytes_total{{channel=\"{channel}\"}}");
            let bytes = sample(metrics, &series).unwrap_or_else(|| panic!("{series} in:\n{metrics}"));
            assert!(
                bytes > 1_000_000.0,
                "channel {channel} {direction} a share of the 4 MB: {bytes}\n{metrics}"
            );
        }
        let up = format!("scps_gateway_bundle_channel_state{{channel=\"{channel}\",state=\"up\"}}");
        assert_eq!(sample(&metrics_a, &up), Some(1.0), "{metrics_a}");
    }
    let said_a = stop(&a);
    let said_b = stop(&b);
    assert!(
        said_a.contains("connections closed 1,"),
        "gwA intercepted it: {said_a}"
    );
    assert!(
        said_b.contains("connections closed 1,"),
        "gwB took it over: {said_b}"
    );
    assert_nothing_installed(gw_a);
    assert_nothing_installed(gw_b);
}

/// The client's connection to `server` through the gateways, `upload`
/// written and half-closed: what it read back, or the kind of error.
fn exchange(testbed: &Testbed, server: &str, upload: &[u8]) -> Result<Vec<u8>, std::io::ErrorKind> {
    let server_addr: SocketAddr = server.parse().unwrap();
    let mut stream = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .map_err(|e| e.kind())?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(upload).map_err(|e| e.kind())?;
    stream.shutdown(Shutdown::Write).map_err(|e| e.kind())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(|e| e.kind())?;
    Ok(answer)
}

/// A server at `address` that reads to the end and answers with the
/// SHA-256 of it.
fn digest_server(testbed: &Testbed, address: &'static str) -> std::thread::JoinHandle<SocketAddr> {
    let listener = testbed
        .node("server")
        .unwrap()
        .run(move || TcpListener::bind(address))
        .unwrap();
    common::digest_server(listener, Vec::new())
}

#[test]
fn a_refusal_at_the_server_reaches_the_client_as_a_reset() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-refusal");
    let (a, b) = start_pair(&testbed, &dir);
    // Nothing listens on the server: gwA has accepted the client's
    // connection, gwB's connection to the server is refused, and the
    // client must read a reset, not an empty reply.
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let read = testbed.node("client").unwrap().run(move || {
        let mut stream = TcpStream::connect_timeout(&server_addr, Duration::from_secs(10))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.read_to_end(&mut Vec::new())
    });
    assert_eq!(
        read.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionReset)
    );
    // gwB took the link connection over before it knew the server's
    // answer (as the reference gateway does): it meets the refusal, and
    // resets the link connection, which gwA passes on as a reset.
    let said_b = stop(&b);
    assert!(
        said_b.contains("refused at the far end 1,"),
        "gwB met the refusal: {said_b}"
    );
    let said_a = stop(&a);
    assert!(
        said_a.contains("reset 1,"),
        "gwA passed the link's reset on: {said_a}"
    );
}

#[test]
fn a_server_that_resets_mid_transfer_resets_the_client() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-server-reset");
    let (a, b) = start_pair(&testbed, &dir);
    // The server reads a little of the upload, then aborts (a zero linger
    // makes close send a reset).
    let listener = testbed
        .node("server")
        .unwrap()
        .run(|| TcpListener::bind(SERVER))
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut some = vec![0u8; 100_000];
        stream.read_exact(&mut some).unwrap();
        socket2::SockRef::from(&stream)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
    });
    // The client keeps sending until the reset reaches it: an
    // application must see the failure, not a clean end.
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let mut stream = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    let failed = (0..2000).find_map(|_| stream.write_all(&chunk).err());
    server.join().unwrap();
    let err = failed.or_else(|| stream.read_to_end(&mut Vec::new()).err());
    let kind = err.map(|e| e.kind());
    assert!(
        matches!(
            kind,
            Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe)
        ),
        "the client saw the server's reset: {kind:?}"
    );
    let (said_a, said_b) = (stop(&a), stop(&b));
    assert!(
        said_b.contains("reset 1,"),
        "gwB met the server's reset: {said_b}"
    );
    assert!(said_a.contains("reset 1,"), "gwA passed it on: {said_a}");
}

#[test]
fn a_lone_gateway_facing_a_plain_tcp_host_still_connects() {
    // Only gwA runs: its SCPS-TP connection reaches the server's Linux
    // TCP, which ignores the SCPS capabilities option and answers as
    // plain TCP; gwB is a plain router.
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-alone");
    let gw_a = testbed.node("gwA").unwrap();
    let a = start(gw_a, &config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24"));
    wait_ready(&[(gw_a, &a)]);
    let server = digest_server(&testbed, SERVER);
    let upload: Vec<u8> = (0..1_000_000u32).map(|i| (i * 31 % 249) as u8).collect();
    let answer = exchange(&testbed, SERVER, &upload).expect("through gwA alone");
    assert_eq!(
        answer,
        Sha256::digest(&upload).to_vec(),
        "the server read the upload whole"
    );
    assert_eq!(
        server.join().unwrap().ip().to_string(),
        "10.99.1.2",
        "the server sees the client"
    );
    assert!(stop(&a).contains("connections closed 1,"), "gwA carried it");
}

#[test]
fn a_host_that_drops_the_scps_option_is_reached_without_it_and_remembered() {
    // Only gwA runs, facing the server's Linux TCP, which here drops every
    // SYN carrying the SCPS capabilities option (kind 20) as some hosts
    // do: the first connection's SYN with it goes unanswered, and the
    // gateway tries again without it; the second goes without it at once.
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-plain");
    let rule = dir.path().join("drop-scps.nft");
    std::fs::write(
        &rule,
        "table inet drop_scps {\n chain input {\n  type filter hook input priority 0;\n  \
         tcp flags syn tcp option @20,8,8 != 0 drop\n }\n}\n",
    )
    .unwrap();
    testbed
        .node("server")
        .unwrap()
        .output("nft", &["-f".as_ref(), rule.as_os_str()])
        .unwrap();
    let gw_a = testbed.node("gwA").unwrap();
    let file = config_with(
        &dir,
        "a.toml",
        "10.99.1.0/24",
        "10.99.4.0/24",
        "[relay]\nconnect_timeout = \"2s\"\n",
    );
    let a = start(gw_a, &file);
    wait_ready(&[(gw_a, &a)]);
    for round in 0..2 {
        let server = digest_server(&testbed, SERVER);
        let upload = vec![round as u8; 100_000];
        let answer = exchange(&testbed, SERVER, &upload).expect("the client reaches the server");
        assert_eq!(answer, Sha256::digest(&upload).to_vec(), "round {round}");
        server.join().unwrap();
    }
    let said = stop(&a);
    assert!(said.contains("connections closed 2,"), "{said}");
    assert!(
        said.contains("retried without SCPS 1"),
        "the first connection was retried, the second went without the option at once: {said}"
    );
}

#[test]
fn routes_decide_what_is_carried_and_everything_else_passes_untouched() {
    // Both gateways hold the same table: port 5001 carried on a route of
    // its own (its own engine), port 5002 passed through by a route, and
    // port 5003 matched by no route.
    let routes = "[[route]]\nname = \"digest\"\nports = \"5001\"\n\
                  [route.engine]\nprotocol = \"scps-rate\"\n[route.engine.link]\nrate = \"50Mbit\"\n\
                  [[route]]\nname = \"ssh\"\nports = \"5002\"\npass = true\n";
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-routes");
    let (a, b) = start_pair_with(&testbed, &dir, routes);
    for server in ["10.99.4.2:5001", "10.99.4.2:5002", "10.99.4.2:5003"] {
        let listening = digest_server(&testbed, server);
        let upload: Vec<u8> = (0..300_000u32).map(|i| (i * 17 % 241) as u8).collect();
        let answer = exchange(&testbed, server, &upload).unwrap_or_else(|e| panic!("{server}: {e:?}"));
        assert_eq!(answer, Sha256::digest(&upload).to_vec(), "{server}");
        assert_eq!(
            listening.join().unwrap().ip().to_string(),
            "10.99.1.2",
            "{server}"
        );
    }
    let (said_a, said_b) = (stop(&a), stop(&b));
    for said in [&said_a, &said_b] {
        assert!(
            said.contains("connections closed 1,") && said.contains("for want of a route 0,"),
            "only port 5001's connection was carried; the others were routed past: {said}"
        );
    }
}

#[test]
fn sighup_takes_new_routes_keeps_open_connections_and_refuses_a_bad_file() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-reload");
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let write = |routes: &str| {
        (
            config_with(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24", routes),
            config_with(&dir, "b.toml", "10.99.4.0/24", "10.99.1.0/24", routes),
        )
    };
    let (file_a, file_b) = write("[[route]]\nname = \"digest\"\nports = \"5001\"\n");
    let control = |name: &str| dir.path().join(name).into_os_string();
    let a = start_with(gw_a, &file_a, &["--control".as_ref(), &control("a.sock")]);
    let b = start_with(gw_b, &file_b, &["--control".as_ref(), &control("b.sock")]);
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);

    // A connection on port 5001, open across the reloads.
    let first = digest_server(&testbed, SERVER);
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let mut open = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .unwrap();
    open.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let upload: Vec<u8> = (0..400_000u32).map(|i| (i * 11 % 239) as u8).collect();
    open.write_all(&upload[..200_000]).unwrap();
    // `scps status` lists it at both gateways, on its route, with what has
    // crossed so far.
    for socket in ["a.sock", "b.sock"] {
        let listed = status_until(&control(socket), |connection| {
            connection["lan_to_link_bytes"].as_u64().unwrap()
                + connection["link_to_lan_bytes"].as_u64().unwrap()
                >= 200_000
        });
        assert_eq!(
            listed["client"].as_str().unwrap().split(':').next(),
            Some("10.99.1.2"),
            "{listed}"
        );
        assert_eq!(listed["destination"], SERVER, "{listed}");
        assert_eq!(listed["route"], "digest", "{listed}");
        assert_eq!(listed["state"], "relaying", "{listed}");
    }

    // Port 5002 matches no route: routed past the gateways.
    const OTHER: &str = "10.99.4.2:5002";
    let round = |label: &str| {
        let server = digest_server(&testbed, OTHER);
        let data = label.as_bytes().repeat(10_000);
        let answer = exchange(&testbed, OTHER, &data).unwrap_or_else(|e| panic!("{label}: {e:?}"));
        assert_eq!(answer, Sha256::digest(&data).to_vec(), "{label}");
        server.join().unwrap();
    };
    round("before the reload");

    // Now both ports are carried.
    write("[[route]]\nports = \"5001-5002\"\n");
    for gateway in [&a, &b] {
        let said = reload(gateway);
        assert!(
            said.contains("a.toml: 1 route\n") || said.contains("b.toml: 1 route\n"),
            "{said}"
        );
    }
    round("after the reload");

    // A file that changes what only a restart can, then one that does not
    // parse: both refused, and the gateways carry on as they were.
    std::fs::write(
        &file_a,
        std::fs::read_to_string(&file_a).unwrap().replace("lan0", "lan9"),
    )
    .unwrap();
    let said = reload(&a);
    assert!(
        said.contains("reload refused") && said.contains("[transparent] cannot change without a restart"),
        "{said}"
    );
    std::fs::write(&file_b, "[[route]\n").unwrap();
    let said = reload(&b);
    assert!(
        said.contains("reload refused") && said.contains("b.toml"),
        "{said}"
    );
    round("after the refusals");

    // The connection opened before the reloads ends whole.
    open.write_all(&upload[200_000..]).unwrap();
    open.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    open.read_to_end(&mut answer).unwrap();
    assert_eq!(answer, Sha256::digest(&upload).to_vec(), "the open connection");
    first.join().unwrap();
    for said in [stop(&a), stop(&b)] {
        assert!(
            said.contains("connections closed 3,"),
            "the open connection and the two rounds after the reload: {said}"
        );
    }
}

/// Asks `scps status --json` at `socket` until its one connection
/// satisfies `done` (within 30 s); that connection.
fn status_until(socket: &std::ffi::OsStr, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let output = std::process::Command::new(SCPS)
            .args(["status", "--json", "--control"])
            .arg(socket)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let connections = document["connections"].as_array().unwrap();
        if let [connection] = &connections[..]
            && done(connection)
        {
            return connection.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never listed as expected: {document}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_link_outage_longer_than_the_timers_resets_both_lan_connections() {
    // The emulator in the middle; the link connections give up after 3 s
    // without progress (`tcp.user_timeout`) or 3 s of silence (keepalive).
    // Mid-transfer the link goes
    // down for good: neither application may be left waiting on a
    // connection that silently lost what it had acknowledged.
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-outage");
    let socket = dir.path().join("emulate.sock");
    let emulate = dir.path().join("emulate.toml");
    std::fs::write(
        &emulate,
        format!(
            "[emulate]\nside_a = \"a0\"\nside_b = \"b0\"\ncontrol = \"{}\"\n[link]\nrate = \"100Mbit\"\nrtt = \"10ms\"\n",
            socket.display()
        ),
    )
    .unwrap();
    testbed
        .node("emu")
        .unwrap()
        .spawn(
            SCPS,
            &["emulate".as_ref(), "--config".as_ref(), emulate.as_os_str()],
            Output::Null,
        )
        .unwrap();
    let ctl = |args: &[&str]| {
        std::process::Command::new(SCPS)
            .args(["emulate", "ctl", "--socket"])
            .arg(&socket)
            .args(args)
            .output()
            .unwrap()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ctl(&["stats"]).status.success() {
        assert!(std::time::Instant::now() < deadline, "the emulator answers");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The side that sends finds out by its user timeout; the side that
    // only receives, by its keepalive probes going unanswered.
    let timers = "[engine.tcp]\nuser_timeout = \"3s\"\n\
                  keepalive = { idle = \"1s\", interval = \"1s\", probes = 2 }\n";
    let (a, b) = start_pair_with(&testbed, &dir, timers);

    let listener = testbed
        .node("server")
        .unwrap()
        .run(|| TcpListener::bind(SERVER))
        .unwrap();
    // The server sends until its connection fails; what it met.
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
        let chunk = vec![7u8; 64 * 1024];
        loop {
            if let Err(err) = stream.write_all(&chunk) {
                return err.kind();
            }
        }
    });
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let mut stream = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut received = 0;
    while received < 1_000_000 {
        received += stream.read(&mut buf).unwrap();
    }
    assert!(ctl(&["outage", "start"]).status.success());
    let client_met = loop {
        match stream.read(&mut buf) {
            Ok(0) => panic!(
                "the client read a clean end of stream: data acknowledged to the server was lost silently"
            ),
            Ok(_) => continue,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => break err.kind(),
        }
    };
    assert_eq!(
        client_met,
        std::io::ErrorKind::ConnectionReset,
        "the client is reset"
    );
    let server_met = server.join().unwrap();
    assert!(
        matches!(
            server_met,
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "the server is reset: {server_met:?}"
    );
    assert!(ctl(&["outage", "end"]).status.success());
    let (said_a, said_b) = (stop(&a), stop(&b));
    assert!(said_a.contains("reset 1,"), "{said_a}");
    assert!(said_b.contains("reset 1,"), "{said_b}");
}

#[test]
fn a_gateway_that_cannot_run_the_mode_says_why_and_leaves_nothing() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-refused");
    let gw_a = testbed.node("gwA").unwrap();
    let refused = |file: std::path::PathBuf| refused_in(gw_a, &file);
    gw_a.sysctl("net/ipv4/ip_forward", "0").unwrap();
    let file = config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24");
    let text = std::fs::read_to_string(&file).unwrap();
    let stderr = refused(file);
    assert!(stderr.contains("net.ipv4.ip_forward is 0"), "{stderr}");

    // A LAN interface that is not there: refused, naming it.
    gw_a.sysctl("net/ipv4/ip_forward", "1").unwrap();
    let missing = dir.path().join("missing-lan.toml");
    std::fs::write(&missing, text.replace("\"lan0\"", "\"eth9\"")).unwrap();
    let stderr = refused(missing);
    assert!(
        stderr.contains("transparent.lan = \"eth9\": there is no such interface here"),
        "{stderr}"
    );
}

/// What `scps gateway --config FILE` says in `node` when it must refuse
/// to start (exit status 2) and leave nothing installed.
fn refused_in(node: &Node, file: &std::path::Path) -> String {
    let file = file.to_owned();
    let output = node.run(move || {
        std::process::Command::new(SCPS)
            .args(["gateway", "--config"])
            .arg(&file)
            .output()
            .unwrap()
    });
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_nothing_installed(node);
    stderr
}

/// The command a refusal says to run: between "Run `" and "`".
fn command_named(stderr: &str) -> String {
    stderr
        .split("Run `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no command to run in: {stderr}"))
        .to_owned()
}

#[test]
fn loose_reverse_path_filtering_is_refused_naming_the_device_and_the_fix() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-rp-filter");
    let gw_a = testbed.node("gwA").unwrap();
    let file = config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24");

    // The guide's settings, then `all` loose again: the kernel would drop
    // every packet the gateway writes to its TUN device.
    as_the_guide_says(gw_a);
    gw_a.sysctl("net/ipv4/conf/all/rp_filter", "2").unwrap();
    let stderr = refused_in(gw_a, &file);
    for said in [
        "on the TUN device scps-gw (transparent.tun) it would be 2 (loose): net.ipv4.conf.all.rp_filter is 2",
        "drops every packet the gateway writes to it",
        "on sat0 (transparent.link) it is 2 (loose), the larger of net.ipv4.conf.all.rp_filter = 2 and \
         net.ipv4.conf.sat0.rp_filter = 0",
    ] {
        assert!(stderr.contains(said), "{said:?} in: {stderr}");
    }
    assert_eq!(command_named(&stderr), "sysctl -w net.ipv4.conf.all.rp_filter=0");

    // `all` off, the link interface strict: that device alone, and its
    // own setting.
    gw_a.sysctl("net/ipv4/conf/all/rp_filter", "0").unwrap();
    gw_a.sysctl("net/ipv4/conf/sat0/rp_filter", "1").unwrap();
    let stderr = refused_in(gw_a, &file);
    assert!(
        stderr.contains(
            "on sat0 (transparent.link) it is 1 (strict), the larger of net.ipv4.conf.all.rp_filter = 0 and \
             net.ipv4.conf.sat0.rp_filter = 1"
        ) && !stderr.contains("scps-gw"),
        "{stderr}"
    );

    // Both on: the command it names is all it takes.
    gw_a.sysctl("net/ipv4/conf/all/rp_filter", "2").unwrap();
    let stderr = refused_in(gw_a, &file);
    let command = command_named(&stderr);
    assert_eq!(
        command,
        "sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.sat0.rp_filter=0"
    );
    for (key, value) in sysctl_settings(&command) {
        gw_a.sysctl(&key, &value).unwrap();
    }
    let a = start(gw_a, &file);
    wait_ready(&[(gw_a, &a)]);
    stop(&a);
    assert_nothing_installed(gw_a);
}

#[test]
fn a_gateway_killed_and_started_again_restores_early_demux_when_it_stops() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-transparent-restart");
    let gw_a = testbed.node("gwA").unwrap();
    let early_demux = || {
        gw_a.output("cat", &["/proc/sys/net/ipv4/tcp_early_demux"])
            .unwrap()
            .trim()
            .to_owned()
    };
    let file = config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24");
    let first = start(gw_a, &file);
    wait_ready(&[(gw_a, &first)]);
    assert_eq!(early_demux(), "0", "turned off while the mode runs");
    common::gateways::kill(&first);
    assert_eq!(early_demux(), "0", "a killed gateway restores nothing");
    let second = start(gw_a, &file);
    wait_ready(&[(gw_a, &second)]);
    stop(&second);
    // (assert_nothing_installed checks that it is 1 again.)
    assert_nothing_installed(gw_a);
}

/// What `scps gateway --print-rules` prints for the configuration `file`
/// (which it must accept).
fn print_rules(file: &std::path::Path) -> String {
    let output = std::process::Command::new(SCPS)
        .args(["gateway", "--print-rules", "--config"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn print_rules_shows_what_the_mode_installs() {
    let dir = TempDir::new("gateway-print-rules");
    let file = config(&dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24");
    let printed = print_rules(&file);
    assert!(printed.contains("tproxy ip to :7301"), "{printed}");
    assert!(
        printed.contains("ip -4 rule add fwmark 0x5d lookup 154 priority 154"),
        "{printed}"
    );
    assert!(
        printed.contains("ip -4 route add default dev scps-gw table 154"),
        "{printed}"
    );
    // Over a bundle: the interception and its delivery only.
    let ends = [
        ("10.99.2.2:7001", "10.99.3.2:7001"),
        ("10.99.2.3:7002", "10.99.3.3:7002"),
    ];
    let file = config_bundled(
        &dir,
        "bundled.toml",
        "10.99.1.0/24",
        "10.99.4.0/24",
        &bundle(ends),
    );
    let printed = print_rules(&file);
    assert!(printed.contains("tproxy ip to :7301"), "{printed}");
    assert!(
        printed.contains("ip -4 rule add fwmark 0x5c lookup 153 priority 153"),
        "{printed}"
    );
    for absent in ["table 154", "steer", "sysctl", "scps-gw"] {
        assert!(!printed.contains(absent), "no {absent:?}: {printed}");
    }
}
