//! A plain IP router: the first node with several interfaces. It forwards
//! each packet out of the interface of the longest prefix that holds its
//! destination, decrementing the TTL (RFC 1812 5.2.2 and 5.3.1), and counts
//! by cause what it cannot forward. It does not answer with ICMP, reassemble
//! or fragment, and does not look past the IP header.

use std::collections::{BTreeMap, VecDeque};

use crate::ip_header::prepare_forward;
use crate::{Instant, InterfaceId, IpPrefix, Node};

/// Destinations in `prefix` leave by `interface`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub prefix: IpPrefix,
    pub interface: InterfaceId,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    #[error("a router needs at least one interface")]
    NoInterfaces,
    #[error("the route to {prefix} leaves by {interface}, but the router has {interfaces} interfaces")]
    NoSuchInterface {
        prefix: IpPrefix,
        interface: InterfaceId,
        interfaces: usize,
    },
    #[error("two routes to {prefix}, by {first} and by {second}: which to use is ambiguous")]
    Duplicate {
        prefix: IpPrefix,
        first: InterfaceId,
        second: InterfaceId,
    },
}

/// What the router did with the packets it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouterStats {
    pub forwarded: u64,
    /// Packets not forwarded, by cause: `no_route`, `ttl_expired`,
    /// `queue_full`, `no_such_interface` (arrived on an interface the
    /// router does not have) and the header checks (`truncated`,
    /// `not_ip`, `bad_header_length`, `bad_length`, `bad_checksum`).
    pub drops: BTreeMap<&'static str, u64>,
}

impl RouterStats {
    pub fn dropped(&self, cause: &str) -> u64 {
        self.drops.get(cause).copied().unwrap_or(0)
    }
}

/// Packets waiting to be taken by the driver. A driver drains the queue
/// after every packet it hands in, so this only bounds memory if one
/// does not.
const QUEUE_LIMIT: usize = 4096;

#[derive(Debug)]
pub struct Router {
    interfaces: usize,
    /// Longest prefix first, so the first that matches is the one to use.
    routes: Vec<Route>,
    output: VecDeque<(InterfaceId, Vec<u8>)>,
    /// Buffers to reuse.
    spare: Vec<Vec<u8>>,
    stats: RouterStats,
}

impl Router {
    pub fn new(interfaces: usize, routes: impl IntoIterator<Item = Route>) -> Result<Router, RouterError> {
        if interfaces == 0 {
            return Err(RouterError::NoInterfaces);
        }
        let mut by_prefix: BTreeMap<IpPrefix, InterfaceId> = BTreeMap::new();
        for route in routes {
            if route.interface.index() >= interfaces {
                return Err(RouterError::NoSuchInterface {
                    prefix: route.prefix,
                    interface: route.interface,
                    interfaces,
                });
            }
            if let Some(&first) = by_prefix.get(&route.prefix)
                && first != route.interface
            {
                return Err(RouterError::Duplicate {
                    prefix: route.prefix,
                    first,
                    second: route.interface,
                });
            }
            by_prefix.insert(route.prefix, route.interface);
        }
        let mut routes: Vec<Route> = by_prefix
            .into_iter()
            .map(|(prefix, interface)| Route { prefix, interface })
            .collect();
        routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        Ok(Router {
            interfaces,
            routes,
            output: VecDeque::new(),
            spare: Vec::new(),
            stats: RouterStats::default(),
        })
    }

    pub fn stats(&self) -> &RouterStats {
        &self.stats
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The interface a packet to `dst` leaves by.
    pub fn lookup(&self, dst: std::net::IpAddr) -> Option<InterfaceId> {
        self.routes
            .iter()
            .find(|r| r.prefix.contains(dst))
            .map(|r| r.interface)
    }

    fn drop_packet(&mut self, cause: &'static str) {
        *self.stats.drops.entry(cause).or_default() += 1;
    }
}

impl Node for Router {
    fn interface_count(&self) -> usize {
        self.interfaces
    }

    fn handle_packet(&mut self, _now: Instant, interface: InterfaceId, packet: &[u8]) {
        if interface.index() >= self.interfaces {
            return self.drop_packet("no_such_interface");
        }
        if self.output.len() >= QUEUE_LIMIT {
            return self.drop_packet("queue_full");
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(packet);
        let outcome = prepare_forward(&mut buf).and_then(|dst| self.lookup(dst).ok_or("no_route"));
        match outcome {
            Ok(out) => {
                self.stats.forwarded += 1;
                self.output.push_back((out, buf));
            }
            Err(cause) => {
                self.spare.push(buf);
                self.drop_packet(cause);
            }
        }
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        let (interface, packet) = self.output.pop_front()?;
        let old = std::mem::replace(buf, packet);
        if old.capacity() > 0 {
            self.spare.push(old);
        }
        Some(interface)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}
