//! The throughput grid of lowrate-leo-geo for tcp-vj (delay x BER, both
//! link shapes), kept as a snapshot: any change to the engine's
//! performance shows in review as a change to this table (the smoltcp
//! `netsim` idea). Runs are deterministic, so the figures are exact.

mod common;

use std::fmt::Write;

use common::*;

#[test]
fn lowrate_leo_geo_throughput_grid() {
    let mut table = String::from("return     delay  ber      time_s  ratio  retransmitted\n");
    for point in points("lowrate-leo-geo", &["protocol=tcp-vj"]) {
        let result = run(&point, 1);
        assert_eq!(result.error, None, "{}", describe(&result));
        let param = |key: &str| result.params[key].to_string().trim_matches('"').to_owned();
        writeln!(
            table,
            "{:<10} {:<6} {:<8} {:<7.2} {:<6.3} {}",
            param("link.return.rate"),
            param("link.delay"),
            param("link.ber"),
            result.duration_s,
            result.ratio,
            result.retransmitted_bytes
        )
        .unwrap();
    }
    insta::assert_snapshot!(table);
}

/// The SCPS stacks beside plain TCP at one point (GEO delay, BER 1e-5, both
/// return links), one seed: what each extension buys shows as a change
/// here.
#[test]
fn lowrate_leo_geo_scps_stacks_at_geo_delay_and_high_ber() {
    let mut table = String::from("protocol    return     time_s  ratio  retransmitted  timeouts\n");
    let sets = [
        "protocol=[\"tcp-vj\",\"scps-vj\",\"scps-vegas\",\"scps-rate\"]",
        "link.delay=120ms",
        "link.ber=1e-5",
    ];
    for point in points("lowrate-leo-geo", &sets) {
        let result = run(&point, 1);
        assert_eq!(result.error, None, "{}", describe(&result));
        let param = |key: &str| result.params[key].to_string().trim_matches('"').to_owned();
        writeln!(
            table,
            "{:<11} {:<10} {:<7.2} {:<6.3} {:<14} {}",
            param("protocol"),
            param("link.return.rate"),
            result.duration_s,
            result.ratio,
            result.retransmitted_bytes,
            result.timeouts
        )
        .unwrap();
    }
    insta::assert_snapshot!(table);
}
