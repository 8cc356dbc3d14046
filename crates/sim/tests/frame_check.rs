//! A link frame check against the Internet checksum's blind spot: with
//! bits flipped and nothing but the transport checksum to notice, some
//! transfers end with damaged data (which the simulator's end-to-end
//! comparison reports); with PPP's frame check sequence none do.

mod common;

use common::{describe, points, run};

/// lowrate-leo-geo at 120 ms and BER 1e-5, errors of `kind`: how many of
/// `runs` seeds end with data that differs from what was sent.
fn damaged_runs(kind: &str, runs: u64) -> (u64, u64) {
    let errors = format!("link.errors={kind}");
    let point = &points(
        "lowrate-leo-geo",
        &[
            "protocol=scps-rate",
            "link.delay=120ms",
            "link.ber=1e-5",
            "link.return.rate=115200bps",
            &errors,
        ],
    )[0];
    let mut damaged = 0;
    let mut caught_by_the_link = 0;
    for seed in 1..=runs {
        let result = run(point, seed);
        match &result.error {
            None => {}
            Some(error) if error.contains("differs") => damaged += 1,
            Some(error) => panic!("{}: {error}", describe(&result)),
        }
        caught_by_the_link += result.link.forward.dropped_bit_errors;
    }
    (damaged, caught_by_the_link)
}

#[test]
fn the_frame_check_stops_what_the_transport_checksum_misses() {
    // Seeds 1 to 40: the checksum alone lets damaged data through in 5.
    let (unchecked, dropped) = damaged_runs("corrupt", 40);
    assert!(unchecked > 0, "the blind spot shows over these seeds");
    assert_eq!(dropped, 0, "without a frame check the link drops nothing");
    for check in ["fcs16", "fcs32"] {
        let (damaged, dropped) = damaged_runs(check, 40);
        assert_eq!(damaged, 0, "{check}: no transfer ends damaged");
        assert!(
            dropped > 40 * 50,
            "{check}: the link discarded the damaged frames ({dropped})"
        );
    }
}
