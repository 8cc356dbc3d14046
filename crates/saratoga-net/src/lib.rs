//! Saratoga over real UDP (docs/saratoga.md): the node of `scps-saratoga`
//! hosted over kernel sockets by `scps-net` ([`host`]), the
//! client sessions of `scps saratoga put`, `get`, `ls` and `rm`
//! ([`client`]) and how far one got ([`progress`]), the server of one
//! directory ([`serve`]), and what they report ([`report`]). The `scps` binary parses the options into these
//! types and prints what they give back.

pub mod client;
mod host;
mod local_port;
pub mod peer;
pub mod progress;
pub mod report;
pub mod serve;
mod store;

use std::path::PathBuf;
use std::time::Duration;

use scps_node::udp::IPV6_UDP_HEADER_LEN;
use scps_saratoga::engine::{Config, ConfigError};
use scps_saratoga::wire::ChecksumKind;

/// What the user sets of the engine and its host, for a server and every
/// client alike.
#[derive(Debug, Clone)]
pub struct Settings {
    /// DATA is paced at this rate, datagrams' IP and UDP headers counted.
    pub rate_bps: u64,
    /// The checksum sent with each file.
    pub checksum: ChecksumKind,
    /// A transfer whose peer is silent (or makes no progress) this long
    /// fails.
    pub timeout: Duration,
    /// Write every datagram in and out, as IP/UDP packets, to this pcap
    /// file.
    pub pcap: Option<PathBuf>,
}

impl Settings {
    /// The engine's configuration, for peers of `ipv6` or not.
    pub fn config(&self, ipv6: bool) -> Config {
        let defaults = Config::default();
        // The host sleeps on the runtime's timer, whose grain is a
        // millisecond: the bucket holds 2 ms of the rate, or a paced
        // sender could not keep up with its rate.
        let burst_bytes = (self.rate_bps / 8 / 500).max(defaults.burst_bytes);
        let (datagram_overhead, max_datagram) = match ipv6 {
            false => (defaults.datagram_overhead, defaults.max_datagram),
            true => (IPV6_UDP_HEADER_LEN as u64, 1500 - IPV6_UDP_HEADER_LEN),
        };
        Config {
            rate_bps: self.rate_bps,
            burst_bytes,
            datagram_overhead,
            max_datagram,
            inactivity_timeout: self.timeout,
            checksum: self.checksum,
            // A peer remembers finished sessions by id: a process of ours
            // starting at the same id as the last would be taken for it.
            first_session: rand::random(),
            ..defaults
        }
    }
}

/// How a client's transfer, or a server, ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The transfer completed (for a server: it was stopped by Ctrl-C,
    /// as a server is meant to stop).
    Complete,
    /// The transfer failed; the report says why.
    Failed,
    /// Ctrl-C, before the transfer ended.
    Interrupted,
}

/// A line for the user of `scps saratoga`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Told {
    /// Output (standard output): a client's report, a server's transfers.
    Output(String),
    /// A note for whoever runs it (standard error).
    Note(String),
}

/// The engine's refusal of the settings the options made (a `--rate` or
/// `--timeout` out of its range), naming the options.
fn settings_refused(error: ConfigError) -> anyhow::Error {
    anyhow::anyhow!("the transfer's settings (from --rate, --timeout): {error}")
}
