//! Routes: which connections a transparent gateway carries across the
//! link, and with what settings (docs/gateway.md "Routes"). The one
//! decision of the gateway, [`RouteTable::decide`], lives here, sans-IO,
//! so that the real gateway (its interception rules, its accept path,
//! its far side's choice of settings) and the simulator's gateway node
//! all read the same table the same way.
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

use crate::relay::RelayConfig;

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
    pub fn families(&self) -> &'static [Family] {
        match self.source.or(self.destination).map(|p| Family::of(p.network())) {
            Some(Family::V4) => &[Family::V4],
            Some(Family::V6) => &[Family::V6],
            None => &[Family::V4, Family::V6],
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
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The link connection's engine settings (`rate_route` set to the
    /// route's number, so that the route's connections share its rate).
    pub engine: Arc<Config>,
    pub relay: RelayConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// For logs, metrics and `scps status`.
    pub name: String,
    pub matching: RouteMatch,
    /// `None`: the route's connections pass through untouched.
    pub carried: Option<Carried>,
}

impl Route {
    /// The route named "default" that carries every connection with
    /// `carried`: the whole table without `[[route]]`, or the last route
    /// of one.
    pub fn everything(carried: Carried) -> Route {
        Route {
            name: "default".to_owned(),
            matching: RouteMatch {
                source: None,
                destination: None,
                ports: (1, 65535),
            },
            carried: Some(carried),
        }
    }
}

/// Two routes that overlap without one containing the other: no order
/// between them says which a connection in both takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unordered {
    pub first: String,
    pub second: String,
}

/// What a gateway does with a connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision<'a> {
    /// Split at the gateway and carried across the link on the route
    /// named `route`, with its settings.
    Carried { route: &'a str, settings: &'a Carried },
    /// Left alone: routed as plain IP, end to end.
    PassThrough,
}

impl Decision<'_> {
    pub fn is_carried(&self) -> bool {
        matches!(self, Decision::Carried { .. })
    }
}

/// The routes, most specific first.
#[derive(Debug, Clone, PartialEq)]
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
            routes: vec![Route::everything(carried)],
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

    /// The decision for a connection from `client` to `server`: the
    /// most specific route that matches carries it or lets it pass, and
    /// one that no route matches passes.
    pub fn decide(&self, client: IpAddr, server: SocketAddr) -> Decision<'_> {
        match self.find(client, server) {
            Some(Route {
                name,
                carried: Some(settings),
                ..
            }) => Decision::Carried {
                route: name,
                settings,
            },
            _ => Decision::PassThrough,
        }
    }

    /// The decision for a TCP segment from `from` to `to` that none of
    /// the gateway's connections holds, read as the transparent mode's
    /// interception rules read a LAN segment (scps-gateway's
    /// `transparent/nft.rs`). A SYN without ACK (`opening`) is a
    /// client's: [`RouteTable::decide`] of client `from` and server `to`.
    /// Any other segment may be a server's answer to a client: if the
    /// route that matches it read so passes, it passes; otherwise it is
    /// read as a client's.
    pub fn decide_segment(&self, from: SocketAddr, to: SocketAddr, opening: bool) -> Decision<'_> {
        let answer_passes = || {
            self.find(to.ip(), from)
                .is_some_and(|route| route.carried.is_none())
        };
        if !opening && answer_passes() {
            return Decision::PassThrough;
        }
        self.decide(from.ip(), to)
    }

    /// The route of a connection from `client` to `server`, if one
    /// matches.
    fn find(&self, client: IpAddr, server: SocketAddr) -> Option<&Route> {
        self.routes.iter().find(|r| r.matching.matches(client, server))
    }
}

/// The far side's choice: the gateway that takes over a link connection
/// gives it the settings of its route. The tuple's remote end is the
/// client, its local end the server; a connection no route carries keeps
/// the listener's settings (the gateway then resets it).
impl ConfigChooser for RouteTable {
    fn config_for(&self, tuple: &FourTuple) -> Option<Arc<Config>> {
        match self.decide(tuple.remote.ip(), tuple.local) {
            Decision::Carried { settings, .. } => Some(settings.engine.clone()),
            Decision::PassThrough => None,
        }
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

/// The table in force decides.
impl ConfigChooser for Routes {
    fn config_for(&self, tuple: &FourTuple) -> Option<Arc<Config>> {
        self.current().config_for(tuple)
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
        assert_eq!(
            table.decide(client, "10.4.0.1:22".parse().unwrap()),
            Decision::PassThrough
        );
        let other: IpAddr = "10.1.0.8".parse().unwrap();
        assert!(matches!(
            table.decide(other, "10.4.0.1:80".parse().unwrap()),
            Decision::Carried { route: "all", .. }
        ));
        let narrow = RouteTable::new(vec![carried(route("web", "*", "10.4.0.0/16", (80, 80)))]).unwrap();
        assert!(
            narrow.find(client, "10.4.0.1:443".parse().unwrap()).is_none(),
            "no route"
        );
        assert_eq!(
            narrow.decide(client, "10.4.0.1:443".parse().unwrap()),
            Decision::PassThrough,
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

    /// ssh passes, everything else is carried.
    fn ssh_passes() -> RouteTable {
        RouteTable::new(vec![
            carried(route("all", "*", "*", (1, 65535))),
            route("ssh", "*", "*", (22, 22)),
        ])
        .unwrap()
    }

    #[test]
    fn a_segment_no_connection_holds_is_read_as_the_interception_reads_it() {
        let table = ssh_passes();
        let client: SocketAddr = "10.1.0.7:40000".parse().unwrap();
        let (ssh, web): (SocketAddr, SocketAddr) =
            ("10.4.0.1:22".parse().unwrap(), "10.4.0.1:80".parse().unwrap());
        let carried = |decision: Decision| decision.is_carried();
        // A SYN is a client's.
        assert!(!carried(table.decide_segment(client, ssh, true)));
        assert!(carried(table.decide_segment(client, web, true)));
        // The ssh server's answers pass, though read as a client's the
        // catch-all would carry them; so do its client's later segments.
        assert!(!carried(table.decide_segment(ssh, client, false)));
        assert!(!carried(table.decide_segment(client, ssh, false)));
        // The web server's answers, and its client's segments, are carried.
        assert!(carried(table.decide_segment(web, client, false)));
        assert!(carried(table.decide_segment(client, web, false)));
        // A SYN is never read as an answer: from port 22, it opens a
        // connection to a web server, which is carried.
        let from_22: SocketAddr = "10.1.0.7:22".parse().unwrap();
        assert!(carried(table.decide_segment(from_22, web, true)));
    }

    #[test]
    fn the_far_side_gives_a_link_connection_the_settings_of_its_route() {
        let mut table = ssh_passes();
        let engine = Arc::new(Config {
            rate_route: 7,
            ..Config::default()
        });
        table.routes[1].carried.as_mut().unwrap().engine = engine.clone();
        let from = |local: &str| FourTuple {
            local: local.parse().unwrap(),
            remote: "10.1.0.7:40000".parse().unwrap(),
        };
        assert_eq!(table.routes[1].name, "all");
        assert_eq!(table.config_for(&from("10.4.0.1:80")), Some(engine));
        assert_eq!(table.config_for(&from("10.4.0.1:22")), None, "ssh passes");
        let routes = Routes::new(table);
        assert_eq!(routes.config_for(&from("10.4.0.1:22")), None);
        routes.replace(RouteTable::new(vec![carried(route("all", "*", "*", (1, 65535)))]).unwrap());
        assert!(
            routes.config_for(&from("10.4.0.1:22")).is_some(),
            "the table in force decides"
        );
    }
}
