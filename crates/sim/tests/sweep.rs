//! A scenario's runs on several threads: records come back, and are handed
//! over, in the order of the runs, with the figures a lone run gives; a
//! reader that fails stops the sweep with its error.

mod common;

use common::*;
use scps_config::Scenario;
use scps_sim::sweep::{self, SweepError};

fn small_sweep() -> Scenario {
    let sets: Vec<_> = [
        "protocol=tcp-vj",
        "workload.bytes=100KB",
        "link.ber=0",
        "link.return.rate=115200bps",
        r#"link.delay=["3ms","120ms","300ms"]"#,
    ]
    .iter()
    .map(|set| scps_config::sweep::parse_assignment(set).expect("valid --set"))
    .collect();
    Scenario::load("lowrate-leo-geo", &sets).expect("the scenario loads")
}

#[test]
fn records_come_in_the_order_of_the_runs_with_a_lone_runs_figures() {
    let seed = seed();
    let scenario = small_sweep();
    let plan = sweep::plan(&scenario, 2, seed, None);
    let seeds: Vec<u64> = plan.iter().map(|run| run.seed).collect();
    assert_eq!(seeds, [seed, seed + 1, seed, seed + 1, seed, seed + 1]);
    let mut delivered = Vec::new();
    let records = sweep::run_in_order(&plan, 3, |record| {
        delivered.push((record.totals.seed, record.totals.duration_s));
        Ok::<(), ()>(())
    })
    .expect("every run completes");
    let expected: Vec<(u64, f64)> = plan
        .iter()
        .map(|run| {
            let alone = common::run(run.point, run.seed);
            (alone.seed, alone.duration_s)
        })
        .collect();
    assert_eq!(delivered, expected, "seed {seed}");
    let returned: Vec<(u64, f64)> = records
        .iter()
        .map(|r| (r.totals.seed, r.totals.duration_s))
        .collect();
    assert_eq!(returned, expected, "seed {seed}");
    // The three delays give three durations: the order is the points'.
    assert!(expected[0].1 < expected[2].1 && expected[2].1 < expected[4].1);
}

#[test]
fn a_reader_that_fails_stops_the_sweep_with_its_error() {
    let seed = seed();
    let scenario = small_sweep();
    let plan = sweep::plan(&scenario, 2, seed, None);
    let mut seen = 0;
    let outcome = sweep::run_in_order(&plan, 2, |_| {
        seen += 1;
        if seen == 2 {
            Err("the reader has gone")
        } else {
            Ok(())
        }
    });
    match outcome {
        Err(SweepError::Deliver(error)) => assert_eq!(error, "the reader has gone"),
        other => panic!("seed {seed}: expected the reader's error, got {other:?}"),
    }
    assert_eq!(seen, 2, "nothing is handed over after the reader failed");
}
