//! Which plots a scenario's rows make, as the papers drew theirs: goodput
//! against delay, transfer time against bit-error rate with error bars,
//! actual against offered rate with the ideal line, latency against
//! offered rate, mean download time against bit-error rate; each with the
//! physical limit (or the ideal it implies) dashed.
//!
//! The x axis is the first swept key the papers plot against. The plot is
//! chosen for the data: lines when that key has two values or more, bars
//! (one per stack, grouped by the other swept keys, the limit over each
//! group) when it has one. The other swept keys that vary are never left
//! to the legend alone: a line plot has a panel per setting of them
//! ("BER 1e-5"), a bar chart a group; the keys that hold one value are
//! named in the title.

use crate::figures::{self, Measure, Row};
use crate::record::Figure;
use crate::report::svg::{Kind, Plot, Series, XAxis, XY};

/// Swept keys a plot takes its x axis from, in order of preference.
const X_KEYS: [&str; 5] = [
    "workload.rate",
    "link.rtt",
    "link.delay",
    "link.ber",
    "link.channels",
];

/// A swept key's names: the short one a value follows ("BER 1e-5"), and
/// the long one an axis is labelled with.
pub fn key_names(key: &str) -> (&str, &str) {
    match key {
        "link.ber" => ("BER", "bit-error rate"),
        "link.rtt" => ("RTT", "round-trip time"),
        "link.delay" => ("delay", "one-way delay"),
        "workload.rate" => ("offered", "offered rate (bit/s)"),
        "link.channels" => ("channels", "channels"),
        "link.return.rate" => ("return rate", "return link's rate"),
        "link.bond" => ("bonding", "channel bonding"),
        other => (other.rsplit('.').next().unwrap_or(other), other),
    }
}

/// A swept value as a reader writes it: a bit-error rate as `1e-5`.
pub fn value_text(key: &str, value: &str) -> String {
    match value.parse::<f64>() {
        Ok(v) if key == "link.ber" && v == 0.0 => "0".to_owned(),
        Ok(v) if key == "link.ber" => format!("{v:e}"),
        _ => value.to_owned(),
    }
}

/// `BER 1e-5`: a key's short name and its value.
pub(super) fn setting(key: &str, value: &str) -> String {
    format!("{} {}", key_names(key).0, value_text(key, value))
}

/// What the dashed line of a figure shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reference {
    /// The physical limit.
    Limit,
    /// The time the bytes take at the limit.
    IdealTime,
    /// The mean download time with the link shared at its limit.
    IdealDownload,
    /// All that is offered arrives.
    Offered,
}

impl Reference {
    fn name(self) -> &'static str {
        match self {
            Reference::Limit => "physical limit",
            Reference::IdealTime => "ideal (bytes at the limit)",
            Reference::IdealDownload => "ideal (link shared at its limit)",
            Reference::Offered => "ideal (actual = offered)",
        }
    }

    /// Its value at a row.
    fn at(self, row: &Row) -> Option<f64> {
        match self {
            Reference::Limit => row.stat(Figure::Limit).map(|s| s.mean),
            Reference::IdealTime => {
                let bytes = row.stat(Figure::Bytes)?.mean;
                Some(bytes * 8.0 / row.stat(Figure::Limit)?.mean)
            }
            Reference::IdealDownload => row.stat(Figure::DownloadIdealMean).map(|s| s.mean),
            Reference::Offered => row.stat(Figure::Offered).map(|s| s.mean),
        }
    }
}

/// One figure of a scenario: which of the runs' figures against what.
#[derive(Debug, Clone, Copy)]
struct Spec {
    /// What the title calls the figure.
    what: &'static str,
    field: Figure,
    y_label: &'static str,
    /// The x key; `None` when nothing was swept.
    x_key: Option<&'static str>,
    /// The field that places a point on a linear x axis (the offered
    /// rate); points sit at their x value's index when `None`.
    numeric_x: Option<Figure>,
    references: &'static [Reference],
    /// What the legend says of a run stopped at its time limit.
    stopped: &'static str,
}

