//! Topologies: hosts behind routers, several clients sharing the stressed
//! link, and captures at any interface. The applications check every
//! byte they receive against the sender's pattern (a transfer that
//! arrives altered fails), so a run without error moved its data whole.

mod common;

use std::path::PathBuf;

use common::*;
use scps_config::Point;
use scps_config::sweep::parse_assignment;
use scps_sim::record::RouterFigures;
use scps_sim::{RunOptions, RunRecord};

const TWO_ROUTERS: &str = include_str!("../../../docs/examples/two-routers.toml");
const SHARED: &str = include_str!("../../../docs/examples/shared-bottleneck.toml");

fn points_of(text: &str, sets: &[&str]) -> Vec<Point> {
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).unwrap()).collect();
    scps_config::Scenario::from_text(text, "example", &sets)
        .expect("the example loads")
        .points
}

fn record(point: &Point, seed: u64, options: &RunOptions) -> RunRecord {
    let record = scps_sim::run_record(point, seed, options).expect("the run starts");
    assert_eq!(record.totals.error, None, "{}", describe(&record.totals));
    record
}

fn router<'a>(record: &'a RunRecord, name: &str) -> &'a RouterFigures {
    record
        .routers
        .iter()
        .find(|r| r.name == name)
        .expect("the router reports")
}

fn capture_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("scps-topology-{name}-{}.pcap", std::process::id()))
}

#[test]
fn a_transfer_through_two_routers_arrives_whole_and_the_routers_forward_every_packet() {
    for point in points_of(TWO_ROUTERS, &[]) {
        let record = record(&point, seed(), &RunOptions::default());
        let totals = &record.totals;
        assert_eq!(totals.bytes, 5_000_000, "{}", describe(totals));
        assert!(record.clients.is_empty(), "one client: no per-client figures");
        // The LANs lose nothing: r1 forwards all the client sends onto the
        // stressed link, and of what the link delivers back all that has
        // arrived when the run ends (the capture test counts exactly).
        let (forward, reverse) = (&totals.link.forward, &totals.link.reverse);
        assert!(
            forward.dropped_bit_errors > 0,
            "losses exercised: {}",
            describe(totals)
        );
        let r1 = router(&record, "r1");
        let r2 = router(&record, "r2");
        assert!(r1.forwarded > forward.packets && r1.forwarded <= forward.packets + reverse.delivered);
        assert!(r2.forwarded > reverse.packets && r2.forwarded <= forward.delivered + reverse.packets);
        assert!(r1.drops.is_empty() && r2.drops.is_empty(), "{:?}", record.routers);
        // The same link between two hosts gives the same transfer: the
        // routers and LANs add only microseconds.
        let text = TWO_ROUTERS.split("[topology").next().unwrap();
        let direct = record_of_text(text, point.protocol.label());
        assert_eq!(direct.bytes, totals.bytes);
        let slower = totals.duration_s / direct.duration_s;
        assert!((0.9..1.1).contains(&slower), "{slower}: {}", describe(totals));
    }
}

fn record_of_text(text: &str, protocol: &str) -> scps_sim::RunResult {
    let point = &points_of(text, &[&format!("protocol={protocol}")])[0];
    record(point, seed(), &RunOptions::default()).totals
}

