//! The bench's table: one line per scenario point, stack and world, with
//! the figure, the physical limit and their ratio (means over the runs
//! that completed, with the spread when there are several), as text for
//! a terminal or as Markdown for docs/BENCHMARKS.md.

use crate::figures::{Measure, Row, Stat};
use crate::record::Figure;
use crate::stack::World;

/// The table of one scenario's rows: a header, then a line per row.
pub fn cells(rows: &[Row]) -> Vec<Vec<String>> {
    let measure = rows.first().map_or(Measure::Bulk, Row::measure);
    let axes: Vec<String> = rows
        .first()
        .map(|r| r.params.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let mut header: Vec<String> = ["stack", "world"].map(String::from).to_vec();
    header.extend(axes.iter().cloned());
    header.push("runs".into());
    header.extend(
        match measure {
            Measure::Bulk => &["time s", "goodput", "limit", "ratio", "retx bytes"][..],
            Measure::Messages => &["offered", "actual", "limit", "ratio", "p50 s", "p95 s"][..],
            Measure::Fetches => &[
                "fetches",
                "mean dl s",
                "p95 dl s",
                "ideal s",
                "goodput",
                "limit",
                "ratio",
            ][..],
        }
        .iter()
        .map(|s| s.to_string()),
    );
    header.push("note".into());
    let mut lines = vec![header];
    for row in rows {
        let mut line = vec![row.stack.clone(), row.world.name().to_owned()];
        line.extend(axes.iter().map(|a| row.param(a).unwrap_or("-").to_owned()));
        line.push(format!("{}/{}", row.completed_count(), row.runs.len()));
        let stat =
            |figure: Figure, format: fn(Stat) -> String| row.stat(figure).map_or("-".to_owned(), format);
        match measure {
            Measure::Bulk => {
                line.push(stat(Figure::Duration, |s| with_spread(s, 1.0, 2)));
                line.push(stat(Figure::Goodput, |s| rate(s.mean)));
                line.push(stat(Figure::Limit, |s| rate(s.mean)));
                line.push(stat(Figure::Ratio, |s| with_spread(s, 1.0, 3)));
                line.push(stat(Figure::Retransmitted, |s| format!("{:.0}", s.mean)));
            }
            Measure::Messages => {
                line.push(stat(Figure::Offered, |s| rate(s.mean)));
                line.push(stat(Figure::Actual, |s| rate(s.mean)));
                line.push(stat(Figure::Limit, |s| rate(s.mean)));
                line.push(stat(Figure::Ratio, |s| with_spread(s, 1.0, 3)));
                line.push(stat(Figure::LatencyP50, |s| format!("{:.2}", s.mean)));
                line.push(stat(Figure::LatencyP95, |s| format!("{:.2}", s.mean)));
            }
            Measure::Fetches => {
                line.push(stat(Figure::Fetches, |s| format!("{:.0}", s.mean)));
                line.push(stat(Figure::DownloadMean, |s| with_spread(s, 1.0, 2)));
                line.push(stat(Figure::DownloadP95, |s| format!("{:.2}", s.mean)));
                line.push(stat(Figure::DownloadIdealMean, |s| format!("{:.2}", s.mean)));
                line.push(stat(Figure::Goodput, |s| rate(s.mean)));
                line.push(stat(Figure::Limit, |s| rate(s.mean)));
                line.push(stat(Figure::Ratio, |s| with_spread(s, 1.0, 3)));
            }
        }
        line.push(note(row.stopped_s(), &row.failures()));
        lines.push(line);
    }
    lines
}

/// Mean, and "±sd" when there is more than one run.
fn with_spread(stat: Stat, scale: f64, decimals: usize) -> String {
    if stat.count < 2 {
        format!("{:.*}", decimals, stat.mean / scale)
    } else {
        format!(
            "{:.*}±{:.*}",
            decimals,
            stat.mean / scale,
            decimals,
            stat.sd / scale
        )
    }
}

pub use scps_sim::rate;

/// The note of a row: that its runs were stopped at their time limit (its
/// figures are over that window), and the cause of its failed runs, the
/// first of them and how many others there are when they differ (a
/// thousand runs may fail a thousand ways; the report lists them all).
fn note(stopped_s: Option<f64>, causes: &[&str]) -> String {
    let stopped = stopped_s.map(|s| format!("stopped at its {s:.0} s limit: figures over that window"));
    let failed = match causes {
        [] => None,
        [only] => Some((*only).to_owned()),
        [first, others @ ..] => Some(format!("{first} (and {} other causes)", others.len())),
    };
    stopped.into_iter().chain(failed).collect::<Vec<_>>().join("; ")
}

/// The lines without the columns whose every cell below the header is
/// empty (a note column when no run failed).
fn without_empty_columns(lines: &[Vec<String>]) -> Vec<Vec<String>> {
    let columns = lines.first().map_or(0, Vec::len);
    let kept: Vec<usize> = (0..columns)
        .filter(|&c| {
            lines
                .iter()
                .skip(1)
                .any(|l| l.get(c).is_some_and(|cell| !cell.is_empty()))
        })
        .collect();
    lines
        .iter()
        .map(|line| kept.iter().filter_map(|&c| line.get(c).cloned()).collect())
        .collect()
}

/// Columns padded to their widest cell, empty columns left out.
pub fn text(lines: &[Vec<String>]) -> String {
    scps_sim::padded_columns(&without_empty_columns(lines))
}

/// A Markdown table (`|` in a cell escaped).
pub fn markdown(lines: &[Vec<String>]) -> String {
    let lines = &without_empty_columns(lines);
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            out.push_str(&format!("|{}\n", "---|".repeat(line.len())));
        }
    }
    out
}

