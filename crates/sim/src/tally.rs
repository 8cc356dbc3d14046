//! What each client's workload came to, in a form that adds up over
//! clients: a run's record is the tally of all its clients together, and
//! where there are several, each client's own tally gives its figures.
//! One computation serves both, so the figures of a run with one client
//! are those of the two-host world, bit for bit.

use std::time::Duration;

use scps_config::{MessageFlow, Point};
use scps_proto::time::Instant;
use scps_workload_format::figures::{FlowFigures, MessageFigures, percentile};

use crate::apps::fetch::FetchProgress;
use crate::apps::messages::FlowReport;
use crate::record::ClientFigures;
use crate::result::{ConnectionTotals, FetchFigures, LinkFigures, RunResult};
use crate::world::Outcome;

/// One client's part of a run's figures.
pub(crate) trait Tally {
    /// Two clients' parts together.
    fn merge(self, other: Self) -> Self;
    /// Says in its errors which client they come from.
    fn name_errors(&mut self, client: &str);
    /// The figures of what this part holds (sorting its samples, which
    /// changes nothing it adds up to).
    fn result(&mut self, point: &Point, seed: u64) -> RunResult;
}

/// The run's figures, and each client's where there are several
/// (`names` in the order of `tallies`).
pub(crate) fn summarize<T: Tally>(
    point: &Point,
    seed: u64,
    names: &[String],
    mut tallies: Vec<T>,
) -> (RunResult, Vec<ClientFigures>) {
    let mut clients = Vec::new();
    if tallies.len() > 1 {
        for (tally, name) in tallies.iter_mut().zip(names) {
            clients.push(ClientFigures::of(name, tally.result(point, seed)));
            tally.name_errors(name);
        }
    }
    let total = tallies
        .into_iter()
        .reduce(T::merge)
        .map(|mut total| total.result(point, seed))
        .expect("a topology has at least one client");
    (total, clients)
}

/// Why a run ended without a client's workload finishing; `None` if it
/// finished.
pub(crate) fn unfinished(done: bool, outcome: Outcome, limit: Instant) -> Option<String> {
    if done {
        return None;
    }
    match outcome {
        Outcome::Done => None,
        Outcome::TimeLimit => Some(format!(
            "not finished within the time limit of {:?} (virtual time)",
            limit.as_duration()
        )),
        Outcome::Quiet => Some("the simulation came to rest before the workload finished".to_owned()),
    }
}

/// A result with the common fields filled in.
fn result(point: &Point, seed: u64, bytes: u64, duration: Duration, error: Option<String>) -> RunResult {
    let duration_s = duration.as_secs_f64();
    let goodput_bps = if duration_s > 0.0 {
        bytes as f64 * 8.0 / duration_s
    } else {
        0.0
    };
    let limit_bps = point.limit_bps(duration);
    RunResult {
        scenario: point.scenario.clone(),
        protocol: point.protocol.label().to_owned(),
        params: point
            .params
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
                )
            })
            .collect(),
        seed,
        bytes,
        duration_s,
        goodput_bps,
        limit_bps,
        ratio: if limit_bps > 0.0 {
            goodput_bps / limit_bps
        } else {
            0.0
        },
        retransmitted_bytes: 0,
        timeouts: 0,
        fast_recoveries: 0,
        messages: None,
        fetches: None,
        link: LinkFigures::default(),
        endpoint_drops: Default::default(),
        error,
    }
}

fn add_connections(a: ConnectionTotals, b: ConnectionTotals) -> ConnectionTotals {
    ConnectionTotals {
        retransmitted_bytes: a.retransmitted_bytes + b.retransmitted_bytes,
        timeouts: a.timeouts + b.timeouts,
        fast_recoveries: a.fast_recoveries + b.fast_recoveries,
    }
}

fn name_error(error: &mut Option<String>, client: &str) {
    if let Some(error) = error {
        *error = format!("client {client}: {error}");
    }
}

/// A bulk transfer: timed from the first SYN to the last byte read.
#[derive(Debug)]
pub(crate) struct BulkTally {
    pub started: Instant,
    pub end: Instant,
    pub bytes: u64,
    pub error: Option<String>,
    pub connections: ConnectionTotals,
}

impl Tally for BulkTally {
    fn merge(self, other: BulkTally) -> BulkTally {
        BulkTally {
            started: self.started.min(other.started),
            end: self.end.max(other.end),
            bytes: self.bytes + other.bytes,
            error: self.error.or(other.error),
            connections: add_connections(self.connections, other.connections),
        }
    }

    fn name_errors(&mut self, client: &str) {
        name_error(&mut self.error, client);
    }

