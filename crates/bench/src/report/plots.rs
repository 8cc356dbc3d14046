//! Which plots a scenario's rows make, as the papers drew theirs: goodput
//! against delay, transfer time against bit-error rate with error bars,
//! actual against offered rate with the ideal line, latency against
//! offered rate, mean download time against bit-error rate; each with the
//! physical limit (or the ideal it implies) dashed. The x axis is the
//! first swept key the papers plot against; the other swept keys split
//! the series.

use crate::figures::{Measure, Row};
use crate::report::svg::{Plot, Series, XAxis, XY};

/// Swept keys a plot takes its x axis from, in order of preference.
const X_KEYS: [(&str, &str); 5] = [
    ("workload.rate", "offered rate (bit/s)"),
    ("link.rtt", "round-trip time"),
    ("link.delay", "one-way delay"),
    ("link.ber", "bit-error rate"),
    ("link.channels", "channels"),
];

pub fn plots(scenario: &str, rows: &[Row]) -> Vec<Plot> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let keys: Vec<&str> = first.params.iter().map(|(k, _)| k.as_str()).collect();
    let x_key = X_KEYS
        .iter()
        .find(|(k, _)| keys.contains(k))
        .map(|&(k, label)| (k.to_owned(), label.to_owned()))
        .or_else(|| keys.first().map(|k| (k.to_string(), k.to_string())));
    match first.measure() {
        Measure::Messages => vec![
            messages(scenario, rows, "actual_bps", "actual rate (bit/s)", true),
            messages(scenario, rows, "latency_p50_s", "median latency (s)", false),
        ],
        Measure::Bulk => {
            let by_ber = x_key.as_ref().is_some_and(|(k, _)| k == "link.ber");
            let (field, y_label, title) = if by_ber {
                (
                    "duration_s",
                    "transfer time (s)",
                    "transfer time against bit-error rate",
                )
            } else {
                ("goodput_bps", "goodput (bit/s)", "goodput")
            };
            vec![categorical(scenario, title, rows, x_key, field, y_label)]
        }
        Measure::Fetches => vec![categorical(
            scenario,
            "mean download time",
            rows,
            x_key,
            "download_mean_s",
            "mean download time (s)",
        )],
    }
}

/// The name of a row's series: its stack and world, and the swept keys
/// other than `x_key`.
fn series_name(row: &Row, x_key: Option<&str>) -> String {
    format!("{} ({}){}", row.stack, row.world, other_keys(row, x_key))
}

/// ` key=value` for each swept key but `x_key`, by the key's last part.
fn other_keys(row: &Row, x_key: Option<&str>) -> String {
    row.params
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != x_key)
        .map(|(k, v)| format!(" {}={v}", k.rsplit('.').next().unwrap_or(k)))
        .collect()
}

/// Rows grouped into series, each point at the index of its x value.
fn categorical(
    scenario: &str,
    title: &str,
    rows: &[Row],
    x_key: Option<(String, String)>,
    field: &str,
    y_label: &str,
) -> Plot {
    let key = x_key.as_ref().map(|(k, _)| k.as_str());
    let x_of = |row: &Row| match key {
        Some(key) => row.param(key).unwrap_or("-").to_owned(),
        None => series_name(row, None),
    };
    let mut categories: Vec<String> = Vec::new();
    for row in rows {
        let x = x_of(row);
        if !categories.contains(&x) {
            categories.push(x);
        }
    }
    let index = |row: &Row| categories.iter().position(|c| *c == x_of(row)).unwrap_or(0) as f64;
    let mut series: Vec<Series> = Vec::new();
    let mut references: Vec<Series> = Vec::new();
    let reference_name = match field {
        "duration_s" => "ideal (bytes at the limit)",
        "download_mean_s" => "ideal (link shared at its limit)",
        _ => "physical limit",
    };
    for row in rows {
        let name = match key {
            Some(key) => series_name(row, Some(key)),
            None => "all".to_owned(),
        };
        let x = index(row);
        if let Some(stat) = row.stat(field) {
            let point = XY {
                x,
                y: stat.mean,
                err: stat.sd,
            };
            add_point(&mut series, name, point);
        }
        // One reference line per setting of the other keys, for the
        // stacks share the limit.
        let reference = reference(row, field);
        let ref_name = format!("{reference_name}{}", other_keys(row, key));
        if let Some(y) = reference {
            let line = match references.iter_mut().find(|s| s.name == ref_name) {
                Some(line) => line,
                None => {
                    references.push(Series::line(ref_name, Vec::new()));
                    references.last_mut().expect("just pushed")
                }
            };
            if !line.points.iter().any(|p| p.x == x) {
                line.points.push(XY::at(x, y));
                line.points.sort_by(|a, b| a.x.total_cmp(&b.x));
            }
        }
    }
    Plot {
        title: format!("{scenario}: {title}"),
        x_label: x_key.map_or("stack (world)".to_owned(), |(_, label)| label),
        y_label: y_label.to_owned(),
        x_axis: XAxis::Categories(categories),
        series,
        references,
    }
}

/// The dashed line's value at a row: the limit, or the ideal it implies.
fn reference(row: &Row, field: &str) -> Option<f64> {
    match field {
        "duration_s" => {
            let bytes = row.stat("bytes")?.mean;
            Some(bytes * 8.0 / row.stat("limit_bps")?.mean)
        }
        "download_mean_s" => row.stat("download_ideal_mean_s").map(|s| s.mean),
        _ => row.stat("limit_bps").map(|s| s.mean),
    }
}

/// A message stream's figure against the offered rate (numeric), with
/// the limit and, for the actual rate, the ideal line (all offered
/// arrives).
fn messages(scenario: &str, rows: &[Row], field: &str, y_label: &str, ideal: bool) -> Plot {
    let mut series: Vec<Series> = Vec::new();
    let mut limit = Series::line("physical limit", Vec::new());
    let mut offered_max: f64 = 0.0;
    for row in rows {
        let (Some(offered), Some(stat)) = (row.stat("offered_bps"), row.stat(field)) else {
            continue;
        };
        offered_max = offered_max.max(offered.mean);
        let name = series_name(row, Some("workload.rate"));
        let point = XY {
            x: offered.mean,
            y: stat.mean,
            err: stat.sd,
        };
        add_point(&mut series, name, point);
        if let Some(l) = row.stat("limit_bps") {
            limit.points.push(XY::at(offered.mean, l.mean));
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    limit.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    limit.points.dedup_by(|a, b| a.x == b.x);
    let mut references = Vec::new();
    if ideal {
        references.push(limit);
        references.push(Series::line(
            "ideal (actual = offered)",
            vec![XY::at(0.0, 0.0), XY::at(offered_max, offered_max)],
        ));
    }
    Plot {
        title: format!("{scenario}: {y_label} against offered rate"),
        x_label: "offered rate (bit/s)".into(),
        y_label: y_label.to_owned(),
        x_axis: XAxis::Linear,
        series,
        references,
    }
}

/// Adds `point` to the series called `name`, a new line if there is none.
fn add_point(series: &mut Vec<Series>, name: String, point: XY) {
    match series.iter_mut().find(|s| s.name == name) {
        Some(s) => s.points.push(point),
        None => series.push(Series::line(name, vec![point])),
    }
}
