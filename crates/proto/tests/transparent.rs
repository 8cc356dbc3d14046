//! Transparent addressing, segment by segment: a listener that answers as
//! every destination in its prefixes and no other, a connect from an
//! address that is not the endpoint's own, compressed segments on such
//! connections, the limits that hold for them as for any other, and the
//! refusals (docs/architecture.md, "On a real network, through two
//! gateways").

mod harness;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use harness::pair::{Exchanged, Pair, data, exchange_on};
use harness::*;
use scps_proto::wire::{
    CompressedRepr, IPPROTO_SCPS_COMPRESSED, IPPROTO_TCP, IpRepr, ScpsCapabilities, TcpFlags, TcpOptions,
    WindowAck, build_compressed_packet, parse_tcp_packet,
};
use scps_proto::{Config, Endpoint, EndpointConfig, EndpointError, Event, IpPrefix, State};

/// Servers behind the gateway: the prefix our endpoint may act as.
const SERVERS: &str = "10.20.0.0/16";
/// Enabled too, but no transparent listener covers it in these tests.
const ENABLED_ELSEWHERE: &str = "10.30.0.0/16";
/// Clients on the gateway's LAN: what a connect may come from.
const CLIENTS: &str = "10.50.0.0/16";

fn prefix(text: &str) -> IpPrefix {
    text.parse().unwrap()
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn endpoint_config(config: Config, transparent: &[&str]) -> EndpointConfig {
    EndpointConfig {
        connection: config,
        transparent: transparent.iter().map(|p| prefix(p)).collect(),
        ..EndpointConfig::default()
    }
}

/// The scripted-peer harness at [`OURS`], acting as `transparent` too.
fn harness(config: Config, transparent: &[&str]) -> Harness {
    let mut h = Harness::new(config.clone());
    h.ep = Endpoint::new(endpoint_config(config, transparent), [OURS.ip()]).unwrap();
    h
}

fn compressing() -> Config {
    Config {
        scps: true,
        header_compression: true,
        ..Config::default()
    }
}

/// Exactly one segment, from `from` to `to`.
fn one_between(h: &mut Harness, from: SocketAddr, to: SocketAddr) -> Seg {
    let mut out = h.output_addressed();
    assert_eq!(out.len(), 1, "expected one segment, got {out:#?}");
    let (src, dst, seg) = out.remove(0);
    assert_eq!((src, dst), (from, to), "addresses of {seg:?}");
    seg
}

#[test]
fn a_transparent_listener_answers_as_each_destination_in_its_prefix_and_no_other() {
    let mut h = harness(Config::default(), &[SERVERS, ENABLED_ELSEWHERE]);
    let listener = h.ep.listen_transparent(&[prefix(SERVERS)], None, None).unwrap();
    let client = THEIRS;
    let destinations = [
        addr("10.20.1.1:80"),
        addr("10.20.200.7:443"),
        addr("10.20.1.1:22"),
    ];
    let mut syn_acks = Vec::new();
    for &to in &destinations {
        h.send_from(client, to, &Seg::new(TcpFlags::SYN, PEER_ISS).mss(1460));
        let syn_ack = one_between(&mut h, to, client);
        assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK, "to {to}");
        assert_eq!(syn_ack.ack, PEER_ISS + 1);
        syn_acks.push(syn_ack);
    }
    // RFC 6528: initial sequence numbers are keyed by all four addresses,
    // the one we answer as included.
    assert_ne!(syn_acks[0].seq, syn_acks[1].seq);
    assert_ne!(syn_acks[0].seq, syn_acks[2].seq);
    assert_eq!(
        h.ep.accept_transparent(listener),
        None,
        "not before the handshake ends"
    );

    for (&to, syn_ack) in destinations.iter().zip(&syn_acks) {
        let data = format!("to {to}");
        h.send_from(
            client,
            to,
            &Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)).payload(data.as_bytes()),
        );
        let (conn, tuple) = h.ep.accept_transparent(listener).expect("established");
        assert_eq!(
            (tuple.local, tuple.remote),
            (to, client),
            "the connection answers as {to}"
        );
        assert_eq!(h.read(conn), data.as_bytes());
    }
    // The delayed ACKs of that data, each from the address it went to.
    h.advance(Duration::from_secs(1));
    let mut acks: Vec<_> = h
        .output_addressed()
        .into_iter()
        .map(|(from, to, seg)| (from, to, seg.ack))
        .collect();
    acks.sort();
    let mut expected: Vec<_> = destinations
        .iter()
        .map(|&to| (to, client, PEER_ISS + 1 + format!("to {to}").len() as u32))
        .collect();
    expected.sort();
    assert_eq!(acks, expected);
    assert_eq!(h.ep.connection_count(), 3);

    // An address we may act as but no listener takes: refused with a
    // reset from that address, as its host would.
    let refused_at = addr("10.30.0.5:80");
    h.send_from(client, refused_at, &Seg::new(TcpFlags::SYN, 5000));
    let reset = one_between(&mut h, refused_at, client);
    assert_eq!(reset.flags, TcpFlags::RST | TcpFlags::ACK);
    assert_eq!(reset.ack, 5001);
    // A stray ACK there too (RFC 9293 3.10.7.1: the reset takes its
    // acknowledgment number as sequence number).
    h.send_from(client, refused_at, &Seg::ack(5001, 777));
    let reset = one_between(&mut h, refused_at, client);
    assert_eq!((reset.flags, reset.seq), (TcpFlags::RST, 777));
    assert_eq!(h.ep.stats().dropped("no_connection"), 2);

    // Addresses neither ours nor enabled: dropped, counted, unanswered.
    for to in [addr("10.40.0.5:80"), addr("10.21.0.1:80")] {
        h.send_from(client, to, &Seg::new(TcpFlags::SYN, 6000));
    }
    h.nothing();
    assert_eq!(h.ep.stats().dropped("not_local"), 2);
    assert_eq!(h.ep.connection_count(), 3, "nothing new");

    // Unlistened, the prefix refuses new connections; the made ones stay.
    h.ep.unlisten_transparent(listener);
    h.send_from(client, addr("10.20.9.9:80"), &Seg::new(TcpFlags::SYN, 7000));
    assert!(one_between(&mut h, addr("10.20.9.9:80"), client).has(TcpFlags::RST));
    assert_eq!(h.ep.connection_count(), 3);
}

