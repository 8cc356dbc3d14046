//! What a testbed is made of: nodes, veth links with their addresses,
//! routes and which nodes forward. Two shapes come ready
//! (docs/architecture.md, "In the testbed, through the emulator"):
//! client, emu, server; and client, gwA, emu, gwB, server.
//!
//! Addresses: segment `n` (the `n`-th link from the client side) is
//! `10.99.n.0/24` and `fd00:99:n::/64`; on each segment the node nearer
//! the client is `.1` and the other `.2`, except the client's own segment,
//! where the client is `.2` and its router `.1`. In [`Topology::direct`]:
//!
//! ```text
//! client eth0 10.99.1.2 ── a0 10.99.1.1  emu  b0 10.99.2.1 ── eth0 10.99.2.2 server
//! ```
//!
//! Every router forwards from the start, the emulator's node included (so
//! packets cross it unimpaired until an emulator runs there and steers its
//! two sides through itself): switching IPv6 forwarding on later would
//! stall neighbour discovery for about a second.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Name of the emulator node in both shapes.
pub const EMU: &str = "emu";
/// The emulator's interface towards the client.
pub const EMU_SIDE_A: &str = "a0";
/// The emulator's interface towards the server.
pub const EMU_SIDE_B: &str = "b0";

/// One end of a veth link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    pub node: String,
    pub interface: String,
    /// Addresses with prefix length, e.g. `10.99.1.2/24`.
    pub addresses: Vec<String>,
}

/// A route of a node, in `ip route` words (e.g. `default via 10.99.1.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub node: String,
    pub route: String,
}

/// The description of a testbed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    pub nodes: Vec<String>,
    pub links: Vec<(LinkEnd, LinkEnd)>,
    pub routes: Vec<Route>,
    /// Nodes that forward IPv4 and IPv6 packets (routers).
    pub forwarding: Vec<String>,
}

/// IPv4 address `10.99.segment.host`.
pub fn ipv4(segment: u8, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 99, segment, host)
}

/// IPv6 address `fd00:99:segment::host`.
pub fn ipv6(segment: u8, host: u8) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0x99, u16::from(segment), 0, 0, 0, 0, u16::from(host))
}

fn end(node: &str, interface: &str, segment: u8, host: u8) -> LinkEnd {
    LinkEnd {
        node: node.into(),
        interface: interface.into(),
        addresses: vec![
            format!("{}/24", ipv4(segment, host)),
            format!("{}/64", ipv6(segment, host)),
        ],
    }
}

fn routes_via(node: &str, destinations: &[(&str, &str)], segment: u8, host: u8) -> Vec<Route> {
    destinations
        .iter()
        .flat_map(|(v4, v6)| {
            [
                Route {
                    node: node.into(),
                    route: format!("{v4} via {}", ipv4(segment, host)),
                },
                Route {
                    node: node.into(),
                    route: format!("{v6} via {}", ipv6(segment, host)),
                },
            ]
        })
        .collect()
}

const DEFAULT: (&str, &str) = ("default", "default");

fn segment_net(segment: u8) -> (String, String) {
    (format!("10.99.{segment}.0/24"), format!("fd00:99:{segment}::/64"))
}

impl Topology {
    /// client ── emu ── server: the emulator alone between two hosts.
    pub fn direct() -> Topology {
        let mut routes = routes_via("client", &[DEFAULT], 1, 1);
        routes.extend(routes_via("server", &[DEFAULT], 2, 1));
        Topology {
            nodes: ["client", EMU, "server"].map(String::from).to_vec(),
            links: vec![
                (end("client", "eth0", 1, 2), end(EMU, EMU_SIDE_A, 1, 1)),
                (end(EMU, EMU_SIDE_B, 2, 1), end("server", "eth0", 2, 2)),
            ],
            routes,
            forwarding: vec![EMU.into()],
        }
    }

    /// client ── gwA ── emu ── gwB ── server: room for a gateway on each
    /// side of the emulated link.
    pub fn with_gateways() -> Topology {
        let (n1v4, n1v6) = segment_net(1);
        let (n4v4, n4v6) = segment_net(4);
        let mut routes = routes_via("client", &[DEFAULT], 1, 1);
        routes.extend(routes_via("gwA", &[DEFAULT], 2, 1));
        routes.extend(routes_via(EMU, &[(&n1v4, &n1v6)], 2, 2));
        routes.extend(routes_via(EMU, &[(&n4v4, &n4v6)], 3, 2));
        routes.extend(routes_via("gwB", &[DEFAULT], 3, 1));
        routes.extend(routes_via("server", &[DEFAULT], 4, 1));
        Topology {
            nodes: ["client", "gwA", EMU, "gwB", "server"].map(String::from).to_vec(),
            links: vec![
                (end("client", "eth0", 1, 2), end("gwA", "lan0", 1, 1)),
                (end("gwA", "sat0", 2, 2), end(EMU, EMU_SIDE_A, 2, 1)),
                (end(EMU, EMU_SIDE_B, 3, 1), end("gwB", "sat0", 3, 2)),
                (end("gwB", "lan0", 4, 1), end("server", "eth0", 4, 2)),
            ],
            routes,
            forwarding: vec!["gwA".into(), EMU.into(), "gwB".into()],
        }
    }

    /// The first IPv4 address of `node`'s `interface`, if it has one.
    pub fn interface_address(&self, node: &str, interface: &str) -> Option<IpAddr> {
        self.addresses_of(node)
            .find(|(name, address)| *name == interface && address.is_ipv4())
            .map(|(_, address)| address)
    }

    /// The first address (IPv4) of `node`, if it has one.
    pub fn address(&self, node: &str) -> Option<IpAddr> {
        self.addresses_of(node).map(|(_, address)| address).next()
    }

    /// The addresses of `node`'s interfaces, each with its interface's
    /// name.
    fn addresses_of<'a>(&'a self, node: &'a str) -> impl Iterator<Item = (&'a str, IpAddr)> + 'a {
        self.links
            .iter()
            .flat_map(|(a, b)| [a, b])
            .filter(move |end| end.node == node)
            .flat_map(|end| {
                end.addresses
                    .iter()
                    .filter_map(|a| Some((end.interface.as_str(), a.split('/').next()?.parse().ok()?)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_s_address_is_its_own() {
        let topology = Topology::with_gateways();
        let at = |node, interface| topology.interface_address(node, interface);
        assert_eq!(at("gwA", "sat0"), Some(ipv4(2, 2).into()));
        assert_eq!(at("gwA", "lan0"), Some(ipv4(1, 1).into()));
        assert_eq!(at("gwB", "sat0"), Some(ipv4(3, 2).into()));
        assert_eq!(at("gwB", "eth0"), None);
        assert_eq!(topology.address("server"), Some(ipv4(4, 2).into()));
    }
}
