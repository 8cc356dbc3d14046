//! SYN cookies (RFC 4987 3.6): with the backlog full of half-open
//! connections from spoofed addresses, a real client still connects, its
//! options kept where the timestamps can carry them; the endpoint holds
//! nothing for the SYNs it answered with cookies; forged, stale or
//! unprompted ACKs are refused.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::*;
use scps_proto::wire::TcpFlags;
use scps_proto::{Config, Endpoint, EndpointConfig, Event, MAX_ANSWERS_WAITING, State};

const BACKLOG: usize = 4;

/// A listener whose backlog is already full of half-open connections
/// from spoofed ports that will never answer.
fn flooded() -> Harness {
    let mut h = Harness::new(Config::default());
    h.ep = Endpoint::new(
        EndpointConfig {
            backlog: BACKLOG,
            ..EndpointConfig::default()
        },
        [OURS.ip()],
    )
    .unwrap();
    h.ep.listen(OURS, None).unwrap();
    refill_backlog(&mut h);
    h
}

/// Fills the listener's backlog with half-open connections from spoofed
/// ports that will never answer, and takes what the endpoint sends them.
fn refill_backlog(h: &mut Harness) {
    let mut port = 2000;
    while h.ep.connection_count() < BACKLOG {
        let spoofed = SocketAddr::new("198.51.100.9".parse().unwrap(), port);
        h.send_from(spoofed, OURS, &Seg::new(TcpFlags::SYN, 1));
        port += 1;
    }
    h.output_addressed();
}

/// The client's full offer: MSS, window scale 7, SACK, timestamps.
fn full_syn() -> Seg {
    Seg::new(TcpFlags::SYN, PEER_ISS)
        .mss(1460)
        .wscale(7)
        .sack_permitted()
        .ts(5000, 0)
}

#[test]
fn a_client_connects_through_a_full_backlog_with_its_options() {
    let mut h = flooded();
    h.send(&full_syn());
    let syn_ack = h.one();
    assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(syn_ack.ack, PEER_ISS + 1);
    assert_eq!(h.ep.connection_count(), BACKLOG, "nothing kept for the cookie");
    assert_eq!(h.ep.stats().syn_cookies_sent, 1);
    let ts = syn_ack.options.timestamps.expect("timestamps answered");
    assert!(syn_ack.options.window_scale.is_some() && syn_ack.options.sack_permitted);
    assert_eq!(syn_ack.options.scps_capabilities, None, "plain TCP under a flood");

    // The client's ACK carries its first data.
    h.advance(Duration::from_millis(80));
    h.send(
        &Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1))
            .ts(5080, ts.tsval)
            .payload(b"hello"),
    );
    assert_eq!(h.ep.stats().syn_cookies_accepted, 1);
    let conn = h.ep.accept(OURS).expect("the connection is accepted");
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert!(h.events().contains(&(conn, Event::Connected)));
    assert_eq!(h.read(conn), b"hello");
    let stats = h.ep.stats_of(conn).unwrap();
    assert!(stats.sack && stats.timestamps, "{stats:?}");
    assert_eq!(stats.send_window_shift, 7, "the client's window scale");
    assert_eq!(stats.smss, 1460 - 12);
    let srtt = stats
        .srtt
        .expect("the handshake's RTT, from the echoed timestamp");
    assert!(
        srtt >= Duration::from_millis(80) && srtt <= Duration::from_millis(80 + 32),
        "{srtt:?}"
    );
    // It answers like any connection.
    h.ep.send(conn, b"world").unwrap();
    let reply = h.one();
    assert_eq!(reply.payload, b"world");
    assert_eq!(reply.seq, syn_ack.seq.wrapping_add(1));
    assert_eq!(reply.ack, PEER_ISS + 1 + 5);
}

#[test]
fn without_timestamps_the_cookie_offers_neither_window_scale_nor_sack() {
    let mut h = flooded();
    h.send(
        &Seg::new(TcpFlags::SYN, PEER_ISS)
            .mss(1380)
            .wscale(7)
            .sack_permitted(),
    );
    let syn_ack = h.one();
    assert_eq!(syn_ack.options.window_scale, None);
    assert!(!syn_ack.options.sack_permitted);
    assert_eq!(syn_ack.options.timestamps, None);
    h.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)));
    let conn = h.ep.accept(OURS).expect("the connection is accepted");
    let stats = h.ep.stats_of(conn).unwrap();
    assert!(!stats.sack && !stats.timestamps);
    assert_eq!((stats.send_window_shift, stats.receive_window_shift), (0, 0));
    assert_eq!(stats.smss, 1380, "the client's MSS, which the cookie carries");
}

