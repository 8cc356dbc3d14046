//! Moving data, segment by segment: segmentation, flow control and window
//! scaling (RFC 9293 3.8.6, RFC 7323 2), delayed ACKs (RFC 1122 4.2.3.2,
//! RFC 5681 4.2), Nagle (RFC 9293 3.7.4), SACK generation (RFC 2018),
//! zero-window probing (RFC 9293 3.8.6.1), timestamps and PAWS (RFC 7323).

mod harness;

use std::time::Duration;

use harness::*;
use scps_proto::wire::TcpFlags;
use scps_proto::{Config, Event, StreamError};

#[test]
fn writes_are_cut_into_full_segments_with_psh_on_the_last() {
    let mut c = Established::new(Config {
        initial_window_segments: 10,
        ..Config::default()
    });
    let data = pattern(4000);
    assert_eq!(c.write(&data), 4000);
    let out = c.output();
    let lens: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(lens, [1448, 1448, 1104], "MSS 1460 less 12 bytes of timestamps");
    assert!(out[..2].iter().all(|s| !s.has(TcpFlags::PSH)));
    assert!(out[2].has(TcpFlags::PSH));
    let joined: Vec<u8> = out.iter().flat_map(|s| s.payload.clone()).collect();
    assert_eq!(joined, data);
    assert_eq!(out[1].seq, c.snd_nxt.wrapping_add(1448));
}

#[test]
fn the_initial_window_limits_the_first_flight() {
    let mut c = Established::new(Config {
        initial_window_segments: 3,
        ..Config::default()
    });
    c.write(&pattern(10 * 1448));
    assert_eq!(c.output().len(), 3);
    // One ACK for two segments grows the window by two (RFC 3465, L = 2).
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(2 * 1448));
    c.h.send(&ack);
    assert_eq!(c.output().len(), 4, "2 acked out, 1 still in flight, window 5");
}

#[test]
fn the_peer_window_limits_sending_and_scaling_applies() {
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 100,
            ..Config::default()
        },
        PeerOffer {
            wscale: Some(2),
            window: 1000,
            ..PeerOffer::default()
        },
    );
    c.write(&pattern(20_000));
    // The SYN-ACK's window is not scaled: 1000 bytes.
    let out = c.output();
    assert_eq!(out.iter().map(|s| s.payload.len()).sum::<usize>(), 1000);
    // Now a scaled window: 1500 << 2 = 6000 bytes beyond the ACK: four
    // full segments; the 208 bytes left would be a silly window (less than
    // half the largest window offered) and wait.
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(1000)).window(1500);
    c.h.send(&ack);
    let out = c.output();
    assert_eq!(out.iter().map(|s| s.payload.len()).collect::<Vec<_>>(), [1448; 4]);
}

#[test]
fn receiving_in_order_acks_every_second_segment_or_after_the_delay() {
    let mut c = Established::new(Config {
        delayed_ack: Some(Duration::from_millis(200)),
        ..Config::default()
    });
    let seg = c.peer_segment(c.snd_nxt).payload(&pattern(100));
    c.h.send(&seg);
    c.output()
        .is_empty()
        .then_some(())
        .expect("first segment: ACK delayed");
    c.rcv_nxt += 100;
    let seg = c.peer_segment(c.snd_nxt).payload(&pattern(100));
    c.h.send(&seg);
    c.rcv_nxt += 100;
    let ack = c.one();
    assert_eq!(ack.ack, c.rcv_nxt, "second segment: ACK at once");
    let seg = c.peer_segment(c.snd_nxt).payload(b"x");
    c.h.send(&seg);
    c.rcv_nxt += 1;
    assert!(c.output().is_empty());
    assert_eq!(c.h.advance_to_timeout(), Duration::from_millis(200));
    assert_eq!(c.one().ack, c.rcv_nxt, "ACK after the delay");
    let mut expected = pattern(100);
    expected.extend(pattern(100));
    expected.push(b'x');
    assert_eq!(c.h.read(c.conn), expected);
}

