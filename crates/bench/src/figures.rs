//! The records of a bench grouped into rows, one per scenario point,
//! stack and world, each with its runs' figures (mean and spread over the
//! runs that completed) and the runs that failed, as the table, the CSV
//! and the plots show them.

use serde_json::Value;

use crate::record::{Figure, Figures, Outcome, Record};
use crate::stack::World;

/// What a scenario's workload measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// A bulk transfer: its time and goodput.
    Bulk,
    /// A message stream: actual rate against offered, latency.
    Messages,
    /// Many users' file fetches: the mean download time.
    Fetches,
}

impl Measure {
    /// What `record`'s run measures: by its figures, or for a failed run
    /// by what it measured before it failed.
    pub fn of(record: &Record) -> Measure {
        let (messages, fetches) = match &record.outcome {
            Outcome::Completed { figures } => (figures.messages.is_some(), figures.fetches.is_some()),
            Outcome::Failed { measured, .. } => (
                measured.contains_key(Figure::Actual.key()),
                measured.contains_key(Figure::DownloadMean.key()),
            ),
        };
        if messages {
            Measure::Messages
        } else if fetches {
            Measure::Fetches
        } else {
            Measure::Bulk
        }
    }
}

/// One point of one scenario, one stack, one world: its runs.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    pub scenario: String,
    pub stack: String,
    pub world: World,
    /// The swept keys but the protocol, as text.
    pub params: Vec<(String, String)>,
    pub runs: Vec<&'a Record>,
}

impl<'a> Row<'a> {
    /// The figures of the runs that completed: the only ones figures are
    /// taken from.
    pub fn completed(&self) -> impl Iterator<Item = &'a Figures> + '_ {
        self.runs.iter().filter_map(|r| r.figures())
    }

    pub fn completed_count(&self) -> usize {
        self.completed().count()
    }

    /// The longest time any of its runs were given before they were
    /// stopped, if any was: their figures are over that window.
    pub fn stopped_s(&self) -> Option<f64> {
        self.completed().filter_map(|f| f.stopped_s).reduce(f64::max)
    }

    /// Mean and sample standard deviation of a figure over the completed
    /// runs; `None` when none completed or none has the figure.
    pub fn stat(&self, figure: Figure) -> Option<Stat> {
        let values: Vec<f64> = self.completed().filter_map(|f| figure.of(f)).collect();
        Stat::of(&values)
    }

    /// Why runs failed, each cause once, in order.
    pub fn failures(&self) -> Vec<&'a str> {
        let mut causes: Vec<&str> = Vec::new();
        for cause in self.runs.iter().filter_map(|r| r.cause()) {
            if !causes.contains(&cause.message()) {
                causes.push(cause.message());
            }
        }
        causes
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn measure(&self) -> Measure {
        self.runs.first().map_or(Measure::Bulk, |r| Measure::of(r))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub mean: f64,
    /// 0 with one value.
    pub sd: f64,
    pub count: usize,
}

impl Stat {
    pub fn of(values: &[f64]) -> Option<Stat> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() < 2 {
            0.0
        } else {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        Some(Stat {
            mean,
            sd,
            count: values.len(),
        })
    }
}

/// A swept value's magnitude in its unit's base (seconds, bit/s, bytes),
/// read as a scenario's keys are (`600ms`, `8Mbit`, `10MB`, `1e-5`); `None`
/// for a value that is no number (`round-robin`).
pub fn magnitude(value: &str) -> Option<f64> {
    use scps_config::units::{Bytes, Rate, parse_duration};
    value
        .parse::<f64>()
        .ok()
        .or_else(|| parse_duration(value).ok().map(|d| d.as_secs_f64()))
        .or_else(|| value.parse::<Rate>().ok().map(|rate| rate.bps() as f64))
        .or_else(|| value.parse::<Bytes>().ok().map(|bytes| bytes.0 as f64))
}

/// Swept keys and their values, as text.
pub type Params = Vec<(String, String)>;

/// The swept keys of a record but the protocol, as text.
pub fn params(record: &Record) -> Params {
    record
        .run
        .params
        .iter()
        .filter(|(k, _)| k.as_str() != "protocol")
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect()
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The records grouped into rows, in the order their first run comes.
pub fn rows<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Row<'a>> {
    let mut rows: Vec<Row<'a>> = Vec::new();
    for record in records {
        let run = &record.run;
        let params = params(record);
        match rows.iter_mut().find(|r| {
            r.scenario == run.scenario && r.stack == run.stack && r.world == run.world && r.params == params
        }) {
            Some(row) => row.runs.push(record),
            None => rows.push(Row {
                scenario: run.scenario.clone(),
                stack: run.stack.clone(),
                world: run.world,
                params,
                runs: vec![record],
            }),
        }
    }
    rows
}
