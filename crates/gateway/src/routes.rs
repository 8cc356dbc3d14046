//! The transparent mode's routes: which connections a gateway carries
//! across the link, and with what settings (docs/gateway.md "Routes").
//!
//! A route matches a connection by the client's address (`source`), the
//! server's address (`destination`) and the server's port; the most
//! specific route that matches decides. It either carries the connection,
//! with an engine configuration and a relay buffer of its own (and one
//! rate budget for all its connections, `Config::rate_route`), or lets it
//! pass through untouched. A connection no route matches passes through
//! too.
//!
//! Routes describe connections, not directions: the two gateways of a
//! pair can hold the same table, the client's gateway matching the
//! connections it intercepts, the server's the link connections it takes
//! over.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};

use scps_node::IpPrefix;
use scps_proto::{Config, ConfigChooser, FourTuple};
use scps_relay::RelayConfig;

/// What a route matches: the connection's client, its server and the
/// server's port. An address left out (`None`) is any address, IPv4 or
/// IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteMatch {
    pub source: Option<IpPrefix>,
    pub destination: Option<IpPrefix>,
    /// The server's ports, first and last.
    pub ports: (u16, u16),
}

impl RouteMatch {
    pub fn matches(&self, client: IpAddr, server: SocketAddr) -> bool {
        self.source.is_none_or(|p| p.contains(client))
            && self.destination.is_none_or(|p| p.contains(server.ip()))
            && (self.ports.0..=self.ports.1).contains(&server.port())
    }

    /// The address families the route can match: those of its prefixes,
    /// or both.
    pub fn families(&self) -> Vec<Family> {
        match self.source.or(self.destination) {
            Some(prefix) => vec![Family::of(prefix.network())],
            None => vec![Family::V4, Family::V6],
        }
    }

    fn overlaps(&self, other: &RouteMatch) -> bool {
        let meet = |a: Option<IpPrefix>, b: Option<IpPrefix>| match (a, b) {
            (Some(a), Some(b)) => a.overlaps(&b),
            _ => true,
        };
        self.families().iter().any(|f| other.families().contains(f))
            && meet(self.source, other.source)
            && meet(self.destination, other.destination)
            && self.ports.0 <= other.ports.1
            && other.ports.0 <= self.ports.1
    }

    /// Whether every connection this matches, `other` matches too.
    fn within(&self, other: &RouteMatch) -> bool {
        let inside = |inner: Option<IpPrefix>, outer: Option<IpPrefix>| match (inner, outer) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(inner), Some(outer)) => outer.len() <= inner.len() && outer.contains(inner.network()),
        };
        inside(self.source, other.source)
            && inside(self.destination, other.destination)
            && self.families().iter().all(|f| other.families().contains(f))
            && other.ports.0 <= self.ports.0
            && self.ports.1 <= other.ports.1
    }

    /// Sorting by this puts every route before the routes that contain
    /// it: the longest source prefix first, then the longest destination
    /// prefix, then the narrowest port range (any address counting as the
    /// shortest prefix).
    fn specificity(&self) -> (std::cmp::Reverse<u8>, std::cmp::Reverse<u8>, u16) {
        use std::cmp::Reverse;
        let len = |p: Option<IpPrefix>| p.map_or(0, |p| p.len());
        (
            Reverse(len(self.source)),
            Reverse(len(self.destination)),
            self.ports.1 - self.ports.0,
        )
    }
}

/// An address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(address: IpAddr) -> Family {
        match address {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
}

/// How a route's connections cross the link.
#[derive(Debug, Clone)]
pub struct Carried {
    /// The link connection's engine settings (`rate_route` set to the
    /// route's number, so that the route's connections share its rate).
    pub engine: Arc<Config>,
    pub relay: RelayConfig,
}

#[derive(Debug, Clone)]
pub struct Route {
    /// For logs, metrics and `scps status`.
    pub name: String,
    pub matching: RouteMatch,
    /// `None`: the route's connections pass through untouched.
    pub carried: Option<Carried>,
}

/// Two routes that overlap without one containing the other: no order
/// between them says which a connection in both takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unordered {
    pub first: String,
    pub second: String,
}

/// The routes, most specific first.
#[derive(Debug, Clone)]
pub struct RouteTable {
    routes: Vec<Route>,
}

impl RouteTable {
    /// Orders `routes`, most specific first; refused if two overlap and
    /// neither contains the other (or both match the same connections).
    pub fn new(mut routes: Vec<Route>) -> Result<RouteTable, Unordered> {
        routes.sort_by_key(|r| r.matching.specificity());
        for (i, earlier) in routes.iter().enumerate() {
            for later in &routes[i + 1..] {
                let (a, b) = (&earlier.matching, &later.matching);
                if a.overlaps(b) && (!a.within(b) || a == b) {
                    return Err(Unordered {
                        first: earlier.name.clone(),
                        second: later.name.clone(),
                    });
                }
            }
        }
        Ok(RouteTable { routes })
    }

    /// One route, `default`, carrying every connection.
    pub fn carrying_everything(carried: Carried) -> RouteTable {
        RouteTable {
            routes: vec![Route {
                name: "default".to_owned(),
                matching: RouteMatch {
                    source: None,
                    destination: None,
                    ports: (1, 65535),
                },
                carried: Some(carried),
            }],
        }
    }

