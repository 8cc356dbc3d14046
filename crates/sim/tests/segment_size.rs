//! The adaptive segment size (proto connection/mss_adapt.rs) on
//! lowrate-leo-geo at BER 1e-5: smaller segments (more packets for the
//! same megabyte), fewer bytes resent, every byte intact (the applications
//! check each one); at BER 0 nothing changes.

mod common;

use common::*;

fn run_with(ber: &str, adapt: bool) -> scps_sim::RunResult {
    let point = &points(
        "lowrate-leo-geo",
        &[
            "protocol=scps-rate",
            "link.delay=120ms",
            &format!("link.ber={ber}"),
            "link.return.rate=115200bps",
            &format!("tcp.mss_adapt={adapt}"),
        ],
    )[0];
    let result = run(point, seed());
    assert_eq!(result.error, None, "{}", describe(&result));
    assert_eq!(result.bytes, 1 << 20, "{}", describe(&result));
    result
}

#[test]
fn segments_shrink_at_a_high_bit_error_rate() {
    let (fixed, adaptive) = (run_with("1e-5", false), run_with("1e-5", true));
    let what = describe(&adaptive);
    // The best payload at 1e-5 is about 780 bytes against 1448: some 1.6
    // times the packets once the estimate has settled.
    assert!(
        adaptive.link.forward.packets * 10 > fixed.link.forward.packets * 13,
        "{} packets adaptive against {} fixed: {what}",
        adaptive.link.forward.packets,
        fixed.link.forward.packets
    );
    assert!(
        adaptive.retransmitted_bytes < fixed.retransmitted_bytes,
        "{} bytes resent adaptive against {}: {what}",
        adaptive.retransmitted_bytes,
        fixed.retransmitted_bytes
    );
}

#[test]
fn a_clean_link_keeps_full_segments() {
    let (fixed, adaptive) = (run_with("0", false), run_with("0", true));
    assert_eq!(adaptive.link.forward.packets, fixed.link.forward.packets);
    assert_eq!(adaptive.duration_s, fixed.duration_s);
}
