//! `[[route]]`: which connections a gateway carries, and with what
//! settings, in one syntax for `scps gateway`'s file and for a scenario's
//! gateways (docs/gateway.md "Routes", docs/scenarios.md). What a route
//! matches, its name and whether it passes are read here into a
//! [`RouteTable`] (scps-relay, which decides by it); how a route carries
//! (its `engine` and `buffer`) each reader resolves for its own engine,
//! through the `carry` it gives [`route_table`].

use std::collections::BTreeSet;
use std::sync::Arc;

use scps_node::IpPrefix;
use scps_relay::{Carried, Route, RouteMatch, RouteTable};
use serde::Deserialize;

use crate::error::Error;
use crate::units::Bytes;

/// The bounds of a relay buffer (`relay.buffer`, a route's `buffer`).
pub const BUFFER_RANGE: (u64, u64) = (4096, 1 << 30);

/// One `[[route]]` as written; `E` is what its `engine` table holds for
/// its reader.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec<E> {
    pub name: Option<String>,
    pub source: Option<String>,
    pub destination: Option<String>,
    pub ports: Option<String>,
    #[serde(default)]
    pub pass: bool,
    pub engine: Option<E>,
    pub buffer: Option<Bytes>,
}

/// The routes, most specific first: each route that carries with what
/// `carry(i, route)` makes of route `i`'s `engine` and `buffer`, its
/// engine given the route's number (counted from 1) as its rate budget,
/// which all its connections share.
pub fn route_table<E>(
    routes: &[RouteSpec<E>],
    mut carry: impl FnMut(usize, &RouteSpec<E>) -> Result<Carried, Error>,
) -> Result<RouteTable, Error> {
    let routes = routes
        .iter()
        .enumerate()
        .map(|(i, route)| one_route(i, route, &mut carry))
        .collect::<Result<Vec<_>, Error>>()?;
    let names: BTreeSet<&str> = routes.iter().map(|r| r.name.as_str()).collect();
    if names.len() != routes.len() {
        return Err(Error::invalid(
            "route.name",
            "(a name used twice)",
            "a name of its own for each route",
        ));
    }
    RouteTable::new(routes).map_err(|conflict| {
        Error::invalid(
            "route",
            format!("{} and {}", conflict.first, conflict.second),
            "routes that do not overlap, or one within the other (a narrower prefix or port range), \
             so that the most specific decides",
        )
    })
}

fn one_route<E>(
    i: usize,
    route: &RouteSpec<E>,
    carry: &mut impl FnMut(usize, &RouteSpec<E>) -> Result<Carried, Error>,
) -> Result<Route, Error> {
    let key = |field: &str| format!("route[{i}].{field}");
    let prefix = |field: &str, text: &Option<String>| -> Result<Option<IpPrefix>, Error> {
        text.as_deref()
            .map(|text| address_prefix(&key(field), text))
            .transpose()
    };
    let matching = RouteMatch {
        source: prefix("source", &route.source)?,
        destination: prefix("destination", &route.destination)?,
        ports: match &route.ports {
            None => (1, 65535),
            Some(text) => port_range(&key("ports"), text)?,
        },
    };
    if let (Some(source), Some(destination)) = (matching.source, matching.destination)
        && source.network().is_ipv4() != destination.network().is_ipv4()
    {
        return Err(Error::invalid(
            key("destination"),
            destination,
            format!("a prefix of the source's family ({source}): a connection is IPv4 or IPv6 end to end"),
        ));
    }
    let name = match &route.name {
        Some(name) if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) => {
            return Err(Error::invalid(key("name"), name, "1 to 64 printable characters"));
        }
        Some(name) => name.clone(),
        None => format!("route[{i}]"),
    };
    if route.pass && (route.engine.is_some() || route.buffer.is_some()) {
        return Err(Error::invalid(
            key("pass"),
            true,
            "a route that passes connections through has no engine or buffer of its own",
        ));
    }
    let carried = match route.pass {
        true => None,
        false => {
            let mut carried = carry(i, route)?;
            Arc::make_mut(&mut carried.engine).rate_route = i as u32 + 1;
            Some(carried)
        }
    };
    Ok(Route {
        name,
        matching,
        carried,
    })
}

/// A relay buffer within [`BUFFER_RANGE`], or what is wrong with `key`.
pub fn check_buffer(key: &str, buffer: u64) -> Result<(), Error> {
    if (BUFFER_RANGE.0..=BUFFER_RANGE.1).contains(&buffer) {
        Ok(())
    } else {
        Err(Error::invalid(key, buffer, "from 4096 bytes to 1 GiB"))
    }
}

pub fn address_prefix(key: &str, text: &str) -> Result<IpPrefix, Error> {
    text.parse().map_err(|e| {
        Error::invalid(
            key,
            text,
            format!("an address prefix such as 10.1.0.0/16 or 2001:db8::/32 ({e})"),
        )
    })
}

/// A port or a range of ports, `FIRST-LAST`.
pub fn port_range(key: &str, text: &str) -> Result<(u16, u16), Error> {
    let invalid = || {
        Error::invalid(
            key,
            text,
            "a port or a range FIRST-LAST, within 1 to 65535 (22, 8000-8999)",
        )
    };
    let (first, last) = text.split_once('-').unwrap_or((text, text));
    let first: u16 = first.trim().parse().map_err(|_| invalid())?;
    let last: u16 = last.trim().parse().map_err(|_| invalid())?;
    if first == 0 || first > last {
        return Err(invalid());
    }
    Ok((first, last))
}
