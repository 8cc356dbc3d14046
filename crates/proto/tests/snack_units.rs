//! The SNACK option's units when the two ends' segment sizes differ, and
//! what a receiver does when its SNACKs go unanswered (docs/spec/snack.md).
//! The scripted peer sends segments of its own size, names holes in our
//! data in its own unit, or ignores what we name.

mod harness;

use std::time::Duration;

use harness::{Established, PeerOffer, Seg, pattern};
use scps_proto::Config;
use scps_proto::wire::{ScpsCapabilities, Snack};

fn scps_config() -> Config {
    Config {
        scps: true,
        ..Config::default()
    }
}

/// An SCPS peer 100 ms away that supersedes SACK with SNACK, as the RI does.
fn snack_only_peer(mss: u16) -> PeerOffer {
    PeerOffer {
        mss,
        sack: false,
        scps: Some(ScpsCapabilities {
            snack1: true,
            ..ScpsCapabilities::default()
        }),
        rtt: Duration::from_millis(100),
        ..PeerOffer::default()
    }
}

/// The peer sends us segment `index` of a stream cut into `size`-byte
/// segments; returns what we answer.
fn peer_sends(c: &mut Established, size: usize, index: usize) -> Vec<Seg> {
    let mut seg = c.peer_segment(c.snd_nxt);
    seg.seq = c.rcv_nxt.wrapping_add((index * size) as u32);
    seg.payload = pattern(size);
    c.h.send(&seg);
    c.output()
}

/// The SNACK options of `segments`, as the bytes they travel in: kind 21,
/// length 6, offset and size big-endian.
fn snack_bytes(segments: &[Seg]) -> Vec<[u8; 6]> {
    let mut found = Vec::new();
    for seg in segments {
        let mut buf = [0u8; 40];
        let len = seg.options.emit(&mut buf).expect("options fit");
        let mut at = 0;
        while at < len {
            match buf[at] {
                0 => break,
                1 => at += 1,
                kind => {
                    let option_len = usize::from(buf[at + 1]);
                    if kind == 21 {
                        found.push(buf[at..at + 6].try_into().unwrap());
                    }
                    at += option_len;
                }
            }
        }
    }
    found
}

fn snack_option(offset: u16, size: u16) -> [u8; 6] {
    let [o1, o2] = offset.to_be_bytes();
    let [s1, s2] = size.to_be_bytes();
    [21, 6, o1, o2, s1, s2]
}

/// The SNACK naming bytes `hole` past the ACK point in `unit`s: offset
/// rounded down, size up.
fn named_in(unit: usize, hole: std::ops::Range<usize>) -> [u8; 6] {
    let offset = hole.start / unit;
    let size = (hole.end - offset * unit).div_ceil(unit);
    snack_option(offset as u16, size as u16)
}

#[test]
fn holes_in_what_the_peer_sends_are_named_in_its_segment_size_not_ours() {
    // Our segments carry 1448 bytes against an MSS offer of 1460 (1460 less
    // the timestamps option), 1188 against 1200. The peer's may be
    // smaller (a narrower path on its side) or larger (it fills our MSS
    // offer of 1460 though its own was 1200).
    for (peer_mss, peer_segment, our_segment) in [(1460, 988, 1448), (1460, 1448, 1448), (1200, 1448, 1188)] {
        let mut c = Established::with_offer(scps_config(), snack_only_peer(peer_mss));
        let mut answers = Vec::new();
        // Segments 1 and 3 are lost.
        for index in [0, 2, 4] {
            answers.extend(peer_sends(&mut c, peer_segment, index));
        }
        let what = format!("{peer_segment}-byte segments, ours {our_segment}");
        // The data sender's unit: one unit at the ACK point, one two past it.
        let expected = vec![snack_option(0, 1), snack_option(2, 1)];
        assert_eq!(snack_bytes(&answers), expected, "{what}");
        // The reading that counts in the SNACK sender's own segment size
        // names the second hole elsewhere whenever the sizes differ.
        let ours = named_in(our_segment, 2 * peer_segment..3 * peer_segment);
        assert_eq!(ours == expected[1], peer_segment == our_segment, "{what}");
        assert_eq!(c.stats().snacks_sent, 2, "{what}");
    }
}

