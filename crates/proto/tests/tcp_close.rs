//! Closing and resetting, segment by segment (RFC 9293 3.6, 3.10.4-5,
//! 3.10.7.4; RFC 5961 3 and 4), keepalive (RFC 9293 3.8.4).

mod harness;

use std::time::Duration;

use harness::*;
use scps_proto::wire::TcpFlags;
use scps_proto::{Config, ConnectionError, Event, State, StreamError};

fn config() -> Config {
    Config {
        time_wait: Duration::from_secs(30),
        ..Config::default()
    }
}

#[test]
fn active_close_passes_fin_wait_and_time_wait() {
    let mut c = Established::new(config());
    c.write(b"bye");
    c.h.ep.shutdown(c.conn).unwrap();
    let fin = c.one();
    assert_eq!(
        fin.flags,
        TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN,
        "the FIN rides on the last data"
    );
    assert_eq!(c.h.ep.state(c.conn), Some(State::FinWait1));
    assert_eq!(c.h.ep.send(c.conn, b"more"), Err(StreamError::SendClosed));
    let ack = c.peer_segment(fin.seq.wrapping_add(4));
    c.h.send(&ack);
    assert_eq!(c.h.ep.state(c.conn), Some(State::FinWait2));
    // Half-close: the peer may still send.
    let data = c.peer_segment(fin.seq.wrapping_add(4)).payload(b"still talking");
    c.h.send(&data);
    c.rcv_nxt += 13;
    assert_eq!(c.h.read(c.conn), b"still talking");
    let peer_fin = c.peer_segment(fin.seq.wrapping_add(4)).flag(TcpFlags::FIN);
    c.h.send(&peer_fin);
    let last_ack = c.output().pop().unwrap();
    assert_eq!(last_ack.ack, c.rcv_nxt + 1, "the FIN acknowledged");
    assert_eq!(c.h.ep.state(c.conn), Some(State::TimeWait));
    let mut buf = [0u8; 8];
    assert_eq!(c.h.ep.recv(c.conn, &mut buf), Ok(0), "end of stream");
    // A retransmitted FIN is acknowledged again and restarts 2 MSL.
    c.h.advance(Duration::from_secs(20));
    let peer_fin = c.peer_segment(fin.seq.wrapping_add(4)).flag(TcpFlags::FIN);
    c.h.send(&peer_fin);
    assert_eq!(c.one().ack, c.rcv_nxt + 1);
    assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(30));
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
    assert!(c.h.events().contains(&(c.conn, Event::Closed(None))));
    c.h.ep.release(c.h.now, c.conn).unwrap();
    assert_eq!(c.h.ep.connection_count(), 0, "forgotten once released");
}

#[test]
fn passive_close_passes_close_wait_and_last_ack() {
    let mut c = Established::new(config());
    let peer_fin = c.peer_segment(c.snd_nxt).payload(b"done").flag(TcpFlags::FIN);
    c.h.send(&peer_fin);
    let ack = c.one();
    assert_eq!(ack.ack, c.rcv_nxt + 5, "data and FIN acknowledged at once");
    assert_eq!(c.h.ep.state(c.conn), Some(State::CloseWait));
    assert_eq!(c.h.read(c.conn), b"done");
    // We may still send after the peer closed.
    c.write(b"reply");
    c.h.ep.shutdown(c.conn).unwrap();
    let fin = c.one();
    assert!(fin.has(TcpFlags::FIN));
    assert_eq!(c.h.ep.state(c.conn), Some(State::LastAck));
    let ack = Seg::ack(c.rcv_nxt + 5, fin.seq.wrapping_add(6)).ts(c.peer_ts + 1, c.our_ts);
    c.h.send(&ack);
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
}

#[test]
fn simultaneous_close_passes_closing() {
    let mut c = Established::new(config());
    c.h.ep.shutdown(c.conn).unwrap();
    let our_fin = c.one();
    let their_fin = c.peer_segment(c.snd_nxt).flag(TcpFlags::FIN);
    c.h.send(&their_fin);
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closing));
    c.one();
    let ack = Seg::ack(c.rcv_nxt + 1, our_fin.seq.wrapping_add(1)).ts(c.peer_ts + 1, c.our_ts);
    c.h.send(&ack);
    assert_eq!(c.h.ep.state(c.conn), Some(State::TimeWait));
}

