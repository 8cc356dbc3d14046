//! Opening connections, segment by segment (RFC 9293 3.5, 3.10.7.1-3;
//! options of RFC 7323 and RFC 2018).

mod harness;

use std::time::Duration;

use harness::*;
use scps_proto::wire::TcpFlags;
use scps_proto::{Config, ConnectionError, Event, State};

#[test]
fn active_open_offers_every_option_and_completes_on_syn_ack() {
    let mut h = Harness::new(Config {
        recv_buffer: 1 << 20,
        ..Config::default()
    });
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    assert_eq!(syn.flags, TcpFlags::SYN);
    assert_eq!(syn.options.mss, Some(1460), "MTU 1500 less 40 bytes of headers");
    assert_eq!(syn.options.window_scale, Some(5), "1 MiB needs a shift of 5");
    assert!(syn.options.sack_permitted);
    let ts = syn.options.timestamps.expect("timestamps offered");
    assert_eq!(ts.tsecr, 0);
    assert_eq!(syn.window, 65535, "the window in a SYN is not scaled");
    assert_eq!(h.ep.state(conn), Some(State::SynSent));

    h.send(
        &Seg::new(TcpFlags::SYN, PEER_ISS)
            .with_ack(syn.seq.wrapping_add(1))
            .mss(1000)
            .wscale(2)
            .sack_permitted()
            .ts(77, ts.tsval),
    );
    let ack = h.one();
    assert_eq!(ack.flags, TcpFlags::ACK);
    assert_eq!(ack.seq, syn.seq.wrapping_add(1));
    assert_eq!(ack.ack, PEER_ISS + 1);
    assert_eq!(ack.options.timestamps.unwrap().tsecr, 77, "TS.Recent echoed");
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert_eq!(h.events(), vec![(conn, Event::Connected)]);
    let stats = h.ep.stats_of(conn).unwrap();
    assert_eq!(stats.smss, 1000 - 12, "the peer's MSS less the timestamps option");
    assert!(stats.sack && stats.timestamps);
    assert_eq!((stats.send_window_shift, stats.receive_window_shift), (2, 5));
}

#[test]
fn options_the_peer_does_not_offer_are_not_used() {
    let mut h = Harness::new(Config::default());
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    // A peer with none of the options, not even MSS (RFC 9293: assume 536).
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS).with_ack(syn.seq.wrapping_add(1)));
    let ack = h.one();
    assert_eq!(ack.options.timestamps, None, "no timestamps once refused");
    let stats = h.ep.stats_of(conn).unwrap();
    assert_eq!(stats.smss, 536);
    assert!(!stats.sack && !stats.timestamps);
    assert_eq!((stats.send_window_shift, stats.receive_window_shift), (0, 0));
}

#[test]
fn passive_open_mirrors_the_offered_options_and_is_accepted_after_the_ack() {
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    // The peer offers only MSS and SACK-permitted.
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS).mss(1200).sack_permitted());
    let syn_ack = h.one();
    assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(syn_ack.ack, PEER_ISS + 1);
    assert_eq!(syn_ack.options.mss, Some(1460));
    assert!(syn_ack.options.sack_permitted);
    assert_eq!(syn_ack.options.window_scale, None, "not offered by the SYN");
    assert_eq!(syn_ack.options.timestamps, None, "not offered by the SYN");
    assert_eq!(
        h.ep.accept(OURS),
        None,
        "not accepted before the handshake completes"
    );

    h.send(&Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)).payload(b"hello"));
    let conn = h.ep.accept(OURS).expect("established connection");
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert_eq!(
        h.read(conn),
        b"hello",
        "data in the handshake's final ACK is kept"
    );
    assert_eq!(h.ep.stats_of(conn).unwrap().smss, 1200);
}