#[test]
fn routers_take_one_from_the_ttl_and_a_capture_at_a_router_decodes_in_tshark() {
    // (tcp-vj: tshark reports SCPS-TP's SNACK option as malformed.)
    let point = &points_of(TWO_ROUTERS, &["protocol=tcp-vj", "workload.bytes=300KB"])[0];
    let captured = |at: &str| {
        let path = capture_path(at);
        let options = RunOptions {
            capture: Some(path.clone()),
            capture_at: Some(at.to_owned()),
            ..RunOptions::default()
        };
        (record(point, seed(), &options), path)
    };
    let (record, at_r1) = captured("r1.sat");
    let (at_r2_record, at_r2) = captured("r2.sat");
    let (at_server_record, at_server) = captured("server.eth0");
    assert_eq!(at_r2_record, record, "a capture changes nothing");
    assert_eq!(at_server_record, record, "a capture changes nothing");
    assert!(
        record.totals.retransmitted_bytes > 0,
        "repairs in the capture too"
    );

    scps_testbed::tshark::assert_clean(&at_r1, None, 200);
    scps_testbed::tshark::assert_clean(&at_r2, None, 200);
    let count = |path: &PathBuf, filter: &str| scps_testbed::tshark::count(path, None, filter);
    let (client, server) = ("ip.src == 10.1.0.1", "ip.src == 10.2.0.1");
    let link = &record.totals.link;
    // What leaves r1 by the link is what the link carried forward; what
    // arrives there came back over it. Every packet r1 forwarded crossed
    // its interface on the link, one way or the other.
    assert_eq!(count(&at_r1, client), link.forward.packets as usize);
    assert!(count(&at_r1, server) <= link.reverse.delivered as usize);
    assert_eq!(count(&at_r1, "ip") as u64, router(&record, "r1").forwarded);
    assert_eq!(count(&at_r2, server), link.reverse.packets as usize);
    assert_eq!(count(&at_r2, "ip") as u64, router(&record, "r2").forwarded);
    // One router has forwarded each packet on the link, whichever way.
    for path in [&at_r1, &at_r2] {
        assert_eq!(
            count(path, "ip.ttl == 63"),
            count(path, "ip"),
            "{}",
            path.display()
        );
    }
    // At the server, the client's packets have crossed both routers; the
    // server's own leave with the hop limit it sends with.
    let arrived = count(&at_server, client);
    assert!(arrived > 200);
    assert_eq!(count(&at_server, &format!("{client} && ip.ttl == 62")), arrived);
    assert_eq!(
        count(&at_server, &format!("{server} && ip.ttl == 64")),
        count(&at_server, server)
    );
    for path in [at_r1, at_r2, at_server] {
        std::fs::remove_file(path).ok();
    }
}