    fn result(&mut self, point: &Point, seed: u64) -> RunResult {
        let mut result = result(
            point,
            seed,
            self.bytes,
            self.end - self.started,
            self.error.clone(),
        );
        result.set_connection_totals(self.connections);
        result
    }
}

/// Message streams over a window of `duration`: the flows each client
/// offers (and the server, with two-way streams, offers back).
#[derive(Debug)]
pub(crate) struct MessageTally {
    pub flows: (MessageFlow, Option<MessageFlow>),
    pub duration: Duration,
    /// How many clients' streams this holds.
    pub clients: u32,
    /// By the flow's sender: forward, reverse.
    pub received: [FlowReport; 2],
    pub error: Option<String>,
    pub connections: ConnectionTotals,
}

impl Tally for MessageTally {
    fn merge(mut self, other: MessageTally) -> MessageTally {
        for (mine, theirs) in self.received.iter_mut().zip(other.received) {
            mine.messages += theirs.messages;
            mine.bytes += theirs.bytes;
            mine.latencies.extend(theirs.latencies);
        }
        MessageTally {
            clients: self.clients + other.clients,
            error: self.error.or(other.error),
            connections: add_connections(self.connections, other.connections),
            ..self
        }
    }

    fn name_errors(&mut self, client: &str) {
        name_error(&mut self.error, client);
    }

    fn result(&mut self, point: &Point, seed: u64) -> RunResult {
        let bytes = self.received.iter().map(|r| r.bytes).sum();
        let mut result = result(point, seed, bytes, self.duration, self.error.clone());
        let flows = self.flows;
        let forward = self.flow_figures(&flows.0, 0);
        let reverse = flows.1.map(|flow| self.flow_figures(&flow, 1));
        result.messages = Some(MessageFigures { forward, reverse });
        result.set_connection_totals(self.connections);
        result
    }
}

impl MessageTally {
    fn flow_figures(&mut self, flow: &MessageFlow, sender: usize) -> FlowFigures {
        let report = &mut self.received[sender];
        let window = self.duration;
        FlowFigures {
            offered_bps: flow.rate_bps as f64 * f64::from(self.clients),
            actual_bps: report.bytes as f64 * 8.0 / window.as_secs_f64(),
            messages: report.messages,
            latency_p50_s: percentile(&mut report.latencies, 50.0),
            latency_p95_s: percentile(&mut report.latencies, 95.0),
            latency_max_s: percentile(&mut report.latencies, 100.0),
        }
    }
}

/// File fetches: timed from the start of the run to the last completion.
#[derive(Debug)]
pub(crate) struct FetchTally {
    pub workload: scps_config::Fetches,
    pub progress: FetchProgress,
    /// Why the fetches did not all end, if they did not.
    pub unfinished: Option<String>,
    /// When the run stopped: the end of a run with no completion.
    pub stopped: Instant,
}

impl Tally for FetchTally {
    fn merge(mut self, other: FetchTally) -> FetchTally {
        let (mine, theirs) = (&mut self.progress, other.progress);
        mine.planned += theirs.planned;
        mine.completed.extend(theirs.completed);
        mine.bytes += theirs.bytes;
        mine.failed += theirs.failed;
        mine.first_error = mine.first_error.take().or(theirs.first_error);
        mine.connections = add_connections(mine.connections, theirs.connections);
        mine.last_completion = mine.last_completion.max(theirs.last_completion);
        self.unfinished = self.unfinished.or(other.unfinished);
        self
    }

    fn name_errors(&mut self, client: &str) {
        name_error(&mut self.progress.first_error, client);
    }

    fn result(&mut self, point: &Point, seed: u64) -> RunResult {
        let (workload, progress) = (self.workload, &mut self.progress);
        let mut error = self.unfinished.clone();
        if progress.planned == 0 {
            error = Some(format!(
                "no fetch was planned: {} clients requesting every {:?} on average made no request within {:?}",
                workload.clients, workload.mean_interval, workload.duration
            ));
        }
        if progress.failed > 0 {
            error.get_or_insert_with(|| {
                format!(
                    "{} of {} fetches failed, the first: {}",
                    progress.failed,
                    progress.planned,
                    progress.first_error.as_deref().unwrap_or("unknown")
                )
            });
        }
        let end = progress.last_completion.unwrap_or(self.stopped);
        let mut result = result(point, seed, progress.bytes, end.as_duration(), error);
        result.set_connection_totals(progress.connections);
        result.fetches = Some(FetchFigures::of(&mut progress.completed, progress.failed));
        result
    }
}
