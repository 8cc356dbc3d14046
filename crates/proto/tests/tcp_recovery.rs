//! Loss recovery, segment by segment: the retransmission timer (RFC 6298),
//! fast retransmit and NewReno (RFC 5681 3.2, RFC 6582), limited transmit
//! (RFC 3042), SACK-based recovery (RFC 6675).

mod harness;

use std::time::Duration;

use harness::*;
use scps_proto::{Config, ConnectionError, Event, State};

const MSS: u32 = 1448;

fn config() -> Config {
    Config {
        initial_window_segments: 10,
        rto_initial: Duration::from_secs(1),
        rto_min: Duration::from_secs(1),
        ..Config::default()
    }
}

/// Sequence number of our `i`-th full segment.
fn seg_seq(c: &Established, i: u32) -> u32 {
    c.snd_nxt.wrapping_add(i * MSS)
}

/// The peer acknowledges up to our segment `i` (exclusive), with SACK
/// blocks given as segment index ranges.
fn ack_upto(c: &mut Established, i: u32, sacked: &[(u32, u32)]) {
    let blocks: Vec<(u32, u32)> = sacked
        .iter()
        .map(|&(a, b)| (seg_seq(c, a), seg_seq(c, b)))
        .collect();
    let ack = c.peer_segment(seg_seq(c, i)).sack(&blocks);
    c.h.send(&ack);
}

fn seqs(out: &[Seg]) -> Vec<u32> {
    out.iter().map(|s| s.seq).collect()
}

#[test]
fn timeout_retransmits_with_backoff_and_gives_up_with_a_clear_error() {
    let mut c = Established::new(Config {
        max_retransmissions: 3,
        ..config()
    });
    c.write(b"lost forever");
    let original = c.one();
    let mut waits = Vec::new();
    for _ in 0..3 {
        waits.push(c.h.advance_to_timeout());
        let again = c.one();
        assert_eq!((again.seq, &again.payload), (original.seq, &original.payload));
    }
    assert_eq!(waits, [1, 2, 4].map(Duration::from_secs));
    c.h.advance_to_timeout();
    assert!(c.output().is_empty());
    assert_eq!(c.h.ep.state(c.conn), Some(State::Closed));
    let error = ConnectionError::TimedOut {
        retransmissions: 3,
        waited: Duration::from_secs(7 + 8),
    };
    assert!(c.h.events().contains(&(c.conn, Event::Closed(Some(error)))));
    assert_eq!(
        error.to_string(),
        "connection timed out: no acknowledgment after 3 retransmissions over 15s"
    );
}

#[test]
fn after_a_timeout_the_window_restarts_at_one_segment() {
    let mut c = Established::new(config());
    c.write(&pattern(10 * MSS as usize));
    assert_eq!(c.output().len(), 10);
    c.h.advance_to_timeout();
    let out = c.output();
    assert_eq!(seqs(&out), [seg_seq(&c, 0)], "cwnd is one segment");
    assert_eq!(c.stats().cwnd, u64::from(MSS));
    assert_eq!(c.stats().ssthresh, u64::from(5 * MSS), "half the flight");
    ack_upto(&mut c, 1, &[]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 1), seg_seq(&c, 2)],
        "slow start: two more"
    );
}

#[test]
fn three_duplicate_acks_trigger_fast_retransmit_after_limited_transmit() {
    let mut c = Established::with_offer(
        config(),
        PeerOffer {
            sack: false,
            ..PeerOffer::default()
        },
    );
    c.write(&pattern(20 * MSS as usize));
    assert_eq!(c.output().len(), 10);
    ack_upto(&mut c, 1, &[]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 10), seg_seq(&c, 11)],
        "slow start"
    );
    // Segment 1 is lost; each later segment brings a duplicate ACK.
    ack_upto(&mut c, 1, &[]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 12)],
        "limited transmit, first dup ACK"
    );
    ack_upto(&mut c, 1, &[]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 13)],
        "limited transmit, second dup ACK"
    );
    ack_upto(&mut c, 1, &[]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 1)],
        "fast retransmit on the third"
    );
    let stats = c.stats();
    assert_eq!(stats.fast_recoveries, 1);
    assert_eq!(
        stats.ssthresh,
        u64::from(13 * MSS / 2),
        "half of the 13 segments in flight"
    );
    assert_eq!(stats.cwnd, stats.ssthresh);
    // Further duplicate ACKs inflate the window until new data may go.
    let mut sent = Vec::new();
    for _ in 0..6 {
        ack_upto(&mut c, 1, &[]);
        sent.extend(seqs(&c.output()));
    }
    assert_eq!(
        sent,
        [seg_seq(&c, 14), seg_seq(&c, 15)],
        "one new segment per segment that left"
    );
}