#[test]
fn a_listener_on_one_port_takes_only_that_port() {
    let mut h = harness(Config::default(), &[SERVERS]);
    let listener =
        h.ep.listen_transparent(&[prefix(SERVERS)], Some(80), None)
            .unwrap();
    let (web, ssh) = (addr("10.20.0.9:80"), addr("10.20.0.9:22"));
    h.send_from(THEIRS, web, &Seg::new(TcpFlags::SYN, PEER_ISS));
    assert!(one_between(&mut h, web, THEIRS).has(TcpFlags::SYN));
    h.send_from(THEIRS, ssh, &Seg::new(TcpFlags::SYN, PEER_ISS));
    assert!(one_between(&mut h, ssh, THEIRS).has(TcpFlags::RST));
    assert_eq!(h.ep.connection_count(), 1);
    h.ep.unlisten_transparent(listener);
}

/// Which listener takes a SYN when several could: the most specific.
#[test]
fn the_most_specific_listener_takes_the_syn_and_ordinary_wildcards_answer_only_for_our_addresses() {
    // The endpoint may act as all of 10/8, its own address included.
    let mut h = harness(Config::default(), &["10.0.0.0/8"]);
    let wide =
        h.ep.listen_transparent(&[prefix("10.0.0.0/8")], None, None)
            .unwrap();
    let narrow =
        h.ep.listen_transparent(&[prefix("10.20.0.0/16")], None, None)
            .unwrap();
    let narrow_web =
        h.ep.listen_transparent(&[prefix("10.20.0.0/16")], Some(80), None)
            .unwrap();
    let exact = addr("10.20.0.1:80");
    h.ep.listen(exact, None).unwrap();
    let wildcard = addr("0.0.0.0:22");
    h.ep.listen(wildcard, None).unwrap();

    let mut port = 1000;
    let mut handshake = |h: &mut Harness, to: SocketAddr| {
        port += 1;
        let from = SocketAddr::new(THEIRS.ip(), port);
        h.send_from(from, to, &Seg::new(TcpFlags::SYN, PEER_ISS));
        let syn_ack = one_between(h, to, from);
        assert!(syn_ack.has(TcpFlags::SYN), "to {to}: {syn_ack:?}");
        h.send_from(from, to, &Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)));
        h.nothing();
    };
    // The exact ordinary listener, on an address we act as.
    handshake(&mut h, exact);
    assert!(h.ep.accept(exact).is_some());
    // The /16 on port 80 before the /16 on every port before the /8.
    handshake(&mut h, addr("10.20.0.2:80"));
    assert!(h.ep.accept_transparent(narrow_web).is_some());
    handshake(&mut h, addr("10.20.0.2:81"));
    assert!(h.ep.accept_transparent(narrow).is_some());
    handshake(&mut h, addr("10.99.0.2:80"));
    assert!(h.ep.accept_transparent(wide).is_some());
    // The ordinary wildcard takes port 22 of our own address, before the
    // transparent /8 that also holds it...
    handshake(&mut h, SocketAddr::new(OURS.ip(), 22));
    assert!(h.ep.accept(wildcard).is_some());
    // ...but never answers as another host: that is the /16's.
    handshake(&mut h, addr("10.20.0.2:22"));
    assert!(h.ep.accept_transparent(narrow).is_some());
    assert_eq!(h.ep.accept(wildcard), None);
    // Our own address on a port no ordinary listener has: the /8 holds it.
    handshake(&mut h, SocketAddr::new(OURS.ip(), 8080));
    assert!(h.ep.accept_transparent(wide).is_some());
    assert_eq!(h.ep.stats().total_dropped(), 0, "{:?}", h.ep.stats().drops);
}

