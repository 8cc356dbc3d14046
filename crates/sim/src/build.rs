//! The world of a run, built from the point's topology: a host for each
//! host node (an endpoint configured for the direction its data goes, or
//! under `saratoga` a Saratoga engine), a
//! router for each router, a link for each link (the stressed one from
//! `[link]`, the others from their LAN model), and the capture. Behind a
//! `gw-` label, two gateways (the real gateway's sans-IO node) stand at
//! the ends of the stressed link, each joined to the node at its end by a
//! LAN: clients' side, gwA, the link, gwB, the server's side.
//!
//! Nodes are added in the topology's order, so node `i` of the world is
//! node `i` of the topology (the gateways come after). Seeds are derived
//! from the run's seed so that the first client, the server and the
//! stressed link of any topology draw what the two hosts of the default
//! world draw.

use std::net::{IpAddr, SocketAddr};

use scps_bond::BondNode;
use scps_channel::{Bundle, ChannelConfig};
use scps_config::gateways::Gateways;
use scps_config::topology::{self, LinkModel, NodeKind, Role, Topology};
use scps_config::{Direction, Point};
use scps_node::{InterfaceId, IpPrefix, Router};
use scps_proto::{Endpoint, EndpointConfig, PathCapacity};
use scps_relay::node::{GatewayNode, GatewayNodeConfig};

use crate::host::Host;
use crate::run::{RunOptions, SimError};
use crate::saratoga;
use crate::world::{LinkId, NodeId, NodeInterface, World};
use scps_channel::derive_seed;
use scps_pcap::PcapTap;

/// The server's port for the first client; client `i` talks to port
/// `SERVER_PORT + i`, so each server application knows its client.
pub const SERVER_PORT: u16 = 5001;

/// A client host of the world.
#[derive(Debug)]
pub(crate) struct Client {
    pub name: String,
    pub node: NodeId,
    /// The seed its endpoint and workload draw from.
    pub seed: u64,
    /// Where it finds its server application.
    pub server: SocketAddr,
}

#[derive(Debug)]
pub(crate) struct Built {
    pub world: World,
    pub clients: Vec<Client>,
    pub server: NodeId,
    /// The stressed link: one link, or with the bonding scheduler one per
    /// circuit between the two bonds.
    pub stressed: Vec<LinkId>,
    /// The bonds at the stressed link's ends (the clients' side's first),
    /// with the bonding scheduler.
    pub bonds: Vec<NodeId>,
    /// The two gateways of a `gw-` label: the clients' side's, the
    /// server's.
    pub gateways: Option<[NodeId; 2]>,
}

/// The seed of client `index`: the run's own for the first (as in the
/// two-host world), one of its own for each other.
pub(crate) fn client_seed(seed: u64, index: usize) -> u64 {
    match index {
        0 => seed,
        _ => derive_seed(derive_seed(seed, 50), index as u64),
    }
}

