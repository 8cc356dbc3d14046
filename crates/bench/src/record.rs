//! A bench's record of one run: which run it is (world, scenario, stack,
//! swept values, seed) and how it went, completed with its figures or
//! failed with its cause. `results.jsonl` keeps one per line as a JSON
//! object with the keys `scps sim --json` gives a run, and `id`, `world`
//! and `stack` added; a failed run's cause is its `error`. Keys this
//! version does not read (the simulator's per-node figures, a later
//! version's) are kept as they come.

use std::fmt;

use scps_sim::result::FetchFigures;
use scps_workload_format::figures::FlowFigures;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::stack::World;

/// One run's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    #[serde(flatten)]
    pub run: Identity,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The run's capture (the stressed link's packet headers), relative
    /// to the bench's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    /// How long a testbed run took on the wall clock, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

/// Which run a record is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// The job's id (`WORLD/SCENARIO/STACK/KEY=VALUE.../seed=S/config=HASH`).
    pub id: String,
    pub world: World,
    /// The stack as the user named it (`linux-cubic`).
    pub stack: String,
    pub scenario: String,
    /// What ran: the simulator's protocol label (its model of a Linux
    /// stack), or in the testbed a Linux stack itself.
    pub protocol: String,
    /// The swept keys' values (`link.ber`, `link.rtt`, ...); `protocol`
    /// among them is the stack as the user named it.
    pub params: Map<String, Value>,
    pub seed: u64,
}

/// How a run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a run's figures (bytes, duration_s, goodput_bps, limit_bps, ratio) or its error"
)]
pub enum Outcome {
    /// No figure is taken from a failed run.
    Failed {
        /// What the run measured before it failed (the simulator's
        /// figures of a run that did not finish), kept as written.
        #[serde(flatten)]
        measured: Map<String, Value>,
        #[serde(rename = "error")]
        cause: Cause,
    },
    Completed {
        #[serde(flatten)]
        figures: Box<Figures>,
    },
}

/// What a completed run measured, with the simulator's names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Application bytes delivered and checked.
    pub bytes: u64,
    /// The transfer's time (a stopped run's: the time it was given).
    pub duration_s: f64,
    /// For a message stream, its actual rate.
    pub goodput_bps: f64,
    /// The link's physical limit (docs/scenarios.md, "The limit").
    pub limit_bps: f64,
    /// Goodput over the limit.
    pub ratio: f64,
    /// Data bytes sent again: the hosts' or, through the gateways, their
    /// link's (absent when a gateway did not tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmitted_bytes: Option<u64>,
    /// Retransmission timeouts and fast recoveries (our stack's; the
    /// kernel's TCP does not tell them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_recoveries: Option<u64>,
    /// A message stream's figures (its forward flow).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub messages: Option<FlowFigures>,
    /// The reverse flow of a two-way message stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<FlowFigures>,
    /// Many users' file fetches: their download times.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub fetches: Option<FetchFigures>,
    /// Through the testbed's gateways: what the hosts' TCP resent on
    /// their LANs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lan_retransmitted_bytes: Option<u64>,
    /// A run stopped at the end of the time it was given (the testbed's
    /// wall clock): the seconds it ran. Its figures are what it moved in
    /// that window, not a finished transfer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_s: Option<f64>,
    /// The rest the world recorded (the simulator's link, endpoints,
    /// clients, routers, gateways and bonds), kept as written.
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// Why a run failed, in the words its world gave. A stored record says
/// only the words: reading one tells the kind by how the bench's worlds
/// word each ([`Cause::of_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Cause {
    /// The run could not be set up or started: the bench's files, the
    /// simulator's model of the point, a program of the testbed that did
    /// not start.
    Setup(String),
    /// The simulator panicked (a bug).
    Panic(String),
    /// The run's time ran out before its work was done: the scenario's
    /// time limit in the simulator, the wall clock in the testbed.
    TimedOut(String),
    /// The run ended before its work was done: a connection reset,
    /// content that did not verify, fetches that failed, a sender that
    /// did not report.
    Ended(String),
}

impl Cause {
    /// The cause as the user reads it.
    pub fn message(&self) -> &str {
        match self {
            Cause::Setup(m) | Cause::Panic(m) | Cause::TimedOut(m) | Cause::Ended(m) => m,
        }
    }