#[test]
fn a_connect_from_a_chosen_address_we_act_as_carries_data_both_ways() {
    let mut h = harness(Config::default(), &[CLIENTS]);
    let client = addr("10.50.3.9:33333");
    let conn = h.ep.connect(h.now, THEIRS, Some(client), None).unwrap();
    let syn = one_between(&mut h, client, THEIRS);
    assert_eq!(syn.flags, TcpFlags::SYN);
    h.send_from(
        THEIRS,
        client,
        &Seg::new(TcpFlags::SYN, PEER_ISS)
            .with_ack(syn.seq.wrapping_add(1))
            .mss(1460),
    );
    let ack = one_between(&mut h, client, THEIRS);
    assert_eq!((ack.flags, ack.ack), (TcpFlags::ACK, PEER_ISS + 1));
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert_eq!(h.events(), vec![(conn, Event::Connected)]);
    let tuple = h.ep.connection(conn).unwrap().tuple();
    assert_eq!((tuple.local, tuple.remote), (client, THEIRS));

    assert_eq!(h.ep.send(conn, b"request"), Ok(7));
    let request = one_between(&mut h, client, THEIRS);
    assert_eq!(request.payload, b"request");
    assert_eq!(request.seq, syn.seq.wrapping_add(1));
    h.send_from(
        THEIRS,
        client,
        &Seg::ack(PEER_ISS + 1, request.seq.wrapping_add(7)).payload(b"reply"),
    );
    assert_eq!(h.read(conn), b"reply");

    // Port 0: a free ephemeral port on the chosen address.
    let other =
        h.ep.connect(h.now, THEIRS, Some(addr("10.50.3.10:0")), None)
            .unwrap();
    let local = h.ep.connection(other).unwrap().tuple().local;
    assert_eq!(local.ip(), addr("10.50.3.10:0").ip());
    assert!(local.port() >= 49152, "{local}");
}

