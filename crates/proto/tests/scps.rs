//! SCPS-TP behaviours scripted segment by segment
//! (docs/spec/scps-tp-options.md): capabilities negotiation, SNACK both
//! ways, corruption reports, pacing to the route rate, and the rate-based
//! controller.

mod harness;

use std::time::Duration;

use harness::{Established, Harness, OURS, PEER_ISS, PeerOffer, Seg, THEIRS, pattern};
use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;
use scps_proto::config::{LossSource, OutagePolicy};
use scps_proto::wire::{ScpsCapabilities, Snack, TcpFlags};

const MSS: u32 = 1448;

fn scps_config() -> Config {
    Config {
        scps: true,
        ..Config::default()
    }
}

fn snack_capable() -> ScpsCapabilities {
    ScpsCapabilities {
        snack1: true,
        ..ScpsCapabilities::default()
    }
}

/// An SCPS peer 100 ms away (the handshake's RTT sample).
fn scps_offer() -> PeerOffer {
    PeerOffer {
        scps: Some(snack_capable()),
        rtt: Duration::from_millis(100),
        ..PeerOffer::default()
    }
}

#[test]
fn our_syn_offers_the_capabilities_only_when_configured() {
    let mut h = Harness::new(scps_config());
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let syn = h.one();
    assert_eq!(syn.options.scps_capabilities, Some(snack_capable()));

    let mut h = Harness::new(Config::default());
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    assert_eq!(h.one().options.scps_capabilities, None, "plain TCP by default");
}

#[test]
fn both_syns_with_the_option_make_an_scps_connection() {
    let c = Established::with_offer(scps_config(), scps_offer());
    let stats = c.stats();
    assert!(stats.scps && stats.snack);
    // Each capability only if both set it.
    let c = Established::with_offer(
        scps_config(),
        PeerOffer {
            scps: Some(ScpsCapabilities::default()),
            ..PeerOffer::default()
        },
    );
    assert!(c.stats().scps && !c.stats().snack);
}

#[test]
fn a_peer_without_the_option_gets_plain_tcp_with_what_it_negotiated() {
    let c = Established::with_offer(scps_config(), PeerOffer::default());
    let stats = c.stats();
    assert!(!stats.scps && !stats.snack);
    assert!(stats.sack && stats.timestamps);
}

#[test]
fn a_syn_ack_carries_the_option_only_if_the_syn_did() {
    for peer_offers in [true, false] {
        let mut h = Harness::new(scps_config());
        h.ep.listen(OURS, None).unwrap();
        let mut syn = Seg::new(TcpFlags::SYN, PEER_ISS - 1).mss(1460);
        if peer_offers {
            syn.options.scps_capabilities = Some(snack_capable());
        }
        h.send(&syn);
        let syn_ack = h.one();
        assert!(syn_ack.has(TcpFlags::SYN) && syn_ack.has(TcpFlags::ACK));
        let expected = peer_offers.then(snack_capable);
        assert_eq!(syn_ack.options.scps_capabilities, expected);
    }
}

/// Sends `n` full segments from our side and returns them.
fn send_segments(c: &mut Established, n: usize) -> Vec<Seg> {
    c.write(&pattern(n * MSS as usize));
    let out = c.output();
    assert_eq!(out.len(), n, "the initial window lets {n} segments go");
    out
}

/// A connection with `offer` whose first ten segments are out, and a
/// round trip gone by.
fn ten_segments_out(offer: PeerOffer) -> (Established, Vec<Seg>) {
    let config = Config {
        initial_window_segments: 10,
        ..scps_config()
    };
    let mut c = Established::with_offer(config, offer);
    let sent = send_segments(&mut c, 10);
    c.h.advance(Duration::from_millis(100));
    (c, sent)
}

/// The peer's ACK of `ack` naming one hole.
fn snack_ack(c: &mut Established, ack: u32, hole_offset: u16, hole_size: u16) -> Seg {
    let mut seg = c.peer_segment(ack);
    seg.options.snacks.push(Snack {
        hole_offset,
        hole_size,
    });
    seg
}