    /// The same kind of cause, its message changed by `change` (told more
    /// about).
    pub fn map_message(self, change: impl FnOnce(String) -> String) -> Cause {
        match self {
            Cause::Setup(m) => Cause::Setup(change(m)),
            Cause::Panic(m) => Cause::Panic(change(m)),
            Cause::TimedOut(m) => Cause::TimedOut(change(m)),
            Cause::Ended(m) => Cause::Ended(change(m)),
        }
    }

    /// The cause a message tells, by how the simulator and the testbed
    /// word each kind; a message of no known shape is of a run that ended
    /// early.
    pub fn of_message(message: String) -> Cause {
        if message.starts_with("the simulator panicked: ") {
            return Cause::Panic(message);
        }
        // The simulator names the client whose workload failed.
        let said = match message.strip_prefix("client ") {
            Some(rest) => rest.split_once(": ").map_or(message.as_str(), |(_, said)| said),
            None => message.as_str(),
        };
        // The first clause: a cause quoted after it is not this one's.
        let head = said.split(": ").next().unwrap_or(said);
        let timed_out = said.starts_with("not finished within ")
            || said.starts_with("nothing got through within ")
            || head.contains(" fetches not finished within ");
        if timed_out {
            return Cause::TimedOut(message);
        }
        let setup = [
            "the run could not start: ",
            "cannot ",
            "dumpcap: ",
            "no node ",
            "in node ",
            "invalid topology: ",
            "a gw- stack without gateways",
            "a workload the testbed does not run",
        ]
        .iter()
        .any(|start| said.starts_with(start))
            || head.ends_with(" did not start")
            || head.contains(" has no IPv4 address");
        if setup {
            Cause::Setup(message)
        } else {
            Cause::Ended(message)
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause::of_message(message)
    }
}

impl From<Cause> for String {
    fn from(cause: Cause) -> String {
        match cause {
            Cause::Setup(m) | Cause::Panic(m) | Cause::TimedOut(m) | Cause::Ended(m) => m,
        }
    }
}

impl Outcome {
    /// A run that failed before it measured anything.
    pub fn failed(cause: Cause) -> Outcome {
        Outcome::Failed {
            measured: Map::new(),
            cause,
        }
    }
}

impl Record {
    /// The record as a line of JSON: as the results file holds it, and as
    /// `scps bench --json` prints it.
    pub fn json_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a record serialises");
        line.push('\n');
        line
    }

    /// The figures of a completed run.
    pub fn figures(&self) -> Option<&Figures> {
        match &self.outcome {
            Outcome::Completed { figures } => Some(figures),
            Outcome::Failed { .. } => None,
        }
    }

    /// Why a failed run failed.
    pub fn cause(&self) -> Option<&Cause> {
        match &self.outcome {
            Outcome::Failed { cause, .. } => Some(cause),
            Outcome::Completed { .. } => None,
        }
    }

    /// How long a run stopped at its time limit ran; `None` for a run
    /// that finished (or failed).
    pub fn stopped_s(&self) -> Option<f64> {
        self.figures()?.stopped_s
    }
}

/// A figure of completed runs that the tables, plots and the papers'
/// comparison show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Bytes,
    Duration,
    Goodput,
    Limit,
    Ratio,
    Retransmitted,
    Offered,
    Actual,
    LatencyP50,
    LatencyP95,
    Fetches,
    DownloadMean,
    DownloadP95,
    DownloadIdealMean,
}