#[test]
fn refusals_name_what_is_missing_and_send_nothing() {
    // Off by default: nothing but the endpoint's own address.
    let mut h = Harness::new(Config::default());
    let client = addr("10.50.3.9:33333");
    let err = h.ep.connect(h.now, THEIRS, Some(client), None).unwrap_err();
    assert_eq!(err, EndpointError::NotLocal(client.ip()));
    assert_eq!(
        err.to_string(),
        "10.50.3.9 is not an address of this endpoint, nor in the prefixes it may act as \
         (EndpointConfig::transparent)"
    );
    let err =
        h.ep.listen_transparent(&[prefix(SERVERS)], None, None)
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "10.20.0.0/16 is not within the prefixes this endpoint may act as \
         (EndpointConfig::transparent)"
    );
    assert_eq!(
        h.ep.listen(addr("10.20.0.1:80"), None),
        Err(EndpointError::NotLocal(addr("10.20.0.1:80").ip()))
    );
    h.send_from(THEIRS, addr("10.20.0.1:80"), &Seg::new(TcpFlags::SYN, PEER_ISS));
    assert_eq!(h.ep.stats().dropped("not_local"), 1, "off: dropped unanswered");

    // No prefix: refused, rather than answering for every address.
    let mut h = harness(Config::default(), &["0.0.0.0/0"]);
    let err = h.ep.listen_transparent(&[], None, None).unwrap_err();
    assert_eq!(err, EndpointError::NoTransparentPrefixes);
    assert_eq!(
        err.to_string(),
        "a transparent listener needs the prefixes it answers for (0.0.0.0/0 or ::/0 for every \
         address); none was given"
    );
    // Outside the enabled prefixes (another family here).
    assert_eq!(
        h.ep.listen_transparent(&[prefix("fd00::/8")], None, None),
        Err(EndpointError::NotTransparent(prefix("fd00::/8")))
    );

    // In use: the same four addresses twice, the same prefix and port
    // twice.
    h.ep.connect(h.now, THEIRS, Some(client), None).unwrap();
    assert_eq!(
        h.ep.connect(h.now, THEIRS, Some(client), None),
        Err(EndpointError::AddressInUse(client))
    );
    h.ep.listen_transparent(&[prefix(SERVERS)], Some(80), None)
        .unwrap();
    let err =
        h.ep.listen_transparent(&[prefix(SERVERS)], Some(80), None)
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "10.20.0.0/16 on port 80 already has a transparent listener"
    );
    // An invalid configuration is refused before the listener exists.
    let bad = Config {
        recv_buffer: 100_000,
        window_scaling: false,
        ..Config::default()
    };
    assert!(matches!(
        h.ep.listen_transparent(&[prefix("10.60.0.0/16")], None, Some(bad)),
        Err(EndpointError::Config(_))
    ));
    assert!(
        h.ep.listen_transparent(&[prefix("10.60.0.0/16")], None, None)
            .is_ok()
    );
    // The one SYN of the connect that succeeded, nothing for the refusals.
    assert_eq!(h.output_addressed().len(), 1);
}

