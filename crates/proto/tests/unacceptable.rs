//! Answers to unacceptable segments are bounded, and two ends out of step
//! end the connection rather than answer each other for ever (the ACK
//! storm one forged segment used to start): RFC 9293 3.10.7.4, RFC 5961,
//! and Linux's `tcp_invalid_ratelimit` and `tcp_challenge_ack_limit`.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::pair::{Pair, data};
use harness::*;
use scps_proto::wire::{TcpFlags, TcpRepr, Timestamps, build_tcp_packet, parse_tcp_packet};
use scps_proto::{ANSWERS_PER_SECOND, Config, ConnectionError, DESYNC_LIMIT, Event, State};

#[test]
fn segments_without_data_outside_the_window_are_answered_once_per_half_second() {
    let mut c = Established::new(Config::default());
    let stale = c.rcv_nxt.wrapping_sub(100_000);
    let mut answers = Vec::new();
    for _ in 0..10 {
        let seg = c.peer_segment(c.snd_nxt);
        c.h.send(&Seg { seq: stale, ..seg });
        answers.extend(c.output());
    }
    assert_eq!(answers.len(), 1, "one answer to ten: {answers:#?}");
    assert_eq!(answers[0].ack, c.rcv_nxt);
    assert_eq!(c.stats().answers_suppressed, 9);
    assert_eq!(c.stats().segments_rejected, 10);
    c.h.advance(Duration::from_millis(499));
    let seg = c.peer_segment(c.snd_nxt);
    c.h.send(&Seg { seq: stale, ..seg });
    c.h.nothing();
    c.h.advance(Duration::from_millis(1));
    let seg = c.peer_segment(c.snd_nxt);
    c.h.send(&Seg { seq: stale, ..seg });
    assert_eq!(c.one().ack, c.rcv_nxt, "half a second later, answered again");
}

#[test]
fn old_duplicates_by_their_timestamp_are_answered_each_time() {
    // What reordering brings late: an ACK overtaken by a later one.
    let mut c = Established::new(Config::default());
    c.peer_ts += 100;
    let newer = c.peer_segment(c.snd_nxt);
    c.h.send(&newer);
    c.output();
    for _ in 0..3 {
        let older = Seg::ack(c.rcv_nxt, c.snd_nxt).ts(c.peer_ts - 50, c.our_ts);
        c.h.send(&older);
        assert_eq!(c.one().ack, c.rcv_nxt, "answered");
    }
    assert_eq!(c.stats().answers_suppressed, 0);
    assert_eq!(c.stats().segments_rejected, 3);
}

#[test]
fn challenge_acks_to_resets_and_syns_share_the_bound() {
    let mut c = Established::new(Config::default());
    c.h.send(&Seg::new(TcpFlags::RST, c.rcv_nxt + 10));
    assert_eq!(
        c.one().ack,
        c.rcv_nxt,
        "a RST inside the window draws a challenge"
    );
    c.h.send(&Seg::new(TcpFlags::RST, c.rcv_nxt + 20));
    let syn = Seg::new(TcpFlags::SYN, c.rcv_nxt + 5).ts(c.peer_ts + 1, 0);
    c.h.send(&syn);
    c.h.nothing();
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
    assert_eq!(c.stats().answers_suppressed, 2);
}

#[test]
fn old_data_is_always_answered() {
    // A peer retransmitting data we have (our ACKs were lost) must hear
    // where we are each time: data is not part of an ACK loop.
    let mut c = Established::new(Config::default());
    let seg = c.peer_segment(c.snd_nxt).payload(b"hello");
    c.h.send(&seg);
    c.rcv_nxt += 5;
    c.h.advance(Duration::from_millis(200));
    c.output();
    for _ in 0..3 {
        c.h.send(&seg);
        assert_eq!(c.one().ack, c.rcv_nxt, "every copy of old data is answered");
    }
    assert_eq!(c.stats().answers_suppressed, 0);
}

#[test]
fn acks_of_data_never_sent_reset_the_connection_after_a_few() {
    let mut c = Established::new(Config::default());
    let beyond = c.snd_nxt.wrapping_add(9);
    for i in 1..DESYNC_LIMIT {
        let seg = c.peer_segment(beyond);
        c.h.send(&seg);
        assert_eq!(c.h.ep.state(c.conn), Some(State::Established), "after {i}");
        c.h.advance(Duration::from_secs(1));
        let answer = c.one();
        assert_eq!((answer.flags, answer.seq), (TcpFlags::ACK, c.snd_nxt));
    }
    let seg = c.peer_segment(beyond);
    c.h.send(&seg);
    let reset = c.one();
    assert_eq!(
        (reset.flags, reset.seq),
        (TcpFlags::RST, beyond),
        "the reset carries the peer's own ACK number, its RCV.NXT"
    );
    assert!(c.h.events().contains(&(
        c.conn,
        Event::Closed(Some(ConnectionError::Desynchronized { acks: DESYNC_LIMIT }))
    )));
}

#[test]
fn an_ack_in_step_clears_the_count() {
    let mut c = Established::new(Config::default());
    let beyond = c.snd_nxt.wrapping_add(9);
    for _ in 0..5 {
        for _ in 1..DESYNC_LIMIT {
            let seg = c.peer_segment(beyond);
            c.h.send(&seg);
            c.h.advance(Duration::from_secs(1));
        }
        let seg = c.peer_segment(c.snd_nxt);
        c.h.send(&seg);
    }
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
}

