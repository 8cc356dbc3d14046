//! One run of one scenario point: the world of its topology (by default a
//! client and a server on one link), the workload's applications on every
//! client and the server, and the record.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use scps_channel::derive_seed;
use scps_config::topology::{NodeKind, Role};
use scps_config::{Point, Workload};
use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint, EndpointError};
use scps_relay::node::GatewayNode;
use scps_workload_format::payload::Pattern;

use crate::apps::{bulk, fetch, messages, shared_link};
use crate::build::{Built, Client, build, client_seed};
use crate::record::{BondFigures, GatewayFigures, RouterFigures, RunRecord};
use crate::result::{ConnectionTotals, DirectionFigures, LinkFigures, RunResult};
use crate::saratoga;
use crate::tally::{BulkTally, FetchTally, MessageTally, summarize, unfinished};
use crate::world::{App, NodeId, WorldError};
use scps_node::TapError;
use scps_pcap::CaptureError;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Write a capture of what crosses one interface: what leaves and
    /// what arrives there.
    pub capture: Option<PathBuf>,
    /// The interface to capture at, `NODE.INTERFACE`; without it the
    /// first client's, or behind gateways gwA's link interface (where the
    /// stressed link's traffic is the gateways').
    pub capture_at: Option<String>,
    /// Bytes kept of each packet captured; whole packets without it.
    pub capture_snaplen: Option<u32>,
}

/// A run that could not be set up, or whose output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    // The prefixed variants carry their error in their message, and so are
    // not its `source` too: a report of the whole chain would say it twice.
    #[error("link: {0}")]
    Channel(scps_channel::ConfigError),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Config(#[from] scps_config::Error),
    #[error("router: {0}")]
    Router(scps_node::RouterError),
    #[error("gateway: {0}")]
    Gateway(scps_relay::node::GatewayNodeError),
    #[error("{0}")]
    Bond(scps_bond::ConfigError),
    #[error("topology: {0}")]
    World(WorldError),
    #[error(transparent)]
    Output(TapError),
}

impl From<scps_channel::ConfigError> for SimError {
    fn from(error: scps_channel::ConfigError) -> SimError {
        SimError::Channel(error)
    }
}

impl From<scps_node::RouterError> for SimError {
    fn from(error: scps_node::RouterError) -> SimError {
        SimError::Router(error)
    }
}

impl From<WorldError> for SimError {
    fn from(error: WorldError) -> SimError {
        SimError::World(error)
    }
}

/// The gateways of a `gw-` label in the records: on the clients' side,
/// on the server's.
const GATEWAY_NAMES: [&str; 2] = ["gwA", "gwB"];

/// Runs `point` once with `seed`: the figures of all clients together.
pub fn run(point: &Point, seed: u64, options: &RunOptions) -> Result<RunResult, SimError> {
    run_record(point, seed, options).map(|record| record.totals)
}

/// Why a guarded run gave no record.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    /// It could not be set up, or its output could not be written.
    #[error(transparent)]
    Setup(#[from] SimError),
    /// The simulator panicked: a bug; the panic's message.
    #[error("the simulator panicked: {0}")]
    Panic(String),
}

/// [`run_record`], with a panic (a bug) caught and turned into a
/// [`RunFailure::Panic`] that the caller can report with the run's seed,
/// so that one bad run does not take a whole sweep down.
pub fn run_record_guarded(point: &Point, seed: u64, options: &RunOptions) -> Result<RunRecord, RunFailure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_record(point, seed, options))) {
        Ok(outcome) => Ok(outcome?),
        Err(panic) => Err(RunFailure::Panic(
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default(),
        )),
    }
}