#[test]
fn segments_to_groups_or_from_no_host_are_dropped_unanswered_even_answering_for_every_address() {
    // A gateway that answers for every address (RFC 1122 4.2.3.10): a SYN
    // to a multicast group or the broadcast address opens nothing, nor
    // does one from an address no host sends from; none is answered (a
    // reset would go to a group, or to nobody).
    let mut h = harness(Config::default(), &["0.0.0.0/0", "::/0"]);
    h.ep.listen_transparent(&[prefix("0.0.0.0/0"), prefix("::/0")], None, None)
        .unwrap();
    let client = addr("10.50.3.9:33333");
    for group in ["224.0.0.1:80", "239.1.2.3:80", "255.255.255.255:80", "0.0.0.0:80"] {
        h.send_from(client, addr(group), &Seg::new(TcpFlags::SYN, PEER_ISS));
        h.send_from(client, addr(group), &Seg::ack(PEER_ISS, 1));
    }
    h.send_from(
        addr("[fd00::9]:33333"),
        addr("[ff02::1]:80"),
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    for nobody in ["224.0.0.5:33333", "255.255.255.255:33333", "0.0.0.0:33333"] {
        h.send_from(
            addr(nobody),
            addr("10.20.0.1:80"),
            &Seg::new(TcpFlags::SYN, PEER_ISS),
        );
        h.send_from(addr(nobody), addr("10.20.0.1:80"), &Seg::ack(PEER_ISS, 1));
    }
    h.send_from(
        addr("[::]:33333"),
        addr("[fd00::1]:80"),
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    h.send_from(
        addr("[ff05::2]:33333"),
        addr("[fd00::1]:80"),
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    assert!(h.output_addressed().is_empty(), "nothing answered");
    assert_eq!(h.ep.connection_count(), 0);
    let stats = h.ep.stats();
    assert_eq!(stats.dropped("not_unicast"), 9, "{stats:?}");
    assert_eq!(stats.dropped("bad_source"), 8, "{stats:?}");
    // A host's SYN is answered as before.
    h.send_from(client, addr("10.20.0.1:80"), &Seg::new(TcpFlags::SYN, PEER_ISS));
    let syn_ack = one_between(&mut h, addr("10.20.0.1:80"), client);
    assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK);
}

#[test]
fn a_connect_to_a_group_or_to_no_host_is_refused_by_name() {
    let mut h = harness(Config::default(), &["0.0.0.0/0"]);
    for remote in [
        "224.0.0.1:80",
        "255.255.255.255:80",
        "0.0.0.0:80",
        "10.0.0.2:0",
        "[ff02::1]:80",
    ] {
        let err = h.ep.connect(h.now, addr(remote), None, None).unwrap_err();
        assert_eq!(err, EndpointError::NotAHost(addr(remote)));
        assert!(err.to_string().contains("unicast address"), "{err}");
    }
    assert!(h.output_addressed().is_empty());
}

#[test]
fn the_backlog_and_the_connection_limit_hold_for_transparent_connections() {
    let mut h = harness(Config::default(), &[SERVERS, CLIENTS]);
    h.ep = Endpoint::new(
        EndpointConfig {
            backlog: 2,
            syn_cookies: false,
            max_connections: 3,
            ..endpoint_config(Config::default(), &[SERVERS, CLIENTS])
        },
        [OURS.ip()],
    )
    .unwrap();
    let listener = h.ep.listen_transparent(&[prefix(SERVERS)], None, None).unwrap();
    // Three SYNs to three destinations: one backlog for the listener.
    for host in 1..=3 {
        let to = SocketAddr::new(format!("10.20.0.{host}").parse().unwrap(), 80);
        h.send_from(THEIRS, to, &Seg::new(TcpFlags::SYN, PEER_ISS));
    }
    let syn_acks = h.output_addressed();
    assert_eq!(syn_acks.len(), 2, "two SYN-ACKs, the third SYN dropped");
    assert_eq!(h.ep.stats().dropped("backlog_full"), 1);
    // One handshake completes and is accepted: room in the backlog again.
    let (server, _, syn_ack) = &syn_acks[0];
    h.send_from(
        THEIRS,
        *server,
        &Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)),
    );
    assert!(h.ep.accept_transparent(listener).is_some());
    // The third connection: a transparent connect; a fourth is refused.
    h.ep.connect(h.now, THEIRS, Some(addr("10.50.0.1:1000")), None)
        .unwrap();
    assert_eq!(
        h.ep.connect(h.now, THEIRS, Some(addr("10.50.0.1:1001")), None),
        Err(EndpointError::TooManyConnections(3))
    );
    h.send_from(THEIRS, addr("10.20.0.4:80"), &Seg::new(TcpFlags::SYN, PEER_ISS));
    assert_eq!(h.ep.stats().dropped("too_many_connections"), 1);
    assert_eq!(h.ep.connection_count(), 3);
}

/// The id the scripted peer announces.
const PEER_ID: u8 = 9;

fn offer(connection_id: u8) -> ScpsCapabilities {
    ScpsCapabilities {
        snack1: true,
        compression: true,
        connection_id,
        ..ScpsCapabilities::default()
    }
}

/// A compressed segment of the scripted peer from `from` to `to`.
fn peer_compressed(from: SocketAddr, to: SocketAddr, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    let segment = CompressedRepr {
        conn_id: PEER_ID,
        flags: TcpFlags::ACK,
        urgent: 0,
        window_ack: Some(WindowAck { window: 65535, ack }),
        seq: Some(seq),
        tsval: None,
        tsecr: None,
        record_boundary: false,
        options: TcpOptions::default(),
        payload,
    };
    let mut packet = Vec::new();
    build_compressed_packet(from.ip(), to.ip(), 64, &segment, &mut packet).unwrap();
    packet
}

