//! A route rate that follows the path (`rate = "auto"`): with no rate
//! configured, `scps-rate` end to end and between gateways comes close to
//! the same stack told the link's rate.

mod common;

use common::*;
use scps_sim::RunResult;

/// geo-8mbit at 600 ms and `ber` (100 MB unless `sets` says), `protocol`
/// with `sets`.
fn geo(protocol: &str, ber: &str, sets: &[&str]) -> scps_config::Point {
    let mut all = vec![
        format!("protocol=\"{protocol}\""),
        "link.rtt=\"600ms\"".to_owned(),
        format!("link.ber={ber}"),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    points("geo-8mbit", &all).remove(0)
}

/// The same point run with the tuned route and with `key = "auto"`,
/// both ratios printed.
fn tuned_and_auto(protocol: &str, key: &str, ber: &str, sets: &[&str], seed: u64) -> (RunResult, RunResult) {
    let tuned = run(&geo(protocol, ber, sets), seed);
    let auto_key = format!("{key}=\"auto\"");
    let auto_sets: Vec<&str> = sets.iter().copied().chain([auto_key.as_str()]).collect();
    let auto = run(&geo(protocol, ber, &auto_sets), seed);
    eprintln!(
        "{protocol} at BER {ber}, seed {seed}: tuned {:.3}, auto {:.3} of the limit",
        tuned.ratio, auto.ratio
    );
    (tuned, auto)
}

/// The default tier's check, on 10 MB instead of 100: `auto` carries the
/// transfer whole and is not far behind the tuned route. Its probing costs
/// a larger share of a short transfer (about 0.8 to 0.9 of the tuned
/// route over seeds 1 to 8), so the bar is lower than the goal the 100 MB
/// runs below hold: it catches a rate that fails to climb, not a few
/// percent.
#[test]
fn auto_carries_a_short_transfer_not_far_behind_the_configured_rate() {
    for (protocol, key) in [("scps-rate", "tcp.rate"), ("gw-scps-rate", "gateway.rate")] {
        for ber in ["0", "1e-5"] {
            let (tuned, auto) = tuned_and_auto(protocol, key, ber, &["workload.bytes=10MB"], seed());
            let what = describe(&auto);
            assert_eq!(tuned.error, None, "{}", describe(&tuned));
            assert_eq!(auto.error, None, "{what}");
            assert_eq!(auto.bytes, 10_000_000, "{what}");
            assert!(
                auto.ratio > 0.7 * tuned.ratio,
                "auto {:.3}, tuned {:.3}: {what}",
                auto.ratio,
                tuned.ratio
            );
        }
    }
}

#[test]
#[ignore = "slower tier: a benchmark, eight simulated 100 MB transfers, ~30 s"]
fn auto_comes_close_to_the_configured_rate_on_a_clean_and_a_noisy_geo_link() {
    for (protocol, key) in [("scps-rate", "tcp.rate"), ("gw-scps-rate", "gateway.rate")] {
        for ber in ["0", "1e-5"] {
            let (tuned, auto) = tuned_and_auto(protocol, key, ber, &[], seed());
            let what = describe(&auto);
            assert_eq!(auto.error, None, "{what}");
            assert_eq!(auto.bytes, 100_000_000, "{what}");
            // The goal: within 5% of the tuned route. Between
            // gateways on the noisy link one seed's run swings by a few
            // hundredths either way (it is met on the mean of eight seeds,
            // the next test): held there at 0.9 against regressions.
            let goal = if protocol == "gw-scps-rate" && ber != "0" {
                0.9
            } else {
                0.95
            };
            assert!(
                auto.ratio > goal * tuned.ratio,
                "auto {:.3}, tuned {:.3}: {what}",
                auto.ratio,
                tuned.ratio
            );
        }
    }
}

#[test]
#[ignore = "slower tier: a performance check over eight seeds, sixteen simulated 100 MB transfers, ~35 s"]
fn auto_between_gateways_on_a_noisy_link_meets_the_goal_over_eight_seeds() {
    // The goal, within 5% of the tuned route, on the mean of eight
    // seeds (one seed's run swings by a few hundredths: the link's token
    // bucket lets bursts through above its rate, and each probe risks a
    // queue). Each seed holds on its own too: a delay signal that took the
    // losses' repair for jitter once let some seeds' queues overflow, and
    // those runs took four times as long.
    const SEEDS: u64 = 8;
    let (mut tuned_sum, mut auto_sum) = (0.0, 0.0);
    for seed in 1..=SEEDS {
        let (tuned, auto) = tuned_and_auto("gw-scps-rate", "gateway.rate", "1e-5", &[], seed);
        let what = describe(&auto);
        assert_eq!(tuned.error, None, "{}", describe(&tuned));
        assert_eq!(auto.error, None, "{what}");
        assert!(auto.ratio > 0.85, "{:.3}: {what}", auto.ratio);
        tuned_sum += tuned.ratio;
        auto_sum += auto.ratio;
    }
    let (tuned, auto) = (tuned_sum / SEEDS as f64, auto_sum / SEEDS as f64);
    assert!(
        auto > 0.95 * tuned,
        "over seeds 1 to {SEEDS}: auto {auto:.3}, tuned {tuned:.3} of the limit"
    );
}
