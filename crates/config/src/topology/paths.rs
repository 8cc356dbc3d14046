//! Before anything runs, the packets of every client are followed to the
//! server and back, hop by hop, through the routers' tables: each must
//! arrive, without a loop, within the hosts' hop limit, and cross the
//! stressed link the way the scenario's `[link]` describes (its forward
//! direction from the client, its return direction back), since the
//! limit and the SCPS route rate are judged on it.

use std::collections::BTreeSet;
use std::net::IpAddr;

use scps_node::{InterfaceId, Router};

use super::{NodeInterface, Topology};
use crate::error::Error;

/// Checks the paths from every client to the server and back.
pub(super) fn check(topology: &Topology, routers: &[Option<Router>], hop_limit: u8) -> Result<(), Error> {
    let server = topology.server;
    for client in topology.clients() {
        for (from, to, way) in [(client, server, 0), (server, client, 1)] {
            let path = follow(topology, routers, from, to)?;
            let describe = || format!("{} to {}", topology.nodes[from].name, topology.nodes[to].name);
            let stressed = &topology.links[topology.stressed];
            let crossings: Vec<usize> = path
                .links
                .iter()
                .filter(|(link, _)| *link == topology.stressed)
                .map(|(_, end)| *end)
                .collect();
            if crossings != [way] {
                let how = match crossings[..] {
                    [] => "it does not cross it".to_owned(),
                    [end] if end != way => "it crosses it from its second end to its first".to_owned(),
                    _ => format!("it crosses it {} times", crossings.len()),
                };
                return Err(Error::invalid(
                    format!("topology.links.{}.ends", stressed.name),
                    format!(
                        "[{}, {}]",
                        topology.describe(stressed.ends[0]),
                        topology.describe(stressed.ends[1])
                    ),
                    format!(
                        "the stressed link once on the way from each client to the server, from its first end \
                         ([link]) and back from its second ([link.return]); on the way {}, {how}",
                        describe()
                    ),
                ));
            }
            // RFC 1812: a router forwards a packet only while its TTL is
            // above 1, and takes 1 from it.
            if path.routers >= usize::from(hop_limit) {
                return Err(Error::invalid(
                    "tcp.hop_limit",
                    hop_limit,
                    format!(
                        "more than the {} routers on the way {}, or every packet expires",
                        path.routers,
                        describe()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// What a packet crosses: each link with the end that sent it, and how
/// many routers forward it.
struct Path {
    links: Vec<(usize, usize)>,
    routers: usize,
}

/// Follows a packet from host `from` to host `to`'s address.
fn follow(topology: &Topology, routers: &[Option<Router>], from: usize, to: usize) -> Result<Path, Error> {
    let dst: IpAddr = topology.host_address(to);
    let source = &topology.nodes[from].name;
    let mut path = Path {
        links: Vec::new(),
        routers: 0,
    };
    let mut at = NodeInterface {
        node: from,
        interface: InterfaceId(0),
    };
    let mut visited = BTreeSet::new();
    let mut hops = vec![source.as_str()];
    loop {
        let (link, end) = topology
            .links
            .iter()
            .enumerate()
            .find_map(|(i, l)| l.ends.iter().position(|e| *e == at).map(|end| (i, end)))
            .expect("every interface is on a link (checked before)");
        path.links.push((link, end));
        let arrival = topology.links[link].ends[1 - end];
        let node = &topology.nodes[arrival.node];
        let router = match &routers[arrival.node] {
            Some(router) => router,
            None if arrival.node == to => return Ok(path),
            None => {
                return Err(Error::invalid(
                    format!("topology.links.{}.ends", topology.links[link].name),
                    topology.describe(arrival),
                    format!(
                        "a path from {source} to {dst}: its packets reach host {} instead, which drops them",
                        node.name
                    ),
                ));
            }
        };
        let key = format!("topology.nodes.{}.routes", node.name);
        let Some(out) = router.lookup(dst) else {
            return Err(Error::invalid(
                key,
                dst,
                format!(
                    "a route to every host {} forwards to: {source} sends to {dst} through it, and it has none",
                    node.name
                ),
            ));
        };
        path.routers += 1;
        hops.push(&node.name);
        at = NodeInterface {
            node: arrival.node,
            interface: out,
        };
        if !visited.insert(at) {
            return Err(Error::invalid(
                key,
                dst,
                format!(
                    "routes without a loop: the packets of {source} to {dst} go {} and round again",
                    hops.join(" -> ")
                ),
            ));
        }
    }
}