impl Figure {
    /// Its key in a record.
    pub fn key(self) -> &'static str {
        match self {
            Figure::Bytes => "bytes",
            Figure::Duration => "duration_s",
            Figure::Goodput => "goodput_bps",
            Figure::Limit => "limit_bps",
            Figure::Ratio => "ratio",
            Figure::Retransmitted => "retransmitted_bytes",
            Figure::Offered => "offered_bps",
            Figure::Actual => "actual_bps",
            Figure::LatencyP50 => "latency_p50_s",
            Figure::LatencyP95 => "latency_p95_s",
            Figure::Fetches => "fetches",
            Figure::DownloadMean => "download_mean_s",
            Figure::DownloadP95 => "download_p95_s",
            Figure::DownloadIdealMean => "download_ideal_mean_s",
        }
    }

    /// Its value in `figures`, if the run has it.
    pub fn of(self, figures: &Figures) -> Option<f64> {
        let message = |of: fn(&FlowFigures) -> f64| figures.messages.as_ref().map(of);
        let fetch = |of: fn(&FetchFigures) -> Option<f64>| figures.fetches.as_ref().and_then(of);
        match self {
            Figure::Bytes => Some(figures.bytes as f64),
            Figure::Duration => Some(figures.duration_s),
            Figure::Goodput => Some(figures.goodput_bps),
            Figure::Limit => Some(figures.limit_bps),
            Figure::Ratio => Some(figures.ratio),
            Figure::Retransmitted => figures.retransmitted_bytes.map(|b| b as f64),
            Figure::Offered => message(|m| m.offered_bps),
            Figure::Actual => message(|m| m.actual_bps),
            Figure::LatencyP50 => message(|m| m.latency_p50_s),
            Figure::LatencyP95 => message(|m| m.latency_p95_s),
            Figure::Fetches => fetch(|f| Some(f.fetches as f64)),
            Figure::DownloadMean => fetch(|f| Some(f.download_mean_s)),
            Figure::DownloadP95 => fetch(|f| Some(f.download_p95_s)),
            Figure::DownloadIdealMean => fetch(|f| f.download_ideal_mean_s),
        }
    }
}

#[cfg(test)]
impl Record {
    /// A completed run of `stack` in `world` at `params` (a JSON object),
    /// its figures all zero, for a test to fill in.
    pub(crate) fn example(world: World, scenario: &str, stack: &str, params: Value) -> Record {
        let Value::Object(params) = params else {
            panic!("params are a JSON object: {params}");
        };
        let point: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Record {
            run: Identity {
                id: format!("{world}/{scenario}/{stack}/{}/seed=1", point.join("/")),
                world,
                stack: stack.to_owned(),
                scenario: scenario.to_owned(),
                protocol: stack.to_owned(),
                params,
                seed: 1,
            },
            outcome: Outcome::Completed {
                figures: Box::default(),
            },
            capture: None,
            wall_s: None,
        }
    }

    /// The figures of a completed run, to change.
    pub(crate) fn figures_mut(&mut self) -> &mut Figures {
        match &mut self.outcome {
            Outcome::Completed { figures } => figures,
            Outcome::Failed { .. } => panic!("a failed run has no figures"),
        }
    }

