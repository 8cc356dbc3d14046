//! A bench's outcome and events in the words its user reads: the
//! scenarios' tables (as text for a terminal, or Markdown for a
//! document), their headlines, and what a rerun does with the records a
//! directory holds.

use crate::session::{BenchOutcome, Event};
use crate::table;

impl BenchOutcome {
    /// Each scenario's table of runs and, when it ran in both worlds,
    /// the two worlds point by point; a scenario without records gives
    /// nothing. As Markdown, one scenario's table goes under its own
    /// heading in a document, so only several are told apart.
    pub fn tables(&self, markdown: bool) -> String {
        let mut out = String::new();
        for scenario in &self.scenarios {
            let (Some(tables), info) = (&scenario.tables, &scenario.scenario) else {
                continue;
            };
            if markdown {
                if self.scenarios.len() > 1 {
                    out.push_str(&format!("**{}**: {}\n\n", info.name, info.as_run));
                }
                out.push_str(&table::markdown(&tables.runs));
            } else {
                out.push_str(&format!(
                    "{}, as run: {}\n(the scenario in full: {})\n{}",
                    info.name,
                    info.as_run,
                    info.description,
                    table::text(&tables.runs)
                ));
            }
            if tables.worlds.len() > 1 {
                out.push_str(&if markdown {
                    format!(
                        "\nThe two worlds, point by point:\n\n{}",
                        table::markdown(&tables.worlds)
                    )
                } else {
                    format!("the two worlds, point by point:\n{}", table::text(&tables.worlds))
                });
            }
        }
        out
    }

    /// The run's outcome in a sentence per scenario that has one.
    pub fn headlines(&self) -> impl Iterator<Item = &str> {
        self.scenarios
            .iter()
            .filter_map(|s| s.tables.as_ref()?.headline.as_deref())
    }
}

impl Event<'_> {
    /// What the user is told of this event, if anything: records a rerun
    /// replaces, or skips.
    pub fn note(&self) -> Option<String> {
        match *self {
            Event::Replaced { count, dir } => {
                let (results, are) = if count == 1 {
                    ("result", "is")
                } else {
                    ("results", "are")
                };
                Some(format!(
                    "{count} {results} in {} {are} of another configuration (another --set, an edited \
                     scenario): run again",
                    dir.display()
                ))
            }
            Event::RunsDone { ran, skipped, dir } if skipped > 0 => Some(format!(
                "{skipped} runs were in {} already, {ran} ran now",
                dir.display()
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::plan::ScenarioInfo;
    use crate::session::{ScenarioOutcome, Tables};

    use super::*;

    fn lines(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    fn scenario(name: &str, worlds: &[&[&str]], headline: Option<&str>) -> ScenarioOutcome {
        ScenarioOutcome {
            scenario: ScenarioInfo {
                name: name.to_owned(),
                description: format!("{name} in full"),
                as_run: "10MB, ber 0".to_owned(),
            },
            tables: Some(Tables {
                runs: lines(&[&["stack", "ratio"], &["tcp-vj", "0.9"]]),
                worlds: lines(worlds),
                headline: headline.map(str::to_owned),
            }),
        }
    }

    fn outcome(scenarios: Vec<ScenarioOutcome>) -> BenchOutcome {
        BenchOutcome {
            report: PathBuf::from("out/index.html"),
            scenarios,
            runs: 1,
            failed: 0,
        }
    }

    const WORLDS: &[&[&str]] = &[&["point", "sim", "testbed"], &["ber 0", "0.9", "0.8"]];

    #[test]
    fn a_terminal_is_shown_each_scenario_as_run_and_in_full_then_the_two_worlds() {
        let empty = ScenarioOutcome {
            tables: None,
            ..scenario("t1-geo", &[], None)
        };
        let shown = outcome(vec![scenario("geo-8mbit", WORLDS, Some("it went")), empty]);
        assert_eq!(
            shown.tables(false),
            "geo-8mbit, as run: 10MB, ber 0\n(the scenario in full: geo-8mbit in full)\n\
             stack   ratio\ntcp-vj  0.9\n\
             the two worlds, point by point:\npoint  sim  testbed\nber 0  0.9  0.8\n"
        );
        assert_eq!(shown.headlines().collect::<Vec<_>>(), ["it went"]);
    }

    #[test]
    fn markdown_names_scenarios_only_when_there_are_several() {
        let one = outcome(vec![scenario("geo-8mbit", &[&["point"]], None)]);
        assert_eq!(
            one.tables(true),
            "| stack | ratio |\n|---|---|\n| tcp-vj | 0.9 |\n"
        );
        assert_eq!(one.headlines().count(), 0);
        let two = outcome(vec![
            scenario("geo-8mbit", &[&["point"]], Some("first")),
            scenario("t1-geo", WORLDS, Some("second")),
        ]);
        assert_eq!(
            two.tables(true),
            "**geo-8mbit**: 10MB, ber 0\n\n| stack | ratio |\n|---|---|\n| tcp-vj | 0.9 |\n\
             **t1-geo**: 10MB, ber 0\n\n| stack | ratio |\n|---|---|\n| tcp-vj | 0.9 |\n\
             \nThe two worlds, point by point:\n\n\
             | point | sim | testbed |\n|---|---|---|\n| ber 0 | 0.9 | 0.8 |\n"
        );
        assert_eq!(two.headlines().collect::<Vec<_>>(), ["first", "second"]);
    }

    #[test]
    fn a_rerun_tells_what_it_replaces_and_what_it_skipped() {
        let dir = Path::new("out");
        let note = |event: Event<'_>| event.note();
        assert_eq!(
            note(Event::Replaced { count: 1, dir }).unwrap(),
            "1 result in out is of another configuration (another --set, an edited scenario): run again"
        );
        assert_eq!(
            note(Event::Replaced { count: 3, dir }).unwrap(),
            "3 results in out are of another configuration (another --set, an edited scenario): run again"
        );
        assert_eq!(
            note(Event::RunsDone {
                ran: 2,
                skipped: 5,
                dir
            })
            .unwrap(),
            "5 runs were in out already, 2 ran now"
        );
        assert_eq!(
            note(Event::RunsDone {
                ran: 2,
                skipped: 0,
                dir
            }),
            None
        );
        assert_eq!(note(Event::Starting { runs: 2 }), None);
    }
}