pub fn plots(scenario: &str, rows: &[Row]) -> Vec<Plot> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let keys: Vec<&str> = first.params.iter().map(|(k, _)| k.as_str()).collect();
    let x_key = X_KEYS.iter().copied().find(|k| keys.contains(k));
    let stopped = "stopped at its time limit: figure over the window";
    match first.measure() {
        Measure::Messages => {
            let x_key = keys.contains(&"workload.rate").then_some("workload.rate");
            let numeric_x = Some(Figure::Offered);
            vec![
                figure(
                    scenario,
                    rows,
                    Spec {
                        what: "actual rate (bit/s)",
                        field: Figure::Actual,
                        y_label: "actual rate (bit/s)",
                        x_key,
                        numeric_x,
                        references: &[Reference::Limit, Reference::Offered],
                        stopped,
                    },
                ),
                figure(
                    scenario,
                    rows,
                    Spec {
                        what: "median latency (s)",
                        field: Figure::LatencyP50,
                        y_label: "median latency (s)",
                        x_key,
                        numeric_x,
                        references: &[],
                        stopped,
                    },
                ),
            ]
        }
        Measure::Bulk if x_key == Some("link.ber") => vec![figure(
            scenario,
            rows,
            Spec {
                what: "transfer time",
                field: Figure::Duration,
                y_label: "transfer time (s)",
                x_key,
                numeric_x: None,
                references: &[Reference::IdealTime],
                stopped: "stopped at its time limit: the time it was given, not a finished transfer's",
            },
        )],
        Measure::Bulk => vec![figure(
            scenario,
            rows,
            Spec {
                what: "goodput",
                field: Figure::Goodput,
                y_label: "goodput (bit/s)",
                x_key,
                numeric_x: None,
                references: &[Reference::Limit],
                stopped: "stopped at its time limit: goodput over the window",
            },
        )],
        Measure::Fetches => vec![figure(
            scenario,
            rows,
            Spec {
                what: "mean download time",
                field: Figure::DownloadMean,
                y_label: "mean download time (s)",
                x_key,
                numeric_x: None,
                references: &[Reference::IdealDownload],
                stopped,
            },
        )],
    }
    .into_iter()
    .flatten()
    .collect()
}

/// The distinct values `of` gives the rows, in the order they come.
fn distinct(rows: &[Row], of: impl Fn(&Row) -> String) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    for row in rows {
        let value = of(row);
        if !values.contains(&value) {
            values.push(value);
        }
    }
    values
}

/// The distinct values `of` gives the rows, ordered by the swept values
/// of `keys` behind them when those are all numbers (with a unit: `600ms`,
/// `2048bps`), in the order the rows come otherwise.
fn ordered(rows: &[Row], keys: &[&str], of: impl Fn(&Row) -> String) -> Vec<String> {
    let mut seen: Vec<(String, Option<Vec<f64>>)> = Vec::new();
    for row in rows {
        let value = of(row);
        if seen.iter().any(|(v, _)| *v == value) {
            continue;
        }
        let numbers = keys
            .iter()
            .map(|k| row.param(k).and_then(figures::magnitude))
            .collect();
        seen.push((value, numbers));
    }
    if seen.iter().all(|(_, numbers)| numbers.is_some()) {
        seen.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
    }
    seen.into_iter().map(|(value, _)| value).collect()
}

/// A row's series: its stack and world.
fn series_name(row: &Row) -> String {
    format!("{} ({})", row.stack, row.world)
}