#[test]
fn newreno_partial_ack_resends_the_next_hole_at_once() {
    let mut c = Established::with_offer(
        config(),
        PeerOffer {
            sack: false,
            ..PeerOffer::default()
        },
    );
    c.write(&pattern(10 * MSS as usize));
    assert_eq!(c.output().len(), 10);
    // Segments 2 and 5 are lost.
    ack_upto(&mut c, 2, &[]);
    for _ in 0..3 {
        ack_upto(&mut c, 2, &[]);
    }
    assert_eq!(seqs(&c.output()), [seg_seq(&c, 2)]);
    // The retransmission fills the first hole: a partial ACK up to 5.
    ack_upto(&mut c, 5, &[]);
    assert_eq!(seqs(&c.output()), [seg_seq(&c, 5)], "RFC 6582 step 5");
    ack_upto(&mut c, 10, &[]);
    let stats = c.stats();
    assert_eq!(stats.fast_recoveries, 1, "one recovery for both losses");
    assert!(stats.cwnd <= stats.ssthresh);
    assert_eq!(stats.bytes_retransmitted, u64::from(2 * MSS));
}

#[test]
fn sack_recovery_repairs_several_holes_in_one_round_trip() {
    let mut c = Established::new(config());
    c.write(&pattern(10 * MSS as usize));
    assert_eq!(c.output().len(), 10);
    // Segments 1 and 4 are lost.
    ack_upto(&mut c, 1, &[(2, 3)]);
    ack_upto(&mut c, 1, &[(2, 4)]);
    assert!(
        c.output().is_empty(),
        "two SACKed segments are not yet evidence of loss"
    );
    ack_upto(&mut c, 1, &[(5, 6), (2, 4)]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 1)],
        "three SACKed above: segment 1 is lost"
    );
    ack_upto(&mut c, 1, &[(5, 7), (2, 4)]);
    assert!(
        c.output().is_empty(),
        "segment 4 has two SACKed segments above it"
    );
    ack_upto(&mut c, 1, &[(5, 8), (2, 4)]);
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 4)],
        "the second hole, same recovery"
    );
    ack_upto(&mut c, 4, &[(5, 10)]);
    ack_upto(&mut c, 10, &[]);
    let stats = c.stats();
    assert_eq!(stats.fast_recoveries, 1);
    assert_eq!(stats.segments_retransmitted, 2, "nothing SACKed was sent twice");
}

#[test]
fn sacked_data_is_not_resent_after_a_timeout() {
    let mut c = Established::new(config());
    c.write(&pattern(6 * MSS as usize));
    assert_eq!(c.output().len(), 6);
    // Only segment 0 is missing; 1..6 were SACKed, with too few ACKs for
    // fast retransmit. The timer fires.
    ack_upto(&mut c, 0, &[(1, 3)]);
    c.h.advance_to_timeout();
    assert_eq!(seqs(&c.output()), [seg_seq(&c, 0)]);
    ack_upto(&mut c, 3, &[]);
    // That ACK covers three segments: the window grows by two (RFC 3465,
    // L = 2) to three, enough for the whole un-SACKed rest.
    assert_eq!(
        seqs(&c.output()),
        [seg_seq(&c, 3), seg_seq(&c, 4), seg_seq(&c, 5)],
        "then the un-SACKed rest"
    );
}

#[test]
fn an_ack_for_data_never_sent_is_refused() {
    let mut c = Established::new(config());
    c.write(b"abc");
    c.one();
    let bogus = c.peer_segment(c.snd_nxt.wrapping_add(1000));
    c.h.send(&bogus);
    let reply = c.one();
    assert_eq!(reply.ack, c.rcv_nxt, "an ACK in reply");
    assert_eq!(c.stats().bytes_acked, 0);
    assert_eq!(c.stats().segments_rejected, 1);
}

#[test]
fn without_timestamps_an_ack_covering_a_retransmission_gives_no_rtt_sample() {
    let mut c = Established::with_offer(
        config(),
        PeerOffer {
            timestamps: false,
            sack: false,
            ..PeerOffer::default()
        },
    );
    // The handshake's sample (0 ms in the script) is the only one so far.
    let before = c.stats().srtt;
    c.write(&pattern(6 * 1460));
    assert_eq!(c.output().len(), 6);
    c.h.advance_to_timeout();
    assert_eq!(c.output().len(), 1);
    c.h.advance(Duration::from_millis(10));
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(6 * 1460));
    c.h.send(&ack);
    assert_eq!(c.stats().srtt, before, "Karn: the ACK is ambiguous");
}

