//! The two gateways of a `gw-` protocol label: the hosts run their TCP,
//! and a gateway on each side of the stressed link splits every
//! connection, TCP on its LAN and SCPS-TP across the link, as `scps
//! gateway` does for real. What the gateways run is configured by the
//! `[gateway]` table (the keys of `[tcp]`, which `scps gateway` reads in
//! its `[engine.tcp]`) and then `[stacks.gw-LABEL]`; the hosts' `[tcp]`
//! does not reach them, as a host's settings do not reach a real gateway.
//!
//! The sizing rules of a gateway's buffers live here so that the
//! simulator's gateways and `scps gateway` follow the same rule.
//!
//! A scenario's `[[route]]`s (routes.rs, the syntax of `scps gateway`'s)
//! choose what the gateways carry: a route's `[route.engine]` may name
//! what it runs across the link (`protocol`, an SCPS-TP label) and lay
//! `[route.engine.tcp]` keys over `[gateway]` and `[stacks.LABEL]`, as a
//! gateway's route lays its keys over `[engine]`; the link is the
//! point's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;
use scps_relay::{Carried, RelayConfig, RouteTable};
use serde::Deserialize;

use crate::error::Error;
use crate::link::{Direction, Link};
use crate::protocol::Protocol;
use crate::routes::{RouteSpec, check_buffer, route_table};
use crate::scenario::{layered_tcp, with_route};
use crate::tcp::{TcpSpec, validate};

/// The bounds of a buffer sized from a link's bandwidth-delay product.
pub const BDP_BUFFER_RANGE: (u64, u64) = (256 << 10, 16 << 20);

/// The LAN connections' buffers: what Linux grows a connection's to by
/// default (`tcp_wmem`, `tcp_rmem` maxima), as a Linux gateway's kernel
/// would on its LAN.
const LAN_SEND_BUFFER: usize = 4 << 20;
const LAN_RECV_BUFFER: usize = 6 << 20;

/// The bytes a link of `rate_bps` holds in one round trip of `rtt`,
/// within [`BDP_BUFFER_RANGE`]: a relay buffer that keeps the link
/// connection fed while the LAN side catches up, no more.
pub fn bdp_buffer(rate_bps: u64, rtt: Duration) -> u64 {
    let bdp = (rate_bps as f64 / 8.0 * rtt.as_secs_f64()) as u64;
    bdp.clamp(BDP_BUFFER_RANGE.0, BDP_BUFFER_RANGE.1)
}

/// A gateway's link engine's send and receive buffers on a link of
/// `rate_bps` and `rtt` that no key sizes: four bandwidth-delay products
/// (within the bounds of one), so that data keeps flowing while holes wait
/// several round trips for their repair. The simulator's gateways and
/// `scps gateway` both take it.
pub fn link_engine_buffer(rate_bps: u64, rtt: Duration) -> usize {
    bdp_buffer(rate_bps.saturating_mul(4), rtt) as usize
}

/// What the gateways of a point run.
#[derive(Debug, Clone, PartialEq)]
pub struct Gateways {
    /// What they run across the link: `scps-rate` for `gw-scps-rate`.
    pub across: Protocol,
    /// Their LAN connections' engine: CUBIC with a Linux host's buffers.
    pub lan: Config,
    /// Their link connections' engine, before the route rate of a
    /// direction ([`Gateways::link`]).
    link: Config,
    /// Bytes each split connection's relay holds: one bandwidth-delay
    /// product of the link.
    pub relay_buffer: usize,
    /// What the gateway whose data goes forward across the link (the
    /// clients') carries, and the one whose data goes back (the
    /// server's): `[[route]]`, or one route carrying every connection.
    routes: [RouteTable; 2],
}

/// A scenario route's own engine keys (`[route.engine]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEngineSpec {
    /// What its connections run across the link, instead of the `gw-`
    /// label's.
    protocol: Option<String>,
    /// `[tcp]` keys, over `[gateway]` and `[stacks.LABEL]`.
    #[serde(default)]
    tcp: TcpSpec,
}

impl Gateways {
    /// The gateways of `label` (a `gw-` label) on `link`: their link
    /// engine from a gateway's defaults, then `[gateway]`, then
    /// `[stacks.LABEL]`, then what the label decides across the link. The
    /// default buffers hold four bandwidth-delay products of the link, so
    /// that data keeps flowing while holes wait several round trips for
    /// their repair (on geo-8mbit at BER 1e-5, `gw-scps-rate` reaches 0.65
    /// of the limit with two, 0.90 with four, as `scps-rate` end to end
    /// with its 4 and 6 MiB).
    ///
    /// `routes` choose what they carry (each route's engine built the same
    /// way, then its own keys), one route carrying everything without any.
    pub fn resolve(
        label: Protocol,
        gateway: &TcpSpec,
        stacks: &BTreeMap<String, TcpSpec>,
        link: &Link,
        routes: &[RouteSpec<RouteEngineSpec>],
    ) -> Result<Option<Gateways>, Error> {
        let Some(across) = label.across_gateways() else {
            if routes.is_empty() {
                return Ok(None);
            }
            return Err(Error::invalid(
                "route",
                format!("{} routes", routes.len()),
                format!("routes choose what the gateways of a gw- label carry, and {label} has none"),
            ));
        };
        let rtt = round_trip(link);
        let rate = link.route(Direction::Forward).rate_bps;
        let engine_buffer = link_engine_buffer(rate, rtt);
        let base = Config {
            mtu: link.mtu,
            send_buffer: engine_buffer,
            recv_buffer: engine_buffer,
            ..Config::default()
        };
        let layers = EngineLayers {
            label,
            gateway,
            stacks,
            base,
        };
        let link_config = layers.engine(across)?;
        let lan = Config {
            mtu: link.mtu,
            congestion: CongestionAlgorithm::Cubic,
            send_buffer: LAN_SEND_BUFFER,
            recv_buffer: LAN_RECV_BUFFER,
            ..Config::default()
        };
        let relay = RelayConfig {
            buffer: bdp_buffer(rate, rtt) as usize,
            idle_timeout: None,
        };
        let routes = [Direction::Forward, Direction::Reverse].map(|direction| {
            if routes.is_empty() {
                return Ok(RouteTable::carrying_everything(Carried {
                    engine: Arc::new(with_route(link_config.clone(), across, link, direction)),
                    relay,
                }));
            }
            route_table(routes, |i, route| {
                let carriage = Carriage {
                    across,
                    link,
                    direction,
                    relay,
                };
                carriage.of_route(i, route, &layers)
            })
        });
        let [forward, reverse] = routes;
        Ok(Some(Gateways {
            across,
            lan,
            link: link_config,
            relay_buffer: relay.buffer,
            routes: [forward?, reverse?],
        }))
    }

