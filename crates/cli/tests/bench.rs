//! `scps bench` in the simulator's world, as a user runs it: every run
//! recorded in its directory, a rerun resuming without redoing, shards
//! that merge into the whole, bad input refused before anything starts,
//! and a failed run shown as failed, never as a figure.

mod common;

use std::path::Path;
use std::process::Output;

use common::{TempDir, assert_refused, scps, text};
use serde_json::Value;

/// A small sweep: t1-geo at two BERs, two stacks, 300 kB.
const SWEEP: [&str; 7] = [
    "t1-geo",
    "--set",
    "protocol=[\"linux-reno\", \"gw-scps-rate\"]",
    "--set",
    "link.ber=[0, 1e-5]",
    "--set",
    "workload.bytes=300kB",
];

fn bench(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["bench"];
    args.extend(SWEEP);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    scps(&args)
}

fn jsonl(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record per line"))
        .collect()
}

#[test]
fn a_bench_records_every_run_and_a_rerun_does_only_what_is_missing() {
    let dir = TempDir::new("bench-resume");
    let out = dir.path().join("results");
    let first = bench(&out, &["--json"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let printed: Vec<serde_json::Map<String, Value>> = text(&first.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(printed.len(), 4, "two stacks at two BERs");
    for record in &printed {
        for field in [
            "id",
            "world",
            "stack",
            "scenario",
            "protocol",
            "params",
            "seed",
            "goodput_bps",
            "limit_bps",
            "ratio",
        ] {
            assert!(record.contains_key(field), "{field} in {record:?}");
        }
        assert_eq!(record["world"], "sim");
        assert_eq!(record["bytes"], 300_000, "verified whole: {record:?}");
    }
    let reno = printed.iter().find(|r| r["stack"] == "linux-reno").unwrap();
    assert_eq!(
        reno["protocol"], "tcp-vj",
        "Linux's Reno modelled by the engine's NewReno"
    );
    for file in [
        "index.html",
        "results.json",
        "results.csv",
        "results.jsonl",
        "meta.json",
    ] {
        assert!(out.join(file).exists(), "{file}");
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "a header and a line per run:\n{csv}");
    assert!(csv.starts_with("id,world,stack,scenario,protocol,params,seed,"));

    // The same command again runs nothing and reports the same.
    let again = bench(&out, &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("4 runs were in"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(jsonl(&out.join("results.jsonl")).len(), 4, "nothing run twice");
    let table = text(&again.stdout);
    assert!(
        table.contains("linux-reno") && table.contains("gw-scps-rate"),
        "{table}"
    );

    // A bench stopped after three runs (and part of a fourth line) does
    // the last one only.
    let results = out.join("results.jsonl");
    let lines = std::fs::read_to_string(&results).unwrap();
    let kept: Vec<&str> = lines.lines().take(3).collect();
    std::fs::write(&results, format!("{}\n{{\"id\": \"sim/t1", kept.join("\n"))).unwrap();
    let resumed = bench(&out, &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stderr).contains("3 runs were in"),
        "{}",
        text(&resumed.stderr)
    );
    assert!(
        text(&resumed.stderr).contains("1 ran now"),
        "{}",
        text(&resumed.stderr)
    );
    let ids = |path: &Path| {
        let mut ids: Vec<String> = serde_json::from_str::<Vec<serde_json::Map<String, Value>>>(
            &std::fs::read_to_string(path).unwrap(),
        )
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&out.join("results.json")).len(), 4);
}

#[test]
fn a_rerun_of_another_configuration_runs_again_instead_of_resuming() {
    let dir = TempDir::new("bench-reconfigured");
    let out = dir.path().join("results");
    let saratoga = |bytes: &str| {
        let set = format!("workload.bytes={bytes}");
        let args = [
            "bench",
            "geo-8mbit",
            "--world",
            "sim",
            "--set",
            "protocol=saratoga",
            "--set",
            "link.rtt=600ms",
            "--set",
            "link.ber=0",
            "--set",
            &set,
            "--json",
            "--out",
            out.to_str().unwrap(),
        ];
        let output = scps(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let printed: Vec<serde_json::Map<String, Value>> = text(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON lines"))
            .collect();
        (printed, text(&output.stderr))
    };
    let (first, _) = saratoga("100KB");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["bytes"], 100_000);
    // The same run of another pinned value is not the one recorded.
    let (second, stderr) = saratoga("200KB");
    assert!(
        stderr.contains("1 result in") && stderr.contains("is of another configuration"),
        "{stderr}"
    );
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0]["bytes"], 200_000);
    assert_ne!(second[0]["id"], first[0]["id"]);
    let reported: Vec<serde_json::Map<String, Value>> =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(reported.len(), 1);
    assert_eq!(
        reported[0]["bytes"], 200_000,
        "the report is of the command meta.json names"
    );
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    assert!(meta.contains("workload.bytes=200KB"), "{meta}");
    // That one resumes as itself.
    let (third, stderr) = saratoga("200KB");
    assert!(stderr.contains("1 runs were in"), "{stderr}");
    assert_eq!(third, second);
}

#[test]
fn shards_of_a_sweep_merge_into_the_whole() {
    let dir = TempDir::new("bench-shards");
    let whole = dir.path().join("whole");
    let output = bench(&whole, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut shards = Vec::new();
    for k in ["1/3", "2/3", "3/3"] {
        let out = dir.path().join(k.replace('/', "-of-"));
        let output = bench(&out, &["--shard", k]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        shards.push(out);
    }
    let sizes: Vec<usize> = shards
        .iter()
        .map(|s| jsonl(&s.join("results.jsonl")).len())
        .collect();
    assert_eq!(sizes, [2, 1, 1], "disjoint slices of four runs");
    let merged = dir.path().join("merged");
    let mut args = vec!["bench", "merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    let output = scps(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let by_id = |path: &Path| {
        let mut records = jsonl(&path.join("results.jsonl"));
        records.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        records
    };
    assert_eq!(
        by_id(&merged),
        by_id(&whole),
        "the simulator is deterministic: the same records"
    );
    assert!(
        std::fs::read_to_string(merged.join("index.html"))
            .unwrap()
            .contains("<svg")
    );
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let dir = TempDir::new("bench-refusals");
    let out = dir.path().join("never");
    let out_text = out.to_str().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["geo-9mbit"], "geo-9mbit: no scenario \"geo-9mbit\""),
        (
            &["geo-8mbit", "--set", "protocol=linux-vegas"],
            "stack \"linux-vegas\": not a stack",
        ),
        (
            &["geo-8mbit", "--set", "protocol=linux-bbr"],
            "stack linux-bbr: the sim cannot run it (the simulator has no model of BBR",
        ),
        (&["geo-8mbit", "--set", "link.colour=blue"], "geo-8mbit: "),
        (
            &["geo-8mbit", "--max-runs", "3"],
            "the sweep is 12 runs: at most 3",
        ),
        (
            &["geo-8mbit", "--max-runs", "0"],
            "0 would refuse every sweep: at least 1",
        ),
        (
            &["geo-8mbit", "--shard", "4/3"],
            "--shard 4/3: K/N with 1 <= K <= N",
        ),
        (&["merge", "--out", out_text], "merge: name the directories"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["bench"];
        all.extend(args);
        if args[0] != "merge" {
            all.extend(["--out", out_text]);
        }
        assert_refused(&all, expected);
        assert!(
            !out.exists(),
            "{args:?}: nothing written before the input is checked"
        );
    }
}

#[test]
fn a_failed_run_is_shown_with_its_cause_and_gives_no_figure() {
    let dir = TempDir::new("bench-failed");
    let out = dir.path().join("results");
    // Two seconds of virtual time cannot carry 300 kB across 525 ms of
    // round trips at BER 1e-5 on Reno.
    let output = bench(&out, &["--set", "time_limit=2s"]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "some runs failed: {}",
        text(&output.stderr)
    );
    let records = jsonl(&out.join("results.jsonl"));
    let failed: Vec<_> = records.iter().filter(|r| r.contains_key("error")).collect();
    assert!(!failed.is_empty(), "{records:?}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Failed runs"), "the report lists them");
    let table = text(&output.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("linux-reno") && l.contains("0.00001"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains("0/1") && row.contains("not finished within the time limit"),
        "{row}"
    );
}
