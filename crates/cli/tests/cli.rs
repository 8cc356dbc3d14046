//! `scps sim` as a user runs it.

mod common;

use std::process::Command;

use common::{assert_refused, scps, text};

const ONE_POINT: [&str; 10] = [
    "--set",
    "protocol=tcp-vj",
    "--set",
    "link.delay=120ms",
    "--set",
    "link.ber=0",
    "--set",
    "link.return.rate=115200bps",
    "--set",
    "workload.bytes=100KB",
];

#[test]
fn json_lines_carry_the_figures_of_every_run() {
    let mut args = vec!["sim", "lowrate-leo-geo", "--json", "--runs", "2", "--seed", "7"];
    args.extend(ONE_POINT);
    let output = scps(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<serde_json::Value> = text(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2, "one object per run");
    for (run, line) in lines.iter().enumerate() {
        for field in [
            "scenario",
            "protocol",
            "params",
            "seed",
            "bytes",
            "duration_s",
            "goodput_bps",
            "limit_bps",
            "ratio",
            "retransmitted_bytes",
        ] {
            assert!(line.get(field).is_some(), "missing {field} in {line}");
        }
        assert_eq!(line["scenario"], "lowrate-leo-geo");
        assert_eq!(line["seed"], 7 + run as u64, "run i uses seed S + i");
        assert_eq!(line["params"]["link.delay"], "120ms");
        assert_eq!(line["bytes"], 100_000);
        let ratio = line["ratio"].as_f64().unwrap();
        let expected = line["goodput_bps"].as_f64().unwrap() / line["limit_bps"].as_f64().unwrap();
        assert!((ratio - expected).abs() < 1e-9);
    }
}

#[test]
fn message_runs_add_their_figures() {
    let output = scps(&[
        "sim",
        "iridium-3ch",
        "--json",
        "--set",
        "workload.rate=1024bps",
        "--set",
        "workload.duration=5min",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let line: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    for field in [
        "offered_bps",
        "actual_bps",
        "latency_p50_s",
        "latency_p95_s",
        "latency_max_s",
    ] {
        assert!(line[field].is_number(), "missing {field} in {line}");
    }
}

#[test]
fn the_table_shows_the_limit_and_the_ratio() {
    let mut args = vec!["sim", "lowrate-leo-geo"];
    args.extend(ONE_POINT);
    let output = scps(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("goodput") && stdout.contains("limit") && stdout.contains("ratio"),
        "{stdout}"
    );
    assert!(
        stdout.contains("111.21k"),
        "the limit of a 115200 bit/s link: {stdout}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs_naming_key_value_and_what_is_allowed() {
    let cases: [(&[&str], &str); 9] = [
        (
            &["sim", "lowrate-leo-geo", "--set", "link.speed=5"],
            "link.speed: unknown field `speed`, expected one of",
        ),
        (
            &["sim", "lowrate-leo-geo", "--set", "link.delay=120"],
            "link.delay: invalid duration \"120\": expected a number with a unit",
        ),
        (
            &["sim", "lowrate-leo-geo", "--set", "link.ber=1.5"],
            "invalid bit-error rate \"1.5\"",
        ),
        (
            &["sim", "lowrate-leo-geo", "--set", "protocol=tcp-3"],
            "protocol = \"tcp-3\": one of tcp-vj, tcp-cubic",
        ),
        (&["sim", "no-such-scenario"], "no scenario \"no-such-scenario\""),
        (
            &["sim", "lowrate-leo-geo", "--set", "link.rate=0"],
            "link.rate: rate \"0\" is out of range: from 1 bit/s to 1000 Gbit/s",
        ),
        (
            &["sim", "lowrate-leo-geo", "--set", "link.mtu=70000"],
            "link.mtu = 70000: 576 to 65535 bytes",
        ),
        (
            &["sim", "lowrate-leo-geo", "--set", "time_limit=0s"],
            "time_limit = 0ns: more than 0",
        ),
        (
            &["sim", "lowrate-leo-geo", "--jobs", "0"],
            "invalid value '0' for '--jobs <JOBS>': 0 is not in 1..=65535",
        ),
    ];
    for (args, expected) in cases {
        let output = scps(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "nothing ran: {}", text(&output.stdout));
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_runs_quietly() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_scps"))
        // Far more than a pipe holds (64 KiB), so the writer meets the close.
        .args(["sim", "lowrate-leo-geo", "--json", "--runs", "10"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("scps runs");
    // Read one line, as `head -1` would, then close the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = Vec::new();
    let mut byte = [0u8];
    while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        first.push(byte[0]);
    }
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    assert!(text(&first).starts_with("{\"scenario\":\"lowrate-leo-geo\""));
    assert!(output.status.success(), "{:?}", output.status);
    assert_eq!(
        text(&output.stderr),
        "",
        "nothing to say to a reader that has gone"
    );
}

#[test]
fn a_capture_to_a_device_is_refused_before_any_run_and_makes_no_file() {
    for args in [
        vec!["sim", "geo-8mbit", "--pcap", "/dev/full"],
        vec!["sim", "geo-8mbit", "--pcap", "/dev/full", "--runs", "2"],
    ] {
        assert_refused(&args, "--pcap /dev/full is not a regular file");
    }
    assert!(!std::path::Path::new("/dev/full-0").exists());
}

#[test]
fn a_duplicate_key_is_named_with_its_line_by_every_configuration_reader() {
    let dir = common::TempDir::new("cli-duplicate-key");
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let scenario = file(
        "s.toml",
        "name = \"x\"\n[link]\nrate = \"1Mbit\"\nrate = \"2Mbit\"\n",
    );
    let gateway = file(
        "g.toml",
        "[link]\nudp = \"0.0.0.0:7100\"\nudp = \"0.0.0.0:7101\"\n",
    );
    let emulator = file(
        "e.toml",
        "[emulate]\nside_a = \"a0\"\nside_b = \"b0\"\nside_a = \"a1\"\n",
    );
    for (args, expected) in [
        (
            vec!["sim", scenario.as_str()],
            "line 4, column 1: duplicate key `rate`",
        ),
        (
            vec!["gateway", "--check", "--config", gateway.as_str()],
            "line 3, column 1: duplicate key `udp`",
        ),
        (
            vec!["emulate", "--config", emulator.as_str()],
            "line 4, column 1: duplicate key `side_a`",
        ),
    ] {
        assert_refused(&args, expected);
    }
}

#[test]
fn errors_in_a_scenario_file_name_the_file() {
    let path = std::env::temp_dir().join(format!("scps-cli-test-{}.toml", std::process::id()));
    std::fs::write(&path, "name = \"x\"\n[link]\nmtu = 20\n").unwrap();
    let output = scps(&["sim", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!("scps: {}: top level: missing field `protocol`\n", path.display())
    );
}

#[test]
fn runs_that_fail_are_reported_and_the_exit_status_says_so() {
    let mut args = vec!["sim", "lowrate-leo-geo", "--json", "--set", "time_limit=2s"];
    args.extend(ONE_POINT);
    let output = scps(&args);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let line: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    let error = line["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("not finished within the time limit of 2s"),
        "{line}"
    );
    assert!(text(&output.stderr).contains("1 of 1 runs did not complete"));
}

#[test]
fn absurd_run_counts_and_unwritable_captures_stop_before_any_run() {
    let output = scps(&["sim", "t1-geo", "--runs", "4000000000"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("--runs = 4000000000: 1 to 10000 runs per point"),
        "{}",
        text(&output.stderr)
    );
    let mut args = vec!["sim", "lowrate-leo-geo", "--pcap", "/no/such/dir/x.pcap"];
    args.extend(ONE_POINT);
    let output = scps(&args);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(
        text(&output.stderr).contains("cannot write capture /no/such/dir/x.pcap"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_capture_at_an_interface_the_topology_lacks_stops_before_any_run() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/two-routers.toml"
    );
    let capture = std::env::temp_dir().join(format!("scps-cli-pcap-at-{}.pcap", std::process::id()));
    let capture = capture.to_str().unwrap();
    let output = scps(&["sim", example, "--pcap", capture, "--pcap-at", "r1.wan"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(!std::path::Path::new(capture).exists(), "no capture file begun");
    assert!(
        text(&output.stderr)
            .contains("--pcap-at = r1.wan: an interface of r1; it has no \"wan\" (interfaces: lan, sat)"),
        "{}",
        text(&output.stderr)
    );
    // At one it has, the run goes on and the capture holds both ways.
    let args = [
        "sim",
        example,
        "--set",
        "protocol=tcp-vj",
        "--set",
        "workload.bytes=100KB",
    ];
    let output = scps(&[&args[..], &["--pcap", capture, "--pcap-at", "r2.sat", "--json"]].concat());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    let forwarded = record["routers"][1]["forwarded"].as_u64().expect("r2 reports");
    let packets = scps_testbed::tshark::count(std::path::Path::new(capture), None, "ip");
    assert_eq!(
        packets as u64, forwarded,
        "r2 forwards every packet crossing r2.sat"
    );
    std::fs::remove_file(capture).ok();
}