#[test]
fn an_unacknowledged_fin_is_retransmitted() {
    let mut c = Established::new(config());
    c.h.ep.shutdown(c.conn).unwrap();
    let fin = c.one();
    c.h.advance_to_timeout();
    let again = c.one();
    assert_eq!((again.seq, again.flags), (fin.seq, fin.flags));
}

#[test]
fn reset_with_the_exact_sequence_number_resets_the_connection() {
    let mut c = Established::new(config());
    c.h.send(&Seg::new(TcpFlags::RST, c.rcv_nxt));
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
    assert!(
        c.h.events()
            .contains(&(c.conn, Event::Closed(Some(ConnectionError::Reset))))
    );
}

#[test]
fn reset_inside_the_window_only_draws_a_challenge_ack() {
    let mut c = Established::new(config());
    c.h.send(&Seg::new(TcpFlags::RST, c.rcv_nxt + 10));
    let challenge = c.one();
    assert_eq!((challenge.flags, challenge.ack), (TcpFlags::ACK, c.rcv_nxt));
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
    // Outside the window: ignored without a reply.
    c.h.send(&Seg::new(TcpFlags::RST, c.rcv_nxt.wrapping_sub(100_000)));
    c.h.nothing();
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
}

#[test]
fn syn_on_an_established_connection_draws_a_challenge_ack() {
    let mut c = Established::new(config());
    let syn = Seg::new(TcpFlags::SYN, c.rcv_nxt + 5).ts(c.peer_ts + 1, 0);
    c.h.send(&syn);
    let challenge = c.one();
    assert_eq!((challenge.flags, challenge.ack), (TcpFlags::ACK, c.rcv_nxt));
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
}

#[test]
fn abort_sends_a_reset() {
    let mut c = Established::new(config());
    c.write(b"unsent?");
    c.one();
    c.h.ep.abort(c.h.now, c.conn).unwrap();
    let rst = c.one();
    assert_eq!(rst.flags, TcpFlags::RST);
    assert_eq!(rst.seq, c.snd_nxt.wrapping_add(7), "<SEQ=SND.NXT>");
    assert!(
        c.h.events()
            .contains(&(c.conn, Event::Closed(Some(ConnectionError::Aborted))))
    );
}

#[test]
fn closing_with_unread_data_resets_so_the_peer_knows() {
    let mut c = Established::new(config());
    let data = c.peer_segment(c.snd_nxt).payload(b"unread");
    c.h.send(&data);
    c.output();
    c.h.ep.close(c.h.now, c.conn).unwrap();
    assert!(c.one().has(TcpFlags::RST));
}

#[test]
fn data_arriving_after_close_resets() {
    let mut c = Established::new(config());
    c.h.ep.close(c.h.now, c.conn).unwrap();
    let fin = c.one();
    assert!(fin.has(TcpFlags::FIN));
    let late = c.peer_segment(fin.seq.wrapping_add(1)).payload(b"late");
    c.h.send(&late);
    assert!(c.one().has(TcpFlags::RST));
    assert_eq!(c.h.ep.connection_count(), 0, "released and closed: gone");
}

#[test]
fn keepalive_probes_an_idle_peer_and_gives_up_when_unanswered() {
    let keepalive = scps_proto::config::Keepalive {
        idle: Duration::from_secs(60),
        interval: Duration::from_secs(10),
        probes: 3,
    };
    let mut c = Established::new(Config {
        keepalive: Some(keepalive),
        ..config()
    });
    assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(60));
    let probe = c.one();
    assert_eq!(probe.seq, c.snd_nxt.wrapping_sub(1), "SEG.SEQ = SND.NXT - 1");
    assert!(probe.payload.is_empty());
    // An answer keeps the connection and restarts the idle time.
    let ack = c.peer_segment(c.snd_nxt);
    c.h.send(&ack);
    assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(60));
    c.one();
    for _ in 0..2 {
        assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(10));
        c.one();
    }
    c.h.advance_to_timeout();
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
    let error = ConnectionError::KeepaliveTimedOut { probes: 3 };
    assert!(c.h.events().contains(&(c.conn, Event::Closed(Some(error)))));
}

