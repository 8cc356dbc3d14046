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

use std::path::Path;
use std::process::Command;

use common::TempDir;
use serde_json::{Value, json};

const BROWSER: &str = "chromium-headless-shell";
/// Wide and tall enough that the whole page is one screenshot.
const WINDOW: (u32, u32) = (1200, 9000);

/// The Okabe–Ito colours, which readers with the common colour-vision
/// deficiencies tell apart.
const COLOUR_BLIND_SAFE: [&str; 8] = [
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000",
];

/// Measures every plot as laid out, and reads the tables, into the
/// body's `data-check`. A plot's marks are its drawn elements, each
/// naming its series (or series) in `data-series`, as each legend entry
/// names the one it stands for.
const CHECK: &str = r#"<script>
const plots = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  const inside = (b) => (b.width > 0 || b.height > 0) && b.left >= box.left - 0.5 && b.right <= box.right + 0.5
    && b.top >= box.top - 0.5 && b.bottom <= box.bottom + 0.5;
  const marks = [...svg.querySelectorAll('.mark')].filter((m) => !m.closest('g.legend'));
  const points = [...svg.querySelectorAll('g.data .mark')];
  const drawn = (id) => marks.filter((m) => (m.getAttribute('data-series') || '').split(' ').includes(id)
    && inside(m.getBoundingClientRect())).length;
  const axes = svg.querySelector('g.axes').getBBox();
  plots.push({
    title: svg.querySelector('text.title').textContent,
    kind: svg.getAttribute('data-kind'),
    left: box.left + window.scrollX, top: box.top + window.scrollY, width: box.width, height: box.height,
    points: points.length,
    inside: points.filter((c) => inside(c.getBoundingClientRect())).length,
    bars: svg.querySelectorAll('g.data rect.bar').length,
    axes: [axes.width, axes.height],
    ticks: svg.querySelectorAll('g.ticks text').length,
    x_ticks: [...svg.querySelectorAll('g.x-ticks text')].map((t) => t.textContent),
    x_label: svg.querySelector('.x-label').textContent,
    labelled: !!svg.querySelector('.x-label').textContent && !!svg.querySelector('.y-label').textContent,
    legend: [...svg.querySelectorAll('g.legend .legend-item')].map((item) => ({
      id: item.getAttribute('data-series'),
      name: item.textContent,
      colour: item.getAttribute('data-colour'),
      drawn: drawn(item.getAttribute('data-series')),
    })),
  });
}
const tables = [...document.querySelectorAll('table')].map((t) => [...t.rows].map((r) => [...r.cells].map((c) => c.textContent)));
const notes = [...document.querySelectorAll('.stopped-note')].map((p) => p.textContent);
const papers = [...document.querySelectorAll('p.paper')].map((p) => p.textContent);
const as_run = [...document.querySelectorAll('p.as-run')].map((p) => p.textContent);
document.body.setAttribute('data-check', JSON.stringify({plots, tables, notes, papers, as_run}));
</script>"#;

/// `scps ARGS...`, which must succeed.
fn scps_ok(args: &[&str]) {
    let output = common::scps(args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        common::text(&output.stderr)
    );
}

fn browser(args: &[&str]) -> String {
    let output = Command::new(BROWSER)
        .args(["--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{BROWSER} runs (scripts/test-deps.sh installs it): {e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The plots, the tables and the notes as the browser laid them out.
fn measured(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let checked = page.with_file_name("check.html");
    std::fs::write(&checked, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let dom = browser(&["--dump-dom", &format!("file://{}", checked.display())]);
    let start = dom.find("data-check=\"").expect("the check ran") + "data-check=\"".len();
    let end = start + dom[start..].find('"').unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str::<Value>(&json).unwrap()
}

/// Pixels of a series' colour (saturated, not the greys of axes, grid
/// and text) within a rectangle of the screenshot.
fn coloured_pixels(image: &png::OutputInfo, pixels: &[u8], rect: (f64, f64, f64, f64)) -> usize {
    let channels = image.color_type.samples();
    let (left, top, width, height) = rect;
    let mut count = 0;
    for y in top as u32..((top + height) as u32).min(image.height) {
        for x in left as u32..((left + width) as u32).min(image.width) {
            let at = (y as usize * image.width as usize + x as usize) * channels;
            let [r, g, b] = [pixels[at], pixels[at + 1], pixels[at + 2]].map(i32::from);
            if r.max(g).max(b) - r.min(g).min(b) > 60 {
                count += 1;
            }
        }
    }
    count
}

/// The report at `page`, measured in the browser: each plot has its axes
/// with labelled ticks, its data inside them and shown in colour in the
/// screenshot, and every entry of its legend drawn on it, its series in
/// distinct colour-blind-safe colours. What was measured, for the
/// caller's own checks.
fn assert_every_plot_renders(page: &Path, dir: &Path) -> Value {
    let checked = measured(page);
    let plots = checked["plots"].as_array().unwrap();
    let screenshot = dir.join("report.png");
    browser(&[
        &format!("--screenshot={}", screenshot.display()),
        &format!("file://{}", page.display()),
    ]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&screenshot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let image = reader.next_frame(&mut pixels).unwrap();
    for plot in plots {
        let title = &plot["title"];
        let number = |key: &str| plot[key].as_f64().unwrap();
        assert!(
            plot["points"].as_u64().unwrap() >= 2,
            "{title}: data points {plot}"
        );
        assert_eq!(
            plot["points"], plot["inside"],
            "{title}: every point within the plot: {plot}"
        );
        let axes = plot["axes"].as_array().unwrap();
        assert!(
            axes.iter().all(|d| d.as_f64().unwrap() > 100.0),
            "{title}: both axes drawn: {plot}"
        );
        assert!(
            plot["ticks"].as_u64().unwrap() >= 6,
            "{title}: ticks labelled: {plot}"
        );
        assert_eq!(plot["labelled"], true, "{title}: axis labels");
        let rect = (number("left"), number("top"), number("width"), number("height"));
        let coloured = coloured_pixels(&image, &pixels, rect);
        assert!(
            coloured > 200,
            "{title}: the data shows in the screenshot ({coloured} coloured pixels)"
        );
        let legend = plot["legend"].as_array().unwrap();
        assert!(!legend.is_empty(), "{title}: a legend");
        for entry in legend {
            assert!(
                entry["drawn"].as_u64().unwrap() >= 1,
                "{title}: the legend's {} is drawn on the plot: {plot}",
                entry["name"]
            );
        }
        let colours: Vec<String> = legend
            .iter()
            .filter(|e| e["id"].as_str().unwrap().starts_with("series-"))
            .map(|e| e["colour"].as_str().unwrap().to_uppercase())
            .collect();
        for (i, colour) in colours.iter().enumerate() {
            assert!(
                COLOUR_BLIND_SAFE.contains(&colour.as_str()),
                "{title}: {colour} is colour-blind-safe"
            );
            assert!(
                !colours[..i].contains(colour),
                "{title}: {colour} is one series' only: {colours:?}"
            );
        }
    }
    checked
}

/// The plots whose titles start with `start`.
fn plots_titled<'a>(checked: &'a Value, start: &str) -> Vec<&'a Value> {
    checked["plots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["title"].as_str().unwrap().starts_with(start))
        .collect()
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
        "bytes": bytes,
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
