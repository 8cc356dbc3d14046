//! The `[topology]` schema: the nodes of a simulated network (hosts that
//! run the workload, routers), their interfaces and addresses, the links
//! that join them and the LAN models those links may use. Without it a
//! scenario is two hosts, a client and a server, joined by `[link]`.
//!
//! Everything is keyed by name (`[topology.nodes.r1]`,
//! `[topology.links.sat]`), not listed, so that `--set` and sweeps reach
//! every key like any other (`--set topology.lans.lan.rate=100Mbit`).
//! Names are kept in order of name: that order numbers the nodes and
//! interfaces, and so fixes the order of events of a run.

mod address;
mod paths;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use scps_channel::ChannelConfig;
use scps_node::{InterfaceId, IpPrefix, Route, Router};
use serde::Deserialize;

pub use address::{AddressError, InterfaceAddress};

use crate::error::Error;
use crate::link::ChannelSpec;
use crate::units::{Rate, Time};

/// The model name of the scenario's `[link]`: the stressed link, the one
/// the physical limit is judged against.
pub const STRESSED_MODEL: &str = "link";
/// The LAN model of a link that names none; `[topology.lans.lan]` changes
/// its keys.
pub const DEFAULT_LAN: &str = "lan";
/// Most nodes a topology may have: each client talks to a server port of
/// its own, and a run polls every node it hosts.
pub const MAX_NODES: usize = 1000;

/// The keys of the default LAN model: switched gigabit Ethernet, 50 us
/// each way, the default buffer. A LAN table's keys go over these.
fn default_lan_keys() -> ChannelSpec {
    ChannelSpec {
        rate: Some(Rate(1_000_000_000)),
        delay: Some(Time(Duration::from_micros(50))),
        ..ChannelSpec::default()
    }
}

/// The default LAN model on a path of `mtu`: where the simulator joins a
/// gateway to the node at its end of the stressed link.
pub fn default_lan(mtu: u16) -> Result<ChannelConfig, Error> {
    default_lan_keys().channel(&format!("topology.lans.{DEFAULT_LAN}"), mtu)
}

/// `[topology]` as the schema has it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    #[serde(default)]
    nodes: BTreeMap<String, NodeSpec>,
    #[serde(default)]
    links: BTreeMap<String, LinkSpec>,
    /// LAN models by name: the keys of one channel, used both ways.
    #[serde(default)]
    lans: BTreeMap<String, ChannelSpec>,
}

/// A node as the schema has it (a struct rather than an enum tagged by
/// `kind`, so that errors in its interfaces name their key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    kind: Kind,
    /// Hosts only.
    role: Option<Role>,
    interfaces: BTreeMap<String, InterfaceAddress>,
    /// Routers only: prefix = interface name, besides the networks of
    /// the interfaces.
    routes: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// An endpoint of the engine on one interface, running the workload.
    Host,
    /// Forwards by longest prefix.
    Router,
}

/// What a host does in the workload: each client runs it against the
/// server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSpec {
    /// `NODE.INTERFACE` of each end; `[link]` (the forward direction)
    /// carries what the first end sends.
    ends: [String; 2],
    /// `link` for the scenario's `[link]`, else a LAN model's name.
    model: Option<String>,
}

