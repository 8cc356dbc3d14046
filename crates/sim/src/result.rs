//! The record of one run, as `scps sim --json` prints it: one object per
//! run with the figures docs/scenarios.md lists ("What a report shows").

use std::time::Duration;

use scps_channel::ChannelStats;
use scps_proto::{ConnectionHandle, Endpoint};
use scps_workload_format::figures::{MessageFigures, percentile};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub protocol: String,
    /// The value of every sweep axis for this run.
    pub params: serde_json::Map<String, serde_json::Value>,
    pub seed: u64,
    /// Application bytes delivered (and checked).
    pub bytes: u64,
    pub duration_s: f64,
    pub goodput_bps: f64,
    /// The physical limit for this point (docs/scenarios.md, "The limit").
    pub limit_bps: f64,
    /// Goodput over the limit.
    pub ratio: f64,
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageFigures>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub fetches: Option<FetchFigures>,
    pub link: LinkFigures,
    /// Packets the two endpoints dropped, by cause (a corrupted packet
    /// shows as `bad_checksum`); empty when none were.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub endpoint_drops: std::collections::BTreeMap<String, u64>,
    /// Why the run did not complete, if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Figures of connections, summed as each one ends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionTotals {
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
}

impl ConnectionTotals {
    /// Adds the figures of the connection behind `handle`, if it exists.
    pub fn add(&mut self, endpoint: &Endpoint, handle: ConnectionHandle) {
        if let Some(stats) = endpoint.stats_of(handle) {
            self.retransmitted_bytes += stats.bytes_retransmitted;
            self.timeouts += stats.timeouts;
            self.fast_recoveries += stats.fast_recoveries;
        }
    }
}

impl RunResult {
    pub fn set_connection_totals(&mut self, totals: ConnectionTotals) {
        self.retransmitted_bytes = totals.retransmitted_bytes;
        self.timeouts = totals.timeouts;
        self.fast_recoveries = totals.fast_recoveries;
    }
}

/// Many users' file fetches; a bench reads them back from its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchFigures {
    pub fetches: usize,
    pub fetches_failed: usize,
    pub download_mean_s: f64,
    pub download_p50_s: f64,
    pub download_p95_s: f64,
    pub download_max_s: f64,
    /// The mean download time of the same requests on the link shared
    /// perfectly at its limit (apps/shared_link.rs): the ideal. For a
    /// whole run only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download_ideal_mean_s: Option<f64>,
}

impl FetchFigures {
    /// The figures of the downloads that completed, in any order, and of
    /// the fetches that failed (the ideal is the caller's to add).
    pub fn of(downloads: &mut [Duration], failed: usize) -> FetchFigures {
        let count = downloads.len();
        let mean = downloads.iter().map(Duration::as_secs_f64).sum::<f64>() / count.max(1) as f64;
        FetchFigures {
            fetches: count,
            fetches_failed: failed,
            download_mean_s: mean,
            download_p50_s: percentile(downloads, 50.0),
            download_p95_s: percentile(downloads, 95.0),
            download_max_s: percentile(downloads, 100.0),
            download_ideal_mean_s: None,
        }
    }
}

/// What the link did to the packets in each direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LinkFigures {
    pub forward: DirectionFigures,
    pub reverse: DirectionFigures,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DirectionFigures {
    pub packets: u64,
    /// IP bytes of those packets: what the senders put on the wire.
    pub bytes: u64,
    pub delivered: u64,
    pub dropped_buffer: u64,
    pub dropped_bit_errors: u64,
    pub dropped_outage: u64,
}

impl DirectionFigures {
    /// Sums the channels of one direction.
    pub fn of(channels: &[ChannelStats]) -> DirectionFigures {
        channels.iter().fold(DirectionFigures::default(), |mut sum, c| {
            sum.packets += c.packets_in;
            sum.bytes += c.bytes_in;
            sum.delivered += c.packets_delivered;
            sum.dropped_buffer += c.dropped_buffer;
            sum.dropped_bit_errors += c.dropped_bit_errors;
            sum.dropped_outage += c.dropped_outage;
            sum
        })
    }
}