#[test]
fn simultaneous_open_completes_on_both_syn_acks() {
    let mut h = Harness::new(Config::default());
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    // RFC 9293 figure 8: the peer's SYN crosses ours.
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS).mss(1460));
    let syn_ack = h.one();
    assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(syn_ack.seq, syn.seq, "same ISS");
    assert_eq!(syn_ack.ack, PEER_ISS + 1);
    assert_eq!(h.ep.state(conn), Some(State::SynReceived));
    // The peer's SYN-ACK arrives: a challenge ACK answers it (RFC 5961 4.2);
    // its ACK of our SYN is what completes the handshake on the other side.
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS).with_ack(syn.seq.wrapping_add(1)));
    let ack = h.one();
    assert_eq!(ack.flags, TcpFlags::ACK);
    assert_eq!(ack.ack, PEER_ISS + 1);
    h.send(&Seg::ack(PEER_ISS + 1, syn.seq.wrapping_add(1)));
    assert_eq!(h.ep.state(conn), Some(State::Established));
}

#[test]
fn reset_answering_the_syn_refuses_the_connection() {
    let mut h = Harness::new(Config::default());
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    // A reset with an unacceptable ACK is ignored (RFC 9293 3.10.7.3).
    h.send(&Seg::new(TcpFlags::RST, 0).with_ack(syn.seq.wrapping_add(5)));
    assert_eq!(h.ep.state(conn), Some(State::SynSent));
    h.send(&Seg::new(TcpFlags::RST, 0).with_ack(syn.seq.wrapping_add(1)));
    assert_eq!(h.ep.state(conn), Some(State::Closed));
    assert!(
        h.events()
            .contains(&(conn, Event::Closed(Some(ConnectionError::Refused))))
    );
    let mut buf = [0u8; 4];
    assert_eq!(h.ep.send(conn, b"x"), Err(ConnectionError::Refused.into()));
    assert_eq!(h.ep.recv(conn, &mut buf), Err(ConnectionError::Refused.into()));
}

#[test]
fn syn_sent_answers_a_bad_ack_with_a_reset() {
    let mut h = Harness::new(Config::default());
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    h.one();
    h.send(&Seg::ack(PEER_ISS, 12345));
    let rst = h.one();
    assert_eq!(rst.flags, TcpFlags::RST);
    assert_eq!(rst.seq, 12345, "<SEQ=SEG.ACK><CTL=RST>");
}

#[test]
fn segments_for_no_connection_get_resets() {
    let mut h = Harness::new(Config::default());
    // A SYN: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
    h.send(&Seg::new(TcpFlags::SYN, 500).payload(b"abc"));
    let rst = h.one();
    assert_eq!(rst.flags, TcpFlags::RST | TcpFlags::ACK);
    assert_eq!((rst.seq, rst.ack), (0, 504));
    // An ACK: <SEQ=SEG.ACK><CTL=RST>.
    h.send(&Seg::ack(500, 9999));
    let rst = h.one();
    assert_eq!(rst.flags, TcpFlags::RST);
    assert_eq!(rst.seq, 9999);
    // A reset: nothing.
    h.send(&Seg::new(TcpFlags::RST, 7));
    h.nothing();
    assert_eq!(h.ep.stats().dropped("no_connection"), 3);
    assert_eq!(h.ep.stats().resets_sent, 2);
}

#[test]
fn listener_answers_a_stray_ack_with_a_reset() {
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    h.send(&Seg::ack(1, 4242));
    let rst = h.one();
    assert_eq!((rst.flags, rst.seq), (TcpFlags::RST, 4242));
    assert_eq!(h.ep.connection_count(), 0);
}

