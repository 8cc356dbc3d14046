//! The bench's report as a reader sees it: rendered by a real browser
//! (Debian's headless Chromium), every plot must show its axes with their
//! ticks and its data inside them, every entry of its legend drawn on it,
//! and the screenshot must show the data in colour in every plot's place:
//! a blank or broken plot fails. A report of the quick default's kind of
//! data (one round-trip time, two bit-error rates, four stacks, two runs
//! stopped at their time limit) must draw bars with the limit over each
//! group, name the bit-error rates on its axis, tell its series apart in
//! colour-blind-safe colours, and draw a time-sequence graph of every
//! captured transfer on axes fitted to it.

mod common;
#[path = "common/report_check.rs"]
mod report_check;

use std::path::Path;

use common::TempDir;
use report_check::{assert_every_plot_renders, plots_titled};
use serde_json::{Value, json};

/// `scps ARGS...`, which must succeed.
fn scps_ok(args: &[&str]) {
    let output = common::scps(args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        common::text(&output.stderr)
    );
}

#[test]
fn every_plot_of_the_report_renders_with_its_axes_and_its_data() {
    let dir = TempDir::new("bench-report");
    let out = dir.path().join("report");
    let out_text = out.to_str().unwrap();
    // A bulk sweep (goodput against RTT, the time-sequence graphs), a
    // message stream (offered against actual, latency) and many users'
    // fetches (mean download time), small enough to be quick.
    scps_ok(&[
        "bench",
        "geo-8mbit",
        "--set",
        "protocol=[\"linux-cubic\", \"gw-scps-rate\"]",
        "--set",
        "link.rtt=[\"100ms\", \"600ms\"]",
        "--set",
        "link.ber=1e-5",
        "--set",
        "workload.bytes=2MB",
        "--out",
        out_text,
    ]);
    scps_ok(&[
        "bench",
        "iridium-3ch",
        "--set",
        "workload.rate=[\"2048bps\", \"6144bps\"]",
        "--set",
        "workload.duration=5min",
        "--out",
        out_text,
    ]);
    scps_ok(&[
        "bench",
        "complex-35ws",
        "--set",
        "link.ber=[1e-9, 1e-5]",
        "--set",
        "workload.duration=5min",
        "--out",
        out_text,
    ]);
    let merged = dir.path().join("merged");
    scps_ok(&["bench", "merge", out_text, "--out", merged.to_str().unwrap()]);
    let checked = assert_every_plot_renders(&merged.join("index.html"), dir.path());
    let titles: Vec<&str> = checked["plots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    println!("plots: {titles:#?}");
    for expected in [
        "geo-8mbit: goodput against round-trip time, BER 1e-5",
        "geo-8mbit: time-sequence of linux-cubic (sim)",
        "geo-8mbit: time-sequence of gw-scps-rate (sim)",
        "iridium-3ch: actual rate (bit/s) against offered rate",
        "iridium-3ch: median latency (s) against offered rate",
        "complex-35ws: mean download time against bit-error rate",
    ] {
        assert!(
            titles.iter().any(|t| t.starts_with(expected)),
            "{expected} in {titles:?}"
        );
    }
    // Two values on the x axis: lines, not bars.
    for plot in plots_titled(&checked, "geo-8mbit: goodput") {
        assert_eq!(plot["kind"], "lines", "{plot}");
        assert_eq!(plot["bars"], 0, "{plot}");
    }
}

/// The stacks of the quick default, each with its goodput (bit/s) at BER
/// 0, and at BER 1e-5 the bytes it moved, in how long, and whether it
/// was stopped at its 60 s limit.
const QUICK: [(&str, f64, f64, f64, bool); 4] = [
    ("linux-cubic", 5.67e6, 4.5e6, 60.0, true),
    ("linux-bbr", 5.2e6, 7.0e6, 60.0, true),
    ("gw-scps-rate", 7.5e6, 1e7, 12.3, false),
    ("gw-scps-vegas", 7.1e6, 1e7, 23.4, false),
];

/// The physical limit of geo-8mbit's link at BER 0 and 1e-5.
const LIMITS: [f64; 2] = [7_722_666.666_666_667, 6_850_000.0];

/// A bench record as the testbed writes one, of geo-8mbit at 600 ms.
fn quick_record(stack: &str, ber: f64, bytes: f64, seconds: f64, stopped: bool) -> Value {
    let limit = if ber == 0.0 { LIMITS[0] } else { LIMITS[1] };
    let goodput = bytes * 8.0 / seconds;
    // As a scenario's file gives them: 0, an integer, and 0.00001.
    let ber_value = if ber == 0.0 { json!(0) } else { json!(ber) };
    let mut record = json!({
        "id": format!("testbed/geo-8mbit/{stack}/link.rtt=600ms/link.ber={ber_value}/seed=1/config=0"),
        "world": "testbed",
        "stack": stack,
        "scenario": "geo-8mbit",
        "protocol": stack,
        "params": {"protocol": stack, "link.rtt": "600ms", "link.ber": ber_value},
        "seed": 1,
        "retransmitted_bytes": 20_000,
        // Counted in whole bytes, as every world records them.
        "bytes": bytes as u64,
        "duration_s": seconds,
        "goodput_bps": goodput,
        "limit_bps": limit,
        "ratio": goodput / limit,
    });
    if stopped {
        record["stopped_s"] = json!(seconds);
    }
    record
}

/// A pcap capture (raw IP, headers only) of a transfer of `bytes` in
/// segments of 20,000 from 0.6 s to `last` s, one of them sent again
/// half way.
fn write_capture(path: &Path, bytes: f64, last: f64) {
    const SEGMENT: u32 = 20_000;
    let mut pcap: Vec<u8> = Vec::new();
    pcap.extend(0xa1b2_c3d4u32.to_le_bytes());
    pcap.extend(2u16.to_le_bytes());
    pcap.extend(4u16.to_le_bytes());
    pcap.extend([0u8; 8]);
    pcap.extend(65_535u32.to_le_bytes());
    pcap.extend(101u32.to_le_bytes()); // LINKTYPE_RAW: the IP header first
    let count = (bytes / f64::from(SEGMENT)) as u32;
    let mut packet = |time: f64, seq: u32| {
        let micros = (time * 1e6).round() as u64;
        pcap.extend(((micros / 1_000_000) as u32).to_le_bytes());
        pcap.extend(((micros % 1_000_000) as u32).to_le_bytes());
        pcap.extend(40u32.to_le_bytes());
        pcap.extend((40 + SEGMENT).to_le_bytes());
        pcap.extend([
            0x45, 0, 0x4e, 0x48, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        pcap.extend([0x13, 0x89, 0x13, 0x8a]);
        pcap.extend(seq.to_be_bytes());
        pcap.extend([0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    };
    let start = 1_000u32;
    for i in 0..count {
        let time = 0.6 + (last - 0.6) * f64::from(i) / f64::from(count - 1);
        packet(time, start + i * SEGMENT);
        if i == count / 2 {
            packet(time + 0.01, start + SEGMENT);
        }
    }
    std::fs::write(path, pcap).unwrap();
}

/// A number as a tick shows it (`25`, `2.5k`, `8M`).
fn tick_value(text: &str) -> f64 {
    let (number, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    number
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("tick {text:?}: {e}"))
        * scale
}

#[test]
fn the_quick_default_s_report_draws_bars_the_limit_each_ber_and_every_capture() {
    let dir = TempDir::new("bench-report-quick");
    // The quick default's kind of records, as a testbed bench leaves them:
    // four stacks at 600 ms and BER 0 and 1e-5, the Linux stacks stopped at
    // their 60 s limit at 1e-5, where each run captured its transfer.
    let bench = dir.path().join("bench");
    std::fs::create_dir_all(bench.join("captures")).unwrap();
    let mut lines = String::new();
    for (stack, clean, bytes, seconds, stopped) in QUICK {
        let clean = quick_record(stack, 0.0, 1e7, 1e7 * 8.0 / clean, false);
        let mut lossy = quick_record(stack, 1e-5, bytes, seconds, stopped);
        let capture = format!("captures/{stack}.pcap");
        write_capture(&bench.join(&capture), bytes, seconds - 0.3);
        lossy["capture"] = json!(capture);
        for record in [clean, lossy] {
            lines.push_str(&record.to_string());
            lines.push('\n');
        }
    }
    std::fs::write(bench.join("results.jsonl"), lines).unwrap();
    let report = dir.path().join("report");
    scps_ok(&[
        "bench",
        "merge",
        bench.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    let checked = assert_every_plot_renders(&report.join("index.html"), dir.path());

    // One value on the x axis: a bar per stack and BER, grouped by BER
    // on the axis, the limit over each group, the stopped runs' bars
    // marked and said so in the legend.
    let goodput = plots_titled(&checked, "geo-8mbit: goodput");
    assert_eq!(goodput.len(), 1, "one goodput plot: {checked}");
    let plot = goodput[0];
    assert_eq!(plot["kind"], "bars", "{plot}");
    assert_eq!(plot["bars"], 8, "a bar per stack and BER: {plot}");
    assert!(plot["title"].as_str().unwrap().contains("600ms"), "{plot}");
    assert_eq!(plot["x_ticks"], json!(["BER 0", "BER 1e-5"]), "{plot}");
    assert_eq!(plot["x_label"], "bit-error rate", "{plot}");
    let legend = plot["legend"].as_array().unwrap();
    let entry = |id: &str| {
        legend
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} in the legend: {plot}"))
    };
    assert_eq!(entry("reference-0")["name"], "physical limit");
    assert_eq!(
        entry("reference-0")["drawn"],
        2,
        "the limit over each BER group: {plot}"
    );
    let stopped = entry("stopped");
    assert!(
        stopped["name"]
            .as_str()
            .unwrap()
            .contains("stopped at its time limit: goodput over the window"),
        "{stopped}"
    );
    assert_eq!(stopped["drawn"], 2, "the two stopped runs' bars: {plot}");
    let mut series: Vec<&str> = legend
        .iter()
        .filter(|e| e["id"].as_str().unwrap().starts_with("series-"))
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let mut stacks: Vec<String> = QUICK.iter().map(|q| format!("{} (testbed)", q.0)).collect();
    series.sort_unstable();
    stacks.sort_unstable();
    assert_eq!(series, stacks, "a series per stack");
    for id in ["series-0", "series-1", "series-2", "series-3"] {
        assert_eq!(entry(id)["drawn"], 2, "{id}: a bar in each group: {plot}");
    }

    // A time-sequence graph per captured transfer, stopped ones too, its
    // x axis ending within one tick of the last packet.
    let sequences = plots_titled(&checked, "geo-8mbit: time-sequence of ");
    assert_eq!(sequences.len(), QUICK.len(), "one per capture: {checked}");
    for (stack, _, _, seconds, was_stopped) in QUICK {
        let last = seconds - 0.3;
        let name = format!("geo-8mbit: time-sequence of {stack} (testbed)");
        let plot = sequences
            .iter()
            .find(|p| p["title"].as_str().unwrap().starts_with(&name))
            .unwrap_or_else(|| panic!("{name}: {checked}"));
        let title = plot["title"].as_str().unwrap();
        assert!(title.contains("BER 1e-5"), "{title}");
        assert_eq!(
            title.contains("stopped at its time limit after 60 s"),
            was_stopped,
            "{title}"
        );
        let ticks: Vec<f64> = plot["x_ticks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| tick_value(t.as_str().unwrap()))
            .collect();
        let [.., before, end] = ticks[..] else {
            panic!("{title}: x ticks {ticks:?}");
        };
        assert_eq!(ticks[0], 0.0, "{title}: from 0");
        assert!(
            end >= last && end - last < end - before,
            "{title}: the axis ends within a tick of {last} s: {ticks:?}"
        );
    }

    // The table gives the stopped runs' figures, marked, and says why.
    let table = checked["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t[0].as_array().unwrap().iter().any(|c| c == "goodput"))
        .expect("the figures' table");
    let header = table[0].as_array().unwrap();
    let column = |name: &str| header.iter().position(|c| c == name).unwrap();
    let (stack, ber, goodput) = (column("stack"), column("link.ber"), column("goodput"));
    let lines = &table.as_array().unwrap()[1..];
    assert_eq!(lines.len(), 8, "{table}");
    for line in lines {
        let lossy = line[ber] != "0";
        let was_stopped = QUICK.iter().any(|q| line[stack] == q.0 && q.4) && lossy;
        let cell = line[goodput].as_str().unwrap();
        assert!(
            cell != "-" && !cell.is_empty(),
            "a stopped run's figure is shown: {line}"
        );
        assert_eq!(cell.ends_with('*'), was_stopped, "marked when stopped: {line}");
    }
    assert!(
        checked["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("Stopped at its time limit, after 60 s")),
        "the mark explained: {checked}"
    );

    // What was run, not the scenario's whole sweep.
    let as_run = checked["as_run"].to_string();
    assert!(
        as_run.contains("link.ber 0/") && as_run.contains("link.rtt 600ms") && !as_run.contains("100 MB"),
        "the heading says what was run: {as_run}"
    );

    // The paper by its authors and title.
    let papers = checked["papers"].to_string();
    assert!(
        papers.contains("Finch, Sullivan, Ivancic")
            && papers.contains("An Evaluation of Protocol Enhancing Proxies"),
        "{papers}"
    );
    assert!(!papers.contains("seed"), "{papers}");
}
