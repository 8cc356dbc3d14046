//! The one sentence a bench ends with: for each scenario, at the sweep's
//! hardest point (the largest value of every swept key: the longest
//! delay, the highest bit-error rate, as the scenarios' axes go), each
//! stack's figure against the physical limit, best first.

use crate::figures::{Row, magnitude};
use crate::record::Figure;

/// The headline of one scenario's rows, or `None` when it has no rows.
pub fn of_scenario(scenario: &str, rows: &[Row]) -> Option<String> {
    let last = hardest(rows)?;
    let at_last: Vec<&Row> = rows
        .iter()
        .filter(|r| r.params == last.params && r.world == last.world)
        .collect();
    let mut stacks: Vec<(String, Option<f64>)> = at_last
        .iter()
        .map(|row| (stack_figure(row), row.stat(Figure::Ratio).map(|s| s.mean)))
        .collect();
    // Best first; failed runs last.
    stacks.sort_by(|a, b| b.1.unwrap_or(-1.0).total_cmp(&a.1.unwrap_or(-1.0)));
    let point: Vec<String> = last.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let mut place = vec![scenario.to_owned()];
    place.extend(point);
    if rows.iter().any(|r| r.world != last.world) {
        place.push(format!("in the {}", last.world));
    }
    let figures: Vec<String> = stacks.into_iter().map(|(figure, _)| figure).collect();
    Some(format!(
        "{}: {} (goodput / physical limit)",
        place.join(", "),
        figures.join("; ")
    ))
}

/// The row of the sweep's largest values, in the order of its keys; the
/// last row when a swept value is not a number.
fn hardest<'r, 'a>(rows: &'r [Row<'a>]) -> Option<&'r Row<'a>> {
    let numbers = |row: &Row| -> Option<Vec<f64>> { row.params.iter().map(|(_, v)| magnitude(v)).collect() };
    if rows.iter().any(|row| numbers(row).is_none()) {
        return rows.last();
    }
    rows.iter().rev().max_by(|a, b| {
        numbers(a)
            .partial_cmp(&numbers(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// One stack's part of the headline: its ratio, or why it has none.
fn stack_figure(row: &Row) -> String {
    match row.stat(Figure::Ratio) {
        Some(ratio) => {
            let stopped = row
                .stopped_s()
                .map(|s| format!(", stopped at its {s:.0} s limit"))
                .unwrap_or_default();
            format!("{} {:.2}{stopped}", row.stack, ratio.mean)
        }
        None if row.runs.iter().any(|r| r.cause().is_some()) => format!("{} failed", row.stack),
        None => format!("{} -", row.stack),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::rows;
    use crate::record::{Cause, Record};
    use crate::stack::World;
    use serde_json::json;

    /// A testbed run of geo-8mbit at 600 ms and `ber`: its ratio, or
    /// failed.
    fn record(stack: &str, ber: f64, ratio: Option<f64>) -> Record {
        let mut record = Record::example(
            World::Testbed,
            "geo-8mbit",
            stack,
            json!({"link.rtt": "600ms", "link.ber": ber}),
        );
        match ratio {
            Some(ratio) => {
                record.figures_mut().ratio = ratio;
                record
            }
            None => record.failed(Cause::Setup("dumpcap did not start".into())),
        }
    }

    fn stopped(mut record: Record, s: f64) -> Record {
        record.figures_mut().stopped_s = Some(s);
        record
    }

    #[test]
    fn the_headline_is_the_last_point_s_stacks_best_first_with_stopped_and_failed_ones_said() {
        let records = [
            record("linux-cubic", 0.0, Some(0.73)),
            stopped(record("linux-cubic", 1e-5, Some(0.012)), 60.2),
            record("gw-scps-rate", 0.0, Some(0.9)),
            record("gw-scps-rate", 1e-5, Some(0.81)),
            record("linux-bbr", 0.0, Some(0.7)),
            record("linux-bbr", 1e-5, None),
        ];
        let rows = rows(records.iter().rev());
        assert_eq!(
            of_scenario("geo-8mbit", &rows).unwrap(),
            "geo-8mbit, link.rtt 600ms, link.ber 0.00001: gw-scps-rate 0.81; linux-cubic 0.01, stopped at its \
             60 s limit; linux-bbr failed (goodput / physical limit)"
        );
        assert_eq!(of_scenario("geo-8mbit", &[]), None);
    }
}