/// A connection to a peer that has sent us data in `peer_segment`-byte
/// segments, with ten of our segments out and a round trip gone by.
fn ten_segments_out(peer_segment: usize) -> (Established, Vec<Seg>) {
    let config = Config {
        initial_window_segments: 10,
        ..scps_config()
    };
    let mut c = Established::with_offer(config, snack_only_peer(1460));
    peer_sends(&mut c, peer_segment, 0);
    c.rcv_nxt = c.rcv_nxt.wrapping_add(peer_segment as u32);
    c.write(&pattern(10 * 1448));
    let sent: Vec<Seg> = c.output().into_iter().filter(|s| !s.payload.is_empty()).collect();
    assert_eq!(sent.len(), 10);
    assert!(sent.iter().all(|s| s.payload.len() == 1448));
    c.h.advance(Duration::from_millis(100));
    (c, sent)
}

/// The peer's ACK of everything before `ack`, with one SNACK naming
/// `size` units from `offset` units past it.
fn snack_ack(c: &mut Established, ack: u32, offset: u16, size: u16) -> Seg {
    let mut seg = c.peer_segment(ack);
    seg.options.snacks.push(Snack {
        hole_offset: offset,
        hole_size: size,
    });
    seg
}

fn resent_indices(c: &mut Established, sent: &[Seg]) -> Vec<usize> {
    c.output()
        .iter()
        .filter(|s| !s.payload.is_empty())
        .map(|s| {
            sent.iter()
                .position(|o| o.seq == s.seq)
                .expect("a segment we sent")
        })
        .collect()
}

#[test]
fn a_peer_that_names_holes_in_its_own_segment_size_gets_them_resent() {
    // The peer sends 988-byte segments and has lost our segments 1 and 4.
    // From its ACK point (segment 1) it names segment 4, 3 × 1448 = 4344
    // bytes on, in its own unit: offset 4 (3952), size 2 (to 5928).
    let (mut c, sent) = ten_segments_out(988);
    let ack = snack_ack(&mut c, sent[1].seq, 4, 2);
    c.h.send(&ack);
    let resent = resent_indices(&mut c, &sent);
    assert!(resent.contains(&4), "the hole goes at once: {resent:?}");
    // Read in our unit the same option names segments 5 and 6; nothing
    // tells the two readings apart, so those go too, and nothing else.
    assert!(resent.iter().all(|i| [4, 5, 6].contains(i)), "{resent:?}");

    // A peer whose segments are the size of ours is read in one unit only.
    let (mut c, sent) = ten_segments_out(1448);
    let ack = snack_ack(&mut c, sent[1].seq, 3, 1);
    c.h.send(&ack);
    assert_eq!(resent_indices(&mut c, &sent), vec![4]);
}