#[test]
fn a_snack_resends_the_named_segments_at_once() {
    let (mut c, sent) = ten_segments_out(scps_offer());
    // The peer has segment 0 and names segments 2 and 3 (offset 1 from the
    // ACK point, two units): one ACK, no duplicates needed.
    let ack = snack_ack(&mut c, sent[1].seq, 1, 2);
    c.h.send(&ack);
    let resent: Vec<u32> = c.output().iter().map(|s| s.seq).collect();
    assert_eq!(resent, vec![sent[2].seq, sent[3].seq]);
    assert_eq!(c.stats().snacked_segments, 2);

    // The same SNACK again within a round trip: the copies may still
    // arrive, nothing is resent.
    c.h.advance(Duration::from_millis(10));
    let again = Seg { ..ack.clone() };
    c.h.send(&again);
    assert!(c.output().iter().all(|s| s.payload.is_empty()));

    // A round trip later the hole persists: the copies were lost too.
    c.h.advance(Duration::from_millis(150));
    let mut later = c.peer_segment(c.snd_nxt.wrapping_add(MSS));
    later.options.snacks = ack.options.snacks;
    c.h.send(&later);
    let resent: Vec<u32> = c.output().iter().map(|s| s.seq).collect();
    assert_eq!(resent, vec![sent[2].seq, sent[3].seq]);
}

/// An SCPS peer that supersedes SACK with SNACK, as the RI does.
fn snack_only_offer() -> PeerOffer {
    PeerOffer {
        sack: false,
        ..scps_offer()
    }
}

fn data_seqs(segments: &[Seg]) -> Vec<u32> {
    segments
        .iter()
        .filter(|s| !s.payload.is_empty())
        .map(|s| s.seq)
        .collect()
}

#[test]
fn a_partial_ack_leaves_a_front_whose_snacked_copy_is_on_its_way() {
    let (mut c, sent) = ten_segments_out(snack_only_offer());
    // Segment 0 arrived, 1 and 2 did not: one SNACK names both.
    let ack = snack_ack(&mut c, sent[1].seq, 0, 2);
    c.h.send(&ack);
    assert_eq!(data_seqs(&c.output()), vec![sent[1].seq, sent[2].seq]);
    // More than a round trip later the copy of 1 is acknowledged and 2 is
    // not: the ACK left when 1's copy arrived, before 2's copy, which
    // followed it, could. NewReno would resend 2 on this partial ACK.
    c.h.advance(Duration::from_millis(150));
    let partial = c.peer_segment(sent[2].seq);
    c.h.send(&partial);
    assert_eq!(data_seqs(&c.output()), Vec::<u32>::new());
    // Once an ACK sent after 2's copy could arrive still lacks it, the
    // receiver names it again and it goes.
    c.h.advance(Duration::from_millis(10));
    let again = snack_ack(&mut c, sent[2].seq, 0, 1);
    c.h.send(&again);
    assert_eq!(data_seqs(&c.output()), vec![sent[2].seq]);
}

#[test]
fn a_front_copy_unanswered_for_a_round_trip_of_duplicate_acks_goes_again() {
    let (mut c, sent) = ten_segments_out(snack_only_offer());
    let ack = snack_ack(&mut c, sent[0].seq, 0, 1);
    c.h.send(&ack);
    assert_eq!(data_seqs(&c.output()), vec![sent[0].seq]);
    // Duplicate ACKs for data that arrives after the hole: within the
    // 100 ms round trip and its 25 ms reordering window they were sent
    // before the copy could arrive, and the receiver names the hole no
    // more (its repeats are spent).
    for _ in 0..4 {
        c.h.advance(Duration::from_millis(30));
        let dup = c.peer_segment(sent[0].seq);
        c.h.send(&dup);
        assert_eq!(
            data_seqs(&c.output()),
            Vec::<u32>::new(),
            "the copy may still arrive"
        );
    }
    c.h.advance(Duration::from_millis(10));
    let dup = c.peer_segment(sent[0].seq);
    c.h.send(&dup);
    assert_eq!(data_seqs(&c.output()), vec![sent[0].seq], "the copy was lost");
}

#[test]
fn a_timeout_while_the_peer_still_acknowledges_resends_only_the_front() {
    for peer_acknowledges in [true, false] {
        let mut c = Established::with_offer(
            Config {
                congestion: CongestionAlgorithm::Rate,
                rate_bps: Some(100_000_000),
                ..scps_config()
            },
            snack_only_offer(),
        );
        c.write(&pattern(10 * MSS as usize));
        let sent = c.output();
        assert_eq!(sent.len(), 10);
        if peer_acknowledges {
            // Segments 0 and 5 are lost, and so are the peer's SNACKs for
            // them; it acknowledges what arrives after them.
            for _ in 0..2 {
                let dup = c.peer_segment(c.snd_nxt);
                c.h.send(&dup);
            }
            assert_eq!(data_seqs(&c.output()), Vec::<u32>::new());
        }
        // The rate controller probes with one segment after a timeout.
        c.h.advance_to_timeout();
        assert_eq!(data_seqs(&c.output()), vec![sent[0].seq]);
        // The probe arrives and the peer acknowledges up to the hole at 5.
        c.h.advance(Duration::from_millis(100));
        let ack = c.peer_segment(sent[5].seq);
        c.h.send(&ack);
        let resent = data_seqs(&c.output());
        if peer_acknowledges {
            // The peer holds 6 to 9 and names its holes with SNACK: going
            // back N would resend what arrived.
            assert_eq!(resent, Vec::<u32>::new());
        } else {
            // After silence any of them may be lost.
            assert_eq!(resent, data_seqs(&sent[5..]));
        }
    }
}

