//! The `gw-` protocol labels of scenarios: `scps sim` puts two gateways
//! (the real gateway's sans-IO node) at the ends of the stressed link, the
//! hosts run `tcp-cubic`, and the figures of the run are judged as any
//! other label's. The split connection must deliver every byte checked,
//! reproduce what our stack does end to end across the link, and carry
//! many users of one topology behind one gateway pair.

mod common;

use common::{describe, points, seed};
use scps_sim::{RunOptions, RunRecord};

fn record(point: &scps_config::Point, seed: u64) -> RunRecord {
    scps_sim::run_record(point, seed, &RunOptions::default()).expect("the run starts")
}

#[test]
fn across_geo_bit_errors_the_rate_gateways_do_what_scps_rate_does_end_to_end() {
    let seed = seed();
    let sets = [
        "protocol=[\"gw-scps-rate\", \"scps-rate\", \"tcp-cubic\"]",
        "link.rtt=600ms",
        "link.ber=1e-5",
        "workload.bytes=20MB",
    ];
    let records: Vec<RunRecord> = points("geo-8mbit", &sets)
        .iter()
        .map(|p| record(p, seed))
        .collect();
    let [gateways, end_to_end, cubic] = [0, 1, 2].map(|i| &records[i].totals);
    for result in [gateways, end_to_end, cubic] {
        assert_eq!(result.error, None, "{}", describe(result));
        assert_eq!(
            result.bytes,
            20_000_000,
            "every byte, checked: {}",
            describe(result)
        );
    }
    println!(
        "BER 1e-5, 600 ms: gw-scps-rate {:.3}, scps-rate {:.3}, tcp-cubic {:.3} of the limit",
        gateways.ratio, end_to_end.ratio, cubic.ratio
    );
    assert!(gateways.ratio > 0.85, "{}", describe(gateways));
    assert!(
        gateways.ratio > 0.9 * end_to_end.ratio,
        "the split connection does what our stack does end to end: {} against {}",
        gateways.ratio,
        end_to_end.ratio
    );
    assert!(
        gateways.ratio > 10.0 * cubic.ratio,
        "{} against CUBIC's {}",
        gateways.ratio,
        cubic.ratio
    );
    // gwA sent the data across and resent what the bit errors took; the
    // hosts' connections end at the gateways.
    let [gw_a, gw_b] = [&records[0].gateways[0], &records[0].gateways[1]];
    assert_eq!((gw_a.name, gw_b.name), ("gwA", "gwB"));
    assert!(gw_a.link_retransmitted_bytes > 0, "{gw_a:?}");
    assert_eq!(gw_b.link_retransmitted_bytes, 0, "gwB sends only ACKs: {gw_b:?}");
    assert!(gateways.retransmitted_bytes >= gw_a.link_retransmitted_bytes);
    assert!(
        gateways.link.forward.dropped_bit_errors > 0,
        "the stressed link is the gateways'"
    );
    assert!(records[1].gateways.is_empty(), "no gateways end to end");
}

#[test]
fn many_users_fetch_through_one_gateway_pair() {
    let seed = seed();
    let sets = [
        "protocol=[\"gw-scps-rate\", \"tcp-cubic\"]",
        "link.ber=1e-5",
        "workload.duration=10min",
    ];
    let points = points("complex-35ws", &sets);
    let [through, direct] = [0, 1].map(|i| record(&points[i], seed));
    for record in [&through, &direct] {
        let result = &record.totals;
        assert_eq!(result.error, None, "{}", describe(result));
        let fetches = result.fetches.as_ref().expect("fetch figures");
        assert!(fetches.fetches > 50, "{}", describe(result));
        assert_eq!(fetches.fetches_failed, 0, "{}", describe(result));
    }
    let mean = |r: &RunRecord| r.totals.fetches.as_ref().unwrap().download_mean_s;
    println!(
        "complex-35ws, 10 min, BER 1e-5: mean download {:.1} s through gw-scps-rate, {:.1} s over CUBIC",
        mean(&through),
        mean(&direct)
    );
    assert!(
        mean(&through) < 0.7 * mean(&direct),
        "{} against {}",
        mean(&through),
        mean(&direct)
    );
    // Every connection of the clients went through the pair: what gwA
    // split, closed or still open, gwB split too, none failed.
    let [gw_a, gw_b] = [&through.gateways[0], &through.gateways[1]];
    let splits = |g: &scps_sim::GatewayFigures| g.closed + g.reset + g.open as u64;
    assert!(splits(gw_a) > 0, "{gw_a:?}");
    assert_eq!(splits(gw_a), splits(gw_b), "{gw_a:?} {gw_b:?}");
    assert_eq!((gw_a.open_failed, gw_b.open_failed), (0, 0));
}

#[test]
fn clients_behind_routers_reach_the_server_through_the_gateways() {
    // The gateways stand between the routers and the link.
    let point = common::point_from(common::TWO_CLIENTS_BEHIND_ROUTERS);
    let record = record(&point, seed());
    assert_eq!(record.totals.error, None, "{}", describe(&record.totals));
    assert_eq!(record.totals.bytes, 2_000_000, "both clients' megabyte, checked");
    assert_eq!(record.clients.len(), 2);
    let routers: Vec<u64> = record.routers.iter().map(|r| r.forwarded).collect();
    assert!(
        routers.iter().all(|&f| f > 0),
        "the routers forwarded: {routers:?}"
    );
    assert!(record.totals.ratio > 0.7, "{}", describe(&record.totals));
}

#[test]
fn a_gateway_run_is_deterministic() {
    let sets = [
        "protocol=gw-scps-vegas",
        "link.rtt=300ms",
        "link.ber=1e-6",
        "workload.bytes=2MB",
    ];
    let point = &points("geo-8mbit", &sets)[0];
    let first = record(point, 7);
    assert_eq!(first, record(point, 7), "the same seed, the same record");
    assert_ne!(
        first.totals,
        record(point, 8).totals,
        "another seed draws other errors"
    );
}

#[test]
fn serving_the_shortest_first_brings_the_mean_download_time_down() {
    let seed = seed();
    let sets = [
        "protocol=gw-scps-rate",
        "link.ber=1e-9",
        "workload.duration=10min",
        "gateway.rate_order=[\"turns\", \"shortest\"]",
    ];
    let points = points("complex-35ws", &sets);
    let [turns, shortest] = [0, 1].map(|i| record(&points[i], seed).totals);
    let fetches = |r: &scps_sim::RunResult| r.fetches.clone().expect("fetch figures");
    let (turns_f, shortest_f) = (fetches(&turns), fetches(&shortest));
    assert_eq!(turns_f.fetches, shortest_f.fetches, "the same requests");
    assert_eq!((turns_f.fetches_failed, shortest_f.fetches_failed), (0, 0));
    let ideal = turns_f.download_ideal_mean_s.expect("the ideal of the load");
    println!(
        "mean download: in turns {:.1} s, shortest first {:.1} s, a fairly shared link {ideal:.1} s",
        turns_f.download_mean_s, shortest_f.download_mean_s
    );
    // In turns, the gateways come near a fairly shared link (and cannot
    // beat it); serving the shortest first beats it.
    assert!(
        turns_f.download_mean_s > ideal,
        "{} against {ideal}",
        turns_f.download_mean_s
    );
    assert!(
        turns_f.download_mean_s < 1.5 * ideal,
        "{} against {ideal}",
        turns_f.download_mean_s
    );
    assert!(
        shortest_f.download_mean_s < 0.8 * turns_f.download_mean_s,
        "{} against {}",
        shortest_f.download_mean_s,
        turns_f.download_mean_s
    );
}