#[test]
fn a_fin_held_by_a_zero_window_is_probed_until_the_window_opens() {
    let mut c = Established::new(config());
    c.write(b"0123456789");
    let first = c.one();
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
    c.h.send(&ack);
    c.h.ep.shutdown(c.conn).unwrap();
    assert!(c.output().is_empty(), "the FIN waits for window");
    assert!(c.h.ep.poll_timeout().is_some(), "the persist timer runs");
    c.h.advance_to_timeout();
    let probe = c.one();
    // No octet to probe with: an old sequence number draws an ACK.
    assert_eq!(probe.seq, first.seq.wrapping_add(9));
    assert!(probe.payload.is_empty() && !probe.has(TcpFlags::FIN));
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(100);
    c.h.send(&ack);
    assert!(c.one().has(TcpFlags::FIN));
}

#[test]
fn persist_probing_gives_up_on_a_silent_peer_but_not_on_an_answering_one() {
    let mut c = Established::new(Config {
        max_retransmissions: 3,
        ..config()
    });
    c.write(b"0123456789");
    let first = c.one();
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
    c.h.send(&ack);
    c.write(b"more");
    assert!(c.output().is_empty(), "nothing fits a zero window");
    // A peer that answers every probe keeps the connection.
    for _ in 0..10 {
        c.h.advance_to_timeout();
        c.one();
        let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
        c.h.send(&ack);
    }
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
    // Then it goes silent.
    for _ in 0..3 {
        c.h.advance_to_timeout();
        c.one();
    }
    c.h.advance_to_timeout();
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
    let closed = c.h.events().into_iter().find_map(|(_, e)| match e {
        Event::Closed(Some(ConnectionError::TimedOut { retransmissions, .. })) => Some(retransmissions),
        _ => None,
    });
    assert_eq!(closed, Some(3));
}

#[test]
fn an_orphaned_connection_does_not_wait_for_ever_in_fin_wait_2() {
    let mut c = Established::new(config());
    c.h.ep.close(c.h.now, c.conn).unwrap();
    let fin = c.one();
    let ack = c.peer_segment(fin.seq.wrapping_add(1));
    c.h.send(&ack);
    assert_eq!(c.h.ep.state(c.conn), Some(State::FinWait2));
    assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(30));
    assert_eq!(c.h.ep.connection_count(), 0);
}

/// Sends data to a silent peer under `config` and runs the timers until
/// the connection ends: the time from the first send to the end, and the
/// retransmissions the error counts.
fn time_to_give_up(config: Config) -> (Duration, u32) {
    let mut c = Established::new(config);
    c.write(b"0123456789");
    c.one();
    let sent = c.h.now;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        c.h.advance_to_timeout();
        c.output();
        assert!(
            c.h.now - sent < Duration::from_secs(3600),
            "still trying after an hour"
        );
    }
    let closed = c.h.events().into_iter().find_map(|(_, e)| match e {
        Event::Closed(Some(ConnectionError::TimedOut { retransmissions, .. })) => Some(retransmissions),
        _ => None,
    });
    (c.h.now - sent, closed.expect("closed with a timeout error"))
}

#[test]
fn the_user_timeout_ends_a_connection_whose_data_goes_unacknowledged() {
    let base = Config {
        rto_initial: Duration::from_secs(1),
        rto_max: Duration::from_secs(60),
        ..config()
    };
    let (without, retransmissions) = time_to_give_up(base.clone());
    assert_eq!(retransmissions, base.max_retransmissions);
    assert!(without > Duration::from_secs(300), "{without:?}");
    let (with, retransmissions) = time_to_give_up(Config {
        user_timeout: Some(Duration::from_secs(20)),
        ..base
    });
    // Exactly at the limit, not at the next backed-off timeout after it.
    assert_eq!(with, Duration::from_secs(20));
    assert!(retransmissions < 6, "{retransmissions}");
}

#[test]
fn the_user_timeout_ends_a_link_outage_too() {
    let config = Config {
        rto_initial: Duration::from_secs(1),
        outage: scps_proto::config::OutagePolicy {
            after_timeouts: Some(2),
            probe_interval: Duration::from_secs(1),
        },
        user_timeout: Some(Duration::from_secs(30)),
        ..config()
    };
    let (waited, _) = time_to_give_up(config);
    assert_eq!(waited, Duration::from_secs(30));
}