/// The plots of one figure: lines (a panel per setting of the other
/// varying keys) when the x key has two values or more, bars otherwise.
fn figure(scenario: &str, rows: &[Row], spec: Spec) -> Vec<Plot> {
    let keys: Vec<&str> = rows
        .first()
        .map(|r| r.params.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    let param = |row: &Row, key: &str| row.param(key).unwrap_or("-").to_owned();
    let x_values: Vec<String> = spec
        .x_key
        .map(|key| ordered(rows, &[key], |r| param(r, key)))
        .unwrap_or_default();
    let (varying, constant): (Vec<&str>, Vec<&str>) = keys
        .iter()
        .filter(|&&k| Some(k) != spec.x_key)
        .partition(|&&k| distinct(rows, |r| param(r, k)).len() >= 2);
    let constant_text = constant
        .iter()
        .filter_map(|&k| rows.first().map(|r| setting(k, &param(r, k))))
        .collect::<Vec<_>>()
        .join(", ");
    let group_of = |row: &Row| {
        varying
            .iter()
            .map(|&k| setting(k, &param(row, k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let names = distinct(rows, series_name);
    let mut plots = if x_values.len() >= 2 {
        let x_key = spec.x_key.unwrap_or_default();
        let x_label = key_names(x_key).1;
        let facets = ordered(rows, &varying, group_of);
        facets
            .iter()
            .map(|facet| {
                let mine: Vec<&Row> = rows.iter().filter(|r| group_of(r) == *facet).collect();
                let about: Vec<&str> = [facet.as_str(), constant_text.as_str()]
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect();
                let mut title = format!("{scenario}: {} against {x_label}", spec.what);
                if !about.is_empty() {
                    title = format!("{title}, {}", about.join(", "));
                }
                let x_axis = match spec.numeric_x {
                    Some(_) => XAxis::Linear,
                    None => XAxis::Categories(x_values.iter().map(|v| value_text(x_key, v)).collect()),
                };
                let mut plot = Plot::new(Kind::Lines, title, x_label, spec.y_label, x_axis);
                let x_of = |row: &Row| match spec.numeric_x {
                    Some(figure) => row.stat(figure).map(|s| s.mean),
                    None => x_values
                        .iter()
                        .position(|v| *v == param(row, x_key))
                        .map(|i| i as f64),
                };
                fill(&mut plot, &mine, &names, &spec, x_of);
                plot
            })
            .collect::<Vec<_>>()
    } else {
        let at = match (spec.x_key, x_values.first()) {
            (Some(key), Some(value)) => {
                format!(" at {} {}", key_names(key).1, value_text(key, value))
            }
            _ => String::new(),
        };
        let mut title = format!("{scenario}: {}{at}", spec.what);
        let x_label = if varying.is_empty() {
            String::new()
        } else {
            varying
                .iter()
                .map(|&k| key_names(k).1)
                .collect::<Vec<_>>()
                .join(" and ")
        };
        let group = |row: &Row| {
            if !varying.is_empty() {
                group_of(row)
            } else if !constant_text.is_empty() {
                constant_text.clone()
            } else {
                "all runs".to_owned()
            }
        };
        if !varying.is_empty() && !constant_text.is_empty() {
            title = format!("{title}, {constant_text}");
        }
        let groups = ordered(rows, &varying, group);
        let mut plot = Plot::new(
            Kind::Bars,
            title,
            &x_label,
            spec.y_label,
            XAxis::Categories(groups.clone()),
        );
        let all: Vec<&Row> = rows.iter().collect();
        let x_of = |row: &Row| groups.iter().position(|g| *g == group(row)).map(|i| i as f64);
        fill(&mut plot, &all, &names, &spec, x_of);
        vec![plot]
    };
    // The panels of a figure share their y axis, so that they compare.
    let shared = plots.iter().map(Plot::data_max).fold(0.0, f64::max);
    for plot in &mut plots {
        plot.y_max = Some(shared);
        plot.stopped_label = spec.stopped.to_owned();
    }
    plots
}

/// Puts `rows` into `plot`: a point of each row's series at `x_of` it,
/// and the references' values (one per x, for the stacks share them).
fn fill(plot: &mut Plot, rows: &[&Row], names: &[String], spec: &Spec, x_of: impl Fn(&Row) -> Option<f64>) {
    for row in rows {
        let Some(x) = x_of(row) else {
            continue;
        };
        if let Some(stat) = row.stat(spec.field) {
            let name = series_name(row);
            let point = XY {
                x,
                y: stat.mean,
                err: stat.sd,
                stopped: row.stopped_s().is_some(),
            };
            match plot.series.iter_mut().find(|s| s.name == name) {
                Some(series) => series.points.push(point),
                None => {
                    let mut series = Series::line(name.clone(), vec![point]);
                    series.style = names.iter().position(|n| *n == name);
                    plot.series.push(series);
                }
            }
        }
        for (i, reference) in spec.references.iter().enumerate() {
            let Some(y) = reference.at(row) else {
                continue;
            };
            if plot.references.len() <= i {
                plot.references
                    .resize_with(i + 1, || Series::line("", Vec::new()));
            }
            let line = &mut plot.references[i];
            line.name = reference.name().to_owned();
            if !line.points.iter().any(|p| p.x == x) {
                line.points.push(XY::at(x, y));
            }
        }
    }
    // A reference that no row gave a value has nothing to draw.
    plot.references.retain(|r| !r.points.is_empty());
    for series in plot.series.iter_mut().chain(&mut plot.references) {
        series.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::figures;
    use crate::record::Record;
    use crate::stack::World;

    const STACKS: [&str; 4] = ["linux-cubic", "linux-bbr", "gw-scps-rate", "gw-scps-vegas"];

    /// A testbed record of geo-8mbit for `stack` at `rtt` and `ber`.
    fn record(stack: &str, rtt: &str, ber: f64, goodput: f64, stopped: Option<f64>) -> Record {
        let limit = if ber == 0.0 { 7.72e6 } else { 6.85e6 };
        let mut record = Record::example(
            World::Testbed,
            "geo-8mbit",
            stack,
            json!({"protocol": stack, "link.rtt": rtt, "link.ber": ber}),
        );
        let figures = record.figures_mut();
        figures.bytes = 10_000_000;
        figures.duration_s = 8e7 / goodput;
        figures.goodput_bps = goodput;
        figures.limit_bps = limit;
        figures.ratio = goodput / limit;
        figures.stopped_s = stopped;
        record
    }

    /// The quick default's records: four stacks at 600 ms, BER 0 and
    /// 1e-5, the Linux stacks stopped at 60 s at 1e-5.
    fn quick() -> Vec<Record> {
        let mut records = Vec::new();
        for (i, stack) in STACKS.into_iter().enumerate() {
            for ber in [0.0, 1e-5] {
                let stopped = (ber > 0.0 && stack.starts_with("linux")).then_some(60.0);
                records.push(record(stack, "600ms", ber, 4e6 + 5e5 * i as f64, stopped));
            }
        }
        records
    }

    #[test]
    fn a_single_x_value_makes_bars_grouped_by_ber_with_the_limit_over_each_group() {
        let records = quick();
        let rows = figures::rows(&records);
        let plots = plots("geo-8mbit", &rows);
        assert_eq!(plots.len(), 1, "one figure, one panel");
        let plot = &plots[0];
        assert_eq!(plot.kind, Kind::Bars);
        assert_eq!(plot.title, "geo-8mbit: goodput at round-trip time 600ms");
        assert_eq!(
            plot.x_axis,
            XAxis::Categories(vec!["BER 0".into(), "BER 1e-5".into()])
        );
        assert_eq!(plot.x_label, "bit-error rate");
        let names: Vec<&str> = plot.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            STACKS
                .map(|s| format!("{s} (testbed)"))
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        for series in &plot.series {
            let xs: Vec<f64> = series.points.iter().map(|p| p.x).collect();
            assert_eq!(xs, [0.0, 1.0], "{}: a bar in each group", series.name);
            let stopped: Vec<bool> = series.points.iter().map(|p| p.stopped).collect();
            let linux = series.name.starts_with("linux");
            assert_eq!(stopped, [false, linux], "{}: stopped runs marked", series.name);
        }
        assert_eq!(plot.references.len(), 1);
        let limit = &plot.references[0];
        assert_eq!(limit.name, "physical limit");
        let at: Vec<(f64, f64)> = limit.points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(at, [(0.0, 7.72e6), (1.0, 6.85e6)], "the limit of each group");
        assert_eq!(
            plot.stopped_label,
            "stopped at its time limit: goodput over the window"
        );
    }

    #[test]
    fn two_x_values_or_more_make_lines_in_a_panel_per_ber() {
        let mut records = Vec::new();
        for stack in ["linux-cubic", "gw-scps-rate"] {
            for rtt in ["100ms", "600ms"] {
                for ber in [0.0, 1e-5] {
                    records.push(record(stack, rtt, ber, 5e6, None));
                }
            }
        }
        let rows = figures::rows(&records);
        let plots = plots("geo-8mbit", &rows);
        let titles: Vec<&str> = plots.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "geo-8mbit: goodput against round-trip time, BER 0",
                "geo-8mbit: goodput against round-trip time, BER 1e-5"
            ]
        );
        for plot in &plots {
            assert_eq!(plot.kind, Kind::Lines);
            assert_eq!(
                plot.x_axis,
                XAxis::Categories(vec!["100ms".into(), "600ms".into()])
            );
            assert_eq!(plot.series.len(), 2);
            assert!(plot.series.iter().all(|s| s.points.len() == 2));
            assert_eq!(plot.references[0].points.len(), 2, "the limit as a line");
            assert_eq!(plot.y_max, Some(7.72e6), "the panels share their scale");
        }
        assert_eq!(
            plots[1].series[1].style,
            Some(1),
            "a stack keeps its look in every panel"
        );
    }

    #[test]
    fn a_sweep_of_bit_error_rates_plots_transfer_time_against_them() {
        let records: Vec<Record> = [0.0, 1e-7, 1e-5]
            .into_iter()
            .map(|ber| {
                let mut r = record("linux-cubic", "600ms", ber, 5e6, None);
                r.run.params.shift_remove("link.rtt");
                r
            })
            .collect();
        let rows = figures::rows(&records);
        let plots = plots("t1-geo", &rows);
        assert_eq!(plots.len(), 1);
        assert_eq!(plots[0].kind, Kind::Lines);
        assert_eq!(plots[0].title, "t1-geo: transfer time against bit-error rate");
        assert_eq!(
            plots[0].x_axis,
            XAxis::Categories(vec!["0".into(), "1e-7".into(), "1e-5".into()])
        );
        assert_eq!(plots[0].references[0].name, "ideal (bytes at the limit)");
    }

    #[test]
    fn swept_values_are_in_their_numeric_order_whatever_the_records_order() {
        let mut records = quick();
        records.reverse();
        let rows = figures::rows(&records);
        let plot = &plots("geo-8mbit", &rows)[0];
        assert_eq!(
            plot.x_axis,
            XAxis::Categories(vec!["BER 0".into(), "BER 1e-5".into()])
        );
        let mut records = Vec::new();
        for rtt in ["600ms", "1s", "100ms", "0ms"] {
            records.push(record("linux-cubic", rtt, 0.0, 5e6, None));
        }
        let rows = figures::rows(&records);
        let plot = &plots("geo-8mbit", &rows)[0];
        assert_eq!(
            plot.x_axis,
            XAxis::Categories(["0ms", "100ms", "600ms", "1s"].map(String::from).to_vec())
        );
        assert_eq!(figures::magnitude("2048bps"), Some(2048.0));
        assert_eq!(figures::magnitude("0.00001"), Some(1e-5));
        assert_eq!(figures::magnitude("round-robin"), None);
    }

    #[test]
    fn bit_error_rates_read_as_people_write_them() {
        assert_eq!(value_text("link.ber", "0.00001"), "1e-5");
        assert_eq!(value_text("link.ber", "0"), "0");
        assert_eq!(value_text("link.ber", "2.5e-7"), "2.5e-7");
        assert_eq!(value_text("link.rtt", "600ms"), "600ms");
        assert_eq!(setting("link.ber", "1e-9"), "BER 1e-9");
    }
}
