//! SNACK as the only repair mechanism (SACK superseded, as in the RI) on
//! the t1-geo link at its worst error rate: what is resent is what was
//! lost, not what a duplicate ACK or a timeout guessed at.

mod common;

use common::*;

#[test]
fn snack_without_sack_resends_each_lost_segment_about_once() {
    let seed = seed();
    // Case 2B of the Xiphos paper (docs/BENCHMARKS.md, t1-geo) at BER 1e-5:
    // about one 1500-byte packet in nine is lost.
    let point = &points(
        "t1-geo",
        &[
            "protocol=scps-rate",
            "tcp.header_compression=true",
            "tcp.send_buffer=241kB",
            "tcp.recv_buffer=241kB",
            "tcp.sack=false",
            "tcp.initial_window=55",
            "link.ber=1e-5",
        ],
    )[0];
    let result = run(point, seed);
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, 3_000_000, "{what}");
    let lost = result.link.forward.dropped_bit_errors;
    // Segments of this case carry 1460 bytes (no timestamps).
    let resent = result.retransmitted_bytes.div_ceil(1460);
    assert!(lost > 150, "{what}: only {lost} packets lost");
    // A few lost ACKs and probes may cost a copy more; NewReno's partial
    // ACKs, SNACKs read off the segment grid and timeouts that went back
    // N once resent half as much again as was lost.
    assert!(
        resent * 100 <= lost * 115,
        "{what}: {resent} segments resent for {lost} packets lost"
    );
}

/// The link of the interoperation runs against the SCPS RI: 20 Mbit/s,
/// 20 ms, BER 1e-5 (about one 1500-byte packet in nine lost), a rate-based
/// sender and a receiver that, like the RI, uses SNACK and no SACK; with
/// `extra` keys on top.
fn ri_link(extra: &str) -> scps_config::Point {
    point_from(&format!(
        "name = \"ri-link\"\n\
         [link]\nrate = \"20Mbit\"\nrtt = \"20ms\"\nber = 1e-5\n\
         [workload]\nkind = \"bulk\"\nbytes = \"4MB\"\n\
         [tcp]\nsend_buffer = \"4MiB\"\nrecv_buffer = \"4MiB\"\nsack = false\n{extra}\n\
         [sweep]\nprotocol = [\"scps-rate\"]\n"
    ))
}

/// Goodput, bytes resent and packets lost over seeds `seeds`.
fn totals(point: &scps_config::Point, seeds: std::ops::Range<u64>) -> (f64, u64, u64) {
    let (mut goodput, mut resent, mut lost) = (0.0, 0, 0);
    for seed in seeds {
        let result = run(point, seed);
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        assert_eq!(result.bytes, 4_000_000, "{what}");
        goodput += result.goodput_bps;
        resent += result.retransmitted_bytes;
        lost += result.link.forward.dropped_bit_errors;
    }
    (goodput, resent, lost)
}

#[test]
fn a_receiver_that_names_holes_twice_as_often_costs_the_sender_nothing() {
    let seed = seed();
    let seeds = seed..seed + 3;
    eprintln!("seeds {seeds:?}");
    // Our receiver names a hole again after the SNACK round trip and a
    // quarter (about 25 ms here); this one every 12 ms, as often as the RI
    // sends its repeats. A repeat that left before the copy could arrive
    // must not send the copy again.
    let (paced, paced_resent, paced_lost) = totals(&ri_link(""), seeds.clone());
    let (eager, eager_resent, eager_lost) = totals(&ri_link("snack_repeat = \"12ms\""), seeds);
    for (resent, lost, which) in [
        (paced_resent, paced_lost, "ours"),
        (eager_resent, eager_lost, "twice as often"),
    ] {
        // Segments carry 1448 bytes; a lost ACK or a lost copy costs a
        // few more.
        let segments = resent.div_ceil(1448);
        assert!(
            segments * 100 <= lost * 110,
            "{which}: {segments} segments resent for {lost} packets lost"
        );
    }
    assert!(
        eager >= 0.9 * paced,
        "goodput {:.2} Mbit/s against {:.2}",
        eager / 3e6,
        paced / 3e6
    );
}

#[test]
fn a_sender_that_ignores_or_misreads_snacks_still_delivers_everything() {
    let seed = seed();
    eprintln!("seed {seed}");
    // Our receiver's SNACKs go unanswered, or the sender resends the unit
    // after the one named: the receiver leaves those holes to duplicate
    // ACKs and the transfer completes (slowly: without SACK or SNACK a
    // sender repairs about a hole per round trip, and about four packets
    // in each round trip's 33 are lost).
    for answer in ["ignore", "next-unit"] {
        let point = ri_link(&format!("snack_answer = \"{answer}\""));
        let result = run(&point, seed);
        let what = describe(&result);
        assert_eq!(result.error, None, "{answer}: {what}");
        assert_eq!(result.bytes, 4_000_000, "{answer}: {what}");
        assert!(result.link.forward.dropped_bit_errors > 100, "{answer}: {what}");
        if answer == "next-unit" {
            // Each misread SNACK resends a segment that arrived; the hole
            // itself goes once duplicate ACKs show it overdue, not after
            // a timeout that goes back N.
            assert!(
                result.retransmitted_bytes * 10 <= result.bytes * 11,
                "{answer}: {} bytes resent: {what}",
                result.retransmitted_bytes
            );
        }
    }
}
