//! How an engine behaves: its rate, frame size, timers, checksum and
//! limits, checked by [`Config::validate`] before an engine starts.

use std::time::Duration;

use crate::wire::ChecksumKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// DATA is paced at this rate, in bit/s of datagrams with their
    /// `datagram_overhead` counted; 0 sends at line rate.
    pub rate_bps: u64,
    /// The pacer's bucket, in bytes.
    pub burst_bytes: u64,
    /// Bytes below each datagram counted against the rate (IPv4 + UDP: 28).
    pub datagram_overhead: u64,
    /// The largest datagram sent (Saratoga header included): 1472 fills a
    /// 1500-byte IPv4 packet.
    pub max_datagram: usize,
    /// The checksum sent with each file.
    pub checksum: ChecksumKind,
    /// A sender asks for a STATUS on every this many DATA frames (and on
    /// the last of a pass).
    pub status_every_frames: u32,
    /// A sender with nothing to send asks for a STATUS this long after
    /// its last request; a receiver missing data reports voluntarily this
    /// often; a requester repeats its REQUEST this often. Each doubles, up
    /// to `status_interval_max`, while the peer stays silent.
    pub status_interval: Duration,
    pub status_interval_max: Duration,
    /// A transfer that makes no progress this long fails (as
    /// [`super::FailReason::Timeout`] if the peer was never heard from,
    /// else [`super::FailReason::Unacknowledged`] for a sender and
    /// [`super::FailReason::Stalled`] for a receiver). It must exceed the
    /// longest outage to ride out and the round trip.
    pub inactivity_timeout: Duration,
    /// The largest directory listing accepted, in bytes.
    pub max_listing_bytes: u64,
    /// The first session id this engine picks for its own transfers; the
    /// next ones count up from it. A host that restarts should draw it at
    /// random (`scps saratoga` does): a peer remembers finished sessions
    /// by id for a while, and would take a new transfer under an old id
    /// for the old one.
    pub first_session: u32,
    /// Files peers put to us at once; more are refused ("receiver not
    /// interested"). Any datagram can start one, so this is a bound.
    pub max_receivers: usize,
    /// Of those, the most from one address. When every place is taken, a
    /// peer that has completed a transfer with this engine (within
    /// [`KNOWN_PEER_FOR`]) takes the place of the transfer of a peer that
    /// has not that has been silent longest: a flood of METADATA from
    /// spoofed addresses, which never answer, cannot keep it out.
    pub max_receivers_per_peer: usize,
    /// Requests for files or listings served at once; more are refused
    /// ("unable to send").
    pub max_served: usize,
    /// The largest file received, put or fetched, in bytes; larger ones are
    /// refused ("file too big").
    pub max_file_bytes: u64,
    /// Past sessions remembered (answers given, DATA without METADATA),
    /// each for the inactivity timeout; when full, the one to expire
    /// first is forgotten.
    pub max_remembered: usize,
    /// DATA payload bytes kept, for all sessions together, that came
    /// before their METADATA in a session already known (a PUT REQUEST
    /// accepted, or a REQUEST of ours not yet answered); applied when the
    /// METADATA comes. Beyond it such DATA is dropped and counted
    /// ([`super::Stats::early_data_dropped_bytes`]); 0 keeps none.
    pub max_early_data_bytes: u64,
}

/// How long a peer that completed a transfer stays known (see
/// [`Config::max_receivers_per_peer`]).
pub const KNOWN_PEER_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// A setting an engine cannot run with: the field, its value and what is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: {allowed}")]
pub struct ConfigError {
    pub field: &'static str,
    pub value: String,
    pub allowed: String,
}

/// The largest UDP payload over IPv4.
const MAX_UDP_PAYLOAD: usize = 65_507;
/// The smallest datagram worth sending: a DATA header at 64-bit offsets
/// (16 bytes) leaves room for payload, a STATUS for several holes.
const MIN_DATAGRAM: usize = 64;

impl Config {
    /// Checks every setting an engine needs to make progress.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let error = |field, value: String, allowed: String| {
            Err(ConfigError {
                field,
                value,
                allowed,
            })
        };
        if !(MIN_DATAGRAM..=MAX_UDP_PAYLOAD).contains(&self.max_datagram) {
            return error(
                "max_datagram",
                self.max_datagram.to_string(),
                format!("from {MIN_DATAGRAM} to {MAX_UDP_PAYLOAD} bytes"),
            );
        }
        let frame = self.max_datagram as u64 + self.datagram_overhead;
        if self.rate_bps > 0 && self.burst_bytes < frame {
            return error(
                "burst_bytes",
                self.burst_bytes.to_string(),
                format!(
                    "at least max_datagram + datagram_overhead ({frame} bytes), or a full DATA frame never goes"
                ),
            );
        }
        if self.status_every_frames == 0 {
            return error("status_every_frames", "0".into(), "at least 1".into());
        }
        if self.status_interval.is_zero() {
            return error("status_interval", "0s".into(), "more than zero".into());
        }
        if self.status_interval_max < self.status_interval {
            return error(
                "status_interval_max",
                format!("{:?}", self.status_interval_max),
                format!("at least status_interval ({:?})", self.status_interval),
            );
        }
        if self.inactivity_timeout <= self.status_interval {
            return error(
                "inactivity_timeout",
                format!("{:?}", self.inactivity_timeout),
                format!(
                    "more than status_interval ({:?}), or a transfer fails before it asks",
                    self.status_interval
                ),
            );
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            rate_bps: 1_000_000,
            burst_bytes: 3000,
            datagram_overhead: 28,
            max_datagram: 1472,
            checksum: ChecksumKind::Md5,
            status_every_frames: 100,
            status_interval: Duration::from_secs(1),
            status_interval_max: Duration::from_secs(60),
            inactivity_timeout: Duration::from_secs(30 * 60),
            max_listing_bytes: 16 << 20,
            first_session: 1,
            max_receivers: 64,
            max_receivers_per_peer: 8,
            max_served: 64,
            max_file_bytes: 1 << 40,
            max_remembered: 4096,
            max_early_data_bytes: 4 << 20,
        }
    }
}
