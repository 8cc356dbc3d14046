//! Records, segment by segment (docs/spec/scps-tp-options.md, "Record
//! boundary, kind 22"): segments are cut at record ends, the segment
//! ending a record carries the option (first sent or resent), and the
//! reader stops at each boundary, wherever it arrived.

mod harness;

use harness::*;
use scps_proto::wire::TcpFlags;
use scps_proto::{Config, StreamError};

fn config() -> Config {
    Config {
        initial_window_segments: 10,
        nagle: true,
        ..Config::default()
    }
}

#[test]
fn segments_are_cut_at_record_ends_which_carry_the_option() {
    let mut c = Established::new(config());
    let data = pattern(5000);
    // Records of 100, 2000 and 1448 bytes, then 1452 bytes not yet ended.
    for range in [0..100, 100..2100, 2100..3548] {
        assert_eq!(c.h.ep.send_record(c.conn, &data[range.clone()]), Ok(range.len()));
    }
    c.write(&data[3548..]);
    let out = c.output();
    let lens: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(
        lens,
        [100, 1448, 552, 1448, 1448],
        "cut at 100, 2100 and 3548; small record ends are not held by Nagle, \
         the 4 bytes after the last record are"
    );
    let marked: Vec<bool> = out.iter().map(|s| s.options.record_boundary).collect();
    assert_eq!(marked, [true, false, true, true, false]);
    assert!(out[0].has(TcpFlags::PSH) && out[2].has(TcpFlags::PSH));
    let joined: Vec<u8> = out.iter().flat_map(|s| s.payload.clone()).collect();
    assert_eq!(joined, data[..4996]);

    // The record's last segment is lost: its retransmission carries the
    // boundary again.
    c.h.advance_to_timeout();
    let again = c.output();
    assert_eq!(again[0].seq, out[0].seq, "the first segment is resent on timeout");
    assert_eq!(again[0].payload.len(), 100);
    assert!(again[0].options.record_boundary);
}

#[test]
fn a_record_end_needs_room_for_the_option_without_timestamps() {
    let mut c = Established::with_offer(
        config(),
        PeerOffer {
            timestamps: false,
            ..PeerOffer::default()
        },
    );
    // A record of exactly one MSS (1460 bytes): the option's padded word
    // does not fit beside it, so its last 4 bytes go on their own.
    assert_eq!(c.h.ep.send_record(c.conn, &pattern(1460)), Ok(1460));
    let out = c.output();
    let lens: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(lens, [1456, 4]);
    assert!(!out[0].options.record_boundary && out[1].options.record_boundary);
}

#[test]
fn the_reader_stops_at_boundaries_that_arrived_out_of_order() {
    let mut c = Established::new(config());
    let data = pattern(300);
    let ack = c.snd_nxt;
    // The peer's records: 0..100 (lost at first), 100..250 and 250..300
    // (in one segment each, the second record's split in two).
    let mut later = c.peer_segment(ack).payload(&data[100..200]);
    later.seq = c.rcv_nxt.wrapping_add(100);
    let mut end = c.peer_segment(ack).payload(&data[200..250]);
    end.seq = c.rcv_nxt.wrapping_add(200);
    end.options.record_boundary = true;
    let mut last = c.peer_segment(ack).payload(&data[250..300]);
    last.seq = c.rcv_nxt.wrapping_add(250);
    last.options.record_boundary = true;
    for seg in [&last, &end, &later] {
        c.h.send(seg);
    }
    let mut buf = [0u8; 1000];
    assert_eq!(c.h.ep.recv_record(c.conn, &mut buf), Err(StreamError::WouldBlock));
    let mut first = c.peer_segment(ack).payload(&data[..100]);
    first.options.record_boundary = true;
    c.h.send(&first);
    let mut records = Vec::new();
    while let Ok((n, end_of_record)) = c.h.ep.recv_record(c.conn, &mut buf[..120]) {
        records.push((buf[..n].to_vec(), end_of_record));
    }
    assert_eq!(
        records,
        [
            (data[..100].to_vec(), true),
            (data[100..220].to_vec(), false),
            (data[220..250].to_vec(), true),
            (data[250..].to_vec(), true),
        ]
    );
}

#[test]
fn ending_a_record_needs_an_open_sending_side() {
    let mut c = Established::new(config());
    assert_eq!(
        c.h.ep.end_record(c.conn),
        Ok(()),
        "nothing written: nothing to end"
    );
    assert!(c.output().is_empty());
    c.h.ep.shutdown(c.conn).unwrap();
    assert_eq!(c.h.ep.end_record(c.conn), Err(StreamError::SendClosed));
}