#[test]
fn syn_is_retransmitted_with_backoff_then_the_attempt_fails() {
    let mut h = Harness::new(Config {
        rto_initial: Duration::from_secs(1),
        max_syn_retransmissions: 3,
        ..Config::default()
    });
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let first = h.one();
    let mut waits = Vec::new();
    for _ in 0..3 {
        waits.push(h.advance_to_timeout());
        let again = h.one();
        assert_eq!(
            again,
            Seg {
                options: again.options,
                ..first.clone()
            },
            "the same SYN"
        );
    }
    assert_eq!(waits, [1, 2, 4].map(Duration::from_secs), "RFC 6298 5.5 doubling");
    assert_eq!(h.advance_to_timeout(), Duration::from_secs(8));
    h.nothing();
    assert_eq!(h.ep.state(conn), Some(State::Closed));
    let closed = Event::Closed(Some(ConnectionError::HandshakeTimedOut { retransmissions: 3 }));
    assert!(h.events().contains(&(conn, closed)));
}

#[test]
fn a_retransmitted_syn_brings_back_the_syn_ack() {
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    let syn = Seg::new(TcpFlags::SYN, PEER_ISS).mss(1460);
    h.send(&syn);
    let syn_ack = h.one();
    h.send(&syn);
    assert_eq!(h.one(), syn_ack, "the SYN-ACK again, unchanged");
    assert_eq!(h.ep.connection_count(), 1, "no second connection");
}

#[test]
fn reset_in_syn_received_returns_to_listen() {
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS));
    h.one();
    h.send(&Seg::new(TcpFlags::RST, PEER_ISS + 1));
    assert_eq!(
        h.ep.connection_count(),
        0,
        "the embryonic connection is forgotten"
    );
    assert_eq!(h.ep.accept(OURS), None);
    // The listener still works.
    h.send(&Seg::new(TcpFlags::SYN, 777));
    assert!(h.one().has(TcpFlags::SYN));
}

#[test]
fn without_syn_cookies_the_backlog_limits_connections_waiting_for_accept() {
    let mut h = Harness::new(Config::default());
    h.ep = scps_proto::Endpoint::new(
        scps_proto::EndpointConfig {
            backlog: 2,
            syn_cookies: false,
            ..Default::default()
        },
        [OURS.ip()],
    )
    .unwrap();
    h.ep.listen(OURS, None).unwrap();
    for port in 1000..1003 {
        let from = std::net::SocketAddr::new(THEIRS.ip(), port);
        h.send_from(from, OURS, &Seg::new(TcpFlags::SYN, PEER_ISS));
    }
    assert_eq!(h.output().len(), 2, "two SYN-ACKs, the third SYN dropped");
    assert_eq!(h.ep.stats().dropped("backlog_full"), 1);
}

#[test]
fn invalid_connection_configuration_is_refused_before_anything_is_sent() {
    let mut h = Harness::new(Config::default());
    let bad = Config {
        recv_buffer: 100_000,
        window_scaling: false,
        ..Config::default()
    };
    let err = h.ep.connect(h.now, THEIRS, None, Some(bad)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid configuration: recv_buffer = 100000: at most 65535 bytes without window scaling"
    );
    // Said once: a report of the error's whole chain (`{:#}`) must not
    // repeat the configuration error as its source.
    assert!(std::error::Error::source(&err).is_none());
    h.nothing();
}

#[test]
fn shutdown_before_the_handshake_completes_queues_the_fin() {
    let mut h = Harness::new(Config::default());
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    h.send(&Seg::new(TcpFlags::SYN, PEER_ISS).mss(1460));
    let syn_ack = h.one();
    assert_eq!(h.ep.state(conn), Some(State::SynReceived));
    assert_eq!(h.ep.send(conn, b"early"), Ok(5));
    h.ep.shutdown(conn).unwrap();
    h.nothing();
    h.advance_to_timeout();
    assert_eq!(h.one().flags, syn_ack.flags, "the SYN-ACK again, not a FIN");
    h.send(&Seg::ack(PEER_ISS + 1, syn.seq.wrapping_add(1)));
    assert!(h.events().contains(&(conn, Event::Connected)));
    let data = h.one();
    assert_eq!(data.payload, b"early");
    assert!(data.has(TcpFlags::FIN), "the queued FIN follows the data");
    assert_eq!(h.ep.state(conn), Some(State::FinWait1));
}
