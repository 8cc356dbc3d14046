//! The adaptive ACK policy (proto connection/ack_policy.rs) on the
//! asymmetric lowrate-leo-geo link: the receiver sends far fewer ACKs on
//! the 2400 bit/s return link, and every byte still arrives intact (the
//! applications check each one).

mod common;

use common::*;

#[test]
fn adaptive_acks_thin_the_narrow_return_link_and_the_transfer_completes() {
    let seed = seed();
    for protocol in ["scps-rate", "tcp-vj"] {
        let run_with = |adaptive: bool| {
            let point = &points(
                "lowrate-leo-geo",
                &[
                    &format!("protocol={protocol}"),
                    "link.delay=120ms",
                    "link.ber=1e-6",
                    "link.return.rate=2400bps",
                    &format!("tcp.ack_adaptive={adaptive}"),
                ],
            )[0];
            let result = run(point, seed);
            let what = describe(&result);
            assert_eq!(result.error, None, "{what}");
            assert_eq!(result.bytes, 1 << 20, "{what}");
            result
        };
        let (fixed, adaptive) = (run_with(false), run_with(true));
        let (fixed_acks, adaptive_acks) = (fixed.link.reverse.packets, adaptive.link.reverse.packets);
        assert!(
            adaptive_acks * 2 < fixed_acks,
            "{protocol}: {adaptive_acks} ACKs adaptive against {fixed_acks} with ack_every = 2 ({})",
            describe(&adaptive)
        );
    }
}

#[test]
fn a_wide_return_link_keeps_acks_at_the_configured_rate() {
    // Symmetric 115200 bit/s, no loss, 3 ms: the return link has room and
    // the RTT is short, so in-order data is acknowledged every 2 segments
    // as without the adaptive policy.
    let seed = seed();
    let run_with = |adaptive: bool| {
        let point = &points(
            "lowrate-leo-geo",
            &[
                "protocol=scps-rate",
                "link.delay=3ms",
                "link.ber=0",
                "link.return.rate=115200bps",
                &format!("tcp.ack_adaptive={adaptive}"),
            ],
        )[0];
        let result = run(point, seed);
        assert_eq!(result.error, None, "{}", describe(&result));
        result.link.reverse.packets
    };
    let (fixed, adaptive) = (run_with(false), run_with(true));
    assert!(
        adaptive.abs_diff(fixed) * 20 <= fixed,
        "{adaptive} ACKs adaptive against {fixed} fixed: within 5%"
    );
}
