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
