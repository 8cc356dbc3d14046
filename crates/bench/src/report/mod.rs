//! The report of a bench in its directory: `index.html` (for each
//! scenario its plots, a time-sequence graph of each captured transfer,
//! its table and the paper's numbers beside ours; the failed runs with
//! their causes; how the figures were made), and the raw records as
//! `results.json` and `results.csv`.
//!
//! A run stopped at its time limit (its record has `stopped_s` and no
//! `error`) did not finish: its figures are what it moved in the time it
//! was given. They are shown, and marked as such wherever they are: a
//! hatched bar or a hollow point with its own legend entry, a `*` in the
//! tables with a note under them, and the time in its graph's title.

mod papers;
mod plots;
pub mod sequence;
pub mod svg;

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::figures::{self, Row};
use crate::plan::ScenarioInfo;
use crate::record::Record;
use crate::report::plots::setting;
use crate::table;
use svg::escape;

/// How the figures were made, for the page's footer and `meta.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Provenance {
    pub command: String,
    pub version: String,
    pub kernel: String,
    pub machine: String,
    pub created: String,
}

impl Provenance {
    /// This machine's, now.
    pub fn here(command: String, version: &str) -> Provenance {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
            .unwrap_or_else(|| "unknown CPU".to_owned());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let memory = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(String::new(), |kib| {
                format!(", {:.0} GiB", kib as f64 / 1048576.0)
            });
        Provenance {
            command,
            version: version.to_owned(),
            kernel: format!("Linux {}", read("/proc/sys/kernel/osrelease").trim()),
            machine: format!("{cores} x {cpu}{memory}"),
            created: utc_now(),
        }
    }
}

/// Writes the report of `records` into `dir`.
pub fn write(
    dir: &Path,
    scenarios: &[ScenarioInfo],
    records: &[&Record],
    provenance: &Provenance,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(&records).expect("records serialise");
    std::fs::write(dir.join("results.json"), json + "\n")?;
    std::fs::write(dir.join("results.csv"), csv(records))?;
    let meta = serde_json::to_string_pretty(provenance).expect("provenance serialises");
    std::fs::write(dir.join("meta.json"), meta + "\n")?;
    std::fs::write(dir.join("index.html"), html(dir, scenarios, records, provenance))
}

/// The fields of the CSV, in order: the run, then its figures.
const CSV_FIELDS: [&str; 23] = [
    "id",
    "world",
    "stack",
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
    "offered_bps",
    "actual_bps",
    "latency_p50_s",
    "latency_p95_s",
    "fetches",
    "download_mean_s",
    "download_p95_s",
    "download_ideal_mean_s",
    "stopped_s",
    "error",
];

/// The shortest and the longest time the rows' stopped runs were given.
fn stopped_range(rows: &[Row]) -> Option<(f64, f64)> {
    let times: Vec<f64> = rows
        .iter()
        .flat_map(|row| row.completed().filter_map(|f| f.stopped_s))
        .collect();
    let low = times.iter().copied().reduce(f64::min)?;
    Some((low, times.iter().copied().fold(low, f64::max)))
}

/// `60 s`, or `55 to 60 s` when they differ.
fn seconds_text((low, high): (f64, f64)) -> String {
    if (high - low).abs() < 0.5 {
        format!("{high:.0} s")
    } else {
        format!("{low:.0} to {high:.0} s")
    }
}