#[test]
fn progress_restarts_the_user_timeout() {
    let mut c = Established::new(Config {
        rto_initial: Duration::from_secs(1),
        user_timeout: Some(Duration::from_secs(10)),
        ..config()
    });
    c.write(b"0123456789");
    let first = c.one();
    c.write(b"abcdefghij");
    c.output();
    let sent = c.h.now;
    // Timeouts and retransmissions for eight seconds, then the first ten
    // bytes are acknowledged.
    while c.h.ep.poll_timeout().unwrap() - sent < Duration::from_secs(8) {
        c.h.advance_to_timeout();
        c.output();
    }
    c.h.now = sent + Duration::from_secs(8);
    let ack = c.peer_segment(first.seq.wrapping_add(10));
    c.h.send(&ack);
    c.output();
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        c.h.advance_to_timeout();
        c.output();
    }
    assert!(
        c.h.now - sent > Duration::from_secs(10),
        "the rest had a user timeout of its own: closed {:?} after the first send",
        c.h.now - sent
    );
}

#[test]
fn the_user_timeout_ends_window_probing_of_a_silent_peer() {
    let mut c = Established::new(Config {
        user_timeout: Some(Duration::from_secs(20)),
        ..config()
    });
    c.write(b"0123456789");
    let first = c.one();
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
    c.h.send(&ack);
    c.write(b"more");
    assert!(c.output().is_empty(), "nothing fits a zero window");
    let stalled = c.h.now;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        c.h.advance_to_timeout();
        c.output();
        assert!(c.h.now - stalled < Duration::from_secs(600), "still probing");
    }
    // The first probe starts the clock: closed 20 s after it, long before
    // max_retransmissions backed-off probes would have.
    let first_probe = Config::default().persist_min.max(Config::default().rto_initial);
    assert!(
        c.h.now - stalled <= first_probe + Duration::from_secs(20),
        "closed {:?} after the window closed",
        c.h.now - stalled
    );
}

/// A destination-unreachable report quoting the connection's segment, as a
/// router sends it (ICMP type 3, `code`), from 10.0.0.254.
fn unreachable_report(quoting: &Seg, code: u8) -> Vec<u8> {
    use scps_node::checksum::Checksum;
    use scps_proto::wire::{IPPROTO_ICMP, IpRepr, build_tcp_packet};
    let mut quoted = Vec::new();
    build_tcp_packet(
        OURS.ip(),
        THEIRS.ip(),
        64,
        &quoting.repr(OURS.port(), THEIRS.port()),
        &mut quoted,
    )
    .unwrap();
    let mut message = vec![3, code, 0, 0, 0, 0, 0, 0];
    message.extend_from_slice(&quoted[..28]);
    let mut sum = Checksum::new();
    sum.add_bytes(&message);
    message[2..4].copy_from_slice(&sum.finish().to_be_bytes());
    let router = "10.0.0.254".parse().unwrap();
    let ip = IpRepr::new(router, OURS.ip(), IPPROTO_ICMP, message.len(), 64).unwrap();
    let mut packet = vec![0u8; ip.header_len()];
    ip.emit(&mut packet).unwrap();
    packet.extend_from_slice(&message);
    packet
}

#[test]
fn destination_unreachable_reports_that_keep_coming_end_the_connection() {
    let mut c = Established::new(Config {
        rto_initial: Duration::from_secs(1),
        ..config()
    });
    c.write(b"0123456789");
    let mut sent = c.one();
    let started = c.h.now;
    // Every copy draws a port-unreachable from the peer's host.
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        let report = unreachable_report(&sent, 3);
        c.h.ep.handle_packet(c.h.now, &report);
        c.h.advance_to_timeout();
        if let Some(again) = c.output().pop() {
            sent = again;
        }
        assert!(c.h.now - started < Duration::from_secs(60), "still trying");
    }
    let closed = c.h.events().into_iter().find_map(|(_, e)| match e {
        Event::Closed(Some(error)) => Some(error),
        _ => None,
    });
    assert_eq!(closed, Some(ConnectionError::Unreachable { timeouts: 3 }));
    assert_eq!(c.h.ep.stats().unreachable_reports, 3);
    // 1 + 2 + 4 s of timeouts, not fifteen of them.
    assert_eq!(c.h.now - started, Duration::from_secs(7));
}