    /// The largest relay buffer of a route.
    pub fn largest_buffer(&self) -> usize {
        self.routes
            .iter()
            .filter_map(|r| r.carried.as_ref())
            .map(|c| c.relay.buffer)
            .max()
            .unwrap_or(0)
    }

    /// The routes, in the order they are tried.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The route of a connection from `client` to `server`, if one
    /// matches.
    pub fn find(&self, client: IpAddr, server: SocketAddr) -> Option<&Route> {
        self.routes.iter().find(|r| r.matching.matches(client, server))
    }

    /// The route a connection from `client` to `server` is carried on:
    /// `None` if it matches none, or one that lets it pass.
    pub fn carried(&self, client: IpAddr, server: SocketAddr) -> Option<(&str, &Carried)> {
        let route = self.find(client, server)?;
        Some((&route.name, route.carried.as_ref()?))
    }
}

/// The route table in force, replaced whole on a reload: a connection
/// keeps the settings of the table it started under.
#[derive(Debug, Clone)]
pub struct Routes(Arc<RwLock<Arc<RouteTable>>>);

impl Routes {
    pub fn new(table: RouteTable) -> Routes {
        Routes(Arc::new(RwLock::new(Arc::new(table))))
    }

    pub fn current(&self) -> Arc<RouteTable> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn replace(&self, table: RouteTable) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(table);
    }
}

/// The server's gateway picks the settings of each link connection it
/// takes over by its route: the tuple's remote end is the client, its
/// local end the server.
impl ConfigChooser for Routes {
    fn config_for(&self, tuple: &FourTuple) -> Option<Arc<Config>> {
        let table = self.current();
        let (_, carried) = table.carried(tuple.remote.ip(), tuple.local)?;
        Some(carried.engine.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A route; `*` for any address.
    fn route(name: &str, source: &str, destination: &str, ports: (u16, u16)) -> Route {
        let prefix = |text: &str| (text != "*").then(|| text.parse().unwrap());
        Route {
            name: name.into(),
            matching: RouteMatch {
                source: prefix(source),
                destination: prefix(destination),
                ports,
            },
            carried: None,
        }
    }

    fn carried(mut route: Route) -> Route {
        route.carried = Some(Carried {
            engine: Arc::new(Config::default()),
            relay: RelayConfig {
                buffer: 4096,
                idle_timeout: None,
            },
        });
        route
    }

    #[test]
    fn the_most_specific_route_decides_whatever_the_order_written() {
        let table = RouteTable::new(vec![
            carried(route("all", "*", "*", (1, 65535))),
            route("ssh passes", "*", "10.4.0.0/16", (22, 22)),
            carried(route("web of one host", "10.1.0.7/32", "10.4.0.0/16", (80, 80))),
        ])
        .unwrap();
        let names: Vec<&str> = table.routes().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["web of one host", "ssh passes", "all"]);
        let client: IpAddr = "10.1.0.7".parse().unwrap();
        let find = |server: &str| {
            table
                .find(client, server.parse().unwrap())
                .map(|r| r.name.as_str())
        };
        assert_eq!(find("10.4.0.1:80"), Some("web of one host"));
        assert_eq!(find("10.4.0.1:22"), Some("ssh passes"));
        assert_eq!(find("10.5.0.1:22"), Some("all"));
        assert!(
            table.carried(client, "10.4.0.1:22".parse().unwrap()).is_none(),
            "passes"
        );
        let other: IpAddr = "10.1.0.8".parse().unwrap();
        assert_eq!(
            table
                .carried(other, "10.4.0.1:80".parse().unwrap())
                .map(|(n, _)| n),
            Some("all")
        );
        let narrow = RouteTable::new(vec![carried(route("web", "*", "10.4.0.0/16", (80, 80)))]).unwrap();
        assert!(
            narrow.find(client, "10.4.0.1:443".parse().unwrap()).is_none(),
            "no route: passes"
        );
    }

    #[test]
    fn routes_that_overlap_without_one_containing_the_other_are_refused() {
        let crossed = RouteTable::new(vec![
            route("a", "10.1.0.0/24", "*", (1, 65535)),
            route("b", "*", "10.4.0.0/24", (1, 65535)),
        ]);
        assert_eq!(
            crossed.unwrap_err(),
            Unordered {
                first: "a".into(),
                second: "b".into()
            }
        );
        let ports = RouteTable::new(vec![
            route("low", "*", "*", (1, 1000)),
            route("high", "*", "*", (500, 2000)),
        ]);
        assert!(ports.is_err(), "port ranges that cross");
        let twins = RouteTable::new(vec![
            route("one", "10.1.0.0/24", "*", (80, 80)),
            route("two", "10.1.0.0/24", "*", (80, 80)),
        ]);
        assert!(twins.is_err(), "the same connections twice");
        let apart = RouteTable::new(vec![
            route("one", "10.1.0.0/24", "*", (1, 65535)),
            route("two", "10.2.0.0/24", "10.4.0.0/24", (80, 80)),
        ]);
        assert!(apart.is_ok(), "disjoint routes need no order");
        let families = RouteTable::new(vec![
            route("v4", "10.1.0.0/24", "*", (1, 65535)),
            route("v6", "*", "fd00:4::/64", (1, 65535)),
        ]);
        assert!(families.is_ok(), "an IPv4 route and an IPv6 route never meet");
    }
}
