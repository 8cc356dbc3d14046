//! The `saratoga` label: the hosts run the Saratoga engine, and a bulk
//! workload is a put of generated files from the client to the server,
//! checked byte for byte when stored. Judged against SCENARIOS.md's
//! limit with Saratoga's headers (IPv4, UDP, DATA's flags, session id and
//! offset).

mod common;

use common::*;

/// geo-8mbit's link with `sets` pinned, under `saratoga`.
fn geo(sets: &[&str]) -> scps_config::Point {
    let mut all = vec!["protocol=\"saratoga\""];
    all.extend_from_slice(sets);
    let mut points = points("geo-8mbit", &all);
    assert_eq!(points.len(), 1, "one point");
    points.remove(0)
}

fn summary(result: &scps_sim::RunResult) -> String {
    format!(
        "{}: {} bytes in {:.2} s, {:.0} bit/s of {:.0} (ratio {:.3}), resent {}, drops {:?}",
        describe(result),
        result.bytes,
        result.duration_s,
        result.goodput_bps,
        result.limit_bps,
        result.ratio,
        result.retransmitted_bytes,
        result.endpoint_drops
    )
}

#[test]
fn a_put_over_geo_at_600ms_and_ber_1e5_moves_near_the_limit() {
    let point = geo(&["link.rtt=\"600ms\"", "link.ber=1e-5", "workload.bytes=\"20MB\""]);
    let result = run(&point, seed());
    let what = summary(&result);
    println!("{what}");
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, 20_000_000, "{what}");
    assert!(result.ratio >= 0.95, "{what}");
}