#[test]
fn out_of_order_data_is_sacked_at_once_and_the_hole_filling_acked_at_once() {
    let mut c = Established::new(Config::default());
    let base = c.rcv_nxt;
    let seg = c.peer_segment(c.snd_nxt);
    // Segments 2 and 4 of four 100-byte segments arrive first.
    let data = pattern(400);
    c.h.send(&Seg {
        seq: base + 100,
        payload: data[100..200].to_vec(),
        ..seg.clone()
    });
    let dup = c.one();
    assert_eq!(dup.ack, base, "duplicate ACK");
    assert_eq!(dup.sack_blocks(), [(base + 100, base + 200)]);
    c.h.send(&Seg {
        seq: base + 300,
        payload: data[300..].to_vec(),
        ..seg.clone()
    });
    let dup = c.one();
    assert_eq!(
        dup.sack_blocks(),
        [(base + 300, base + 400), (base + 100, base + 200)],
        "latest block first"
    );
    c.h.send(&Seg {
        seq: base,
        payload: data[..100].to_vec(),
        ..seg.clone()
    });
    let ack = c.one();
    assert_eq!(ack.ack, base + 200);
    assert_eq!(ack.sack_blocks(), [(base + 300, base + 400)]);
    c.h.send(&Seg {
        seq: base + 200,
        payload: data[200..300].to_vec(),
        ..seg
    });
    let ack = c.one();
    assert_eq!(ack.ack, base + 400);
    assert!(ack.sack_blocks().is_empty());
    assert_eq!(c.h.read(c.conn), data);
}

#[test]
fn duplicate_data_is_acknowledged_and_not_delivered_twice() {
    let mut c = Established::new(Config::default());
    let seg = c.peer_segment(c.snd_nxt).payload(b"abc");
    c.h.send(&seg);
    c.h.send(&seg);
    let acks = c.output();
    assert_eq!(acks.last().unwrap().ack, c.rcv_nxt + 3);
    assert_eq!(c.h.read(c.conn), b"abc");
}

#[test]
fn a_full_receive_buffer_closes_the_window_and_reading_reopens_it() {
    let mut c = Established::new(Config {
        recv_buffer: 4000,
        ..Config::default()
    });
    let data = pattern(4000);
    for chunk in data.chunks(1000) {
        let seg = c.peer_segment(c.snd_nxt).payload(chunk);
        c.h.send(&seg);
        c.rcv_nxt += 1000;
    }
    let acks = c.output();
    let last = acks.last().unwrap();
    assert_eq!((last.ack, last.window), (c.rcv_nxt, 0), "window closed");
    // More data is refused for lack of room, and acknowledged.
    let seg = c.peer_segment(c.snd_nxt).payload(b"zzz");
    c.h.send(&seg);
    let ack = c.one();
    assert_eq!((ack.ack, ack.window), (c.rcv_nxt, 0));
    let mut buf = vec![0u8; 3000];
    assert_eq!(c.h.ep.recv(c.conn, &mut buf), Ok(3000));
    let update = c.one();
    assert_eq!(
        (update.ack, update.window),
        (c.rcv_nxt, 3000),
        "window update after the read"
    );
    assert_eq!(
        c.stats().segments_rejected,
        0,
        "a zero-window segment at RCV.NXT is acceptable"
    );
}

#[test]
fn zero_window_is_probed_with_backoff_and_sending_resumes_when_it_opens() {
    let mut c = Established::new(Config {
        persist_min: Duration::from_secs(1),
        persist_max: Duration::from_secs(60),
        rto_initial: Duration::from_secs(1),
        ..Config::default()
    });
    c.write(b"0123456789");
    let first = c.one();
    // The peer takes the data but has no more room.
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
    c.h.send(&ack);
    c.write(b"abcdef");
    assert!(c.output().is_empty(), "nothing fits a zero window");
    let mut waits = Vec::new();
    for _ in 0..3 {
        waits.push(c.h.advance_to_timeout());
        let probe = c.one();
        assert_eq!(probe.payload, b"a", "one octet of new data, again and again");
        assert_eq!(probe.seq, first.seq.wrapping_add(10));
        let ack = c.peer_segment(first.seq.wrapping_add(10)).window(0);
        c.h.send(&ack);
    }
    assert!(
        waits[0] >= Duration::from_secs(1) && waits[1] == 2 * waits[0] && waits[2] == 2 * waits[1],
        "persist backoff {waits:?}"
    );
    // The window opens without the probe byte having been taken.
    let ack = c.peer_segment(first.seq.wrapping_add(10)).window(100);
    c.h.send(&ack);
    let again = c.one();
    assert_eq!(
        (again.seq, again.payload.as_slice()),
        (first.seq.wrapping_add(10), &b"a"[..]),
        "the probe byte first"
    );
    // Nagle holds the rest behind that small segment until it is acked.
    let ack = c.peer_segment(first.seq.wrapping_add(11)).window(100);
    c.h.send(&ack);
    let rest = c.one();
    assert_eq!(
        (rest.seq, rest.payload.as_slice()),
        (first.seq.wrapping_add(11), &b"bcdef"[..])
    );
}