#[test]
fn a_flood_of_syns_keeps_nothing_beyond_the_backlog() {
    let mut h = flooded();
    for i in 0..100_000u32 {
        let spoofed = SocketAddr::new(
            std::net::Ipv4Addr::from(0xc633_6400 | (i >> 16)).into(),
            (i & 0xffff) as u16,
        );
        h.send_from(spoofed, OURS, &Seg::new(TcpFlags::SYN, i));
        if i % 500 == 0 {
            h.output_addressed();
        }
    }
    h.output_addressed();
    assert_eq!(h.ep.connection_count(), BACKLOG);
    assert_eq!(h.ep.stats().syn_cookies_sent, 100_000);
    // A driver that does not keep up: the answers waiting stay bounded,
    // the rest are counted.
    for i in 0..2000u32 {
        let spoofed = SocketAddr::new("198.51.100.200".parse().unwrap(), 1000 + i as u16);
        h.send_from(spoofed, OURS, &Seg::new(TcpFlags::SYN, i));
    }
    assert_eq!(h.ep.answers_waiting(), MAX_ANSWERS_WAITING);
    assert_eq!(h.ep.stats().answers_not_sent, (2000 - MAX_ANSWERS_WAITING) as u64);
}

#[test]
fn forged_stale_and_unprompted_acks_are_refused() {
    let mut h = flooded();
    h.send(&full_syn());
    let syn_ack = h.one();
    let ts = syn_ack.options.timestamps.unwrap();
    // A guess: the cookie off by one.
    h.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(2)).ts(5001, ts.tsval));
    assert!(h.one().has(TcpFlags::RST), "a forged cookie draws a reset");
    // Another client's ISN with this cookie.
    h.send(&Seg::ack(PEER_ISS + 2, syn_ack.seq.wrapping_add(1)).ts(5001, ts.tsval));
    assert!(h.one().has(TcpFlags::RST));
    assert_eq!(h.ep.accept(OURS), None);
    // Three periods later the real ACK is stale, even though the flood
    // goes on (cookies are still being sent).
    h.advance(Duration::from_secs(200));
    refill_backlog(&mut h);
    let other = SocketAddr::new(THEIRS.ip(), THEIRS.port() + 1);
    h.send_from(other, OURS, &full_syn());
    h.output_addressed();
    h.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)).ts(5001, ts.tsval));
    assert!(h.one().has(TcpFlags::RST), "a stale cookie draws a reset");
    assert_eq!(h.ep.accept(OURS), None);
    assert_eq!(h.ep.stats().syn_cookies_accepted, 0);
}

#[test]
fn cookies_are_not_accepted_when_none_was_sent() {
    // The same endpoint secret and addresses make the same cookie: one an
    // endpoint did not send (there was no flood) is refused.
    let mut flooded = flooded();
    flooded.send(&full_syn());
    let syn_ack = flooded.one();
    let mut quiet = Harness::new(Config::default());
    quiet.ep.listen(OURS, None).unwrap();
    quiet.now = flooded.now;
    quiet.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)));
    assert!(quiet.one().has(TcpFlags::RST));
    assert_eq!(quiet.ep.accept(OURS), None);
    // The flooded one takes it.
    flooded.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)));
    assert!(flooded.ep.accept(OURS).is_some());
}

#[test]
fn cookie_connections_waiting_for_accept_are_bounded_too() {
    let mut h = flooded();
    // BACKLOG real clients complete their handshakes by cookie and are
    // not accepted; one more is held off (dropped, not reset), and gets in
    // once the application accepts one.
    let mut acks = Vec::new();
    for i in 0..=BACKLOG as u16 {
        let client = SocketAddr::new(THEIRS.ip(), 3000 + i);
        h.send_from(client, OURS, &Seg::new(TcpFlags::SYN, PEER_ISS));
        let (_, _, syn_ack) = h.output_addressed().pop().unwrap();
        let ack = Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1));
        h.send_from(client, OURS, &ack);
        acks.push((client, ack));
    }
    assert_eq!(h.ep.stats().syn_cookies_accepted, BACKLOG as u64);
    assert_eq!(h.ep.stats().dropped("accept_queue_full"), 1);
    assert!(
        h.output_addressed().iter().all(|(_, _, s)| !s.has(TcpFlags::RST)),
        "no reset"
    );
    assert!(h.ep.accept(OURS).is_some());
    let (client, ack) = acks.pop().unwrap();
    h.send_from(client, OURS, &ack);
    assert_eq!(h.ep.stats().syn_cookies_accepted, BACKLOG as u64 + 1);
}