fn csv(records: &[&Record]) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_owned()
        }
    };
    let mut out = CSV_FIELDS.join(",") + "\n";
    for record in records {
        // The fields as the record is written (a failed run's with what it
        // measured).
        let Ok(Value::Object(fields)) = serde_json::to_value(record) else {
            unreachable!("a record serialises as an object");
        };
        let cells: Vec<String> = CSV_FIELDS
            .iter()
            .map(|field| match (field, fields.get(*field)) {
                (&"params", _) => quote(
                    &figures::params(record)
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                (_, Some(Value::String(s))) => quote(s),
                (_, Some(Value::Null) | None) => String::new(),
                (_, Some(other)) => other.to_string(),
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}\
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.failed{color:#b00}\
.plots svg{margin:0.5em 0;border:1px solid #eee}.stopped-note{font-size:13px;color:#444}footer{color:#666;font-size:12px;margin-top:3em}";

fn html(dir: &Path, scenarios: &[ScenarioInfo], records: &[&Record], provenance: &Provenance) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>scps bench</title><style>{STYLE}</style></head><body><h1>scps bench</h1>"
    );
    let failed = records.iter().filter(|r| r.cause().is_some()).count();
    let stopped = records.iter().filter(|r| r.stopped_s().is_some()).count();
    let _ = write!(
        out,
        "<p>{} runs, {} failed, {} stopped at their time limit. Every figure is judged against the physical \
         limit of its link: rate &times; (1 &minus; PER(L)) &times; (L &minus; H)/L &times; time up, where \
         PER(L) is the chance that a bit error hits a packet of L bytes and H is the bytes of headers in it; \
         the ratio is the figure over it. Failed runs give no figure: they are listed with their cause. A run \
         stopped at its time limit did not finish: its figures are what it moved in the time it was given, \
         marked so in the plots (hatched bars, hollow points) and the tables (*).</p>",
        records.len(),
        failed,
        stopped
    );
    for scenario in scenarios {
        let mine: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| r.run.scenario == scenario.name)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let rows = figures::rows(mine.iter().copied());
        let _ = write!(
            out,
            "<section class=\"scenario\" id=\"{0}\"><h2>{0}</h2><p class=\"as-run\">As run: {1}</p>\
             <p>The scenario in full: {2}</p><div class=\"plots\">",
            escape(&scenario.name),
            escape(&scenario.as_run),
            escape(&scenario.description)
        );
        for plot in plots::plots(&scenario.name, &rows) {
            out.push_str(&plot.svg());
        }
        out.push_str(&time_sequences(dir, &scenario.name, &mine));
        out.push_str("</div>");
        out.push_str(&html_table(&mark_stopped(table::cells(&rows), &rows)));
        if let Some(range) = stopped_range(&rows) {
            let _ = write!(
                out,
                "<p class=\"stopped-note\">* Stopped at its time limit, after {}: the transfer did not \
                 finish, and the figures marked are what it moved in that window (its time is the window).</p>",
                seconds_text(range)
            );
        }
        out.push_str(&html_table_titled(
            "The two worlds, point by point",
            &table::worlds(&rows),
        ));
        out.push_str(&beside_the_paper(&scenario.name, &rows));
        let failures: Vec<(&str, &str)> = mine
            .iter()
            .filter_map(|r| Some((r.run.id.as_str(), r.cause()?.message())))
            .collect();
        if !failures.is_empty() {
            out.push_str("<h3>Failed runs</h3><ul class=\"failed\">");
            for (id, cause) in failures {
                let _ = write!(out, "<li>{}: {}</li>", escape(id), escape(cause));
            }
            out.push_str("</ul>");
        }
        out.push_str("</section>");
    }
    let _ = write!(
        out,
        "<footer>Made by <code>{}</code> (scps {}) on {}, {}, {}. Seeds are in each record of results.json; \
         the simulator's runs replay bit for bit with <code>scps sim SCENARIO --seed S</code>.</footer></body></html>",
        escape(&provenance.command),
        escape(&provenance.version),
        escape(&provenance.machine),
        escape(&provenance.kernel),
        escape(&provenance.created)
    );
    out
}

/// A time-sequence graph of each transfer a scenario's runs captured (a
/// run stopped at its time limit included), or why one cannot be drawn.
/// A failed run's capture is not drawn: the run is listed with its cause.
fn time_sequences(dir: &Path, scenario: &str, records: &[&Record]) -> String {
    let mut out = String::new();
    for record in records {
        let (Some(moved), Some(capture)) = (record.figures(), &record.capture) else {
            continue;
        };
        let path = dir.join(capture);
        let name = format!("{} ({})", record.run.stack, record.run.world);
        let at: Vec<String> = figures::params(record)
            .iter()
            .map(|(k, v)| setting(k, v))
            .collect();
        let mut title = format!("{scenario}: time-sequence of {name}");
        if !at.is_empty() {
            title = format!("{title}, {}", at.join(", "));
        }
        if let Some(s) = moved.stopped_s {
            title = format!("{title}; stopped at its time limit after {s:.0} s");
        }
        let transfer = sequence::Transfer {
            name,
            capture: &path,
            limit_bps: moved.limit_bps,
        };
        match sequence::graph(title, &transfer) {
            Ok(plot) => out.push_str(&plot.svg()),
            Err(error) => {
                let _ = write!(
                    out,
                    "<p class=\"failed\">No time-sequence graph of {}: {}</p>",
                    escape(&transfer.name),
                    escape(&error)
                );
            }
        }
    }
    out
}

/// The table's cells with a `*` after each figure of a row whose runs
/// were stopped at their time limit (the note under the table says what
/// it means).
fn mark_stopped(mut cells: Vec<Vec<String>>, rows: &[Row]) -> Vec<Vec<String>> {
    const FIGURES: [&str; 6] = ["time s", "goodput", "ratio", "actual", "mean dl s", "fetches"];
    let Some(header) = cells.first() else {
        return cells;
    };
    let columns: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, name)| FIGURES.contains(&name.as_str()))
        .map(|(i, _)| i)
        .collect();
    for (line, row) in cells.iter_mut().skip(1).zip(rows) {
        if row.stopped_s().is_none() {
            continue;
        }
        for &column in &columns {
            if let Some(cell) = line.get_mut(column)
                && cell != "-"
            {
                cell.push('*');
            }
        }
    }
    cells
}