#[test]
fn the_endpoint_answers_at_most_its_budget_per_second() {
    let extra = 25;
    let mut h = Harness::new(Config::default());
    let mut peers = Vec::new();
    for i in 0..ANSWERS_PER_SECOND as u16 + extra {
        let local = SocketAddr::new(OURS.ip(), 20_000 + i);
        h.ep.connect(h.now, THEIRS, Some(local), None).unwrap();
        let syn = h.one();
        let syn_ack = Seg::new(TcpFlags::SYN, PEER_ISS).with_ack(syn.seq.wrapping_add(1));
        h.send_from(THEIRS, local, &syn_ack);
        assert_eq!(h.one().flags, TcpFlags::ACK);
        peers.push((local, syn.seq.wrapping_add(1)));
    }
    h.events();
    for &(local, snd_nxt) in &peers {
        let stale = Seg::ack(PEER_ISS.wrapping_sub(100_000), snd_nxt);
        h.send_from(THEIRS, local, &stale);
    }
    assert_eq!(h.output().len(), ANSWERS_PER_SECOND as usize);
    assert_eq!(h.ep.stats().unacceptable_answers_over_budget, u64::from(extra));
    h.advance(Duration::from_secs(1));
    for &(local, snd_nxt) in peers.iter().take(usize::from(extra)) {
        let stale = Seg::ack(PEER_ISS.wrapping_sub(100_000), snd_nxt);
        h.send_from(THEIRS, local, &stale);
    }
    assert_eq!(h.output().len(), usize::from(extra), "a new second, a new budget");
}

/// One forged data segment in A's name, in B's window, on an idle
/// connection between two of our endpoints 300 ms apart: B takes it, so
/// the two disagree about A's sequence numbers. Before the bounds, the
/// two answered each other's ACKs for ever; now they exchange a few, A
/// sees its peer acknowledge data it never sent, and resets: both
/// applications learn it, and the link carries a handful of packets in
/// the minute after.
#[test]
fn one_forged_segment_ends_in_resets_not_a_storm() {
    one_forged_segment(Duration::from_millis(300));
}

/// The same on a link of almost no delay, where one answer per 500 ms
/// would stop the exchange after one answer each way (and leave the
/// connection stuck) if the answers that count towards the reset were
/// held to it.
#[test]
fn one_forged_segment_on_a_fast_link_ends_in_resets_too() {
    one_forged_segment(Duration::from_micros(100));
}

fn one_forged_segment(delay: Duration) {
    let config = Config {
        keepalive: None,
        ..Config::default()
    };
    let mut pair = Pair::new(config, delay);
    let server = SocketAddr::new(pair.server, 80);
    pair.b.listen(server, None).unwrap();
    let ca = pair.a.connect(pair.now, server, None, None).unwrap();
    let mut cb = None;
    let request = data(2000, 1);
    let mut received = Vec::new();
    let mut buf = vec![0u8; 4096];
    pair.record = true;
    pair.run(|p| {
        if cb.is_none() {
            cb = p.b.accept(server);
            if cb.is_some() {
                p.a.send(ca, &request).unwrap();
            }
        }
        if let Some(cb) = cb {
            while let Ok(n @ 1..) = p.b.recv(cb, &mut buf) {
                received.extend_from_slice(&buf[..n]);
            }
        }
        received.len() == request.len() && p.a.connection(ca).unwrap().unacknowledged() == 0
    });
    let cb = cb.unwrap();
    // Everything is delivered and acknowledged; let the last ACKs land.
    let quiet = pair.now + Duration::from_secs(5);
    pair.run(|p| p.now >= quiet);

    // The forger copies A's latest segment: addresses, ports, the
    // sequence number after it, the acknowledgment number, timestamps; and
    // sends 9 bytes of its own.
    let (_, last_from_a) = pair.log.iter().rev().find(|(to_b, _)| *to_b).unwrap().clone();
    let (ip, tcp) = parse_tcp_packet(&last_from_a).unwrap();
    let tcp = tcp.unwrap();
    let forged = TcpRepr {
        flags: TcpFlags::ACK | TcpFlags::PSH,
        options: scps_proto::wire::TcpOptions {
            timestamps: tcp.options.timestamps.map(|ts| Timestamps {
                tsval: ts.tsval + 1,
                ..ts
            }),
            ..Default::default()
        },
        seq: tcp.seq.wrapping_add(tcp.payload.len() as u32),
        payload: b"FORGED!!\n",
        ..tcp
    };
    let mut packet = Vec::new();
    build_tcp_packet(ip.src(), ip.dst(), 64, &forged, &mut packet).unwrap();
    let sent_before = pair.sent;
    pair.b.handle_packet(pair.now, &packet);
    let minute = pair.now + Duration::from_secs(60);
    pair.run(|p| p.now >= minute);
    let packets = (pair.sent[0] - sent_before[0]) + (pair.sent[1] - sent_before[1]);

    println!("packets on the link in the minute after the forged segment, {delay:?} apart: {packets}");
    assert!(packets < 20, "{packets} packets: a storm");
    let events: Vec<_> = std::iter::from_fn(|| pair.a.poll_event()).collect();
    assert!(
        events.contains(&(
            ca,
            Event::Closed(Some(ConnectionError::Desynchronized { acks: DESYNC_LIMIT }))
        )),
        "A resets: {events:?}"
    );
    let events: Vec<_> = std::iter::from_fn(|| pair.b.poll_event()).collect();
    assert!(
        events.contains(&(cb, Event::Closed(Some(ConnectionError::Reset)))),
        "B is reset: {events:?}"
    );
}