/// The simulator against the testbed for every point and stack both ran:
/// the ratio to the limit in each (mean ± sd over the runs), their
/// difference, and whether it is beyond the spread of the runs (twice the
/// larger standard deviation); with one run a side there is no spread to
/// judge by, and the table says so. Empty (a header only) when no point
/// ran in both.
pub fn worlds(rows: &[Row]) -> Vec<Vec<String>> {
    let mut lines = vec![
        [
            "stack",
            "point",
            "sim ratio",
            "testbed ratio",
            "difference",
            "beyond the spread",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for sim in rows.iter().filter(|r| r.world == World::Sim) {
        let Some(testbed) = rows
            .iter()
            .find(|r| r.world == World::Testbed && r.stack == sim.stack && r.params == sim.params)
        else {
            continue;
        };
        let point = sim
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let (Some(a), Some(b)) = (sim.stat(Figure::Ratio), testbed.stat(Figure::Ratio)) else {
            let failed = if sim.stat(Figure::Ratio).is_none() {
                "sim"
            } else {
                "testbed"
            };
            lines.push(vec![
                sim.stack.clone(),
                point,
                sim.stat(Figure::Ratio)
                    .map_or("-".into(), |s| with_spread(s, 1.0, 3)),
                testbed
                    .stat(Figure::Ratio)
                    .map_or("-".into(), |s| with_spread(s, 1.0, 3)),
                "-".into(),
                format!("no figure in the {failed}"),
            ]);
            continue;
        };
        let difference = b.mean - a.mean;
        let spread = 2.0 * a.sd.max(b.sd);
        let verdict = if a.count < 2 && b.count < 2 {
            "one run each: no spread".to_owned()
        } else if difference.abs() > spread {
            format!("yes (spread {spread:.3})")
        } else {
            format!("no (spread {spread:.3})")
        };
        lines.push(vec![
            sim.stack.clone(),
            point,
            with_spread(a, 1.0, 3),
            with_spread(b, 1.0, 3),
            format!("{difference:+.3}"),
            verdict,
        ]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_names_the_first_cause_and_counts_the_others() {
        assert_eq!(note(None, &[]), "");
        assert_eq!(note(None, &["timed out"]), "timed out");
        assert_eq!(
            note(None, &["differs at byte 5", "differs at byte 9", "timed out"]),
            "differs at byte 5 (and 2 other causes)"
        );
    }

    #[test]
    fn a_note_says_a_row_s_runs_were_stopped_at_their_limit() {
        assert_eq!(
            note(Some(60.4), &[]),
            "stopped at its 60 s limit: figures over that window"
        );
        assert_eq!(
            note(Some(60.0), &["timed out"]),
            "stopped at its 60 s limit: figures over that window; timed out"
        );
    }
}