/// A table under a heading, or nothing if it has no line below its
/// header.
fn html_table_titled(title: &str, cells: &[Vec<String>]) -> String {
    if cells.len() < 2 {
        return String::new();
    }
    format!("<h3>{}</h3>{}", escape(title), html_table(cells))
}

fn html_table(cells: &[Vec<String>]) -> String {
    let mut out = String::from("<table>");
    for (i, line) in cells.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for cell in line {
            let _ = write!(out, "<{tag}>{}</{tag}>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// The paper's finding, and per stack and world our figure's range over
/// the sweep (marked when runs stopped at their time limit are in it).
fn beside_the_paper(scenario: &str, rows: &[Row]) -> String {
    let Some(quote) = papers::quote(scenario) else {
        return String::new();
    };
    let mut ours: Vec<(String, f64, f64, bool)> = Vec::new();
    for row in rows {
        let name = format!("{} ({})", row.stack, row.world);
        let stopped = row.stopped_s().is_some();
        for value in row.completed().filter_map(|f| quote.field.of(f)) {
            match ours.iter_mut().find(|(n, ..)| *n == name) {
                Some((_, low, high, marked)) => {
                    *low = low.min(value);
                    *high = high.max(value);
                    *marked |= stopped;
                }
                None => ours.push((name.clone(), value, value, stopped)),
            }
        }
    }
    let paper = quote.paper;
    let venue = paper.venue.map_or(String::new(), |v| format!(", {}", escape(v)));
    let mut out = format!(
        "<h3>Beside the paper</h3><p class=\"paper\">{}, <cite>{}</cite>{venue}: {}.</p>\
         <table><tr><th>ours</th><th>{} over the sweep ({})</th></tr>",
        escape(paper.authors),
        escape(paper.title),
        escape(quote.finding),
        escape(quote.field.key()),
        escape(quote.unit)
    );
    let any_stopped = ours.iter().any(|(.., marked)| *marked);
    for (name, low, high, marked) in ours {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{} to {}{}</td></tr>",
            escape(&name),
            table::rate(low),
            table::rate(high),
            if marked { "*" } else { "" }
        );
    }
    out.push_str("</table>");
    if any_stopped {
        out.push_str(
            "<p class=\"stopped-note\">* Runs stopped at their time limit are in the range: their figures \
             are over the time they were given.</p>",
        );
    }
    out
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (seconds / 86400, seconds % 86400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