/// Runs `point` once with `seed`: the figures of all clients together,
/// and of each client and router of a topology.
pub fn run_record(point: &Point, seed: u64, options: &RunOptions) -> Result<RunRecord, SimError> {
    let mut built = build(point, seed, options)?;
    let limit = Instant::ZERO + point.time_limit;
    let names: Vec<String> = built.clients.iter().map(|c| c.name.clone()).collect();
    let (mut totals, clients) = match &point.workload {
        Workload::Bulk { bytes, files, .. } if point.protocol.is_saratoga() => {
            let tallies = saratoga::run_put(&mut built, *bytes, *files, limit)?;
            summarize(point, seed, &names, tallies)
        }
        Workload::Bulk { bytes, both_ways, .. } => {
            let tallies = run_bulk(&mut built, *bytes, *both_ways, limit)?;
            summarize(point, seed, &names, tallies)
        }
        Workload::Messages {
            forward,
            reverse,
            duration,
        } => {
            let tallies = run_messages(&mut built, (*forward, *reverse), *duration, limit, false)?;
            summarize(point, seed, &names, tallies)
        }
        Workload::Echo { flow, duration } => {
            let tallies = run_messages(&mut built, (*flow, None), *duration, limit, true)?;
            summarize(point, seed, &names, tallies)
        }
        Workload::Fetches(workload) => {
            let tallies = run_fetches(&mut built, workload, limit)?;
            let (mut totals, clients) = summarize(point, seed, &names, tallies);
            if let Some(fetches) = &mut totals.fetches {
                let requests = fetch_requests(point, seed, workload);
                let capacity = point.limit_bps(workload.duration);
                fetches.download_ideal_mean_s = shared_link::mean_download_s(&requests, capacity);
            }
            (totals, clients)
        }
    };
    let world = &mut built.world;
    totals.link = LinkFigures {
        forward: DirectionFigures::of(&stressed_stats(world, &built.stressed, 0)),
        reverse: DirectionFigures::of(&stressed_stats(world, &built.stressed, 1)),
    };
    let mut count_drops = |endpoint: &Endpoint| {
        for (cause, count) in &endpoint.stats().drops {
            *totals.endpoint_drops.entry((*cause).to_owned()).or_default() += count;
        }
    };
    let hosts = built.clients.iter().map(|c| c.node).chain([built.server]);
    let mut saratoga_drops: BTreeMap<String, u64> = BTreeMap::new();
    for node in hosts {
        match saratoga::drops(world, node) {
            Some(drops) => {
                for (cause, count) in drops {
                    *saratoga_drops.entry(cause).or_default() += count;
                }
            }
            None => count_drops(world.endpoint(node)),
        }
    }
    let mut gateways = Vec::new();
    for (name, id) in GATEWAY_NAMES
        .into_iter()
        .zip(built.gateways.into_iter().flatten())
    {
        let gateway = world
            .node::<GatewayNode>(id)
            .expect("the world's gateways are gateway nodes");
        count_drops(gateway.lan_endpoint());
        count_drops(gateway.link_endpoint());
        gateways.push(GatewayFigures::of(name, gateway));
    }
    for (cause, count) in saratoga_drops {
        *totals.endpoint_drops.entry(cause).or_default() += count;
    }
    // What crossed the stressed link was resent by the gateways: the
    // hosts' connections end on LANs.
    for gateway in &gateways {
        totals.retransmitted_bytes += gateway.link_retransmitted_bytes;
        totals.timeouts += gateway.link_timeouts;
    }
    let routers = point
        .topology
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(id, node)| {
            let router = world.node::<scps_node::Router>(id)?;
            Some(RouterFigures::of(&node.name, router.stats()))
        })
        .collect();
    let bonds = ["bondA", "bondB"]
        .into_iter()
        .zip(&built.bonds)
        .filter_map(|(name, id)| Some(BondFigures::of(name, world.node::<scps_bond::BondNode>(*id)?)))
        .collect();
    world.finish().map_err(SimError::Output)?;
    Ok(RunRecord {
        totals,
        clients,
        routers,
        gateways,
        bonds,
    })
}

/// The figures of the connections behind `handles`: `client`'s, then the
/// server's.
fn connection_totals(
    built: &Built,
    client: &Client,
    handles: [Option<ConnectionHandle>; 2],
) -> ConnectionTotals {
    let mut totals = ConnectionTotals::default();
    for (node, handle) in [client.node, built.server].into_iter().zip(handles) {
        if let Some(handle) = handle {
            totals.add(built.world.endpoint(node), handle);
        }
    }
    totals
}

/// Installs the workload of every client: the server listens at the
/// client's port, `make` gives the client's application, the server's
/// and what they report through.
fn install<C: App + 'static, S: App + 'static, P>(
    built: &mut Built,
    mut make: impl FnMut(&Client) -> (C, S, P),
) -> Result<Vec<P>, SimError> {
    let Built {
        world,
        clients,
        server,
        ..
    } = built;
    let mut progresses = Vec::new();
    for client in clients.iter() {
        world.endpoint_mut(*server).listen(client.server, None)?;
        let (client_app, server_app, progress) = make(client);
        world.add_app(client.node, Box::new(client_app));
        world.add_app(*server, Box::new(server_app));
        progresses.push(progress);
    }
    Ok(progresses)
}

