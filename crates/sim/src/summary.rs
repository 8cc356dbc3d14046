//! The human-readable summary of a scenario's runs (what `scps sim`
//! prints): one row per point, figures averaged over its runs (with the
//! spread when there are several), and the failures of any.

use scps_config::Scenario;

use crate::RunResult;

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Mean, and "±sd" when there is more than one value.
fn with_spread(values: &[f64], scale: f64, decimals: usize) -> String {
    let m = mean(values);
    if values.len() < 2 {
        return format!("{:.*}", decimals, m / scale);
    }
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    format!("{:.*}±{:.*}", decimals, m / scale, decimals, var.sqrt() / scale)
}

/// A rate in bit/s as the tables write it: `7.471M`, `108.94k`, `950`.
pub fn rate(bps: f64) -> String {
    match bps {
        b if b >= 1e6 => format!("{:.3}M", b / 1e6),
        b if b >= 1e3 => format!("{:.2}k", b / 1e3),
        b => format!("{b:.0}"),
    }
}

/// The summary of `results`, `runs` per point of `scenario` in its order.
pub fn summary(scenario: &Scenario, results: &[RunResult], runs: u32) -> String {
    let mut out = format!("{}: {}\n", scenario.name, scenario.description);
    let axes: Vec<&str> = scenario
        .points
        .first()
        .map(|p| p.params.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    let messages = results.iter().any(|r| r.messages.is_some());
    let fetches = results.iter().any(|r| r.fetches.is_some());
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    if !axes.contains(&"protocol") {
        header.insert(0, "protocol".into());
    }
    header.extend(["runs", "time s", "goodput", "limit", "ratio", "retx bytes"].map(String::from));
    if messages {
        header.extend(["offered", "actual", "p50 s", "p95 s", "max s"].map(String::from));
    }
    if fetches {
        header.extend(["fetches", "mean dl s", "p95 dl s"].map(String::from));
    }
    header.push("note".into());

    let mut rows = vec![header];
    for (point, group) in scenario.points.iter().zip(results.chunks(runs as usize)) {
        let mut row: Vec<String> = point
            .params
            .iter()
            .map(|(_, v)| v.to_string().trim_matches('"').to_owned())
            .collect();
        if !axes.contains(&"protocol") {
            row.insert(0, point.protocol.label().to_owned());
        }
        let ok: Vec<&RunResult> = group.iter().filter(|r| r.error.is_none()).collect();
        let column = |f: &dyn Fn(&RunResult) -> f64| ok.iter().map(|r| f(r)).collect::<Vec<f64>>();
        row.push(format!("{}/{}", ok.len(), group.len()));
        if ok.is_empty() {
            row.extend(std::iter::repeat_n("-".to_owned(), 5));
        } else {
            row.push(with_spread(&column(&|r| r.duration_s), 1.0, 2));
            row.push(rate(mean(&column(&|r| r.goodput_bps))));
            row.push(rate(mean(&column(&|r| r.limit_bps))));
            row.push(with_spread(&column(&|r| r.ratio), 1.0, 3));
            row.push(format!("{:.0}", mean(&column(&|r| r.retransmitted_bytes as f64))));
        }
        if messages {
            let m = |f: &dyn Fn(&scps_workload_format::figures::FlowFigures) -> f64| {
                mean(
                    &ok.iter()
                        .filter_map(|r| r.messages.as_ref().map(|m| f(&m.forward)))
                        .collect::<Vec<_>>(),
                )
            };
            row.push(rate(m(&|f| f.offered_bps)));
            row.push(rate(m(&|f| f.actual_bps)));
            row.push(format!("{:.2}", m(&|f| f.latency_p50_s)));
            row.push(format!("{:.2}", m(&|f| f.latency_p95_s)));
            row.push(format!("{:.2}", m(&|f| f.latency_max_s)));
        }
        if fetches {
            let f = |g: &dyn Fn(&crate::result::FetchFigures) -> f64| {
                mean(
                    &ok.iter()
                        .filter_map(|r| r.fetches.as_ref().map(g))
                        .collect::<Vec<_>>(),
                )
            };
            row.push(format!("{:.0}", f(&|x| x.fetches as f64)));
            row.push(format!("{:.2}", f(&|x| x.download_mean_s)));
            row.push(format!("{:.2}", f(&|x| x.download_p95_s)));
        }
        let errors: Vec<String> = group
            .iter()
            .filter_map(|r| r.error.as_ref().map(|e| format!("seed {}: {e}", r.seed)))
            .collect();
        row.push(errors.join("; "));
        rows.push(row);
    }
    out.push_str(&padded_columns(&rows));
    out.push_str(
        "limit: the physical limit, docs/scenarios.md (rate x (1 - PER(L)) x (L - H)/L x time up); ratio = goodput / limit\n",
    );
    out
}

/// Lines of cells as text, each column padded to its widest cell and two
/// spaces between columns (lines may have fewer cells than others).
pub fn padded_columns(lines: &[Vec<String>]) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