#[test]
fn nagle_holds_small_segments_while_data_is_unacknowledged() {
    let mut c = Established::new(Config::default());
    c.write(b"a");
    assert_eq!(c.one().payload, b"a");
    c.write(b"b");
    c.write(b"c");
    assert!(c.output().is_empty(), "held back by Nagle");
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(1));
    c.h.send(&ack);
    assert_eq!(c.one().payload, b"bc", "coalesced");

    let mut c = Established::new(Config {
        nagle: false,
        ..Config::default()
    });
    c.write(b"a");
    assert_eq!(c.one().payload, b"a");
    c.write(b"b");
    assert_eq!(c.one().payload, b"b", "without Nagle each write goes at once");
}

#[test]
fn turning_nagle_off_releases_what_it_held() {
    let mut c = Established::new(Config::default());
    c.write(b"a");
    assert_eq!(c.one().payload, b"a");
    c.write(b"b");
    assert!(c.output().is_empty(), "held back by Nagle");
    c.h.ep.set_nagle(c.conn, false).unwrap();
    assert_eq!(c.one().payload, b"b", "sent once Nagle is off");
    c.write(b"c");
    assert_eq!(c.one().payload, b"c", "and each later write at once");
}

#[test]
fn send_buffer_back_pressure_and_writable_event() {
    let mut c = Established::new(Config {
        send_buffer: 3000,
        ..Config::default()
    });
    assert_eq!(c.write(&pattern(5000)), 3000, "only what fits is taken");
    assert_eq!(c.h.ep.send(c.conn, b"more"), Err(StreamError::WouldBlock));
    let out = c.output();
    c.h.events();
    let acked = out.iter().map(|s| s.payload.len() as u32).sum::<u32>();
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(acked));
    c.h.send(&ack);
    assert!(c.h.events().contains(&(c.conn, Event::Writable)));
    assert_eq!(c.h.ep.connection(c.conn).unwrap().send_capacity(), 3000);
}

#[test]
fn paws_drops_old_timestamps_and_segments_without_them() {
    let mut c = Established::new(Config::default());
    c.peer_ts = 1000;
    let seg = c.peer_segment(c.snd_nxt).payload(b"new");
    c.h.send(&seg);
    c.rcv_nxt += 3;
    // An old duplicate with an earlier timestamp is refused, acknowledged.
    let old = Seg {
        seq: c.rcv_nxt,
        ..seg.clone()
    }
    .ts(5, 0)
    .payload(b"old");
    c.h.send(&old);
    // A segment without timestamps is refused too (RFC 7323 3.2).
    let bare = Seg::ack(c.rcv_nxt, c.snd_nxt).payload(b"bare");
    c.h.send(&bare);
    assert_eq!(c.h.read(c.conn), b"new");
    assert_eq!(c.stats().segments_rejected, 2);
}

#[test]
fn timestamps_give_rtt_samples() {
    let mut c = Established::new(Config::default());
    // The scripted handshake took no time: its sample is 0 ms.
    assert_eq!(c.stats().srtt, Some(Duration::ZERO));
    c.write(b"ping");
    c.one();
    c.h.advance(Duration::from_millis(250));
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(4));
    c.h.send(&ack);
    let srtt = c.stats().srtt.expect("an RTT sample");
    // RFC 6298 2.3: SRTT <- 7/8 SRTT + 1/8 R'.
    assert_eq!(srtt, Duration::from_millis(250) / 8);
    assert_eq!(c.stats().min_rtt, Some(Duration::ZERO));
}

