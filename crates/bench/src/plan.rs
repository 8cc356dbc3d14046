//! What a bench runs: every point of every scenario, for every stack, in
//! every world asked for, as many runs as asked; each job named by an id
//! that a rerun (or another shard) recognises. Everything is checked
//! before anything runs: an unknown scenario, stack or key, a stack a
//! world cannot run, a sweep beyond the bound.

use scps_config::{Point, Scenario, Workload};
use toml::Value;

use crate::stack::{Stack, StackError, World};

/// Most runs one bench may plan unless told otherwise (`--max-runs`).
pub const DEFAULT_MAX_RUNS: usize = 5000;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{scenario}: {error}")]
    Scenario {
        scenario: String,
        error: scps_config::Error,
    },
    #[error("{scenario}: {error}")]
    Stack { scenario: String, error: StackError },
    #[error("protocol = {0}: a stack name or a list of them ({list})", list = Stack::names())]
    StackList(String),
    #[error("the sweep is {runs} runs: at most {max} (--max-runs raises the bound)")]
    TooLarge { runs: usize, max: usize },
    #[error("--shard {0}: K/N with 1 <= K <= N <= 1000, such as 2/8")]
    Shard(String),
    #[error("no scenario: name at least one (lowrate-leo-geo, geo-8mbit, t1-geo, iridium-3ch, complex-35ws)")]
    NoScenario,
}

/// One of `count` disjoint slices of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 0.
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = PlanError;
    /// `K/N`, K counted from 1.
    fn from_str(text: &str) -> Result<Shard, PlanError> {
        let refuse = || PlanError::Shard(text.to_owned());
        let (k, n) = text.split_once('/').ok_or_else(refuse)?;
        let (k, n): (usize, usize) = (
            k.trim().parse().map_err(|_| refuse())?,
            n.trim().parse().map_err(|_| refuse())?,
        );
        if k == 0 || k > n || n > 1000 {
            return Err(refuse());
        }
        Ok(Shard {
            index: k - 1,
            count: n,
        })
    }
}

/// `--set KEY=VALUE` assignments, in order.
pub type Sets = Vec<(String, Value)>;

/// What to plan.
#[derive(Debug, Clone)]
pub struct Request {
    pub scenarios: Vec<String>,
    /// `--set`, in order; a `protocol` among them names stacks.
    pub sets: Sets,
    pub runs: Option<u32>,
    pub seed: Option<u64>,
    pub worlds: Vec<World>,
    pub shard: Option<Shard>,
    pub max_runs: usize,
}

/// The quick default's settings of geo-8mbit (a command's `--set`s go
/// over them).
const QUICK_SETS: [&str; 4] = [
    "link.rtt=600ms",
    "link.ber=[0, 1e-5]",
    "workload.bytes=10MB",
    "protocol=[\"linux-cubic\", \"linux-bbr\", \"gw-scps-rate\", \"gw-scps-vegas\"]",
];

impl Request {
    /// What a command asks for: `scenarios` with `sets`, `runs` and
    /// `seed` (default: each scenario's), in `worlds` (default: the
    /// simulator), in the shard `K/N` named, within `max_runs`. Without a
    /// scenario, the quick default: geo-8mbit at 600 ms, BER 0 and 1e-5,
    /// 10 MB over Linux's CUBIC and BBR directly and through the
    /// gateways' `rate` and `vegas` stacks, in the testbed; `sets` go
    /// over its settings.
    pub fn asked(
        scenarios: &[String],
        sets: Sets,
        runs: Option<u32>,
        seed: Option<u64>,
        worlds: Option<Vec<World>>,
        shard: Option<&str>,
        max_runs: usize,
    ) -> Result<Request, PlanError> {
        let quick = scenarios.is_empty();
        let (scenarios, sets, world) = if quick {
            let quick_sets = QUICK_SETS.iter().map(|s| {
                scps_config::sweep::parse_assignment(s).expect("the quick default's settings parse")
            });
            (
                vec!["geo-8mbit".to_owned()],
                quick_sets.chain(sets).collect(),
                World::Testbed,
            )
        } else {
            (scenarios.to_vec(), sets, World::Sim)
        };
        Ok(Request {
            scenarios,
            sets,
            runs,
            seed,
            worlds: worlds.unwrap_or_else(|| vec![world]),
            shard: shard.map(str::parse).transpose()?,
            max_runs,
        })
    }
}