fn run_bulk(
    built: &mut Built,
    bytes: u64,
    both_ways: bool,
    limit: Instant,
) -> Result<Vec<BulkTally>, SimError> {
    let progresses = install(built, |client| {
        let patterns = (
            Pattern::new(derive_seed(client.seed, 20)),
            Pattern::new(derive_seed(client.seed, 21)),
        );
        bulk::transfer(client.server, bytes, both_ways, patterns.0, patterns.1)
    })?;
    let outcome = built.world.run(limit, |_| {
        progresses.iter().all(|p| p.borrow().is_done(both_ways))
    });
    let world = &built.world;
    let tallies = progresses
        .iter()
        .zip(&built.clients)
        .map(|(progress, client)| {
            let progress = progress.borrow();
            let started = progress.started.unwrap_or(Instant::ZERO);
            let error = progress
                .error
                .clone()
                .or_else(|| unfinished(progress.is_done(both_ways), outcome, limit));
            let (bytes, end) = if error.is_none() {
                let end = progress
                    .finished
                    .iter()
                    .flatten()
                    .max()
                    .copied()
                    .unwrap_or(world.now());
                (bytes * if both_ways { 2 } else { 1 }, end)
            } else {
                let received = |node: NodeId, handle| {
                    world
                        .endpoint(node)
                        .stats_of(handle)
                        .map_or(0, |s| s.bytes_received)
                };
                let forward = progress.server.map_or(0, |h| received(built.server, h));
                let reverse = if both_ways {
                    progress.client.map_or(0, |h| received(client.node, h))
                } else {
                    0
                };
                (forward + reverse, world.now())
            };
            BulkTally {
                started,
                end,
                bytes,
                error,
                connections: connection_totals(built, client, [progress.client, progress.server]),
            }
        })
        .collect();
    Ok(tallies)
}

fn run_messages(
    built: &mut Built,
    flows: (scps_config::MessageFlow, Option<scps_config::MessageFlow>),
    duration: Duration,
    limit: Instant,
    echo: bool,
) -> Result<Vec<MessageTally>, SimError> {
    let patterns = |client: &Client| {
        [
            Pattern::new(derive_seed(client.seed, 20)),
            Pattern::new(derive_seed(client.seed, 21)),
        ]
    };
    let progresses = if echo {
        install(built, |client| {
            messages::echo(client.server, flows.0, duration, patterns(client)[0])
        })?
    } else {
        install(built, |client| {
            messages::stream(client.server, flows.0, flows.1, duration, patterns(client))
        })?
    };
    let senders = if flows.1.is_some() { 2 } else { 1 };
    let finished = |progress: &messages::MessageProgress, now: Instant| {
        progress.error.is_some()
            || progress.windows[..senders]
                .iter()
                .all(|w| w.is_some_and(|(_, end)| now >= end))
    };
    let outcome = built.world.run(limit, |world| {
        progresses.iter().all(|p| finished(&p.borrow(), world.now()))
    });
    let world = &built.world;
    let tallies = progresses
        .iter()
        .zip(&built.clients)
        .map(|(progress, client)| {
            let mut progress = progress.borrow_mut();
            let done = finished(&progress, world.now());
            MessageTally {
                flows,
                duration,
                clients: 1,
                received: std::mem::take(&mut progress.received),
                error: progress
                    .error
                    .clone()
                    .or_else(|| unfinished(done, outcome, limit)),
                connections: connection_totals(built, client, [progress.client, progress.server]),
            }
        })
        .collect();
    Ok(tallies)
}

/// The channels' figures of the stressed link's circuits in one
/// direction (0 forward, 1 return), whether one link carries them all or
/// each is a link of its own between two bonds.
fn stressed_stats(
    world: &mut crate::World,
    links: &[crate::world::LinkId],
    direction: usize,
) -> Vec<scps_channel::ChannelStats> {
    links
        .iter()
        .flat_map(|link| world.channel_stats(*link, direction))
        .collect()
}

/// The seed the fetches of a client drawing from `client_seed` are drawn
/// from.
fn fetch_seed(client_seed: u64) -> u64 {
    derive_seed(client_seed, 30)
}

/// The requests a run of `point` with `seed` makes, of all its clients:
/// when (seconds from the start) and how many bytes, in time order. The
/// testbed makes the same requests.
pub fn fetch_requests(point: &Point, seed: u64, workload: &scps_config::Fetches) -> Vec<(f64, u64)> {
    let clients = point
        .topology
        .nodes
        .iter()
        .filter(|node| node.kind == NodeKind::Host(Role::Client))
        .count();
    let mut requests: Vec<(f64, u64)> = (0..clients)
        .flat_map(|index| fetch::requests(workload, fetch_seed(client_seed(seed, index))))
        .collect();
    requests.sort_by(|a, b| a.0.total_cmp(&b.0));
    requests
}

fn run_fetches(
    built: &mut Built,
    workload: &scps_config::Fetches,
    limit: Instant,
) -> Result<Vec<FetchTally>, SimError> {
    let progresses = install(built, |client| {
        fetch::fetches(client.server, workload, fetch_seed(client.seed))
    })?;
    let outcome = built
        .world
        .run(limit, |_| progresses.iter().all(|p| p.borrow().is_done()));
    let stopped = built.world.now();
    let tallies = progresses
        .iter()
        .map(|progress| {
            let progress = std::mem::take(&mut *progress.borrow_mut());
            let unfinished = unfinished(progress.is_done(), outcome, limit);
            FetchTally {
                workload: *workload,
                progress,
                unfinished,
                stopped,
            }
        })
        .collect();
    Ok(tallies)
}
