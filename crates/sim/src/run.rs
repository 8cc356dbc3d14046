//! One run of one scenario point: the two-node world (client side A,
//! server side B, one link), the workload's applications, and the result.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use scps_channel::Bundle;
use scps_config::{Direction, Point, Workload};
use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint, EndpointConfig, EndpointError};

use crate::apps::{bulk, fetch, messages};
use crate::payload::Pattern;
use crate::result::{
    ConnectionTotals, DirectionFigures, FetchFigures, FlowFigures, LinkFigures, MessageFigures, RunResult,
    percentile,
};
use crate::world::{LinkId, NodeId, Outcome, World};
use scps_pcap::CaptureError;

pub const CLIENT_ADDR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
pub const SERVER_ADDR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const SERVER_PORT: u16 = 5001;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Write a capture of the link, as seen at the client's interface.
    pub capture: Option<PathBuf>,
}

/// A run that could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("link: {0}")]
    Channel(#[from] scps_channel::ConfigError),
    #[error(transparent)]
    Capture(#[from] CaptureError),
}

/// A seed for one purpose within a run, so that each random process of a
/// run depends on the run's seed and nothing else.
pub fn derive_seed(seed: u64, purpose: u64) -> u64 {
    let mut z = seed ^ purpose.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The world of a run before its workload is installed.
struct Setup {
    world: World,
    client: NodeId,
    server: NodeId,
    link: LinkId,
}

fn build(point: &Point, seed: u64, options: &RunOptions) -> Result<Setup, SimError> {
    let endpoint = |addr: IpAddr, purpose, sends: Direction| {
        let config = EndpointConfig {
            connection: point.engine_config(sends),
            secret: derive_seed(seed, purpose),
            backlog: 1024,
            ..EndpointConfig::default()
        };
        Endpoint::new(config, [addr])
    };
    let mut world = World::new();
    let client = world.add_node(endpoint(CLIENT_ADDR, 10, Direction::Forward)?);
    let server = world.add_node(endpoint(SERVER_ADDR, 11, Direction::Reverse)?);
    // Both directions of a circuit share its outages (seed 3).
    let outages = derive_seed(seed, 3);
    let forward = Bundle::with_outage_seed(point.link.forward.clone(), derive_seed(seed, 1), outages)?;
    let reverse = Bundle::with_outage_seed(point.link.reverse.clone(), derive_seed(seed, 2), outages)?;
    let link = world.connect(client, server, forward, reverse);
    if let Some(path) = &options.capture {
        world.capture(link, path)?;
    }
    Ok(Setup {
        world,
        client,
        server,
        link,
    })
}

/// Runs `point` once with `seed`.
pub fn run(point: &Point, seed: u64, options: &RunOptions) -> Result<RunResult, SimError> {
    let mut setup = build(point, seed, options)?;
    let server_addr = SocketAddr::new(SERVER_ADDR, SERVER_PORT);
    setup.world.endpoint_mut(setup.server).listen(server_addr, None)?;
    let limit = Instant::ZERO + point.time_limit;
    let mut result = match &point.workload {
        Workload::Bulk { bytes, both_ways } => {
            run_bulk(&mut setup, point, seed, server_addr, *bytes, *both_ways, limit)
        }
        Workload::Messages {
            forward,
            reverse,
            duration,
        } => run_messages(
            &mut setup,
            point,
            seed,
            server_addr,
            (*forward, *reverse),
            *duration,
            limit,
        ),
        Workload::Fetches(workload) => run_fetches(&mut setup, point, seed, server_addr, workload, limit),
    };
    result.link = LinkFigures {
        forward: DirectionFigures::of(&setup.world.channel_stats(setup.link, 0)),
        reverse: DirectionFigures::of(&setup.world.channel_stats(setup.link, 1)),
    };
    for node in [setup.client, setup.server] {
        for (cause, count) in &setup.world.endpoint(node).stats().drops {
            *result.endpoint_drops.entry((*cause).to_owned()).or_default() += count;
        }
    }
    setup.world.finish()?;
    Ok(result)
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

/// Why a run ended without its workload finishing.
fn unfinished(outcome: Outcome, limit: Instant) -> Option<String> {
    match outcome {
        Outcome::Done => None,
        Outcome::TimeLimit => Some(format!(
            "not finished within the time limit of {:?} (virtual time)",
            limit.as_duration()
        )),
        Outcome::Quiet => Some("the simulation came to rest before the workload finished".to_owned()),
    }
}

/// The figures of the client's and the server's connections.
fn connection_totals(setup: &Setup, handles: [Option<ConnectionHandle>; 2]) -> ConnectionTotals {
    let mut totals = ConnectionTotals::default();
    for (node, handle) in [setup.client, setup.server].into_iter().zip(handles) {
        if let Some(handle) = handle {
            totals.add(setup.world.endpoint(node), handle);
        }
    }
    totals
}

fn run_bulk(
    setup: &mut Setup,
    point: &Point,
    seed: u64,
    server: SocketAddr,
    bytes: u64,
    both_ways: bool,
    limit: Instant,
) -> RunResult {
    let patterns = (
        Pattern::new(derive_seed(seed, 20)),
        Pattern::new(derive_seed(seed, 21)),
    );
    let (client, server_app, progress) = bulk::transfer(server, bytes, both_ways, patterns.0, patterns.1);
    setup.world.add_app(setup.client, Box::new(client));
    setup.world.add_app(setup.server, Box::new(server_app));
    let outcome = setup.world.run(limit, |_| progress.borrow().is_done(both_ways));
    let progress = progress.borrow();
    let started = progress.started.unwrap_or(Instant::ZERO);
    let error = progress.error.clone().or_else(|| unfinished(outcome, limit));
    let (delivered, end) = if error.is_none() {
        let end = progress
            .finished
            .iter()
            .flatten()
            .max()
            .copied()
            .unwrap_or(setup.world.now());
        (bytes * if both_ways { 2 } else { 1 }, end)
    } else {
        let received = |node: NodeId, handle| {
            setup
                .world
                .endpoint(node)
                .stats_of(handle)
                .map_or(0, |s| s.bytes_received)
        };
        let forward = progress.server.map_or(0, |h| received(setup.server, h));
        let reverse = if both_ways {
            progress.client.map_or(0, |h| received(setup.client, h))
        } else {
            0
        };
        (forward + reverse, setup.world.now())
    };
    let mut result = result(point, seed, delivered, end - started, error);
    result.set_connection_totals(connection_totals(setup, [progress.client, progress.server]));
    result
}

fn flow_figures(
    flow: &scps_config::MessageFlow,
    report: &mut messages::FlowReport,
    window: Duration,
) -> FlowFigures {
    FlowFigures {
        offered_bps: flow.rate_bps as f64,
        actual_bps: report.bytes as f64 * 8.0 / window.as_secs_f64(),
        messages: report.messages,
        latency_p50_s: percentile(&mut report.latencies, 50.0),
        latency_p95_s: percentile(&mut report.latencies, 95.0),
        latency_max_s: percentile(&mut report.latencies, 100.0),
    }
}

fn run_messages(
    setup: &mut Setup,
    point: &Point,
    seed: u64,
    server: SocketAddr,
    flows: (scps_config::MessageFlow, Option<scps_config::MessageFlow>),
    duration: Duration,
    limit: Instant,
) -> RunResult {
    let patterns = [
        Pattern::new(derive_seed(seed, 20)),
        Pattern::new(derive_seed(seed, 21)),
    ];
    let (client, server_end, progress) = messages::stream(server, flows.0, flows.1, duration, patterns);
    setup.world.add_app(setup.client, Box::new(client));
    setup.world.add_app(setup.server, Box::new(server_end));
    let senders = if flows.1.is_some() { 2 } else { 1 };
    let outcome = setup.world.run(limit, |world| {
        let progress = progress.borrow();
        progress.error.is_some()
            || progress.windows[..senders]
                .iter()
                .all(|w| w.is_some_and(|(_, end)| world.now() >= end))
    });
    let mut progress = progress.borrow_mut();
    let error = progress.error.clone().or_else(|| unfinished(outcome, limit));
    let bytes = progress.received.iter().map(|r| r.bytes).sum();
    let mut result = result(point, seed, bytes, duration, error);
    let forward = flow_figures(&flows.0, &mut progress.received[0], duration);
    let reverse = flows
        .1
        .map(|flow| flow_figures(&flow, &mut progress.received[1], duration));
    result.messages = Some(MessageFigures { forward, reverse });
    result.set_connection_totals(connection_totals(setup, [progress.client, progress.server]));
    result
}

fn run_fetches(
    setup: &mut Setup,
    point: &Point,
    seed: u64,
    server: SocketAddr,
    workload: &scps_config::Fetches,
    limit: Instant,
) -> RunResult {
    let (clients, server_app, progress) = fetch::fetches(server, workload, derive_seed(seed, 30));
    setup.world.add_app(setup.client, Box::new(clients));
    setup.world.add_app(setup.server, Box::new(server_app));
    let outcome = setup.world.run(limit, |_| progress.borrow().is_done());
    let mut progress = progress.borrow_mut();
    let mut error = unfinished(outcome, limit);
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
    let end = progress.last_completion.unwrap_or(setup.world.now());
    let mut result = result(point, seed, progress.bytes, end.as_duration(), error);
    result.set_connection_totals(progress.connections);
    let count = progress.completed.len();
    let mean = progress.completed.iter().map(Duration::as_secs_f64).sum::<f64>() / count.max(1) as f64;
    let failed = progress.failed;
    let times = &mut progress.completed;
    result.fetches = Some(FetchFigures {
        fetches: count,
        fetches_failed: failed,
        download_mean_s: mean,
        download_p50_s: percentile(times, 50.0),
        download_p95_s: percentile(times, 95.0),
        download_max_s: percentile(times, 100.0),
    });
    result
}