/// `--max-runs`: a bound that lets at least one run through.
pub fn max_runs_of(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 would refuse every sweep: at least 1".into()),
        Ok(runs) => Ok(runs),
        Err(e) => Err(format!("{text:?}: {e}")),
    }
}

/// One run to do.
#[derive(Debug, Clone)]
pub struct Job {
    /// `WORLD/SCENARIO/STACK/KEY=VALUE.../seed=S/config=HASH`: the same
    /// job, the same id, in any rerun or shard. `HASH` is the
    /// [`fingerprint`] of the point's document, so that a rerun with
    /// another `--set` or an edited scenario file does not take the
    /// records of this one for its own.
    pub id: String,
    pub world: World,
    pub stack: Stack,
    pub point: Point,
    pub seed: u64,
    /// Whether to capture the stressed link's packets (their headers) for
    /// the report's time-sequence graph: the first run of each stack's
    /// last point (the sweep's hardest, usually) of a bulk transfer.
    pub capture: bool,
}

/// A scenario of the plan, as its report describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioInfo {
    pub name: String,
    /// The scenario's own description: its full sweep, as published.
    pub description: String,
    /// What this bench ran of it: the workload and each swept key's
    /// values (`--set` narrows the scenario's sweep, or widens it).
    pub as_run: String,
}

impl ScenarioInfo {
    /// A scenario's information for a bench that ran `points` of it
    /// (all of them, in any order; `workload` is that of the first, if
    /// known).
    pub fn of_run<'a>(
        name: &str,
        description: String,
        workload: Option<&Workload>,
        points: impl IntoIterator<Item = &'a [(String, String)]>,
    ) -> ScenarioInfo {
        let mut axes: Vec<(String, Vec<String>)> = Vec::new();
        for params in points {
            for (key, value) in params {
                if key == "protocol" {
                    continue;
                }
                match axes.iter_mut().find(|(k, _)| k == key) {
                    Some((_, values)) if !values.contains(value) => values.push(value.clone()),
                    Some(_) => {}
                    None => axes.push((key.clone(), vec![value.clone()])),
                }
            }
        }
        for (_, values) in &mut axes {
            // In their numeric order when they are numbers (records come
            // in any order).
            let numbers: Option<Vec<f64>> = values.iter().map(|v| crate::figures::magnitude(v)).collect();
            if let Some(numbers) = numbers {
                let mut paired: Vec<(f64, String)> = numbers.into_iter().zip(values.drain(..)).collect();
                paired.sort_by(|a, b| a.0.total_cmp(&b.0));
                values.extend(paired.into_iter().map(|(_, v)| v));
            }
        }
        let mut parts: Vec<String> = workload.map(workload_text).into_iter().collect();
        parts.extend(
            axes.iter()
                .map(|(key, values)| format!("{key} {}", values.join("/"))),
        );
        ScenarioInfo {
            name: name.to_owned(),
            description,
            as_run: parts.join("; "),
        }
    }
}