#[test]
fn a_report_about_no_connection_or_another_message_is_dropped() {
    let mut c = Established::new(config());
    let stranger = Seg::new(TcpFlags::SYN, 5);
    let mut report = unreachable_report(&stranger, 1);
    // Quoting a port we have no connection on.
    report[20 + 8 + 20] ^= 0xff;
    let mut fixed = report.clone();
    fixed[22..24].fill(0);
    let mut sum = scps_node::checksum::Checksum::new();
    sum.add_bytes(&fixed[20..]);
    fixed[22..24].copy_from_slice(&sum.finish().to_be_bytes());
    c.h.ep.handle_packet(c.h.now, &fixed);
    assert_eq!(c.h.ep.stats().dropped("no_connection"), 1);
    // An echo request.
    let mut echo = unreachable_report(&stranger, 0);
    echo[20] = 8;
    echo[22..24].fill(0);
    let mut sum = scps_node::checksum::Checksum::new();
    sum.add_bytes(&echo[20..]);
    echo[22..24].copy_from_slice(&sum.finish().to_be_bytes());
    c.h.ep.handle_packet(c.h.now, &echo);
    assert_eq!(c.h.ep.stats().dropped("not_tcp"), 1);
    assert_eq!(c.h.ep.stats().unreachable_reports, 0);
    assert_eq!(c.h.ep.state(c.conn), Some(State::Established));
}

#[test]
fn timeouts_and_outages_are_events_for_the_logs() {
    let mut c = Established::new(Config {
        rto_initial: Duration::from_secs(1),
        outage: scps_proto::config::OutagePolicy {
            after_timeouts: Some(2),
            probe_interval: Duration::from_secs(1),
        },
        ..config()
    });
    c.write(b"0123456789");
    let first = c.one();
    for _ in 0..2 {
        c.h.advance_to_timeout();
        c.output();
    }
    let events = c.h.events();
    for event in [
        Event::Timeout { consecutive: 1 },
        Event::Timeout { consecutive: 2 },
        Event::OutageStarted { signalled: false },
    ] {
        assert!(events.contains(&(c.conn, event)), "{event:?} in {events:?}");
    }
    // The peer answers: the link is back.
    let ack = c.peer_segment(first.seq.wrapping_add(10));
    c.h.send(&ack);
    assert!(c.h.events().contains(&(c.conn, Event::OutageEnded)));
}

#[test]
fn a_report_quoting_a_sequence_number_not_in_flight_is_not_believed() {
    let mut c = Established::new(config());
    c.write(b"0123456789");
    let mut sent = c.one();
    // A forger who knows the addresses but not the sequence space.
    sent.seq = sent.seq.wrapping_add(1_000_000);
    let report = unreachable_report(&sent, 3);
    c.h.ep.handle_packet(c.h.now, &report);
    assert_eq!(c.h.ep.stats().dropped("icmp_out_of_window"), 1);
    assert_eq!(c.h.ep.stats().unreachable_reports, 0);
}

#[test]
fn a_peer_silent_while_data_moves_is_dead_after_dead_after() {
    let keepalive = scps_proto::config::Keepalive {
        idle: Duration::from_secs(600),
        interval: Duration::from_secs(60),
        probes: 10,
    };
    let mut c = Established::new(Config {
        keepalive: Some(keepalive),
        dead_after: Some(Duration::from_secs(60)),
        ..config()
    });
    let data = c.peer_segment(c.snd_nxt).payload(b"upload, part one");
    c.h.send(&data);
    c.rcv_nxt += 16;
    assert_eq!(c.h.read(c.conn), b"upload, part one");
    // The delayed ACK, then silence: probes from 30 s, a sixth of 60 s
    // apart.
    let mut waited = c.h.advance_to_timeout();
    c.one();
    waited += c.h.advance_to_timeout();
    assert_eq!(waited, Duration::from_secs(30), "the first probe");
    c.one();
    // The sender answers: it merely paused. Keepalive's idle time again.
    let ack = c.peer_segment(c.snd_nxt);
    c.h.send(&ack);
    assert_eq!(c.h.advance_to_timeout(), Duration::from_secs(600));
    c.one();
    // Data again, then the sender dies.
    let data = c.peer_segment(c.snd_nxt).payload(b"part two");
    c.h.send(&data);
    c.rcv_nxt += 8;
    let mut waited = Duration::ZERO;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        waited += c.h.advance_to_timeout();
        c.output();
        assert!(waited <= Duration::from_secs(60), "still open after {waited:?}");
    }
    assert_eq!(waited, Duration::from_secs(60));
    let error = ConnectionError::KeepaliveTimedOut { probes: 3 };
    assert!(c.h.events().contains(&(c.conn, Event::Closed(Some(error)))));
}