    /// The link engine of the gateway whose data goes `direction` across
    /// `link`: paced at that direction's route rate as an SCPS stack is.
    pub fn link(&self, link: &Link, direction: Direction) -> Config {
        with_route(self.link.clone(), self.across, link, direction)
    }

    /// What the gateway whose data goes `direction` across the point's
    /// link carries, and how: each route's engine paced at that
    /// direction's route rate as [`Gateways::link`] is.
    pub fn routes(&self, direction: Direction) -> &RouteTable {
        match direction {
            Direction::Forward => &self.routes[0],
            Direction::Reverse => &self.routes[1],
        }
    }
}

/// What a gateway's link engine is laid from: a gateway's defaults
/// (`base`), what `across` brings, `[gateway]`, `[stacks.LABEL]`, then
/// what `across` decides.
struct EngineLayers<'a> {
    label: Protocol,
    gateway: &'a TcpSpec,
    stacks: &'a BTreeMap<String, TcpSpec>,
    base: Config,
}

impl EngineLayers<'_> {
    fn engine(&self, across: Protocol) -> Result<Config, Error> {
        layered_tcp(
            across,
            self.label,
            (self.gateway, "gateway"),
            self.stacks,
            self.base.clone(),
        )
    }
}

/// How the gateway whose data goes `direction` across `link` carries a
/// route's connections unless the route says: `across` the link, with
/// `relay`.
struct Carriage<'a> {
    across: Protocol,
    link: &'a Link,
    direction: Direction,
    relay: RelayConfig,
}

impl Carriage<'_> {
    /// Route `i`'s: the engine of its `protocol` laid as the gateways'
    /// is, its `[route.engine.tcp]` over it, paced at the direction's
    /// route rate unless it says; its own relay buffer, or the gateways'.
    fn of_route(
        &self,
        i: usize,
        route: &RouteSpec<RouteEngineSpec>,
        layers: &EngineLayers,
    ) -> Result<Carried, Error> {
        let engine = route.engine.clone().unwrap_or_default();
        let key = format!("route[{i}].engine");
        let across = match &engine.protocol {
            None => self.across,
            Some(text) => across_protocol(&format!("{key}.protocol"), text)?,
        };
        let mut config = layers.engine(across)?;
        let tcp_key = format!("{key}.tcp");
        engine.tcp.apply(&mut config, &tcp_key)?;
        across.apply(&mut config);
        let config = with_route(config, across, self.link, self.direction);
        validate(&config, &tcp_key)?;
        let buffer = match route.buffer {
            Some(buffer) => {
                check_buffer(&format!("route[{i}].buffer"), buffer.0)?;
                buffer.0 as usize
            }
            None => self.relay.buffer,
        };
        Ok(Carried {
            engine: Arc::new(config),
            relay: RelayConfig { buffer, ..self.relay },
        })
    }
}

/// A route's `protocol`: an SCPS-TP label that gateways run across a
/// link.
fn across_protocol(key: &str, text: &str) -> Result<Protocol, Error> {
    let across: Vec<Protocol> = Protocol::ALL
        .into_iter()
        .filter_map(Protocol::across_gateways)
        .collect();
    match text.parse::<Protocol>() {
        Ok(protocol) if across.contains(&protocol) => Ok(protocol),
        _ => Err(Error::invalid(
            key,
            format!("{text:?}"),
            format!(
                "what the gateways run across the link: {}",
                across.iter().map(|p| p.label()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// The link's propagation round trip: the slowest channel each way.
fn round_trip(link: &Link) -> Duration {
    let slowest = |direction| {
        link.channels(direction)
            .iter()
            .map(|c| c.delay)
            .max()
            .unwrap_or_default()
    };
    slowest(Direction::Forward) + slowest(Direction::Reverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_follow_the_bandwidth_delay_product_within_bounds() {
        // geo-8mbit: 8 Mbit/s for 600 ms is 600 kB.
        assert_eq!(bdp_buffer(8_000_000, Duration::from_millis(600)), 600_000);
        assert_eq!(bdp_buffer(2400, Duration::from_secs(3)), BDP_BUFFER_RANGE.0);
        assert_eq!(
            bdp_buffer(10_000_000_000, Duration::from_secs(1)),
            BDP_BUFFER_RANGE.1
        );
    }
}