/// A workload as a table's header says it.
fn workload_text(workload: &Workload) -> String {
    match workload {
        Workload::Bulk { bytes, both_ways, .. } => {
            let ways = if *both_ways { " each way" } else { "" };
            format!("a bulk transfer of {}{ways}", bytes_text(*bytes))
        }
        Workload::Messages {
            forward, duration, ..
        } => format!(
            "messages of {} bytes offered at {} bit/s for {} s",
            forward.size,
            forward.rate_bps,
            duration.as_secs_f64()
        ),
        Workload::Echo { flow, duration } => format!(
            "echoed messages of {} bytes offered at {} bit/s for {} s",
            flow.size,
            flow.rate_bps,
            duration.as_secs_f64()
        ),
        Workload::Fetches(fetches) => format!(
            "{} clients fetching files for {} s",
            fetches.clients,
            fetches.duration.as_secs_f64()
        ),
    }
}

/// `10 MB`, `250 kB`, `1048576 bytes`: decimal units when they are exact.
fn bytes_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000 && b % 1000 == 0 => format!("{} MB", b as f64 / 1e6),
        b if b >= 1000 && b % 100 == 0 => format!("{} kB", b as f64 / 1e3),
        b => format!("{b} bytes"),
    }
}

/// A swept value as text: a string without its quotes.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub scenarios: Vec<ScenarioInfo>,
    /// This shard's jobs, in the sweep's order.
    pub jobs: Vec<Job>,
    /// Jobs of the whole sweep, all shards.
    pub total: usize,
}

impl Plan {
    pub fn new(request: &Request) -> Result<Plan, PlanError> {
        if request.scenarios.is_empty() {
            return Err(PlanError::NoScenario);
        }
        let mut scenarios = Vec::new();
        let mut jobs = Vec::new();
        for name in &request.scenarios {
            let at = |error| PlanError::Scenario {
                scenario: name.clone(),
                error,
            };
            let (stacks, sets) = stacks_and_sets(name, &request.sets)?;
            for &world in &request.worlds {
                for &stack in &stacks {
                    let label = stack.label_in(world).map_err(|error| PlanError::Stack {
                        scenario: name.clone(),
                        error,
                    })?;
                    let mut sets = sets.clone();
                    sets.push(("protocol".to_owned(), Value::String(label.label().to_owned())));
                    let scenario = Scenario::load(name, &sets).map_err(at)?;
                    let runs = request.runs.unwrap_or(scenario.runs);
                    scenario.check_runs("--runs", runs).map_err(at)?;
                    let first_seed = request.seed.unwrap_or(scenario.seed);
                    if !scenarios.iter().any(|s: &ScenarioInfo| s.name == scenario.name) {
                        let points: Vec<Vec<(String, String)>> = scenario
                            .points
                            .iter()
                            .map(|p| p.params.iter().map(|(k, v)| (k.clone(), value_text(v))).collect())
                            .collect();
                        scenarios.push(ScenarioInfo::of_run(
                            &scenario.name,
                            scenario.description.clone(),
                            scenario.points.first().map(|p| &p.workload),
                            points.iter().map(Vec::as_slice),
                        ));
                    }
                    let last = scenario.points.len().saturating_sub(1);
                    for (index, point) in scenario.points.into_iter().enumerate() {
                        let bulk = matches!(point.workload, Workload::Bulk { .. });
                        for run in 0..runs {
                            let seed = first_seed.wrapping_add(u64::from(run));
                            jobs.push(Job {
                                id: job_id(world, stack, &point, seed),
                                world,
                                stack,
                                point: point.clone(),
                                seed,
                                capture: bulk && index == last && run == 0,
                            });
                        }
                    }
                    if jobs.len() > request.max_runs {
                        return Err(PlanError::TooLarge {
                            runs: jobs.len(),
                            max: request.max_runs,
                        });
                    }
                }
            }
        }
        let total = jobs.len();
        if let Some(shard) = request.shard {
            jobs = jobs
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % shard.count == shard.index)
                .map(|(_, job)| job)
                .collect();
        }
        Ok(Plan {
            scenarios,
            jobs,
            total,
        })
    }
}

