//! The record of a run as `scps sim --json` prints it: the run's figures
//! (every field of [`RunResult`], unchanged), and for a topology the
//! figures of each client host where there are several, of each router
//! and of the gateways of a `gw-` label.

use std::collections::BTreeMap;

use scps_bond::BondNode;
use scps_node::RouterStats;
use scps_relay::node::GatewayNode;
use scps_workload_format::figures::MessageFigures;
use serde::Serialize;

use crate::result::{FetchFigures, RunResult};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// All clients together: bytes summed, timed from the first start to
    /// the last finish.
    #[serde(flatten)]
    pub totals: RunResult,
    /// Each client host's own figures, in order of name; empty (and not
    /// printed) with one client.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientFigures>,
    /// What each router did, in order of name; empty (and not printed)
    /// without routers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<RouterFigures>,
    /// What the two gateways of a `gw-` label did (`gwA` on the clients'
    /// side, then `gwB`); empty (and not printed) without gateways.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gateways: Vec<GatewayFigures>,
    /// What the two bonds of a link striped by the bonding scheduler did
    /// (the clients' side's, then the server's); empty (and not printed)
    /// with round-robin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bonds: Vec<BondFigures>,
}

/// A bond's channels as it last saw them, and what it counted: the
/// shape `scps emulate ctl stats` gives its bonds too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BondFigures {
    pub name: &'static str,
    #[serde(flatten)]
    pub figures: scps_bond::BondFigures,
}

impl BondFigures {
    pub fn of(name: &'static str, bond: &BondNode) -> BondFigures {
        BondFigures {
            name,
            figures: bond.figures(),
        }
    }
}

/// How a gateway's split connections ended, and what its link
/// connections resent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayFigures {
    pub name: &'static str,
    pub closed: u64,
    pub reset: u64,
    pub open_failed: u64,
    /// Split connections still held when the run stopped.
    pub open: usize,
    pub link_retransmitted_bytes: u64,
    pub link_timeouts: u64,
}

impl GatewayFigures {
    pub fn of(name: &'static str, gateway: &GatewayNode) -> GatewayFigures {
        let stats = gateway.stats();
        let recovery = gateway.link_recovery();
        GatewayFigures {
            name,
            closed: stats.closed,
            reset: stats.reset,
            open_failed: stats.open_failed + stats.not_opened,
            open: gateway.splits(),
            link_retransmitted_bytes: recovery.bytes_retransmitted,
            link_timeouts: recovery.timeouts,
        }
    }
}

/// One client's workload, figured as a run of its own; its `ratio` is its
/// goodput over the limit of the whole link (a fair share of `n` clients
/// is about `1/n` of the run's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientFigures {
    pub name: String,
    pub bytes: u64,
    pub duration_s: f64,
    pub goodput_bps: f64,
    pub ratio: f64,
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageFigures>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub fetches: Option<FetchFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ClientFigures {
    pub fn of(name: &str, result: RunResult) -> ClientFigures {
        ClientFigures {
            name: name.to_owned(),
            bytes: result.bytes,
            duration_s: result.duration_s,
            goodput_bps: result.goodput_bps,
            ratio: result.ratio,
            retransmitted_bytes: result.retransmitted_bytes,
            timeouts: result.timeouts,
            fast_recoveries: result.fast_recoveries,
            messages: result.messages,
            fetches: result.fetches,
            error: result.error,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouterFigures {
    pub name: String,
    /// Packets forwarded.
    pub forwarded: u64,
    /// Packets not forwarded, by cause (`ttl_expired`, `bad_checksum`,
    /// `no_route`, ...); not printed when none were.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub drops: BTreeMap<String, u64>,
}

impl RouterFigures {
    pub fn of(name: &str, stats: &RouterStats) -> RouterFigures {
        RouterFigures {
            name: name.to_owned(),
            forwarded: stats.forwarded,
            drops: stats.drops.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        }
    }
}