/// A resolved topology: nodes and links by index, every name checked,
/// every client able to reach the server across the stressed link.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// In order of name.
    pub nodes: Vec<Node>,
    /// In order of name.
    pub links: Vec<TopologyLink>,
    /// The index of the server host.
    pub server: usize,
    /// The index of the link that uses `[link]`.
    pub stressed: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// In order of name: interface `i` is `InterfaceId(i)`.
    pub interfaces: Vec<Interface>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Host(Role),
    /// Every route of the router: the connected networks of its interfaces
    /// and the configured ones.
    Router {
        routes: Vec<Route>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Interface {
    pub name: String,
    pub address: InterfaceAddress,
}

/// One interface of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeInterface {
    pub node: usize,
    pub interface: InterfaceId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopologyLink {
    pub name: String,
    /// The first end sends the forward direction.
    pub ends: [NodeInterface; 2],
    pub model: LinkModel,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LinkModel {
    /// The scenario's `[link]`.
    Stressed,
    /// A LAN: one channel, the same model both ways.
    Lan(Box<ChannelConfig>),
}

impl Topology {
    /// The default world: a client (10.0.0.1) and a server (10.0.0.2),
    /// each on interface `eth0`, joined by `[link]`.
    pub fn two_hosts() -> Topology {
        let host = |name: &str, role, address: &str| Node {
            name: name.to_owned(),
            kind: NodeKind::Host(role),
            interfaces: vec![Interface {
                name: "eth0".to_owned(),
                address: address.parse().expect("a valid literal"),
            }],
        };
        let eth0 = |node| NodeInterface {
            node,
            interface: InterfaceId(0),
        };
        Topology {
            nodes: vec![
                host("client", Role::Client, "10.0.0.1/24"),
                host("server", Role::Server, "10.0.0.2/24"),
            ],
            links: vec![TopologyLink {
                name: STRESSED_MODEL.to_owned(),
                ends: [eth0(0), eth0(1)],
                model: LinkModel::Stressed,
            }],
            server: 1,
            stressed: 0,
        }
    }

    /// The client hosts, in order of name.
    pub fn clients(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Host(Role::Client))
            .map(|(i, _)| i)
    }

    /// The address of a host (its one interface's).
    pub fn host_address(&self, node: usize) -> IpAddr {
        self.nodes[node].interfaces[0].address.address
    }

    /// `NODE.INTERFACE` of an interface.
    pub fn describe(&self, at: NodeInterface) -> String {
        let node = &self.nodes[at.node];
        format!("{}.{}", node.name, node.interfaces[at.interface.index()].name)
    }

    /// The interface called `NODE.INTERFACE`; `key` names where the name
    /// came from in the error.
    pub fn find(&self, key: &str, name: &str) -> Result<NodeInterface, Error> {
        find(&self.nodes, key, name)
    }
}

/// `NODE.INTERFACE` among `nodes`; the error lists what there is.
fn find(nodes: &[Node], key: &str, name: &str) -> Result<NodeInterface, Error> {
    let list = |names: Vec<&str>| names.join(", ");
    let Some((node_name, interface_name)) = name.split_once('.') else {
        return Err(Error::invalid(key, name, "NODE.INTERFACE, such as client.eth0"));
    };
    let Some(node) = nodes.iter().position(|n| n.name == node_name) else {
        return Err(Error::invalid(
            key,
            name,
            format!(
                "an interface of a node; there is no node {node_name:?} (nodes: {})",
                list(nodes.iter().map(|n| n.name.as_str()).collect())
            ),
        ));
    };
    let interfaces = &nodes[node].interfaces;
    let Some(interface) = interfaces.iter().position(|i| i.name == interface_name) else {
        return Err(Error::invalid(
            key,
            name,
            format!(
                "an interface of {node_name}; it has no {interface_name:?} (interfaces: {})",
                list(interfaces.iter().map(|i| i.name.as_str()).collect())
            ),
        ));
    };
    Ok(NodeInterface {
        node,
        interface: InterfaceId(interface as u16),
    })
}

/// A node or interface name: used in `NODE.INTERFACE`, so no dots.
fn check_name(key: &str, name: &str) -> Result<(), Error> {
    if name.is_empty() || name.contains('.') {
        return Err(Error::invalid(
            key,
            format!("{name:?}"),
            "a name without dots (links name interfaces as NODE.INTERFACE)",
        ));
    }
    Ok(())
}

impl TopologySpec {
    /// Checks and resolves the topology of a point whose `[link]` has
    /// `mtu`, whose hosts send with `hop_limit`.
    pub fn resolve(&self, mtu: u16, hop_limit: u8) -> Result<Topology, Error> {
        if self.nodes.len() > MAX_NODES {
            return Err(Error::invalid(
                "topology.nodes",
                self.nodes.len(),
                format!("at most {MAX_NODES} nodes"),
            ));
        }
        let (nodes, routers) = self.nodes()?;
        let server = server(&nodes)?;
        let lans = self.lans(mtu)?;
        let (links, stressed) = self.links(&nodes, &lans)?;
        let topology = Topology {
            nodes,
            links,
            server,
            stressed,
        };
        paths::check(&topology, &routers, hop_limit)?;
        Ok(topology)
    }

    /// The nodes in order of name, and a router for each router node
    /// (which the paths are checked with).
    fn nodes(&self) -> Result<(Vec<Node>, Vec<Option<Router>>), Error> {
        let mut owners: BTreeMap<IpAddr, String> = BTreeMap::new();
        let mut nodes = Vec::new();
        let mut routers = Vec::new();
        for (name, spec) in &self.nodes {
            let key = format!("topology.nodes.{name}");
            check_name(&key, name)?;
            let interfaces = resolve_interfaces(&key, name, &spec.interfaces, &mut owners)?;
            let (kind, router) = match (spec.kind, spec.role, &spec.routes) {
                (Kind::Host, Some(role), None) if interfaces.len() == 1 => (NodeKind::Host(role), None),
                (Kind::Host, Some(_), None) => {
                    return Err(Error::invalid(
                        format!("{key}.interfaces"),
                        format!("{} interfaces", interfaces.len()),
                        "exactly one interface (a host is one endpoint)",
                    ));
                }
                (Kind::Host, None, _) => {
                    return Err(Error::invalid(
                        format!("{key}.role"),
                        "missing",
                        "\"client\" or \"server\" for a host",
                    ));
                }
                (Kind::Host, _, Some(_)) => {
                    return Err(Error::invalid(
                        format!("{key}.routes"),
                        "set",
                        "only for a router (a host sends everything by its one interface)",
                    ));
                }
                (Kind::Router, Some(_), _) => {
                    return Err(Error::invalid(format!("{key}.role"), "set", "only for a host"));
                }
                (Kind::Router, None, routes) => {
                    let routes =
                        router_routes(&key, &interfaces, routes.as_ref().unwrap_or(&BTreeMap::new()))?;
                    let router = Router::new(interfaces.len(), routes.iter().copied())
                        .map_err(|e| Error::invalid(format!("{key}.routes"), "", e.to_string()))?;
                    (NodeKind::Router { routes }, Some(router))
                }
            };
            routers.push(router);
            let node = Node {
                name: name.clone(),
                kind,
                interfaces,
            };
            nodes.push(node);
        }
        Ok((nodes, routers))
    }

    /// The LAN models, resolved on a path of `mtu` (the default one
    /// included, changed or not).
    fn lans(&self, mtu: u16) -> Result<BTreeMap<&str, ChannelConfig>, Error> {
        let default = default_lan_keys();
        let mut lans = BTreeMap::new();
        if !self.lans.contains_key(DEFAULT_LAN) {
            lans.insert(
                DEFAULT_LAN,
                default.channel(&format!("topology.lans.{DEFAULT_LAN}"), mtu)?,
            );
        }
        for (name, spec) in &self.lans {
            let key = format!("topology.lans.{name}");
            if name == STRESSED_MODEL {
                return Err(Error::invalid(
                    key,
                    "a table",
                    format!(
                        "a LAN model named other than {STRESSED_MODEL:?}, which is the scenario's [link]"
                    ),
                ));
            }
            // One channel, the same both ways; the MTU is [link]'s, which
            // the hosts size their segments to.
            spec.refuse_structure(&key)?;
            lans.insert(name.as_str(), default.overlay(spec).channel(&key, mtu)?);
        }
        Ok(lans)
    }

    /// The links in order of name, and the index of the stressed one.
    fn links(
        &self,
        nodes: &[Node],
        lans: &BTreeMap<&str, ChannelConfig>,
    ) -> Result<(Vec<TopologyLink>, usize), Error> {
        let mut linked: BTreeMap<NodeInterface, &str> = BTreeMap::new();
        let mut links = Vec::new();
        let mut stressed = Vec::new();
        for (index, (name, spec)) in self.links.iter().enumerate() {
            let key = format!("topology.links.{name}");
            let ends_key = format!("{key}.ends");
            let ends = [
                find(nodes, &ends_key, &spec.ends[0])?,
                find(nodes, &ends_key, &spec.ends[1])?,
            ];
            if ends[0] == ends[1] {
                return Err(Error::invalid(
                    ends_key,
                    &spec.ends[0],
                    "two different interfaces",
                ));
            }
            for (end, text) in ends.iter().zip(&spec.ends) {
                if let Some(other) = linked.insert(*end, name) {
                    return Err(Error::invalid(
                        ends_key,
                        text,
                        format!("an interface on one link only: {text} is on link {other} too"),
                    ));
                }
            }
            let model_name = spec.model.as_deref().unwrap_or(DEFAULT_LAN);
            let model = if model_name == STRESSED_MODEL {
                stressed.push((index, name.as_str()));
                LinkModel::Stressed
            } else {
                let lan = lans.get(model_name).ok_or_else(|| {
                    let known: Vec<&str> = lans.keys().copied().collect();
                    Error::invalid(
                        format!("{key}.model"),
                        model_name,
                        format!(
                            "{STRESSED_MODEL:?} (the scenario's [link]) or a LAN model: {}",
                            known.join(", ")
                        ),
                    )
                })?;
                LinkModel::Lan(Box::new(lan.clone()))
            };
            links.push(TopologyLink {
                name: name.clone(),
                ends,
                model,
            });
        }
        for (index, node) in nodes.iter().enumerate() {
            for (interface, spec) in node.interfaces.iter().enumerate() {
                let at = NodeInterface {
                    node: index,
                    interface: InterfaceId(interface as u16),
                };
                if !linked.contains_key(&at) {
                    return Err(Error::invalid(
                        format!("topology.nodes.{}.interfaces.{}", node.name, spec.name),
                        spec.address,
                        "an interface on a link: no link has it at either end",
                    ));
                }
            }
        }
        match stressed[..] {
            [(index, _)] => Ok((links, index)),
            _ => Err(Error::invalid(
                "topology.links",
                match stressed.len() {
                    0 => "none with model = \"link\"".to_owned(),
                    _ => {
                        let names: Vec<&str> = stressed.iter().map(|(_, n)| *n).collect();
                        format!("{} with model = \"link\"", names.join(", "))
                    }
                },
                "exactly one link using the scenario's [link] (model = \"link\"): the stressed link, which the limit is judged against",
            )),
        }
    }
}

/// The interfaces of node `name` in order of name; `owners` holds which
/// interface has each address so far, so that no two share one.
fn resolve_interfaces(
    key: &str,
    name: &str,
    addresses: &BTreeMap<String, InterfaceAddress>,
    owners: &mut BTreeMap<IpAddr, String>,
) -> Result<Vec<Interface>, Error> {
    if addresses.is_empty() || addresses.len() > usize::from(u16::MAX) {
        return Err(Error::invalid(
            format!("{key}.interfaces"),
            format!("{} interfaces", addresses.len()),
            "1 to 65535 interfaces",
        ));
    }
    let mut interfaces = Vec::new();
    for (interface, address) in addresses {
        let key = format!("{key}.interfaces.{interface}");
        check_name(&key, interface)?;
        if let Some(owner) = owners.insert(address.address, format!("{name}.{interface}")) {
            return Err(Error::invalid(
                key,
                address,
                format!("an address of its own: {owner} has {} too", address.address),
            ));
        }
        interfaces.push(Interface {
            name: interface.clone(),
            address: *address,
        });
    }
    Ok(interfaces)
}

/// The index of the one server host, once there is some client too.
fn server(nodes: &[Node]) -> Result<usize, Error> {
    let with_role = |role| {
        nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.kind == NodeKind::Host(role))
    };
    let servers: Vec<(usize, &Node)> = with_role(Role::Server).collect();
    let allowed = "exactly one host with role = \"server\" and at least one with role = \"client\"";
    match servers[..] {
        [(server, _)] if with_role(Role::Client).next().is_some() => Ok(server),
        [_] => Err(Error::invalid("topology.nodes", "no client host", allowed)),
        [] => Err(Error::invalid("topology.nodes", "no server host", allowed)),
        _ => {
            let names: Vec<&str> = servers.iter().map(|(_, n)| n.name.as_str()).collect();
            Err(Error::invalid(
                "topology.nodes",
                format!("servers {}", names.join(", ")),
                allowed,
            ))
        }
    }
}