/// The stacks of a scenario (the `protocol` of `sets`, else the
/// scenario's own labels) and the other sets.
fn stacks_and_sets(scenario: &str, sets: &[(String, Value)]) -> Result<(Vec<Stack>, Sets), PlanError> {
    let (protocols, others): (Vec<_>, Vec<_>) = sets.iter().cloned().partition(|(key, _)| key == "protocol");
    let stacks = match protocols.last() {
        Some((_, value)) => {
            let names: Vec<&Value> = match value {
                Value::Array(values) => values.iter().collect(),
                one => vec![one],
            };
            let mut stacks = Vec::new();
            for name in names {
                let Value::String(name) = name else {
                    return Err(PlanError::StackList(value.to_string()));
                };
                let stack = name.parse::<Stack>().map_err(|error| PlanError::Stack {
                    scenario: scenario.to_owned(),
                    error,
                })?;
                if !stacks.contains(&stack) {
                    stacks.push(stack);
                }
            }
            if stacks.is_empty() {
                return Err(PlanError::StackList(value.to_string()));
            }
            stacks
        }
        None => {
            let loaded = Scenario::load(scenario, &others).map_err(|error| PlanError::Scenario {
                scenario: scenario.to_owned(),
                error,
            })?;
            let mut stacks = Vec::new();
            for point in &loaded.points {
                let stack = Stack::Ours(point.protocol);
                if !stacks.contains(&stack) {
                    stacks.push(stack);
                }
            }
            stacks
        }
    };
    Ok((stacks, others))
}

/// The id of a run of `point`: its world, scenario, stack, swept keys
/// (but the protocol, which the stack says), seed and the fingerprint of
/// its configuration.
fn job_id(world: World, stack: Stack, point: &Point, seed: u64) -> String {
    let mut id = format!("{world}/{}/{stack}", point.scenario);
    for (key, value) in &point.params {
        if key != "protocol" {
            id.push_str(&format!("/{key}={}", value.to_string().trim_matches('"')));
        }
    }
    id.push_str(&format!(
        "/seed={seed}{CONFIG}{}",
        fingerprint(&point.tables.document)
    ));
    id
}

/// What joins a run's id to the fingerprint of its configuration.
const CONFIG: &str = "/config=";

