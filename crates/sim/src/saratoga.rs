//! The `saratoga` label: the hosts run the Saratoga engine as a node
//! (`scps_saratoga::node`) instead of a TCP endpoint, and the bulk
//! workload is a put of `workload.files` files of generated data from
//! the client to the server, all at once, each checked byte for byte
//! against what was generated when it is stored. Timed from the start of
//! the run (the put) to the moment the server stores the last file, its
//! checksum verified.

use std::collections::BTreeMap;
use std::net::IpAddr;

use scps_channel::derive_seed;
use scps_config::{Direction, Point};
use scps_node::Instant;
use scps_saratoga::engine::{Config, Event, MemoryStore};
use scps_saratoga::node::SaratogaNode;
use scps_workload_format::payload::Pattern;

use crate::build::Built;
use crate::result::ConnectionTotals;
use crate::run::SimError;
use crate::tally::{BulkTally, unfinished};
use crate::world::{NodeId, World};

pub(crate) type Node = SaratogaNode<MemoryStore>;

/// The engine of a host at `address` whose data goes `sends`: paced at
/// the route rate of that direction (or `tcp.rate`) with the IPv4 and UDP
/// headers and the link's framing counted, in datagrams that fill the
/// link's MTU.
pub(crate) fn node(point: &Point, address: IpAddr, sends: Direction) -> Result<Node, SimError> {
    let IpAddr::V4(address) = address else {
        return Err(SimError::Config(scps_config::Error::invalid(
            "topology",
            address,
            "IPv4 host addresses under saratoga",
        )));
    };
    let tcp = point.engine_config(sends);
    let ip_udp = scps_node::udp::IPV4_UDP_HEADER_LEN;
    let config = Config {
        rate_bps: tcp.rate_bps.unwrap_or(0),
        datagram_overhead: (ip_udp as u32 + tcp.rate_framing_bytes).into(),
        max_datagram: usize::from(point.link.mtu) - ip_udp,
        ..Config::default()
    };
    // The route's rate or the link's MTU out of the engine's range.
    SaratogaNode::new(config, MemoryStore::new(), address).map_err(|e| {
        SimError::Config(scps_config::Error::invalid(
            format!("saratoga {}", e.field),
            e.value,
            e.allowed,
        ))
    })
}

/// The names of the files of a put of `files`.
fn name(index: u32) -> String {
    format!("file-{index}")
}

/// The sizes of `files` files of `bytes` in all: `bytes / files` each,
/// the first ones a byte longer to make up the rest.
fn sizes(bytes: u64, files: u32) -> impl Iterator<Item = u64> {
    let (each, rest) = (bytes / u64::from(files), bytes % u64::from(files));
    (0..u64::from(files)).map(move |i| each + u64::from(i < rest))
}

/// The content of file `index` of a client drawing from `client_seed`.
fn pattern(client_seed: u64, index: u32) -> Pattern {
    Pattern::new(derive_seed(derive_seed(client_seed, 20), u64::from(index)))
}

fn saratoga(world: &World, id: NodeId) -> &Node {
    world
        .node::<Node>(id)
        .expect("the hosts of a saratoga run are saratoga nodes")
}

/// Runs the put of `bytes` in `files` files from the (one) client to the
/// server, until the server has them all, the client gives up, or
/// `limit`.
pub(crate) fn run_put(
    built: &mut Built,
    bytes: u64,
    files: u32,
    limit: Instant,
) -> Result<Vec<BulkTally>, SimError> {
    let server = built.server;
    let mut tallies = Vec::new();
    for client in &built.clients {
        let node = built
            .world
            .node_mut::<Node>(client.node)
            .expect("the hosts of a saratoga run are saratoga nodes");
        for (index, size) in (0..files).zip(sizes(bytes, files)) {
            let mut contents = vec![0; usize::try_from(size).expect("files fit in memory (checked)")];
            pattern(client.seed, index).fill(0, &mut contents);
            node.engine_mut().store_mut().insert(&name(index), contents, 0);
            node.engine_mut()
                .put_requested(Instant::ZERO, client.server, &name(index), &name(index))
                .expect("a file just stored can be sent");
        }
        // The files arrive in any order; they are looked for in order,
        // each from where the last look stopped.
        let mut stored = 0;
        let mut finished = None;
        // Named once: the stop test runs at every event.
        let names: Vec<String> = (0..files).map(name).collect();
        let outcome = built.world.run(limit, |world| {
            let store = saratoga(world, server).engine().store();
            while stored < files && store.contents(&names[stored as usize]).is_some() {
                stored += 1;
            }
            if stored == files {
                finished = Some(world.now());
            }
            stored == files || saratoga(world, client.node).engine().active() == 0
        });
        let mut error = failure(&mut built.world, client.node).or_else(|| failure(&mut built.world, server));
        let world = &built.world;
        let store = saratoga(world, server).engine().store();
        let mut delivered = 0;
        for index in 0..stored {
            let contents = store.contents(&name(index)).unwrap_or_default();
            match pattern(client.seed, index).first_mismatch(0, contents) {
                None => delivered += contents.len() as u64,
                Some(at) => {
                    error.get_or_insert_with(|| {
                        format!("{} differs from what was sent at byte {at}", name(index))
                    });
                }
            }
        }
        let error = error.or_else(|| unfinished(finished.is_some(), outcome, limit));
        tallies.push(BulkTally {
            started: Instant::ZERO,
            end: finished.filter(|_| error.is_none()).unwrap_or(world.now()),
            bytes: delivered,
            error,
            connections: ConnectionTotals {
                retransmitted_bytes: saratoga(world, client.node).engine().stats().data_bytes_resent,
                timeouts: 0,
                fast_recoveries: 0,
            },
        });
    }
    Ok(tallies)
}

/// Why a transfer of node `id` failed, from its events, if one did.
fn failure(world: &mut World, id: NodeId) -> Option<String> {
    let engine = world.node_mut::<Node>(id)?.engine_mut();
    let mut first = None;
    while let Some(event) = engine.poll_event() {
        if let Event::Failed { id, reason } = event {
            first.get_or_insert_with(|| format!("saratoga session {}: {reason}", id.session));
        }
    }
    first
}

/// What the Saratoga host `id` dropped, by cause: packets that were not
/// well-formed IPv4/UDP for it, and frames its engine found malformed.
/// `None` if it is no Saratoga host.
pub(crate) fn drops(world: &World, id: NodeId) -> Option<BTreeMap<String, u64>> {
    let node = world.node::<Node>(id)?;
    let packets = node.stats().dropped.iter();
    let frames = node.engine().stats().malformed.iter();
    let mut drops = BTreeMap::new();
    for (cause, count) in packets.chain(frames) {
        *drops.entry((*cause).to_owned()).or_default() += count;
    }
    Some(drops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_add_up_to_the_bytes() {
        assert_eq!(sizes(10, 3).collect::<Vec<_>>(), [4, 3, 3]);
        assert_eq!(sizes(100, 1).collect::<Vec<_>>(), [100]);
        assert_eq!(sizes(5, 5).sum::<u64>(), 5);
    }
}