#[test]
fn a_repeated_timeout_keeps_ssthresh() {
    // The rate-based controller has no threshold (see its own tests).
    let windowed = scps_proto::cc::CongestionAlgorithm::ALL
        .into_iter()
        .filter(|&a| a != scps_proto::cc::CongestionAlgorithm::Rate);
    for congestion in windowed {
        let mut c = Established::new(Config {
            congestion,
            ..config()
        });
        c.write(&pattern(10 * MSS as usize));
        assert_eq!(c.output().len(), 10);
        c.h.advance_to_timeout();
        c.output();
        let after_first = c.stats().ssthresh;
        c.h.advance_to_timeout();
        c.output();
        assert_eq!(c.stats().ssthresh, after_first, "{congestion}: RFC 5681 3.1");
        assert_eq!(c.stats().cwnd, u64::from(MSS));
    }
}

#[test]
fn the_window_does_not_grow_while_the_peers_window_limits_sending() {
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 4,
            ..config()
        },
        PeerOffer {
            window: 8 * MSS as u16,
            ..PeerOffer::default()
        },
    );
    c.write(&pattern(200 * MSS as usize));
    let mut acked = 0u32;
    for _ in 0..40 {
        let sent: u32 = c.output().iter().map(|s| s.payload.len() as u32).sum();
        acked += sent;
        let ack = c
            .peer_segment(c.snd_nxt.wrapping_add(acked))
            .window(8 * MSS as u16);
        c.h.send(&ack);
        c.h.advance(Duration::from_millis(50));
    }
    let cwnd = c.stats().cwnd;
    assert!(
        cwnd <= u64::from(10 * MSS),
        "cwnd {cwnd} grew past the 8 segments ever in use"
    );
}

#[test]
fn a_lost_retransmission_is_resent_once_later_segments_arrive_without_a_timeout() {
    let mut c = Established::new(config());
    c.write(&pattern(30 * MSS as usize));
    assert_eq!(c.output().len(), 10);
    // Segment 1 is lost; three SACKed segments above it show it.
    c.h.advance(Duration::from_millis(10));
    ack_upto(&mut c, 1, &[(2, 5)]);
    let first_repair = c.output();
    assert_eq!(first_repair.first().map(|s| s.seq), Some(seg_seq(&c, 1)));
    // The rest of the first flight arrives, which opens room for new data
    // sent after the retransmission.
    c.h.advance(Duration::from_millis(10));
    ack_upto(&mut c, 1, &[(2, 10)]);
    let new_data = c.output();
    assert!(
        new_data.iter().all(|s| s.seq != seg_seq(&c, 1)),
        "the retransmission is still in flight: not resent"
    );
    let sent_after: Vec<u32> = first_repair
        .iter()
        .chain(&new_data)
        .map(|s| s.seq)
        .skip(1)
        .collect();
    assert!(
        !sent_after.is_empty(),
        "new data went out after the retransmission"
    );
    // A segment sent after the retransmission arrives; the retransmission
    // does not: it was lost too, and goes again at once.
    c.h.advance(Duration::from_millis(10));
    let (a, b) = (
        sent_after[0].wrapping_sub(c.snd_nxt) / MSS,
        sent_after[0].wrapping_sub(c.snd_nxt) / MSS + 1,
    );
    ack_upto(&mut c, 1, &[(a, b), (2, 10)]);
    assert_eq!(c.output().first().map(|s| s.seq), Some(seg_seq(&c, 1)));
    let stats = c.stats();
    assert_eq!(stats.timeouts, 0);
    assert_eq!(stats.lost_retransmissions, 1);
}

#[test]
fn a_recovery_sends_in_proportion_to_what_is_delivered() {
    // RFC 6937: a flight of 20 with one loss; NewReno halves the window
    // to 10. RFC 6675 alone would send nothing until the pipe fell below
    // 10 segments; PRR sends one segment per two delivered from the start.
    let mut c = Established::new(Config {
        initial_window_segments: 20,
        ..config()
    });
    c.write(&pattern(40 * MSS as usize));
    assert_eq!(c.output().len(), 20);
    ack_upto(&mut c, 0, &[(1, 4)]);
    assert_eq!(seqs(&c.output()), [seg_seq(&c, 0)], "fast retransmit");
    let mut sent_after = Vec::new();
    for delivered in 1..=6 {
        ack_upto(&mut c, 0, &[(1, 4 + delivered)]);
        sent_after.push(c.output().len());
    }
    // Delivered 1..6 segments: ceil(d / 2) - 1 (the retransmission) may go.
    assert_eq!(
        sent_after,
        [0, 0, 0, 1, 0, 1],
        "one new segment per two delivered"
    );
    assert!(c.output().is_empty());
}
