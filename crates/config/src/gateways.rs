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

use std::collections::BTreeMap;
use std::time::Duration;

use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;

use crate::error::Error;
use crate::link::{Direction, Link};
use crate::protocol::Protocol;
use crate::scenario::{layered_tcp, with_route};
use crate::tcp::TcpSpec;

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
    pub fn resolve(
        label: Protocol,
        gateway: &TcpSpec,
        stacks: &BTreeMap<String, TcpSpec>,
        link: &Link,
    ) -> Result<Option<Gateways>, Error> {
        let Some(across) = label.across_gateways() else {
            return Ok(None);
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
        let link_config = layered_tcp(across, label, (gateway, "gateway"), stacks, base)?;
        let lan = Config {
            mtu: link.mtu,
            congestion: CongestionAlgorithm::Cubic,
            send_buffer: LAN_SEND_BUFFER,
            recv_buffer: LAN_RECV_BUFFER,
            ..Config::default()
        };
        Ok(Some(Gateways {
            across,
            lan,
            link: link_config,
            relay_buffer: bdp_buffer(rate, rtt) as usize,
        }))
    }

    /// The link engine of the gateway whose data goes `direction` across
    /// `link`: paced at that direction's route rate as an SCPS stack is.
    pub fn link(&self, link: &Link, direction: Direction) -> Config {
        with_route(self.link.clone(), self.across, link, direction)
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