#[test]
fn sequence_numbers_wrap_around() {
    // The peer starts just below 2^32; our side receives across the wrap.
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    let peer_iss = u32::MAX - 100;
    h.send(&Seg::new(TcpFlags::SYN, peer_iss).mss(1460));
    let syn_ack = h.one();
    h.send(&Seg::ack(peer_iss.wrapping_add(1), syn_ack.seq.wrapping_add(1)));
    let conn = h.ep.accept(OURS).unwrap();
    let data = pattern(3000);
    let mut seq = peer_iss.wrapping_add(1);
    for chunk in data.chunks(1000) {
        h.send(&Seg::ack(seq, syn_ack.seq.wrapping_add(1)).payload(chunk));
        seq = seq.wrapping_add(1000);
    }
    let acks = h.output();
    assert_eq!(acks.last().unwrap().ack, seq);
    assert_eq!(h.read(conn), data);
}

#[test]
fn data_queued_before_the_handshake_goes_after_it() {
    let mut h = Harness::new(Config::default());
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    assert_eq!(h.ep.send(conn, b"early"), Ok(5));
    let syn = h.one();
    assert!(syn.payload.is_empty(), "no data in the SYN");
    h.send(
        &Seg::new(TcpFlags::SYN, PEER_ISS)
            .with_ack(syn.seq.wrapping_add(1))
            .mss(1460),
    );
    let data = h.one();
    assert_eq!(data.payload, b"early");
    assert_eq!(data.ack, PEER_ISS + 1, "the data carries the handshake's ACK");
}

#[test]
fn data_beyond_the_advertised_window_is_trimmed_even_with_buffer_room() {
    let mut c = Established::new(Config {
        recv_buffer: 4000,
        ..Config::default()
    });
    for chunk in pattern(4000).chunks(1000) {
        let seg = c.peer_segment(c.snd_nxt).payload(chunk);
        c.h.send(&seg);
        c.rcv_nxt += 1000;
    }
    assert_eq!(c.output().pop().unwrap().window, 0);
    // A read too small to reopen the window (receiver SWS avoidance)...
    let mut buf = [0u8; 100];
    assert_eq!(c.h.ep.recv(c.conn, &mut buf), Ok(100));
    assert!(c.output().is_empty());
    // ...then a one-byte zero-window probe (the BSD and Windows kind): the
    // buffer has room, but the byte lies beyond the window offered.
    let probe = c.peer_segment(c.snd_nxt).payload(b"p");
    c.h.send(&probe);
    let ack = c.one();
    assert_eq!(
        (ack.ack, ack.window),
        (c.rcv_nxt, 0),
        "refused and answered at once"
    );
    assert_eq!(c.h.read(c.conn), pattern(4000)[100..]);
}

#[test]
fn a_fin_just_beyond_a_filled_window_waits() {
    let mut c = Established::new(Config {
        recv_buffer: 4000,
        ..Config::default()
    });
    let seg = c
        .peer_segment(c.snd_nxt)
        .payload(&pattern(4000))
        .flag(TcpFlags::FIN);
    c.h.send(&seg);
    let ack = c.one();
    assert_eq!(
        (ack.ack, ack.window),
        (c.rcv_nxt + 4000, 0),
        "data taken, FIN not"
    );
    assert_eq!(c.h.ep.state(c.conn), Some(scps_proto::State::Established));
    assert_eq!(c.h.read(c.conn), pattern(4000));
    assert!(!c.h.ep.connection(c.conn).unwrap().peer_closed());
}

#[test]
fn a_segment_claiming_the_syns_place_has_no_data_there() {
    let mut c = Established::new(Config::default());
    // SEQ = IRS without SYN: the first byte would be the SYN's.
    let seg = Seg {
        seq: c.rcv_nxt - 1,
        ..c.peer_segment(c.snd_nxt).payload(b"xyz")
    };
    c.h.send(&seg);
    assert_eq!(c.h.read(c.conn), b"yz");
}

#[test]
fn our_fin_is_not_sent_beyond_the_peers_window() {
    let mut c = Established::with_offer(
        Config::default(),
        PeerOffer {
            window: 10,
            ..PeerOffer::default()
        },
    );
    c.write(b"0123456789");
    c.h.ep.shutdown(c.conn).unwrap();
    let data = c.one();
    assert_eq!(data.payload, b"0123456789");
    assert!(!data.has(TcpFlags::FIN), "the FIN does not fit a 10-byte window");
    let ack = c.peer_segment(data.seq.wrapping_add(10)).window(10);
    c.h.send(&ack);
    let fin = c.one();
    assert!(fin.has(TcpFlags::FIN) && fin.payload.is_empty());
}