/// Builds the world of `point` for a run with `seed`, with the capture
/// `options` ask for.
pub(crate) fn build(point: &Point, seed: u64, options: &RunOptions) -> Result<Built, SimError> {
    let topology = &point.topology;
    let server_addr = topology.host_address(topology.server);
    let mut world = World::new();
    let mut clients = Vec::new();
    for node in &topology.nodes {
        match &node.kind {
            NodeKind::Host(role) => {
                let address = node.interfaces[0].address.address;
                let (seed, purpose, sends) = match role {
                    Role::Client => (client_seed(seed, clients.len()), 10, Direction::Forward),
                    Role::Server => (seed, 11, Direction::Reverse),
                };
                let id = if point.protocol.is_saratoga() {
                    world.add_node(saratoga::node(point, address, sends)?)
                } else {
                    world.add_host(endpoint(point, address, derive_seed(seed, purpose), sends)?)
                };
                if *role == Role::Client {
                    let port = match point.protocol.is_saratoga() {
                        true => scps_saratoga::node::PORT,
                        false => SERVER_PORT + clients.len() as u16,
                    };
                    clients.push(Client {
                        name: node.name.clone(),
                        node: id,
                        seed,
                        server: SocketAddr::new(server_addr, port),
                    });
                }
            }
            NodeKind::Router { routes } => {
                world.add_node(Router::new(node.interfaces.len(), routes.iter().copied())?);
            }
        }
    }
    let mut stressed = Stressed::default();
    let mut gateways = None;
    for (index, link) in topology.links.iter().enumerate() {
        let [a, b] = link.ends.map(NodeInterface::from);
        match &link.model {
            LinkModel::Stressed => {
                // Both directions of a circuit share its outages (seed 3).
                let outages = derive_seed(seed, 3);
                let bundles = (
                    Bundle::with_outage_seed(point.link.forward.clone(), derive_seed(seed, 1), outages)?,
                    Bundle::with_outage_seed(point.link.reverse.clone(), derive_seed(seed, 2), outages)?,
                );
                stressed = match &point.gateways {
                    None => connect_stressed(&mut world, point, [a, b], bundles)?,
                    Some(engines) => {
                        let (link, nodes) =
                            around_gateways(&mut world, point, engines, seed, [a, b], bundles)?;
                        gateways = Some(nodes);
                        link
                    }
                };
            }
            LinkModel::Lan(channel) => {
                let (forward, reverse) = lan(channel, derive_seed(derive_seed(seed, 40), index as u64))?;
                world.connect(a, b, forward, reverse)?;
            }
        }
    }
    if let Some(path) = &options.capture {
        let tap =
            PcapTap::create_with_snaplen(path, options.capture_snaplen.unwrap_or(scps_pcap::WHOLE_PACKETS))?;
        let at = match (options.capture_at.as_deref(), gateways) {
            (None, Some([gw_a, _])) => NodeInterface {
                node: gw_a,
                interface: InterfaceId(1),
            },
            (at, _) => capture_point(topology, at)?,
        };
        world.tap(at, Box::new(tap))?;
    }
    Ok(Built {
        world,
        server: topology.server,
        clients,
        stressed: stressed.links,
        bonds: stressed.bonds,
        gateways,
    })
}

/// Puts the gateways of `engines` at the `ends` of the stressed link:
/// `ends[0]` (the clients' side), LAN, gwA, the stressed link's
/// `bundles`, gwB, LAN, `ends[1]` (the server's). gwA splits the clients'
/// connections to the server, gwB the server's side of them, those that
/// the point's routes carry (every one without `[[route]]`); the others
/// cross both as through routers. The stressed link, and the gateways.
fn around_gateways(
    world: &mut World,
    point: &Point,
    engines: &Gateways,
    seed: u64,
    ends: [NodeInterface; 2],
    bundles: (Bundle, Bundle),
) -> Result<(Stressed, [NodeId; 2]), SimError> {
    let topology = &point.topology;
    let host = |node| IpPrefix::host(topology.host_address(node));
    let clients: Vec<IpPrefix> = topology.clients().map(host).collect();
    let server = vec![host(topology.server)];
    let gateway = |local, remote, sends, purpose| {
        let config = GatewayNodeConfig {
            local,
            remote,
            lan: engines.lan.clone(),
            link: engines.link(&point.link, sends),
            routes: engines.routes(sends).clone(),
        };
        GatewayNode::new(config, derive_seed(seed, purpose)).map_err(SimError::Gateway)
    };
    let a = world.add_node(gateway(clients.clone(), server.clone(), Direction::Forward, 60)?);
    let b = world.add_node(gateway(server, clients, Direction::Reverse, 61)?);
    let at = |node, interface| NodeInterface {
        node,
        interface: InterfaceId(interface),
    };
    let lan_model = topology::default_lan(point.link.mtu)?;
    let (forward, reverse) = lan(&lan_model, derive_seed(seed, 62))?;
    world.connect(ends[0], at(a, 0), forward, reverse)?;
    let stressed = connect_stressed(world, point, [at(a, 1), at(b, 1)], bundles)?;
    let (forward, reverse) = lan(&lan_model, derive_seed(seed, 63))?;
    world.connect(at(b, 0), ends[1], forward, reverse)?;
    Ok((stressed, [a, b]))
}

/// The stressed link as built: its links and the bonds at its ends.
#[derive(Debug, Default)]
struct Stressed {
    links: Vec<LinkId>,
    bonds: Vec<NodeId>,
}