#[test]
fn compressed_segments_reach_a_transparent_connection_and_ours_leave_from_its_address() {
    let config = Config {
        timestamps: false,
        ..compressing()
    };
    let mut h = harness(config, &[SERVERS]);
    let listener = h.ep.listen_transparent(&[prefix(SERVERS)], None, None).unwrap();
    let server = addr("10.20.5.5:80");
    let mut syn = Seg::new(TcpFlags::SYN, PEER_ISS - 1).mss(1460);
    syn.options.scps_capabilities = Some(offer(PEER_ID));
    h.send_from(THEIRS, server, &syn);
    let syn_ack = one_between(&mut h, server, THEIRS);
    let our_id = syn_ack
        .options
        .scps_capabilities
        .filter(|c| c.compression)
        .expect("compression offered back")
        .connection_id;
    let our_iss = syn_ack.seq;

    // The handshake's ACK and data, compressed, to the address we act as.
    let packet = peer_compressed(THEIRS, server, PEER_ISS, our_iss.wrapping_add(1), b"hello");
    h.ep.handle_packet(h.now, &packet);
    assert_eq!(h.ep.stats().total_dropped(), 0, "{:?}", h.ep.stats().drops);
    let (conn, tuple) = h.ep.accept_transparent(listener).expect("established");
    assert_eq!(tuple.local, server);
    assert_eq!(h.read(conn), b"hello");

    // Ours go out compressed, from the server's address, with our id.
    h.ep.send(conn, b"world").unwrap();
    let mut buf = Vec::new();
    let mut payload = Vec::new();
    while h.ep.poll_transmit(h.now, &mut buf) {
        let (ip, segment) = IpRepr::parse(&buf).unwrap();
        assert_eq!(ip.protocol(), IPPROTO_SCPS_COMPRESSED);
        assert_eq!((ip.src(), ip.dst()), (server.ip(), THEIRS.ip()));
        let c = CompressedRepr::parse(segment, ip.src(), ip.dst(), true).unwrap();
        assert_eq!(c.conn_id, our_id);
        payload.extend_from_slice(c.payload);
    }
    assert_eq!(payload, b"world");
    let stats = h.ep.stats_of(conn).unwrap();
    assert!(stats.header_compression);
    assert_eq!(stats.compressed_segments_received, 1);

    // The same segment to an address we do not act as: dropped before its
    // id is looked up.
    let stray = peer_compressed(THEIRS, addr("10.21.5.5:80"), PEER_ISS + 5, 0, b"");
    h.ep.handle_packet(h.now, &stray);
    assert_eq!(h.ep.stats().dropped("not_local"), 1);
    // To another address we act as, where the peer's id means nothing.
    let stray = peer_compressed(THEIRS, addr("10.20.5.6:80"), PEER_ISS + 5, 0, b"");
    h.ep.handle_packet(h.now, &stray);
    assert_eq!(h.ep.stats().dropped("no_compressed_connection"), 1);
    assert_eq!(h.ep.stats().total_dropped(), 2);
}

/// The id our SYN offers on a connect from `local` to `remote`, if any.
fn offered_id(h: &mut Harness, local: SocketAddr, remote: SocketAddr) -> Option<u8> {
    h.ep.connect(h.now, remote, Some(local), None).unwrap();
    let syn = one_between(h, local, remote);
    syn.options
        .scps_capabilities
        .filter(|c| c.compression)
        .map(|c| c.connection_id)
}

