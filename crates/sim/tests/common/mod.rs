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

/// Two clients behind a router on the ground (client `i` talks to the
/// server's port 5001 + i), the stressed link, the server behind another
/// router; the gateways stand at the link's ends. Bit errors on the link
/// make a TCP connection across it resend.
pub const TWO_CLIENTS_BEHIND_ROUTERS: &str = r#"
name = "two-clients"
protocol = "gw-scps-rate"
[link]
rate = "2Mbit"
rtt = "500ms"
ber = 1e-6
[workload]
kind = "bulk"
bytes = "1MB"
[topology.nodes.a]
kind = "host"
role = "client"
interfaces.eth0 = "10.1.0.2/24"
[topology.nodes.b]
kind = "host"
role = "client"
interfaces.eth0 = "10.1.1.2/24"
[topology.nodes.ground]
kind = "router"
interfaces.a = "10.1.0.1/24"
interfaces.b = "10.1.1.1/24"
interfaces.sat = "10.9.0.1/30"
routes = { "10.2.0.0/16" = "sat" }
[topology.nodes.remote]
kind = "router"
interfaces.sat = "10.9.0.2/30"
interfaces.lan = "10.2.0.1/24"
routes = { "10.1.0.0/16" = "sat" }
[topology.nodes.server]
kind = "host"
role = "server"
interfaces.eth0 = "10.2.0.2/24"
[topology.links.la]
ends = ["a.eth0", "ground.a"]
[topology.links.lb]
ends = ["b.eth0", "ground.b"]
[topology.links.sat]
ends = ["ground.sat", "remote.sat"]
model = "link"
[topology.links.ls]
ends = ["remote.lan", "server.eth0"]
"#;