/// Joins `ends` by the stressed link's circuits: one link striping them
/// round-robin, or a bond at each end (the bonding scheduler) and a link
/// per circuit between them, each bond joined to its end by a LAN.
fn connect_stressed(
    world: &mut World,
    point: &Point,
    ends: [NodeInterface; 2],
    bundles: (Bundle, Bundle),
) -> Result<Stressed, SimError> {
    let (Some(forward), Some(reverse)) = (
        point.link.bond(Direction::Forward),
        point.link.bond(Direction::Reverse),
    ) else {
        return Ok(Stressed {
            links: vec![world.connect(ends[0], ends[1], bundles.0, bundles.1)?],
            bonds: Vec::new(),
        });
    };
    let (forward, reverse) = (
        BondNode::new(forward).map_err(SimError::Bond)?,
        BondNode::new(reverse).map_err(SimError::Bond)?,
    );
    let capacities = (forward.capacity(), reverse.capacity());
    let a = world.add_node(forward);
    let b = world.add_node(reverse);
    follow_capacity(world, a, ends[0].node, capacities.0);
    follow_capacity(world, b, ends[1].node, capacities.1);
    let at = |node, interface| NodeInterface {
        node,
        interface: InterfaceId(interface),
    };
    // The bonds sit at the link's ends: an ideal wire to each (no seeds
    // are drawn from it).
    let wire = topology::default_lan(point.link.mtu)?;
    let (forward, reverse) = lan(&wire, 0)?;
    world.connect(ends[0], at(a, 0), forward, reverse)?;
    let (forward, reverse) = lan(&wire, 0)?;
    world.connect(at(b, 0), ends[1], forward, reverse)?;
    let circuits = bundles
        .0
        .into_channels()
        .into_iter()
        .zip(bundles.1.into_channels());
    let mut links = Vec::new();
    for (index, (forward, reverse)) in circuits.enumerate() {
        let interface = index as u16 + 1;
        let link = world.connect(at(a, interface), at(b, interface), forward, reverse)?;
        // The bonds hear of a dropped call as round-robin striping does.
        world.report_carrier(link);
        links.push(link);
    }
    Ok(Stressed {
        links,
        bonds: vec![a, b],
    })
}

/// The sender at `node` (a host, or a gateway's link side) paces no
/// faster than the stripe of the bond at `bond` carries (`capacity`), as a
/// real driver over a bundle does; a router there has no rate to bound.
fn follow_capacity(world: &mut World, bond: NodeId, node: NodeId, capacity: PathCapacity) {
    let now = world.now();
    if let Some(host) = world.node_mut::<Host>(node) {
        host.endpoint_mut().follow_path_capacity(capacity.clone(), now);
    } else if let Some(gateway) = world.node_mut::<GatewayNode>(node) {
        gateway.follow_path_capacity(capacity.clone(), now);
    } else {
        return;
    }
    world.follow(bond, node, capacity);
}

/// The endpoint of a host at `address` whose data goes `sends`.
fn endpoint(point: &Point, address: IpAddr, secret: u64, sends: Direction) -> Result<Endpoint, SimError> {
    let config = EndpointConfig {
        connection: point.engine_config(sends),
        secret,
        backlog: 1024,
        ..EndpointConfig::default()
    };
    Ok(Endpoint::new(config, [address])?)
}

/// The two directions of a LAN link.
fn lan(channel: &ChannelConfig, seed: u64) -> Result<(Bundle, Bundle), SimError> {
    let outages = derive_seed(seed, 3);
    Ok((
        Bundle::with_outage_seed(vec![channel.clone()], derive_seed(seed, 1), outages)?,
        Bundle::with_outage_seed(vec![channel.clone()], derive_seed(seed, 2), outages)?,
    ))
}

/// The interface `at` names, or the first client's.
fn capture_point(topology: &Topology, at: Option<&str>) -> Result<NodeInterface, SimError> {
    Ok(match at {
        Some(name) => topology.find("capture at", name)?.into(),
        None => NodeInterface {
            node: topology.clients().next().unwrap_or_default(),
            interface: scps_node::InterfaceId(0),
        },
    })
}

/// Node `i` of the topology is node `i` of the world.
impl From<topology::NodeInterface> for NodeInterface {
    fn from(at: topology::NodeInterface) -> NodeInterface {
        NodeInterface {
            node: at.node,
            interface: at.interface,
        }
    }
}
