//! The bench report, checked in a real browser (headless Chromium):
//! every plot laid out with its axes, labelled ticks and data inside
//! them, its data showing in colour in a screenshot, every legend entry
//! drawn on the plot, series in distinct colour-blind-safe colours.
//! Shared by the report's own tests and the slower tier's run of the
//! README's quick start.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BROWSER: &str = "chromium-headless-shell";
/// Wide and tall enough that the whole page is one screenshot.
const WINDOW: (u32, u32) = (1200, 9000);

/// The Okabe–Ito colours, which readers with the common colour-vision
/// deficiencies tell apart.
pub const COLOUR_BLIND_SAFE: [&str; 8] = [
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

pub fn browser(args: &[&str]) -> String {
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
pub fn measured(page: &Path) -> Value {
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
pub fn assert_every_plot_renders(page: &Path, dir: &Path) -> Value {
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
pub fn plots_titled<'a>(checked: &'a Value, start: &str) -> Vec<&'a Value> {
    checked["plots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["title"].as_str().unwrap().starts_with(start))
        .collect()
}