    /// The record as failed with `cause`.
    pub(crate) fn failed(mut self, cause: Cause) -> Record {
        self.outcome = Outcome::failed(cause);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of `results.jsonl` as the bench wrote them before its records
    /// were typed (`scps bench ... --json`, the simulator's world, and a
    /// testbed record as the testbed world wrote it).
    const STORED: [&str; 7] = [
        // t1-geo over Reno, completed.
        r#"{"id":"sim/t1-geo/linux-reno/link.ber=0/seed=1/config=422c4125efda7a43","world":"sim","stack":"linux-reno","scenario":"t1-geo","protocol":"tcp-vj","params":{"protocol":"linux-reno","link.ber":0},"seed":1,"bytes":300000,"duration_s":8.024304413,"goodput_bps":299091.3450531379,"limit_bps":1502826.6666666667,"ratio":0.1990191894295669,"retransmitted_bytes":2920,"timeouts":0,"fast_recoveries":1,"link":{"forward":{"packets":209,"bytes":311292,"delivered":207,"dropped_buffer":2,"dropped_bit_errors":0,"dropped_outage":0},"reverse":{"packets":127,"bytes":5620,"delivered":127,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0}}}"#,
        // The same at 2 s of virtual time: not finished, with a capture.
        r#"{"id":"sim/t1-geo/linux-reno/link.ber=0.00001/seed=1/config=62ba49032b260619","world":"sim","stack":"linux-reno","scenario":"t1-geo","protocol":"tcp-vj","params":{"protocol":"linux-reno","link.ber":0.00001},"seed":1,"bytes":0,"duration_s":2.0,"goodput_bps":0.0,"limit_bps":1332886.8837724882,"ratio":0.0,"retransmitted_bytes":0,"timeouts":0,"fast_recoveries":0,"link":{"forward":{"packets":4,"bytes":4552,"delivered":2,"dropped_buffer":0,"dropped_bit_errors":2,"dropped_outage":0},"reverse":{"packets":2,"bytes":104,"delivered":2,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0}},"error":"not finished within the time limit of 2s (virtual time)","capture":"captures/sim_t1-geo_linux-reno_link.ber=0.00001_seed=1_config=62ba49032b260619.pcap"}"#,
        // A message stream.
        r#"{"id":"sim/iridium-3ch/tcp-vj/link.channels=3/workload.rate=1024bps/seed=1/config=d19db610254f921c","world":"sim","stack":"tcp-vj","scenario":"iridium-3ch","protocol":"tcp-vj","params":{"protocol":"tcp-vj","link.channels":3,"workload.rate":"1024bps"},"seed":1,"bytes":6784,"duration_s":60.0,"goodput_bps":904.5333333333333,"limit_bps":1024.0,"ratio":0.8833333333333333,"retransmitted_bytes":0,"timeouts":0,"fast_recoveries":0,"offered_bps":1024.0,"actual_bps":904.5333333333333,"messages":106,"latency_p50_s":6.951288894,"latency_p95_s":11.743960608,"latency_max_s":13.02187728,"link":{"forward":{"packets":15,"bytes":8220,"delivered":15,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0},"reverse":{"packets":13,"bytes":692,"delivered":13,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0}}}"#,
        // Many users' fetches through the gateways.
        r#"{"id":"sim/complex-35ws/gw-scps-rate/link.ber=0/seed=1/config=607ee22476b294ca","world":"sim","stack":"gw-scps-rate","scenario":"complex-35ws","protocol":"gw-scps-rate","params":{"protocol":"gw-scps-rate","link.ber":0},"seed":1,"bytes":5549679,"duration_s":80.338968603,"goodput_bps":552626.3626732958,"limit_bps":656426.6666666667,"ratio":0.8418706776181585,"retransmitted_bytes":48,"timeouts":3,"fast_recoveries":0,"fetches":13,"fetches_failed":0,"download_mean_s":13.95091395653846,"download_p50_s":7.715780348,"download_p95_s":46.525558964,"download_max_s":46.525558964,"download_ideal_mean_s":16.82198610755718,"link":{"forward":{"packets":1994,"bytes":104256,"delivered":1994,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0},"reverse":{"packets":3884,"bytes":5751995,"delivered":3884,"dropped_buffer":0,"dropped_bit_errors":0,"dropped_outage":0}},"gateways":[{"name":"gwA","closed":12,"reset":0,"open_failed":0,"open":1,"link_retransmitted_bytes":48,"link_timeouts":3},{"name":"gwB","closed":12,"reset":0,"open_failed":0,"open":1,"link_retransmitted_bytes":0,"link_timeouts":0}]}"#,
        // A simulator run that could not start.
        r#"{"id":"sim/geo-8mbit/tcp-vj/link.ber=0/seed=1/config=0000000000000001","world":"sim","stack":"tcp-vj","scenario":"geo-8mbit","protocol":"tcp-vj","params":{"protocol":"tcp-vj","link.ber":0},"seed":1,"error":"the run could not start: link: no channel (replay: scps sim geo-8mbit --seed 1)"}"#,
        // The testbed: through the gateways, stopped at its limit.
        r#"{"id":"testbed/geo-8mbit/gw-scps-rate/link.rtt=600ms/link.ber=0.00001/seed=1/config=0000000000000002","world":"testbed","stack":"gw-scps-rate","scenario":"geo-8mbit","protocol":"gw-scps-rate","params":{"protocol":"gw-scps-rate","link.rtt":"600ms","link.ber":0.00001},"seed":1,"capture":"captures/testbed_geo-8mbit.pcap","stopped_s":60.5,"bytes":7000000,"duration_s":60.5,"goodput_bps":925619.8347107438,"limit_bps":6850000.0,"ratio":0.13512698316945165,"lan_retransmitted_bytes":448,"retransmitted_bytes":91000,"wall_s":75.25}"#,
        // The testbed: a program that did not start.
        r#"{"id":"testbed/geo-8mbit/linux-bbr/link.rtt=600ms/link.ber=0/seed=1/config=0000000000000003","world":"testbed","stack":"linux-bbr","scenario":"geo-8mbit","protocol":"linux-bbr","params":{"protocol":"linux-bbr","link.rtt":"600ms","link.ber":0},"seed":1,"error":"dumpcap did not start: nothing in /tmp/dumpcap.log","wall_s":15.5}"#,
    ];

    fn object(line: &str) -> Map<String, Value> {
        serde_json::from_str(line).unwrap()
    }

    /// What the bench wrote back of a stored line before its records were
    /// typed (merging, `results.json`): the line read as a JSON map. (Its
    /// numbers read as serde_json reads them, which may move a number's
    /// last digit; typed or not, a record reads them alike.)
    fn written_back_untyped(line: &str) -> String {
        serde_json::to_string(&object(line)).unwrap()
    }

    #[test]
    fn a_record_stored_before_records_were_typed_reads_and_writes_back_the_same_keys_and_values() {
        for line in STORED {
            let record: Record = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let written = serde_json::to_string(&record).unwrap();
            assert_eq!(object(&written), object(&written_back_untyped(line)), "{line}");
        }
        // The simulator's: the same text, key for key in order, when a
        // failed run has none of the figures written after its error.
        for line in &STORED[..5] {
            let record: Record = serde_json::from_str(line).unwrap();
            assert_eq!(
                serde_json::to_string(&record).unwrap(),
                written_back_untyped(line)
            );
        }
    }

    #[test]
    fn a_record_round_trips_through_its_json_line() {
        let mut messages = Record::example(
            World::Testbed,
            "iridium-3ch",
            "scps-rate",
            serde_json::json!({"protocol": "scps-rate", "workload.rate": "2048bps"}),
        );
        let stream = FlowFigures {
            offered_bps: 2048.0,
            actual_bps: 1800.5,
            messages: 211,
            latency_p50_s: 7.5,
            latency_p95_s: 11.0,
            latency_max_s: 12.25,
        };
        *messages.figures_mut() = Figures {
            bytes: 13_504,
            duration_s: 60.0,
            goodput_bps: 1800.5,
            limit_bps: 2048.0,
            ratio: 0.875,
            retransmitted_bytes: Some(64),
            timeouts: Some(1),
            fast_recoveries: Some(0),
            messages: Some(stream.clone()),
            reverse: Some(stream),
            stopped_s: Some(120.5),
            ..Figures::default()
        };
        messages.capture = Some("captures/x.pcap".into());
        messages.wall_s = Some(121.75);
        let mut fetches = Record::example(World::Sim, "complex-35ws", "gw-scps-rate", serde_json::json!({}));
        *fetches.figures_mut() = Figures {
            fetches: Some(FetchFigures {
                fetches: 13,
                fetches_failed: 0,
                download_mean_s: 14.5,
                download_p50_s: 7.75,
                download_p95_s: 46.5,
                download_max_s: 46.5,
                download_ideal_mean_s: None,
            }),
            lan_retransmitted_bytes: Some(448),
            detail: object(r#"{"gateways": [{"name": "gwA", "open": 1}]}"#),
            ..Figures::default()
        };
        let mut failed = Record::example(World::Sim, "t1-geo", "tcp-vj", serde_json::json!({"link.ber": 0}));
        failed.outcome = Outcome::Failed {
            measured: object(r#"{"bytes": 0, "link": {"forward": {"packets": 4}}}"#),
            cause: Cause::TimedOut("not finished within the time limit of 2s (virtual time)".into()),
        };
        for record in [messages, fetches, failed] {
            let line = serde_json::to_string(&record).unwrap();
            assert!(!line.contains('\n'), "one line: {line}");
            assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), record, "{line}");
        }
    }

    #[test]
    fn a_stored_record_reads_as_its_typed_outcome() {
        let records: Vec<Record> = STORED.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        let reno = records[0].figures().expect("completed");
        assert_eq!(
            (reno.bytes, reno.retransmitted_bytes, reno.messages.is_none()),
            (300_000, Some(2920), true)
        );
        assert_eq!(records[0].run.world, World::Sim);
        assert_eq!(records[0].run.params["link.ber"], 0);
        assert_eq!(
            records[1].cause(),
            Some(&Cause::TimedOut(
                "not finished within the time limit of 2s (virtual time)".into()
            ))
        );
        assert!(records[1].capture.is_some(), "a failed run keeps its capture");
        let Outcome::Failed { measured, .. } = &records[1].outcome else {
            unreachable!()
        };
        assert_eq!(measured["bytes"], 0, "what it measured is kept");
        let stream = records[2].figures().unwrap().messages.as_ref().unwrap();
        assert_eq!((stream.messages, stream.offered_bps), (106, 1024.0));
        let actual = object(STORED[2])["actual_bps"].as_f64();
        assert_eq!(Figure::Actual.of(records[2].figures().unwrap()), actual);
        let fetches = records[3].figures().unwrap();
        assert_eq!(fetches.fetches.as_ref().unwrap().fetches, 13);
        let ideal = object(STORED[3])["download_ideal_mean_s"].as_f64();
        assert_eq!(Figure::DownloadIdealMean.of(fetches), ideal);
        assert!(fetches.detail.contains_key("gateways"), "{fetches:?}");
        assert!(matches!(records[4].cause(), Some(Cause::Setup(_))));
        let stopped = &records[5];
        assert_eq!(stopped.stopped_s(), Some(60.5));
        assert_eq!(stopped.figures().unwrap().lan_retransmitted_bytes, Some(448));
        assert_eq!(stopped.wall_s, Some(75.25));
        assert_eq!(
            records[6].cause().map(Cause::message),
            Some("dumpcap did not start: nothing in /tmp/dumpcap.log")
        );
        assert!(matches!(records[6].cause(), Some(Cause::Setup(_))));
    }

    #[test]
    fn keys_a_reader_does_not_know_are_kept() {
        let line = STORED[0].replacen(r#""seed":1,"#, r#""seed":1,"energy_j":12.5,"#, 1);
        let record: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(record.figures().unwrap().detail["energy_j"], 12.5);
        assert_eq!(object(&serde_json::to_string(&record).unwrap()), object(&line));
    }

    #[test]
    fn a_line_with_neither_figures_nor_an_error_is_no_record() {
        let error = serde_json::from_str::<Record>(
            r#"{"id":"x","world":"sim","stack":"s","scenario":"t","protocol":"p","params":{},"seed":1}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("or its error"), "{error}");
    }

    #[test]
    fn a_cause_is_told_by_its_words_as_each_world_writes_them() {
        let setup = [
            "the run could not start: link: no channel (replay: scps sim t1-geo --seed 1)",
            "cannot make /tmp/x/captures: Permission denied (os error 13)",
            "cannot write /tmp/x/emulate.toml: No space left on device (os error 28)",
            "scps emulate did not start: nothing in /tmp/x/emulate.log",
            "scps recv did not start: error: address in use",
            "dumpcap: no node \"emu\" in this testbed",
            "no node \"server\" in this testbed",
            "a gw- stack without gateways",
            "gwA has no IPv4 address on sat0",
            "a workload the testbed does not run",
        ];
        let timed_out = [
            "not finished within the time limit of 2s (virtual time)",
            "client c2: not finished within the time limit of 2s (virtual time)",
            "not finished within 60 s, and scps recv did not report when interrupted: nothing in recv.log",
            "not finished within 60 s, and scps recv ended without a report: x",
            "nothing got through within 61 s (wall clock)",
            "3 of 40 fetches not finished within 120 s (wall clock)",
        ];
        let ended = [
            "scps send: the peer reset the connection",
            "scps send ended without a report: cannot connect (scps recv: the peer closed)",
            "the receiver did not verify the content (SHA-256)",
            "2 of 40 fetches failed, the first: fetch 3: scps send: cannot connect",
            "client c1: 1 of 3 fetches failed, the first: client c1: not finished within 2s",
            "the simulation came to rest before the workload finished",
            "connection reset",
        ];
        let told = |message: &str| Cause::of_message(message.into());
        for message in setup {
            assert_eq!(told(message), Cause::Setup(message.into()));
        }
        for message in timed_out {
            assert_eq!(told(message), Cause::TimedOut(message.into()));
        }
        for message in ended {
            assert_eq!(told(message), Cause::Ended(message.into()));
        }
        let panic = "the simulator panicked: index out of bounds (a bug) (replay: scps sim x --seed 1)";
        assert_eq!(told(panic), Cause::Panic(panic.into()));
    }
}