#[test]
fn snacks_are_ignored_on_a_connection_that_did_not_agree_to_them() {
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            ..scps_config()
        },
        PeerOffer::default(),
    );
    send_segments(&mut c, 10);
    let mut ack = c.peer_segment(c.snd_nxt.wrapping_add(MSS));
    ack.options.snacks.push(Snack {
        hole_offset: 1,
        hole_size: 2,
    });
    c.h.send(&ack);
    c.h.nothing();
    assert_eq!(c.stats().snacked_segments, 0);
}

/// The peer sends us segments `indices` of a stream of full segments.
fn peer_sends(c: &mut Established, indices: &[u32]) -> Vec<Seg> {
    let mut acks = Vec::new();
    for &i in indices {
        let mut seg = c.peer_segment(c.snd_nxt);
        seg.seq = c.rcv_nxt.wrapping_add(i * MSS);
        seg.payload = pattern(MSS as usize);
        c.h.send(&seg);
        acks.extend(c.output());
    }
    acks
}

#[test]
fn the_receiver_names_a_hole_as_soon_as_it_sees_it() {
    let mut c = Established::with_offer(scps_config(), scps_offer());
    let acks = peer_sends(&mut c, &[0, 2, 3]);
    // Segment 2 shows the hole at 1: its ACK names it; segment 3's ACK
    // does not name it again.
    let snacks: Vec<Vec<Snack>> = acks
        .iter()
        .map(|a| a.options.snacks.as_slice().to_vec())
        .collect();
    let hole = Snack {
        hole_offset: 0,
        hole_size: 1,
    };
    assert_eq!(snacks.last().unwrap(), &Vec::<Snack>::new());
    assert!(snacks.contains(&vec![hole]), "{snacks:?}");
    assert!(acks.iter().all(|a| a.ack == c.rcv_nxt.wrapping_add(MSS)));
    assert_eq!(c.stats().snacks_sent, 1);
}

#[test]
fn holes_are_named_after_the_snack_delay_and_again_while_they_persist() {
    let delay = Duration::from_millis(100);
    let mut c = Established::with_offer(
        Config {
            snack_delay: delay,
            ..scps_config()
        },
        scps_offer(),
    );
    let acks = peer_sends(&mut c, &[0, 2, 4]);
    assert!(
        acks.iter().all(|a| a.options.snacks.is_empty()),
        "not before the delay"
    );
    // The timer brings one ACK naming both holes, nearest first.
    assert_eq!(c.h.advance_to_timeout(), delay);
    let ack = c.one();
    let named = ack.options.snacks.as_slice().to_vec();
    let expected = [(0, 1), (2, 1)].map(|(hole_offset, hole_size)| Snack {
        hole_offset,
        hole_size,
    });
    assert_eq!(named, expected);
    // Still missing a SNACK round trip later: named again.
    c.h.advance_to_timeout();
    assert_eq!(c.one().options.snacks.as_slice(), &expected);
    // Segment 1 arrives: only the hole at 3 remains, at offset 1 from the
    // new ACK point, already named.
    let acks = peer_sends(&mut c, &[1]);
    assert_eq!(acks.last().unwrap().ack, c.rcv_nxt.wrapping_add(3 * MSS));
}

#[test]
fn the_corruption_report_goes_to_scps_peers_and_keeps_the_peers_rate() {
    // Our side learns of corruption: the next segment carries kind 23.
    let mut c = Established::with_offer(scps_config(), scps_offer());
    c.h.ep.corruption_experienced(THEIRS.ip());
    let ack = c.one();
    assert!(ack.options.corruption_experienced);
    assert_eq!(c.stats().corruption_reports_sent, 1);
    c.h.nothing();

    // Not to a plain TCP peer.
    let mut plain = Established::with_offer(scps_config(), PeerOffer::default());
    plain.h.ep.corruption_experienced(THEIRS.ip());
    plain.h.nothing();

    // Received: the losses that follow do not shrink our window.
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            ..scps_config()
        },
        scps_offer(),
    );
    send_segments(&mut c, 10);
    let before = c.stats().cwnd;
    let mut report = c.peer_segment(c.snd_nxt);
    report.options.corruption_experienced = true;
    c.h.send(&report);
    let mut ack = c.peer_segment(c.snd_nxt);
    ack.options.snacks.push(Snack {
        hole_offset: 0,
        hole_size: 1,
    });
    c.h.send(&ack);
    assert_eq!(c.one().seq, c.snd_nxt, "the first segment resent");
    assert_eq!(c.stats().corruption_reports_received, 1);
    assert_eq!(c.stats().cwnd, before, "corruption costs no rate");
    assert_eq!(c.stats().fast_recoveries, 1);
}

