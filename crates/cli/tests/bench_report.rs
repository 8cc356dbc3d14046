//! The bench's report as a reader sees it: rendered by a real browser
//! (Debian's headless Chromium), every plot must show its axes with their
//! ticks and its data inside them, and the screenshot must show the data
//! in colour in every plot's place: a blank or broken plot fails.

mod common;

use std::path::Path;
use std::process::Command;

use common::TempDir;
use serde_json::Value;

const BROWSER: &str = "chromium-headless-shell";
/// Wide and tall enough that the whole page is one screenshot.
const WINDOW: (u32, u32) = (1200, 9000);

/// Measures every plot as laid out, into the body's `data-check`.
const CHECK: &str = r#"<script>
const plots = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  const inside = (b) => b.width > 0 && b.left >= box.left && b.right <= box.right && b.top >= box.top && b.bottom <= box.bottom;
  const points = [...svg.querySelectorAll('g.data circle')];
  const axes = svg.querySelector('g.axes').getBBox();
  plots.push({
    title: svg.querySelector('text').textContent,
    left: box.left + window.scrollX, top: box.top + window.scrollY, width: box.width, height: box.height,
    points: points.length,
    inside: points.filter((c) => inside(c.getBoundingClientRect())).length,
    axes: [axes.width, axes.height],
    ticks: svg.querySelectorAll('g.ticks text').length,
    labelled: !!svg.querySelector('.x-label').textContent && !!svg.querySelector('.y-label').textContent,
  });
}
document.body.setAttribute('data-check', JSON.stringify(plots));
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

/// The plots as the browser laid them out.
fn measured(page: &Path) -> Vec<Value> {
    let html = std::fs::read_to_string(page).unwrap();
    let checked = page.with_file_name("check.html");
    std::fs::write(&checked, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let dom = browser(&["--dump-dom", &format!("file://{}", checked.display())]);
    let start = dom.find("data-check=\"").expect("the check ran") + "data-check=\"".len();
    let end = start + dom[start..].find('"').unwrap();
    let json = dom[start..end].replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str::<Vec<Value>>(&json).unwrap()
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

#[test]
fn every_plot_of_the_report_renders_with_its_axes_and_its_data() {
    let dir = TempDir::new("bench-report");
    let out = dir.path().join("report");
    let out_text = out.to_str().unwrap();
    // A bulk sweep (goodput against RTT, the time-sequence graph), a
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
    let page = merged.join("index.html");
    let plots = measured(&page);
    let titles: Vec<&str> = plots.iter().map(|p| p["title"].as_str().unwrap()).collect();
    println!("plots: {titles:#?}");
    for expected in [
        "geo-8mbit: goodput",
        "geo-8mbit: time-sequence of one transfer",
        "iridium-3ch: actual rate (bit/s) against offered rate",
        "iridium-3ch: median latency (s) against offered rate",
        "complex-35ws: mean download time",
    ] {
        assert!(
            titles.iter().any(|t| t.starts_with(expected)),
            "{expected} in {titles:?}"
        );
    }
    let screenshot = dir.path().join("report.png");
    browser(&[
        &format!("--screenshot={}", screenshot.display()),
        &format!("file://{}", page.display()),
    ]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&screenshot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let image = reader.next_frame(&mut pixels).unwrap();
    for plot in &plots {
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
    }
}