#[test]
fn compression_ids_are_unique_per_address_we_act_as_since_one_gateway_may_answer_for_every_server() {
    // A receiver demultiplexes compressed segments by their source address
    // and id; the far gateway answers for all the servers, so connections
    // from one client address to different servers need different ids.
    let mut h = harness(compressing(), &[CLIENTS]);
    let client = addr("10.50.0.1:40000");
    let mut ids = Vec::new();
    for server in 0..255u32 {
        let remote = SocketAddr::new(IpAddr::from((0x0a14_0000 + server).to_be_bytes()), 80);
        ids.push(offered_id(&mut h, client, remote).expect("a free id"));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 255, "every id used once");
    let one_more = addr("10.21.0.1:80");
    assert_eq!(
        offered_id(&mut h, client, one_more),
        None,
        "all 255 in use from this address: offered without compression"
    );
    assert!(
        offered_id(&mut h, addr("10.50.0.2:40000"), one_more).is_some(),
        "another client address has ids of its own"
    );
    // From our own address, to one peer each: ids are per peer, as before.
    let ours = offered_id(&mut h, OURS, one_more);
    assert!(
        ours.is_some(),
        "our own address is not limited by the clients' ids"
    );
}

/// A gateway pair's link: A acts as the clients and B as the servers.
fn gateway_pair(config: Config, delay: Duration) -> Pair {
    let mut pair = Pair::new(config.clone(), delay);
    let gateway = |own: &str, transparent: &str, secret| {
        let config = EndpointConfig {
            secret,
            ..endpoint_config(config.clone(), &[transparent])
        };
        Endpoint::new(config, [own.parse().unwrap()]).unwrap()
    };
    pair.a = gateway("10.0.0.1", CLIENTS, 1);
    pair.b = gateway("10.0.0.2", SERVERS, 2);
    pair.record = true;
    pair
}

/// Opens the link connection from `client` to `server` (A acting as the
/// client, B accepting as the server) and exchanges data both ways.
fn transfer(pair: &mut Pair, client: SocketAddr, server: SocketAddr, salt: u8) -> Exchanged {
    let listener = pair.b.listen_transparent(&[prefix(SERVERS)], None, None).unwrap();
    let ca = pair.a.connect(pair.now, server, Some(client), None).unwrap();
    let (to_b, to_a) = (data(150_000, salt), data(90_000, salt ^ 0x5a));
    let exchanged = exchange_on(
        pair,
        ca,
        |b| {
            b.accept_transparent(listener).map(|(cb, tuple)| {
                assert_eq!((tuple.local, tuple.remote), (server, client));
                cb
            })
        },
        &to_b,
        &to_a,
    );
    assert!(exchanged.at_b == to_b, "content A to B differs");
    assert!(exchanged.at_a == to_a, "content B to A differs");
    exchanged
}

#[test]
fn a_gateway_link_carries_data_both_ways_between_the_applications_addresses() {
    for (config, compresses) in [(compressing(), true), (Config::default(), false)] {
        let what = if compresses { "compressed" } else { "plain TCP" };
        let mut pair = gateway_pair(config, Duration::from_millis(20));
        let (client, server) = (addr("10.50.1.2:51000"), addr("10.20.3.4:80"));
        let Exchanged { ca, cb, .. } = transfer(&mut pair, client, server, 7);
        // Every packet carries the applications' addresses, never the
        // gateways' own; after the SYNs, compressed when negotiated.
        let mut compressed = 0;
        for (to_b, packet) in &pair.log {
            let (ip, _) = IpRepr::parse(packet).unwrap();
            let expected = if *to_b {
                (client.ip(), server.ip())
            } else {
                (server.ip(), client.ip())
            };
            assert_eq!((ip.src(), ip.dst()), expected, "({what})");
            if ip.protocol() == IPPROTO_SCPS_COMPRESSED {
                compressed += 1;
            } else {
                assert_eq!(ip.protocol(), IPPROTO_TCP);
                let syn = parse_tcp_packet(packet).unwrap().1.is_some_and(|t| t.flags.syn());
                assert!(syn || !compresses, "only SYNs uncompressed ({what})");
            }
        }
        let (sa, sb) = (pair.a.stats_of(ca).unwrap(), pair.b.stats_of(cb).unwrap());
        assert_eq!(sa.header_compression, compresses);
        assert_eq!(compressed > 0, compresses);
        assert_eq!(sa.header_compression, sb.header_compression);
        assert_eq!(
            compressed,
            sa.compressed_segments_sent + sb.compressed_segments_sent,
            "({what})"
        );
        assert_eq!(pair.a.stats().total_dropped() + pair.b.stats().total_dropped(), 0);
    }
}

