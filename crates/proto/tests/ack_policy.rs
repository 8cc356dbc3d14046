//! The adaptive ACK policy, segment by segment: on a narrow return link
//! in-order data is acknowledged every k segments, while what is news to
//! the sender (a new hole, a filled hole, a FIN) is acknowledged at once,
//! data that only extends what is held past a hole waits like in-order
//! data, and the delayed-ACK timer sends the ACK when the data stops.

mod harness;

use std::time::Duration;

use harness::*;
use scps_proto::Config;
use scps_proto::wire::TcpFlags;

const SEGMENT: usize = 1460;
/// 10 segments a second: 1460-byte payloads at about 117 kbit/s.
const SPACING: Duration = Duration::from_millis(100);

fn receiver() -> Established {
    Established::new(Config {
        ack_adaptive: true,
        ack_return_rate_bps: Some(2400),
        ..Config::default()
    })
}

/// The peer sends one full segment at stream offset `offset` (from its
/// first data byte); returns the ACKs we sent for it.
fn data_at(c: &mut Established, offset: u32, flags: TcpFlags) -> Vec<Seg> {
    c.h.advance(SPACING);
    let mut seg = c.peer_segment(c.snd_nxt).payload(&pattern(SEGMENT)).flag(flags);
    seg.seq = PEER_ISS + 1 + offset;
    c.h.send(&seg);
    c.output()
}

#[test]
fn in_order_data_is_acknowledged_every_k_segments_and_news_at_once() {
    let mut c = receiver();
    let mut offset = 0;
    // The first segments, before a rate is measured: every 2.
    for _ in 0..4 {
        data_at(&mut c, offset, TcpFlags::empty());
        offset += SEGMENT as u32;
    }
    // 10 segments/s, ACKs counted at 80 bytes, at most a quarter of
    // 2400 bit/s: one ACK per 11 segments.
    let acks: usize = (0..22)
        .map(|_| {
            let out = data_at(&mut c, offset, TcpFlags::empty());
            offset += SEGMENT as u32;
            out.len()
        })
        .sum();
    assert_eq!(c.stats().ack_every, 11);
    assert_eq!(acks, 2, "22 in-order segments, one ACK per 11");
    // Whatever is still unacknowledged goes when the data stops.
    c.h.advance(Duration::from_millis(300));
    let pending = c.output();
    assert!(pending.len() <= 1, "{pending:?}");
    let acked_to = PEER_ISS + 1 + offset;
    if let Some(ack) = pending.first() {
        assert_eq!(ack.ack, acked_to);
    }

    // A hole: the first segment past it is acknowledged at once, with SACK.
    let hole = offset;
    offset += SEGMENT as u32;
    let out = data_at(&mut c, offset, TcpFlags::empty());
    assert_eq!(out.len(), 1, "a new hole is news");
    assert_eq!(out[0].ack, acked_to);
    assert_eq!(out[0].sack_blocks().len(), 1);
    // More data past the hole only extends what is held: it waits.
    offset += SEGMENT as u32;
    assert!(data_at(&mut c, offset, TcpFlags::empty()).is_empty());
    // The hole filled: at once.
    let out = data_at(&mut c, hole, TcpFlags::empty());
    assert_eq!(out.len(), 1, "a filled hole is news");
    assert_eq!(out[0].ack, PEER_ISS + 1 + offset + SEGMENT as u32);
    offset += SEGMENT as u32;

    // In-order data, then silence: the delayed-ACK timer answers, 200 ms
    // after the last segment.
    assert!(data_at(&mut c, offset, TcpFlags::empty()).is_empty());
    offset += SEGMENT as u32;
    c.h.advance(Duration::from_millis(150));
    assert!(c.output().is_empty(), "the timer restarted with the segment");
    c.h.advance(Duration::from_millis(50));
    let out = c.output();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, PEER_ISS + 1 + offset);

    // A FIN is acknowledged at once.
    let out = data_at(&mut c, offset, TcpFlags::FIN);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, PEER_ISS + 1 + offset + SEGMENT as u32 + 1);
}