#[test]
fn a_peer_silent_while_our_data_awaits_its_ack_is_dead_after_dead_after() {
    let mut c = Established::new(Config {
        dead_after: Some(Duration::from_secs(60)),
        ..config()
    });
    c.write(b"0123456789");
    let first = c.one();
    // An ACK of part of it, with more outstanding; then nothing more.
    let ack = c.peer_segment(first.seq.wrapping_add(4));
    c.h.send(&ack);
    let mut waited = Duration::ZERO;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        waited += c.h.advance_to_timeout();
        c.output();
        assert!(waited <= Duration::from_secs(60), "still open after {waited:?}");
    }
    assert_eq!(waited, Duration::from_secs(60), "dead 60 s after the last ACK");
    assert!(c.h.events().iter().any(|(conn, event)| *conn == c.conn
        && matches!(event, Event::Closed(Some(ConnectionError::TimedOut { .. })))));
}

#[test]
fn a_keepalive_shorter_than_dead_after_still_rules_while_data_moves() {
    let keepalive = scps_proto::config::Keepalive {
        idle: Duration::from_secs(1),
        interval: Duration::from_secs(1),
        probes: 2,
    };
    let mut c = Established::new(Config {
        keepalive: Some(keepalive),
        dead_after: Some(Duration::from_secs(60)),
        delayed_ack: None,
        ..config()
    });
    let data = c.peer_segment(c.snd_nxt).payload(b"data");
    c.h.send(&data);
    c.rcv_nxt += 4;
    let mut waited = Duration::ZERO;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        waited += c.h.advance_to_timeout();
        c.output();
        assert!(waited <= Duration::from_secs(3), "still open after {waited:?}");
    }
    assert_eq!(waited, Duration::from_secs(3), "keepalive's 1 s and two probes");
}

/// Steps the connection's timers until it closes, at most `limit` on; how
/// long that took.
fn time_to_close(c: &mut Established, limit: Duration) -> Duration {
    let mut waited = Duration::ZERO;
    while c.h.ep.state(c.conn) != Some(State::Closed) {
        waited += c.h.advance_to_timeout();
        c.output();
        assert!(waited <= limit, "still open after {waited:?}");
    }
    waited
}

#[test]
fn a_peer_that_reopens_its_window_and_dies_is_dead_after_dead_after() {
    let mut c = Established::new(Config {
        dead_after: Some(Duration::from_secs(60)),
        ..config()
    });
    c.write(b"0123456789");
    let sent = c.one();
    // It takes everything and has no room for more, as a receiver whose
    // application reads slowly does...
    let full = c.peer_segment(sent.seq.wrapping_add(10)).window(0);
    c.h.send(&full);
    c.write(b"more data the peer has no room for");
    c.h.now += Duration::from_secs(1);
    // ...then its window opens (nothing of ours outstanding), our data
    // goes, and the peer is gone.
    let update = c.peer_segment(sent.seq.wrapping_add(10));
    c.h.send(&update);
    assert!(!c.output().is_empty(), "the waiting data goes");
    let waited = time_to_close(&mut c, Duration::from_secs(60));
    assert_eq!(waited, Duration::from_secs(60), "dead 60 s after our data went");
}

#[test]
fn data_written_after_a_long_quiet_waits_dead_after_from_the_write() {
    let mut c = Established::new(Config {
        dead_after: Some(Duration::from_secs(60)),
        ..config()
    });
    c.write(b"0123456789");
    let sent = c.one();
    let ack = c.peer_segment(sent.seq.wrapping_add(10));
    c.h.send(&ack);
    // Ten minutes of nothing to say, the peer answering any probe; then
    // data, and the peer is gone.
    let quiet_until = c.h.now + Duration::from_secs(600);
    while c.h.ep.poll_timeout().is_some_and(|at| at <= quiet_until) {
        c.h.advance_to_timeout();
        for _probe in c.output() {
            let answer = c.peer_segment(sent.seq.wrapping_add(10));
            c.h.send(&answer);
        }
    }
    c.h.now = quiet_until;
    c.write(b"after the quiet");
    c.one();
    let waited = time_to_close(&mut c, Duration::from_secs(60));
    assert_eq!(
        waited,
        Duration::from_secs(60),
        "dead 60 s after the write, not at once"
    );
}