#[test]
fn one_client_to_two_servers_over_ipv6_keeps_the_connections_apart() {
    let mut pair = Pair::new(compressing(), Duration::from_millis(5));
    let gateway = |own: &str, transparent: &str, secret| {
        let config = EndpointConfig {
            secret,
            ..endpoint_config(compressing(), &[transparent])
        };
        Endpoint::new(config, [own.parse().unwrap()]).unwrap()
    };
    pair.a = gateway("fd00::1", "fd50::/64", 1);
    pair.b = gateway("fd00::2", "fd20::/64", 2);
    let listener = pair
        .b
        .listen_transparent(&[prefix("fd20::/64")], Some(80), None)
        .unwrap();
    let client = addr("[fd50::9]:50000");
    let servers = [addr("[fd20::1]:80"), addr("[fd20::2]:80")];
    let conns: Vec<_> = servers
        .iter()
        .map(|&s| pair.a.connect(pair.now, s, Some(client), None).unwrap())
        .collect();
    // Each server's connection gets the bytes meant for it.
    let payloads = [data(40_000, 1), data(40_000, 2)];
    let mut accepted = Vec::new();
    let mut received = [Vec::new(), Vec::new()];
    let mut sent = [0, 0];
    let mut buf = vec![0u8; 65536];
    pair.run(|p| {
        while let Some((cb, tuple)) = p.b.accept_transparent(listener) {
            accepted.push((cb, tuple.local));
        }
        for (i, &ca) in conns.iter().enumerate() {
            sent[i] += p.a.send(ca, &payloads[i][sent[i]..]).unwrap_or(0);
        }
        for &(cb, local) in &accepted {
            let i = servers
                .iter()
                .position(|&s| s == local)
                .expect("one of the servers");
            while let Ok(n @ 1..) = p.b.recv(cb, &mut buf) {
                received[i].extend_from_slice(&buf[..n]);
            }
        }
        received.iter().zip(&payloads).all(|(r, p)| r.len() == p.len())
    });
    assert!(
        received[0] == payloads[0] && received[1] == payloads[1],
        "content per server"
    );
    let ids: Vec<_> = conns
        .iter()
        .map(|&c| pair.a.connection(c).unwrap().compression_ids().0)
        .collect();
    assert!(ids[0].is_some() && ids[0] != ids[1], "{ids:?}");
}

/// Picks a small MTU for port 80 and leaves every other port to the
/// listener: a gateway's routes, each with its own settings.
#[derive(Debug)]
struct SmallMtuForWeb(std::sync::Arc<Config>);

impl scps_proto::ConfigChooser for SmallMtuForWeb {
    fn config_for(&self, tuple: &scps_proto::FourTuple) -> Option<std::sync::Arc<Config>> {
        (tuple.local.port() == 80).then(|| self.0.clone())
    }
}

#[test]
fn a_chooser_sets_each_connection_s_configuration_from_its_addresses() {
    let mut h = harness(Config::default(), &[SERVERS]);
    let listener = h.ep.listen_transparent(&[prefix(SERVERS)], None, None).unwrap();
    let small = Config {
        mtu: 1000,
        ..Config::default()
    };
    h.ep.choose_configs(listener, std::sync::Arc::new(SmallMtuForWeb(small.into())));
    let (web, ssh) = (addr("10.20.0.9:80"), addr("10.20.0.9:22"));
    h.send_from(THEIRS, web, &Seg::new(TcpFlags::SYN, PEER_ISS));
    let answer = one_between(&mut h, web, THEIRS);
    assert_eq!(
        answer.options.mss,
        Some(960),
        "the chosen MTU, less 40 bytes of headers"
    );
    h.send_from(THEIRS, ssh, &Seg::new(TcpFlags::SYN, PEER_ISS));
    let answer = one_between(&mut h, ssh, THEIRS);
    assert_eq!(answer.options.mss, Some(1460), "the listener's own");
}
