//! The latency an ideal sender of one ordered message stream gets over a
//! scenario's channels (`scps_sim::ideal`): the reference a stack's
//! message latency is judged against.
//!
//!     cargo run --release -p scps-sim --example ideal_message_latency -- \
//!         SCENARIO [--set KEY=VALUE]... [--runs N] [--seed S] [--copies]
//!
//! Prints, for each point of the sweep that is a message stream, the
//! ideal sender's actual rate (what its receiver has by the window's
//! end), its ratio to the point's physical limit, and its median and
//! 95th-percentile latency (means over the runs, seeds S..S+N-1, each
//! with the call drops of the simulation of that seed) as a Markdown
//! table (docs/BENCHMARKS.md, iridium-3ch). With `--copies` the ideal
//! sender also sends second copies into line time that would go idle
//! (`Copies::IntoIdleLines`).

use std::process::ExitCode;
use std::time::Duration;

use scps_config::scenario::Scenario;
use scps_config::sweep::parse_assignment;
use scps_config::workload::Workload;
use scps_sim::ideal::{Copies, ordered_stream_latency_with};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ideal_message_latency: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut scenario, mut sets, mut runs, mut seed) = (None, Vec::new(), None, None);
    let mut copies = Copies::Once;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--set" => sets.push(parse_assignment(&value()?)?),
            "--runs" => runs = Some(value()?.parse::<u32>()?),
            "--seed" => seed = Some(value()?.parse::<u64>()?),
            "--copies" => copies = Copies::IntoIdleLines,
            _ if scenario.is_none() && !arg.starts_with('-') => scenario = Some(arg),
            _ => return Err(format!("unexpected argument {arg:?}").into()),
        }
    }
    let scenario = Scenario::load(&scenario.ok_or("name a scenario")?, &sets)?;
    let runs = runs.unwrap_or(scenario.runs).max(1);
    let seed = seed.unwrap_or(scenario.seed);
    println!("| point | runs | messages | ideal actual | limit | ratio | ideal p50 s | ideal p95 s |");
    println!("|---|---|---|---|---|---|---|---|");
    for point in &scenario.points {
        let latencies = (seed..seed + u64::from(runs))
            .map(|seed| ordered_stream_latency_with(point, seed, copies))
            .collect::<Result<Vec<_>, _>>()?;
        let mean = |figure: &dyn Fn(&scps_sim::ideal::IdealLatency) -> f64| {
            latencies.iter().map(figure).sum::<f64>() / latencies.len() as f64
        };
        let window = match &point.workload {
            Workload::Messages { duration, .. } => *duration,
            _ => Duration::ZERO,
        };
        let limit = point.limit_bps(window);
        println!(
            "| {} | {runs} | {:.0} | {:.0} | {limit:.0} | {:.3} | {:.2} | {:.2} |",
            point.describe(),
            mean(&|l| l.messages as f64),
            mean(&|l| l.actual_bps),
            mean(&|l| l.actual_bps) / limit,
            mean(&|l| l.p50_s),
            mean(&|l| l.p95_s),
        );
    }
    Ok(())
}