#[test]
fn a_hole_whose_snacks_go_unanswered_falls_back_to_duplicate_acks() {
    // The adaptive ACK policy lets data past a hole wait while SNACK
    // repairs it.
    let config = Config {
        ack_adaptive: true,
        ..scps_config()
    };
    let mut c = Established::with_offer(config, snack_only_peer(1460));
    const SIZE: usize = 1448;
    let named = snack_bytes(&[peer_sends(&mut c, SIZE, 0), peer_sends(&mut c, SIZE, 2)].concat());
    assert_eq!(named, vec![snack_option(0, 1)]);
    // Segments past the hole may wait for the next ones: fewer ACKs than
    // segments.
    let acks: usize = (3..7).map(|i| peer_sends(&mut c, SIZE, i).len()).sum();
    assert!(acks < 4, "{acks} ACKs for 4 segments while SNACK repairs");
    // The sender answers none: the hole is named again at each repeat,
    // four times in all, then no more.
    let mut namings = 1;
    for _ in 0..10 {
        c.h.advance_to_timeout();
        let out = c.output();
        if snack_bytes(&out).is_empty() {
            break;
        }
        namings += 1;
    }
    assert_eq!(namings, 4);
    assert_eq!(c.stats().snacks_sent, 4);
    assert_eq!(c.stats().snack_fallbacks, 1);
    // Now every segment past the hole is acknowledged at once, a duplicate
    // ACK without a SNACK, as a sender that repairs on three duplicate
    // ACKs needs.
    let hole = c.rcv_nxt.wrapping_add(SIZE as u32);
    for i in 7..11 {
        let answers = peer_sends(&mut c, SIZE, i);
        assert_eq!(answers.len(), 1, "segment {i} is acknowledged at once");
        assert_eq!(answers[0].ack, hole);
        assert!(snack_bytes(&answers).is_empty());
    }
    // The repair fills the hole; the whole stream reads back.
    peer_sends(&mut c, SIZE, 1);
    assert_eq!(c.h.read(c.conn), pattern(SIZE).repeat(11));
}

#[test]
fn a_repeat_that_crossed_the_copy_is_not_answered_even_on_a_path_slower_than_its_fastest() {
    // Without SACK. The handshake took 100 ms; then the path slows (a
    // queue): the smoothed RTT climbs towards 300 ms, the smallest stays
    // at 100.
    let config = Config {
        initial_window_segments: 10,
        ..scps_config()
    };
    let mut c = Established::with_offer(config, snack_only_peer(1460));
    for _ in 0..3 {
        c.write(&pattern(1448));
        let out = c.output();
        c.h.advance(Duration::from_millis(300));
        let ack = c.peer_segment(out[0].seq.wrapping_add(1448));
        c.h.send(&ack);
        c.output();
    }
    let srtt = c.stats().srtt.expect("measured");
    assert!(srtt > Duration::from_millis(160), "{srtt:?}");
    c.write(&pattern(10 * 1448));
    let sent: Vec<Seg> = c.output();
    assert_eq!(sent.len(), 10);
    let named = |c: &mut Established| {
        let ack = snack_ack(c, sent[0].seq, 2, 1);
        c.h.send(&ack);
        resent_indices(c, &sent)
    };
    assert_eq!(named(&mut c), vec![2]);
    // Named again 150 ms later: longer than the fastest round trip, but
    // within the path's round trip now, so it left before the copy could
    // arrive.
    c.h.advance(Duration::from_millis(150));
    assert_eq!(named(&mut c), Vec::<usize>::new());
    // A round trip after the copy left, the hole still there: the copy was
    // lost too.
    c.h.advance(srtt - Duration::from_millis(150));
    assert_eq!(named(&mut c), vec![2]);
}

#[test]
fn a_front_that_a_misread_snack_passed_over_goes_once_duplicate_acks_show_it_overdue() {
    // Our segment 0 is lost; the peer's SNACK, read our way, names segment
    // 1 (a peer counting in another unit, say). Segment 1 goes and
    // recovery begins; duplicate ACKs for segment 0 keep coming.
    let (mut c, sent) = ten_segments_out(1448);
    let ack = snack_ack(&mut c, sent[0].seq, 1, 1);
    c.h.send(&ack);
    assert_eq!(resent_indices(&mut c, &sent), vec![1]);
    // Segment 0 left 100 ms ago, a round trip: within the reordering
    // window (a quarter of it) it may still arrive.
    c.h.advance(Duration::from_millis(10));
    let dup = c.peer_segment(sent[0].seq);
    c.h.send(&dup);
    assert_eq!(resent_indices(&mut c, &sent), Vec::<usize>::new());
    // Past it, a duplicate ACK shows it lost: it goes, without waiting for
    // the retransmission timer.
    c.h.advance(Duration::from_millis(20));
    let dup = c.peer_segment(sent[0].seq);
    c.h.send(&dup);
    assert_eq!(resent_indices(&mut c, &sent), vec![0]);
}