#[test]
fn a_loss_attributed_to_congestion_halves_the_window() {
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            ..scps_config()
        },
        scps_offer(),
    );
    send_segments(&mut c, 10);
    let mut ack = c.peer_segment(c.snd_nxt);
    ack.options.snacks.push(Snack {
        hole_offset: 0,
        hole_size: 1,
    });
    c.h.send(&ack);
    c.output();
    assert_eq!(c.stats().cwnd, 5 * u64::from(MSS));
}

#[test]
fn a_corruption_route_repairs_losses_and_timeouts_at_the_prior_window() {
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            loss_source: LossSource::Corruption,
            ..Config::default()
        },
        PeerOffer::default(),
    );
    send_segments(&mut c, 10);
    let window = c.stats().cwnd;
    c.h.advance_to_timeout();
    let probe = c.output();
    assert_eq!(probe.len(), 1, "after a timeout, one segment probes");
    c.h.advance(Duration::from_millis(100));
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(MSS));
    c.h.send(&ack);
    assert!(c.stats().cwnd >= window, "the timeout was not congestion");
    assert_eq!(c.output().len(), 9, "the rest goes again at once");
}

#[test]
fn the_route_rate_paces_every_segment() {
    // 1.2 Mbit/s: a 1500-byte packet every 10 ms. The full bucket holds
    // 10 ms, and a packet may take it into debt: a burst of two.
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            rate_bps: Some(1_200_000),
            ..scps_config()
        },
        scps_offer(),
    );
    // The handshake's ACK took some credit: let the bucket fill.
    c.h.advance(Duration::from_secs(1));
    c.write(&pattern(5 * MSS as usize));
    assert_eq!(c.output().len(), 2, "the bucket's depth and one packet");
    for _ in 0..3 {
        assert_eq!(c.h.advance_to_timeout(), Duration::from_millis(10));
        assert_eq!(c.output().len(), 1);
    }
}

#[test]
fn the_rate_controller_never_shrinks_on_loss() {
    let mut c = Established::with_offer(
        Config {
            congestion: CongestionAlgorithm::Rate,
            rate_bps: Some(100_000_000),
            ..scps_config()
        },
        scps_offer(),
    );
    c.write(&pattern(20 * MSS as usize));
    assert_eq!(c.output().len(), 20, "no window holds it back");
    let window = c.stats().cwnd;
    let mut ack = c.peer_segment(c.snd_nxt);
    ack.options.snacks.push(Snack {
        hole_offset: 0,
        hole_size: 3,
    });
    c.h.send(&ack);
    assert_eq!(c.output().len(), 3);
    assert_eq!(c.stats().cwnd, window);
}

#[test]
fn a_signalled_outage_holds_data_probes_and_resumes_at_the_prior_window() {
    let probe_interval = Duration::from_secs(5);
    let mut c = Established::with_offer(
        Config {
            initial_window_segments: 10,
            outage: OutagePolicy {
                after_timeouts: None,
                probe_interval,
            },
            ..scps_config()
        },
        scps_offer(),
    );
    send_segments(&mut c, 4);
    let window = c.stats().cwnd;
    c.h.ep.link_down(c.h.now, None);
    c.write(&pattern(4 * MSS as usize));
    c.h.nothing();
    // Probes at the fixed interval, one segment each, no backoff, far
    // beyond the retransmissions that would otherwise end the connection.
    for _ in 0..(Config::default().max_retransmissions + 5) {
        assert_eq!(c.h.advance_to_timeout(), probe_interval);
        let probe = c.one();
        assert_eq!(probe.seq, c.snd_nxt, "the oldest segment probes");
    }
    assert!(c.stats().outages == 1 && c.stats().outage_probes > 15);
    // The link is back: a probe at once; its ACK resumes sending at the
    // window from before, the lost flight first, then the new data.
    c.h.ep.link_up(c.h.now, None);
    assert_eq!(c.one().seq, c.snd_nxt);
    let ack = c.peer_segment(c.snd_nxt.wrapping_add(MSS));
    c.h.send(&ack);
    let out = c.output();
    assert_eq!(out.len(), 7, "3 resent and 4 new, no slow start");
    assert!(c.stats().cwnd >= window);
    assert!(!c.h.ep.connection(c.conn).unwrap().in_outage());
}