/// Jain's fairness index: 1 when all are equal, 1/n when one takes all.
fn jain(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    sum * sum / (values.len() as f64 * values.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn two_clients_share_a_bottleneck_fairly_and_both_transfers_arrive_whole() {
    let point = &points_of(SHARED, &[])[0];
    let first = seed();
    let mut indices = Vec::new();
    for seed in first..first + 8 {
        let record = record(point, seed, &RunOptions::default());
        let totals = &record.totals;
        let names: Vec<&str> = record.clients.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["c1", "c2"]);
        for client in &record.clients {
            assert_eq!(client.bytes, 2_000_000, "seed {seed}: {client:?}");
            assert_eq!(client.error, None, "seed {seed}");
        }
        // Totals: bytes summed, timed from the first start (both start at
        // once) to the last finish.
        assert_eq!(totals.bytes, 4_000_000);
        let longest = record.clients.iter().map(|c| c.duration_s).fold(0.0, f64::max);
        assert_eq!(totals.duration_s, longest, "seed {seed}");
        let retransmitted: u64 = record.clients.iter().map(|c| c.retransmitted_bytes).sum();
        assert_eq!(totals.retransmitted_bytes, retransmitted, "seed {seed}");
        let goodputs: Vec<f64> = record.clients.iter().map(|c| c.goodput_bps).collect();
        let index = jain(&goodputs);
        println!("seed {seed}: goodputs {goodputs:?}, Jain's index {index:.3}");
        assert!(
            index > 0.85,
            "seed {seed}: goodputs {goodputs:?} (replay: SCPS_SEED={seed})"
        );
        indices.push(index);
    }
    let mean = indices.iter().sum::<f64>() / indices.len() as f64;
    assert!(mean > 0.95, "mean Jain's index {mean} over seeds {first}..");
    assert_eq!(
        record(point, first, &RunOptions::default()),
        record(point, first, &RunOptions::default()),
        "seed {first}: the same seed gives the same run"
    );
}

/// `SHARED` with its `[workload]` table replaced.
fn shared_with(workload: &str) -> Point {
    let start = SHARED.find("[workload]").unwrap();
    let end = SHARED.find("[tcp]").unwrap();
    let text = format!("{}{workload}\n{}", &SHARED[..start], &SHARED[end..]);
    points_of(&text, &[]).remove(0)
}

#[test]
fn every_client_streams_messages_and_the_totals_pool_them() {
    let point = shared_with(
        "[workload]\nkind = \"messages\"\nsize = 512\nrate = \"64kbit\"\nduration = \"60s\"\ntwo_way = true\n",
    );
    let record = record(&point, seed(), &RunOptions::default());
    let totals = record.totals.messages.as_ref().expect("message figures");
    assert_eq!(totals.forward.offered_bps, 2.0 * 64_000.0, "two clients offer");
    let mut messages = [0, 0];
    for client in &record.clients {
        let figures = client.messages.as_ref().expect("each client's messages");
        let reverse = figures.reverse.as_ref().expect("two-way");
        // 64 kbit/s of 512-byte messages for 60 s: 937 each way, all
        // through a link with room for them.
        for flow in [&figures.forward, reverse] {
            assert!((930..=938).contains(&flow.messages), "{}: {flow:?}", client.name);
            assert_eq!(flow.offered_bps, 64_000.0);
        }
        messages[0] += figures.forward.messages;
        messages[1] += reverse.messages;
    }
    assert_eq!(totals.forward.messages, messages[0]);
    assert_eq!(totals.reverse.as_ref().unwrap().messages, messages[1]);
    let bytes: u64 = record.clients.iter().map(|c| c.bytes).sum();
    assert_eq!(record.totals.bytes, bytes);
}

#[test]
fn every_client_fetches_and_the_totals_pool_the_fetches() {
    let point = shared_with(
        "[workload]\nkind = \"fetches\"\nclients = 3\ninterval = \"10s\"\nsize = \"20KB\"\n\
         size_min = \"1KB\"\nsize_max = \"100KB\"\nduration = \"60s\"\n",
    );
    let record = record(&point, seed(), &RunOptions::default());
    let totals = record.totals.fetches.as_ref().expect("fetch figures");
    let per_client: Vec<usize> = record
        .clients
        .iter()
        .map(|c| c.fetches.as_ref().expect("each client's fetches").fetches)
        .collect();
    assert!(per_client.iter().all(|&n| n > 5), "{per_client:?}");
    assert_eq!(totals.fetches, per_client.iter().sum::<usize>());
    assert_eq!(totals.fetches_failed, 0);
    let bytes: u64 = record.clients.iter().map(|c| c.bytes).sum();
    assert_eq!(record.totals.bytes, bytes);
}

#[test]
fn the_json_record_adds_clients_and_routers_only_where_there_are_some() {
    let plain = &points(
        "lowrate-leo-geo",
        &[
            "protocol=tcp-vj",
            "link.delay=3ms",
            "link.ber=0",
            "link.return.rate=115200bps",
        ],
    )[0];
    let record = record(plain, seed(), &RunOptions::default());
    assert_eq!(
        serde_json::to_value(&record).unwrap(),
        serde_json::to_value(&record.totals).unwrap(),
        "the two-host world prints what it always printed"
    );
    let shared = record_json(&points_of(SHARED, &[])[0]);
    let clients = shared["clients"].as_array().expect("per-client figures");
    assert_eq!(clients.len(), 2);
    assert_eq!(clients[0]["name"], "c1");
    assert!(clients[0]["goodput_bps"].as_f64().unwrap() > 0.0);
    assert_eq!(shared["routers"][0]["name"], "r1");
    assert!(shared["routers"][0]["forwarded"].as_u64().unwrap() > 0);
    assert_eq!(shared["bytes"], 4_000_000);
}

fn record_json(point: &Point) -> serde_json::Value {
    serde_json::to_value(record(point, seed(), &RunOptions::default())).unwrap()
}
