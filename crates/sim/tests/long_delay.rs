//! Deep-space delays: a ten-minute one-way delay, where a round trip takes
//! twenty minutes. With timers set in hours the transfer completes, losses
//! included; with the defaults (an initial RTO of one second, six SYN
//! retransmissions) it fails with a clear error.

mod common;

use common::*;

/// One-way delay of the link.
const DELAY_S: f64 = 600.0;

/// The example scenario of docs/examples, with some keys pinned.
fn deep_space(sets: &[&str]) -> scps_config::Point {
    let text = include_str!("../../../docs/examples/deep-space.toml");
    let sets: Vec<_> = sets
        .iter()
        .map(|s| scps_config::sweep::parse_assignment(s).expect("valid --set"))
        .collect();
    let mut points = scps_config::Scenario::from_text(text, "deep-space", &sets)
        .expect("the example loads")
        .points;
    assert_eq!(points.len(), 1);
    points.remove(0)
}

#[test]
fn a_transfer_over_a_ten_minute_one_way_delay_completes() {
    // SCPS-TP with rate control across a lossy link. (Plain TCP there
    // halves its window at each loss and grows it back one segment per
    // twenty minutes: it has not finished in a simulated day; see
    // docs/BENCHMARKS.md.)
    let point = deep_space(&[]);
    let result = run(&point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    // The simulator checks every byte against what was sent.
    assert_eq!(result.bytes, 1 << 20, "{what}");
    assert!(
        result.link.forward.dropped_bit_errors > 0,
        "some segments were lost and repaired across the delay: {what}"
    );
    assert!(result.retransmitted_bytes > 0, "{what}");
    // Handshake, data and at least one repair: three round trips.
    assert!(
        result.duration_s > 3.0 * 2.0 * DELAY_S,
        "{what}: {} s",
        result.duration_s
    );
    assert_eq!(
        result.timeouts, 0,
        "repairs come from SNACK and SACK, never from the timer: {what}"
    );
}

#[test]
fn plain_tcp_with_long_timers_completes_over_a_clean_ten_minute_delay() {
    let point = deep_space(&["protocol=tcp-vj", "link.ber=0"]);
    let result = run(&point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, 1 << 20, "{what}");
    // Slow start from three segments to the 725 of the file: eight round
    // trips and the handshake's.
    assert!(
        result.duration_s > 8.0 * 2.0 * DELAY_S,
        "{what}: {} s",
        result.duration_s
    );
    assert_eq!(result.timeouts, 0, "no RTO fired while waiting for ACKs: {what}");
}

#[test]
fn default_timers_over_a_ten_minute_delay_fail_with_a_clear_error() {
    // The engine's defaults: first RTO 1 s, backoff to 60 s.
    let point = deep_space(&["link.ber=0", "tcp.rto_initial=1s", "tcp.rto_max=60s"]);
    let result = run(&point, seed());
    let error = result.error.clone().unwrap_or_default();
    assert!(
        error.contains("no answer to the SYN after 6 retransmissions"),
        "{}: {error:?}",
        describe(&result)
    );
    assert_eq!(result.bytes, 0);
}
