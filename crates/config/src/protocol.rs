//! Protocol labels of runs: which stack, with which congestion control,
//! and whether it runs end to end or in two gateways that split each
//! connection. Labels are names, never numbers.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;

use crate::error::Error;

/// The SCPS RI's floor of the RTO's variance term.
const SCPS_RTO_MARGIN_MIN: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Standard TCP with Van Jacobson congestion control and NewReno.
    TcpVj,
    /// Standard TCP with CUBIC, the model of modern Linux.
    TcpCubic,
    /// SCPS-TP (capabilities, SNACK, paced to the route rate) with Van
    /// Jacobson congestion control.
    ScpsVj,
    /// SCPS-TP with Vegas.
    ScpsVegas,
    /// SCPS-TP with no congestion control: sends at the route rate.
    ScpsRate,
    /// The hosts run `tcp-cubic`; two gateways split each connection and
    /// carry it across the stressed link as `scps-vj`.
    GwScpsVj,
    /// Through the gateways, `scps-vegas` across the link.
    GwScpsVegas,
    /// Through the gateways, `scps-rate` across the link (one rate shared
    /// by all the connections the gateways carry).
    GwScpsRate,
    /// Saratoga file delivery (docs/saratoga.md) at the route rate, not
    /// TCP: bulk workloads between two hosts only, in the simulator.
    Saratoga,
}

impl Protocol {
    pub const ALL: [Protocol; 9] = [
        Protocol::TcpVj,
        Protocol::TcpCubic,
        Protocol::ScpsVj,
        Protocol::ScpsVegas,
        Protocol::ScpsRate,
        Protocol::GwScpsVj,
        Protocol::GwScpsVegas,
        Protocol::GwScpsRate,
        Protocol::Saratoga,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Protocol::TcpVj => "tcp-vj",
            Protocol::TcpCubic => "tcp-cubic",
            Protocol::ScpsVj => "scps-vj",
            Protocol::ScpsVegas => "scps-vegas",
            Protocol::ScpsRate => "scps-rate",
            Protocol::GwScpsVj => "gw-scps-vj",
            Protocol::GwScpsVegas => "gw-scps-vegas",
            Protocol::GwScpsRate => "gw-scps-rate",
            Protocol::Saratoga => "saratoga",
        }
    }

    /// Whether the hosts run an SCPS-TP stack.
    pub fn is_scps(self) -> bool {
        matches!(self, Protocol::ScpsVj | Protocol::ScpsVegas | Protocol::ScpsRate)
    }

    /// Whether the hosts run Saratoga instead of TCP.
    pub fn is_saratoga(self) -> bool {
        self == Protocol::Saratoga
    }

    /// Whether the hosts' senders pace at the route rate unless given a
    /// rate of their own.
    pub fn paced_at_route(self) -> bool {
        self.is_scps() || self.is_saratoga()
    }

    /// Whether two gateways split the hosts' connections around the
    /// stressed link.
    pub fn through_gateways(self) -> bool {
        self.across_gateways().is_some()
    }

    /// What the hosts run: the label itself, or `tcp-cubic` behind
    /// gateways.
    pub fn hosts(self) -> Protocol {
        match self.across_gateways() {
            Some(_) => Protocol::TcpCubic,
            None => self,
        }
    }

    /// What the gateways run across the link, for a `gw-` label.
    pub fn across_gateways(self) -> Option<Protocol> {
        match self {
            Protocol::GwScpsVj => Some(Protocol::ScpsVj),
            Protocol::GwScpsVegas => Some(Protocol::ScpsVegas),
            Protocol::GwScpsRate => Some(Protocol::ScpsRate),
            _ => None,
        }
    }

    /// Defaults the label brings, which a scenario's `[tcp]` and
    /// `[stacks.LABEL]` may override: SCPS stacks compute the RTO as the
    /// SCPS RI does, SRTT + max(4·RTTVAR, 500 ms) (docs/spec/scps-tp-options.md,
    /// "Timers").
    pub fn defaults(self, config: &mut Config) {
        if self.is_scps() {
            config.rto_margin_min = SCPS_RTO_MARGIN_MIN;
        }
    }

    /// Sets what the label decides in the hosts' engine configuration: the
    /// congestion control, and whether SCPS-TP capabilities are offered
    /// (behind gateways, the hosts' CUBIC).
    pub fn apply(self, config: &mut Config) {
        config.congestion = match self {
            Protocol::TcpVj | Protocol::ScpsVj => CongestionAlgorithm::NewReno,
            Protocol::TcpCubic | Protocol::GwScpsVj | Protocol::GwScpsVegas | Protocol::GwScpsRate => {
                CongestionAlgorithm::Cubic
            }
            Protocol::ScpsVegas => CongestionAlgorithm::Vegas,
            // No TCP runs: the configuration only carries its rate.
            Protocol::ScpsRate | Protocol::Saratoga => CongestionAlgorithm::Rate,
        };
        config.scps = self.is_scps();
    }

    pub fn labels() -> String {
        Protocol::ALL.map(Protocol::label).join(", ")
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Protocol {
    type Err = Error;
    fn from_str(s: &str) -> Result<Protocol, Error> {
        Protocol::ALL.into_iter().find(|p| p.label() == s).ok_or_else(|| {
            Error::invalid(
                "protocol",
                format!("{s:?}"),
                format!("one of {}", Protocol::labels()),
            )
        })
    }
}