/// The run a job id names, whatever its configuration: the id without its
/// fingerprint (an id of a bench before fingerprints is that already).
pub fn run_of(id: &str) -> &str {
    match id.rsplit_once(CONFIG) {
        Some((run, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => run,
        _ => id,
    }
}

/// Keys of a point's document that change no run: what describes the
/// scenario, and its seed and count of runs (a job's seed is in its id).
const NOT_CONFIGURATION: [&str; 3] = ["description", "seed", "runs"];

/// A fingerprint of what a point's runs are: its document (the scenario's
/// text with the sweep's values and every `--set` in it, whatever their
/// order) but [`NOT_CONFIGURATION`], as 16 hex digits of the 64-bit FNV-1a
/// of a canonical text of it (tables' keys sorted), the same in every
/// process, build and machine.
pub fn fingerprint(document: &toml::Table) -> String {
    let mut text = String::new();
    let mut configuration = document.clone();
    for key in NOT_CONFIGURATION {
        configuration.remove(key);
    }
    canonical(&Value::Table(configuration), &mut text);
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// A text of `value` that only its contents decide: keys sorted, every
/// string quoted as JSON, a float never written as an integer.
fn canonical(value: &Value, out: &mut String) {
    let quoted = |text: &str| serde_json::to_string(text).expect("a string serialises");
    match value {
        Value::String(text) => out.push_str(&quoted(text)),
        Value::Integer(n) => out.push_str(&n.to_string()),
        Value::Float(x) => out.push_str(&format!("{x:?}")),
        Value::Boolean(b) => out.push_str(&b.to_string()),
        Value::Datetime(when) => out.push_str(&format!("datetime {}", quoted(&when.to_string()))),
        Value::Array(values) => {
            out.push('[');
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(value, out);
            }
            out.push(']');
        }
        Value::Table(table) => {
            let mut keys: Vec<&String> = table.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quoted(key));
                out.push(':');
                canonical(&table[key], out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scps_config::sweep::parse_assignment;

    fn request(scenarios: &[&str], sets: &[&str], worlds: &[World]) -> Request {
        Request {
            scenarios: scenarios.iter().map(|s| s.to_string()).collect(),
            sets: sets.iter().map(|s| parse_assignment(s).unwrap()).collect(),
            runs: None,
            seed: None,
            worlds: worlds.to_vec(),
            shard: None,
            max_runs: DEFAULT_MAX_RUNS,
        }
    }

    #[test]
    fn stacks_come_from_the_protocol_key_or_the_scenario() {
        let own = Plan::new(&request(&["t1-geo"], &[], &[World::Sim])).unwrap();
        assert_eq!(own.jobs.len(), 10, "tcp-vj and tcp-cubic at five BERs");
        assert_eq!(
            run_of(&own.jobs[0].id),
            "sim/t1-geo/tcp-vj/link.ber=0.000000001/seed=1"
        );
        let named = Plan::new(&request(
            &["t1-geo"],
            &[
                "protocol=[\"linux-cubic\", \"gw-scps-rate\"]",
                "link.ber=[1e-9, 1e-5]",
            ],
            &[World::Sim],
        ))
        .unwrap();
        let ids: Vec<&str> = named.jobs.iter().map(|j| run_of(&j.id)).collect();
        assert_eq!(
            ids,
            [
                "sim/t1-geo/linux-cubic/link.ber=0.000000001/seed=1",
                "sim/t1-geo/linux-cubic/link.ber=0.00001/seed=1",
                "sim/t1-geo/gw-scps-rate/link.ber=0.000000001/seed=1",
                "sim/t1-geo/gw-scps-rate/link.ber=0.00001/seed=1",
            ]
        );
        assert_eq!(
            named.jobs[0].point.protocol,
            scps_config::Protocol::TcpCubic,
            "Linux's CUBIC, modelled"
        );
    }

    /// The one job of geo-8mbit's Saratoga at 600 ms, BER 0, with `sets`
    /// over that.
    fn saratoga_job(scenario: &str, sets: &[&str]) -> Job {
        let mut all = vec!["protocol=saratoga", "link.rtt=600ms", "link.ber=0"];
        all.extend(sets);
        let plan = Plan::new(&request(&[scenario], &all, &[World::Sim])).unwrap();
        assert_eq!(plan.jobs.len(), 1);
        plan.jobs.into_iter().next().unwrap()
    }

    #[test]
    fn the_id_carries_the_configuration_and_no_more() {
        let run = "sim/geo-8mbit/saratoga/link.rtt=600ms/link.ber=0/seed=1";
        let small = saratoga_job("geo-8mbit", &["workload.bytes=100KB"]);
        let (id_run, hash) = small.id.split_once("/config=").unwrap();
        assert_eq!(id_run, run);
        assert!(
            hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
            "{hash}"
        );
        assert_eq!(run_of(&small.id), run);
        assert_eq!(run_of(run), run, "an id of before fingerprints");
        assert_eq!(
            saratoga_job("geo-8mbit", &["workload.bytes=100KB"]).id,
            small.id,
            "the same command, the same id"
        );
        // A pinned key the id does not name is in its configuration.
        let large = saratoga_job("geo-8mbit", &["workload.bytes=200KB"]);
        assert_ne!(large.id, small.id);
        assert_eq!(run_of(&large.id), run, "the same run, of another configuration");
        // The order of the --sets is not, nor what changes no run.
        assert_eq!(
            saratoga_job("geo-8mbit", &["time_limit=1h", "limit.header_bytes=40"]).id,
            saratoga_job("geo-8mbit", &["limit.header_bytes=40", "time_limit=1h"]).id
        );
        assert_ne!(
            saratoga_job("geo-8mbit", &["time_limit=1h"]).id,
            saratoga_job("geo-8mbit", &["time_limit=2h"]).id
        );
        let plain = saratoga_job("geo-8mbit", &[]);
        assert_eq!(
            saratoga_job("geo-8mbit", &["description=\"another\""]).id,
            plain.id
        );
        let mut more = request(
            &["geo-8mbit"],
            &["protocol=saratoga", "link.rtt=600ms", "link.ber=0", "runs=3"],
            &[World::Sim],
        );
        more.runs = None;
        assert_eq!(Plan::new(&more).unwrap().jobs[0].id, plain.id, "more runs of it");
    }

    #[test]
    fn an_edited_scenario_file_is_another_configuration() {
        let path = std::env::temp_dir().join(format!("scps-bench-plan-{}.toml", std::process::id()));
        let text = scps_config::scenario::BUILTIN
            .iter()
            .find(|(name, _)| *name == "geo-8mbit")
            .unwrap()
            .1;
        std::fs::write(&path, text).unwrap();
        let file = path.to_str().unwrap();
        let before = saratoga_job(file, &[]);
        assert_eq!(
            before.id,
            saratoga_job("geo-8mbit", &[]).id,
            "the file's text is the built-in scenario's"
        );
        std::fs::write(&path, text.replace("bytes = \"100MB\"", "bytes = \"50MB\"")).unwrap();
        let after = saratoga_job(file, &[]);
        std::fs::remove_file(&path).unwrap();
        assert_ne!(after.id, before.id);
        assert_eq!(run_of(&after.id), run_of(&before.id));
    }

    #[test]
    fn the_fingerprint_is_of_the_contents_and_stays_what_it_was() {
        let document: toml::Table = toml::from_str(
            r#"
name = "demo"
description = "what changes no run"
runs = 3
seed = 7
[workload]
bytes = 100000
[link]
rate = "8Mbit"
ber = 0.5
"#,
        )
        .unwrap();
        // Every directory's records carry it: a change to it would run
        // them all again.
        assert_eq!(fingerprint(&document), "2dcf31b16a530324");
        let mut float = document.clone();
        float["workload"]["bytes"] = Value::Float(100000.0);
        assert_ne!(fingerprint(&float), fingerprint(&document));
    }

    #[test]
    fn shards_are_disjoint_and_cover_the_sweep() {
        let whole = Plan::new(&request(&["geo-8mbit"], &[], &[World::Sim])).unwrap();
        let mut ids: Vec<String> = Vec::new();
        for k in 1..=3 {
            let mut sharded = request(&["geo-8mbit"], &[], &[World::Sim]);
            sharded.shard = Some(format!("{k}/3").parse().unwrap());
            let plan = Plan::new(&sharded).unwrap();
            assert_eq!(plan.total, whole.jobs.len());
            ids.extend(plan.jobs.into_iter().map(|j| j.id));
        }
        ids.sort();
        let mut all: Vec<String> = whole.jobs.into_iter().map(|j| j.id).collect();
        all.sort();
        assert_eq!(ids, all);
    }

    #[test]
    fn bad_requests_are_refused_naming_what_is_wrong() {
        let err = |scenarios: &[&str], sets: &[&str], worlds: &[World]| {
            Plan::new(&request(scenarios, sets, worlds))
                .unwrap_err()
                .to_string()
        };
        let cases = [
            (
                err(&["geo-9mbit"], &[], &[World::Sim]),
                "geo-9mbit: no scenario \"geo-9mbit\"",
            ),
            (
                err(&["geo-8mbit"], &["protocol=linux-vegas"], &[World::Sim]),
                "geo-8mbit: stack \"linux-vegas\": not a stack; the stacks are linux-cubic",
            ),
            (
                err(&["geo-8mbit"], &["protocol=linux-bbr"], &[World::Sim]),
                "geo-8mbit: stack linux-bbr: the sim cannot run it",
            ),
            (
                err(&["geo-8mbit"], &["link.speed=1"], &[World::Sim]),
                "geo-8mbit: ",
            ),
            (
                err(&["geo-8mbit"], &["protocol=3"], &[World::Sim]),
                "protocol = 3: a stack name",
            ),
            (err(&[], &[], &[World::Sim]), "no scenario: name at least one"),
        ];
        for (err, expected) in cases {
            assert!(err.starts_with(expected), "{err}");
        }
        let mut large = request(&["geo-8mbit"], &[], &[World::Sim]);
        large.runs = Some(300);
        assert_eq!(
            Plan::new(&large).unwrap_err().to_string(),
            "the sweep is 7200 runs: at most 5000 (--max-runs raises the bound)"
        );
        for bad in ["0/3", "4/3", "x", "1/1001"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    fn asked(scenarios: &[&str], sets: &[&str], worlds: Option<Vec<World>>) -> Result<Request, PlanError> {
        let scenarios: Vec<String> = scenarios.iter().map(|s| s.to_string()).collect();
        let sets = sets.iter().map(|s| parse_assignment(s).unwrap()).collect();
        Request::asked(&scenarios, sets, Some(2), Some(9), worlds, Some("2/4"), 30)
    }

    #[test]
    fn without_a_scenario_the_quick_default_runs_in_the_testbed_under_the_commands_sets() {
        let quick = asked(&[], &["workload.bytes=1MB"], None).unwrap();
        assert_eq!(quick.scenarios, ["geo-8mbit"]);
        assert_eq!(quick.worlds, [World::Testbed]);
        let keys: Vec<&str> = quick.sets.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "link.rtt",
                "link.ber",
                "workload.bytes",
                "protocol",
                "workload.bytes"
            ],
            "the command's last, over the default's"
        );
        assert_eq!(value_text(&quick.sets[0].1), "600ms");
        assert_eq!(value_text(&quick.sets[4].1), "1MB");
        let plan = Plan::new(&quick).unwrap();
        let stacks: Vec<String> = plan.jobs.iter().map(|j| j.stack.name()).collect();
        for stack in ["linux-cubic", "linux-bbr", "gw-scps-rate", "gw-scps-vegas"] {
            assert!(stacks.iter().any(|s| s == stack), "{stack} in {stacks:?}");
        }
        let both = asked(&[], &[], Some(vec![World::Sim, World::Testbed])).unwrap();
        assert_eq!(both.worlds, [World::Sim, World::Testbed], "the world asked for");
    }

    #[test]
    fn named_scenarios_run_in_the_simulator_as_asked() {
        let named = asked(&["t1-geo", "iridium-3ch"], &["link.ber=0"], None).unwrap();
        assert_eq!(named.scenarios, ["t1-geo", "iridium-3ch"]);
        assert_eq!(named.worlds, [World::Sim]);
        assert_eq!(named.sets.len(), 1, "no default's settings");
        assert_eq!((named.runs, named.seed, named.max_runs), (Some(2), Some(9), 30));
        assert_eq!(named.shard, Some(Shard { index: 1, count: 4 }));
        let scenarios = ["t1-geo".to_owned()];
        let bad_shard = Request::asked(&scenarios, Vec::new(), None, None, None, Some("5/4"), 1).unwrap_err();
        assert_eq!(
            bad_shard.to_string(),
            "--shard 5/4: K/N with 1 <= K <= N <= 1000, such as 2/8"
        );
    }

    #[test]
    fn the_bound_on_runs_lets_one_through_at_least() {
        assert_eq!(max_runs_of("1"), Ok(1));
        assert_eq!(
            max_runs_of("0").unwrap_err(),
            "0 would refuse every sweep: at least 1"
        );
        assert_eq!(
            max_runs_of("x").unwrap_err(),
            "\"x\": invalid digit found in string"
        );
    }
}