/// A router's routes: the network of each interface, then `configured`
/// (prefix = interface name). Two routes to one network by different
/// interfaces are refused: which one would be used is a guess.
fn router_routes(
    key: &str,
    interfaces: &[Interface],
    configured: &BTreeMap<String, String>,
) -> Result<Vec<Route>, Error> {
    let mut routes: Vec<(Route, String)> = Vec::new();
    let mut add = |route: Route, source: String, value: String| {
        if let Some((_, first)) = routes
            .iter()
            .find(|(r, _)| r.prefix == route.prefix && r.interface != route.interface)
        {
            return Err(Error::invalid(
                source,
                value,
                format!(
                    "one way to {}: {first} leads there by another interface",
                    route.prefix
                ),
            ));
        }
        routes.push((route, source));
        Ok(())
    };
    for (index, interface) in interfaces.iter().enumerate() {
        let route = Route {
            prefix: interface.address.prefix,
            interface: InterfaceId(index as u16),
        };
        add(
            route,
            format!("{key}.interfaces.{}", interface.name),
            interface.address.to_string(),
        )?;
    }
    for (prefix, via) in configured {
        let route_key = format!("{key}.routes.\"{prefix}\"");
        let prefix: IpPrefix = prefix
            .parse()
            .map_err(|e: scps_node::PrefixError| Error::invalid(&route_key, prefix, e.to_string()))?;
        let names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
        let interface = names.iter().position(|n| n == via).ok_or_else(|| {
            Error::invalid(
                &route_key,
                via,
                format!("an interface of this router: {}", names.join(", ")),
            )
        })?;
        let route = Route {
            prefix,
            interface: InterfaceId(interface as u16),
        };
        add(route, route_key, via.clone())?;
    }
    Ok(routes.into_iter().map(|(route, _)| route).collect())
}
