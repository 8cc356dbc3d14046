//! Shared by the simulator tests: scenario points and the seed to use.

#![allow(dead_code)]

use scps_config::sweep::parse_assignment;
use scps_config::{Point, Scenario};
use scps_sim::{RunOptions, RunResult};

/// The seed of randomised tests: `SCPS_SEED` replays a failure.
pub fn seed() -> u64 {
    std::env::var("SCPS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// The points of a built-in scenario with some keys pinned.
pub fn points(scenario: &str, sets: &[&str]) -> Vec<Point> {
    let sets: Vec<_> = sets
        .iter()
        .map(|s| parse_assignment(s).expect("valid --set"))
        .collect();
    Scenario::load(scenario, &sets).expect("scenario loads").points
}

/// The single point of a scenario given as TOML text.
pub fn point_from(text: &str) -> Point {
    let mut points = Scenario::from_text(text, "test", &[])
        .expect("test scenario is valid")
        .points;
    assert_eq!(points.len(), 1, "a one-point scenario");
    points.remove(0)
}

pub fn run(point: &Point, seed: u64) -> RunResult {
    scps_sim::run(point, seed, &RunOptions::default()).expect("the run starts")
}

/// A description of a run for assertion messages, with how to replay it.
pub fn describe(result: &RunResult) -> String {
    format!(
        "{} {} {:?} (replay: SCPS_SEED={} or scps sim {} --seed {})",
        result.scenario, result.protocol, result.params, result.seed, result.scenario, result.seed
    )
}
