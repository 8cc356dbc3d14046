//! Congestion control behind one trait.
//!
//! The connection owns loss detection and recovery (RFC 5681, 6582, 6675);
//! a controller only decides the congestion window: how it grows on ACKs
//! and how it shrinks on a congestion event or a retransmission timeout.
//! Controllers are named, never numbered: the SCPS RI's own documents
//! disagree on what the numbers mean.

mod cubic;
mod hystart;
mod newreno;
mod rate;
mod vegas;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::config::Config;
use crate::time::Instant;

pub use cubic::Cubic;
pub use newreno::NewReno;
pub use rate::RateBased;
pub use vegas::Vegas;

/// What an acknowledgment of new data tells the controller.
#[derive(Debug, Clone, Copy)]
pub struct AckEvent {
    pub now: Instant,
    /// Sequence space newly acknowledged.
    pub acked: u64,
    /// The sender's maximum segment payload.
    pub smss: u64,
    pub srtt: Option<Duration>,
    /// The RTT measured by this ACK, if it gave a valid sample. With
    /// timestamps it runs from the oldest segment the ACK covers (RFC 7323
    /// 4.3), so it includes the time the receiver held its ACK back.
    pub rtt_sample: Option<Duration>,
    /// Time since the newest segment this ACK acknowledges was sent, when
    /// that segment went once and no retransmission is covered: the ACK
    /// left when that segment arrived, so this is the path's delay without
    /// the receiver's hold, which a delay-based controller must not read
    /// as queueing.
    pub delivery_rtt: Option<Duration>,
    /// The route's token bucket spaces what the sender sends: an ACK that
    /// covers many segments cannot release them in a burst.
    pub paced: bool,
    /// The smallest RTT seen on the connection.
    pub min_rtt: Option<Duration>,
    /// Whether the window was what limited sending when the acknowledged
    /// data went out; an application-limited sender must not grow a window
    /// it does not use (RFC 7661 section 4.3, RFC 5681 section 3.1).
    pub cwnd_limited: bool,
    /// SND.UNA after this ACK and SND.NXT, sequence offsets: where a round
    /// trip of slow start ends (RFC 9406).
    pub snd_una: u64,
    pub snd_nxt: u64,
}

pub trait CongestionControl: fmt::Debug + Send {
    fn algorithm(&self) -> CongestionAlgorithm;
    /// Congestion window, bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold, bytes.
    fn ssthresh(&self) -> u64;
    /// New data acknowledged outside loss recovery.
    fn on_ack(&mut self, ack: &AckEvent);
    /// Loss detected by duplicate ACKs or SACK: recovery begins. Sets the
    /// threshold and the window to use during recovery.
    fn on_congestion_event(&mut self, now: Instant, flight_size: u64, smss: u64);
    /// Recovery ended with a full acknowledgment.
    fn on_recovery_end(&mut self, now: Instant, flight_size: u64, smss: u64);
    /// A retransmission timeout: the window falls to the loss window of one
    /// segment. The threshold is set on the first timeout only, not when
    /// the retransmission itself times out again (RFC 5681 3.1, equation 4).
    fn on_timeout(&mut self, now: Instant, flight_size: u64, smss: u64, repeated: bool);
    /// Sending resumes after an idle period longer than the RTO (RFC 5681
    /// 4.1): the window is at most the restart window.
    fn on_idle_restart(&mut self, restart_window: u64);
    /// Puts back a window and threshold saved before timeouts that turned
    /// out not to be congestion: an outage, or losses attributed to
    /// corruption (docs/spec/scps-tp-options.md, "Link outages": resume at the prior
    /// rate, not from slow start).
    fn restore(&mut self, window: u64, ssthresh: u64);
}

/// The congestion controllers we have, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CongestionAlgorithm {
    /// Van Jacobson's algorithms with NewReno recovery (label `vj`).
    NewReno,
    /// CUBIC, RFC 9438 (label `cubic`), to model modern Linux.
    Cubic,
    /// TCP Vegas (label `vegas`), the SCPS-TP delay-based controller.
    Vegas,
    /// No congestion control (label `rate`): send at the route rate.
    Rate,
}

impl CongestionAlgorithm {
    pub const ALL: [CongestionAlgorithm; 4] = [
        CongestionAlgorithm::NewReno,
        CongestionAlgorithm::Cubic,
        CongestionAlgorithm::Vegas,
        CongestionAlgorithm::Rate,
    ];

    pub fn label(self) -> &'static str {
        match self {
            CongestionAlgorithm::NewReno => "vj",
            CongestionAlgorithm::Cubic => "cubic",
            CongestionAlgorithm::Vegas => "vegas",
            CongestionAlgorithm::Rate => "rate",
        }
    }

    /// A controller starting with `initial_window` bytes.
    pub fn build(self, config: &Config, initial_window: u64) -> Box<dyn CongestionControl> {
        match self {
            CongestionAlgorithm::NewReno => Box::new(NewReno::new(initial_window)),
            CongestionAlgorithm::Cubic => Box::new(Cubic::new(initial_window)),
            CongestionAlgorithm::Vegas => Box::new(Vegas::new(initial_window, config.vegas)),
            CongestionAlgorithm::Rate => Box::new(RateBased::new()),
        }
    }
}

impl fmt::Display for CongestionAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A congestion control name we do not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion control {0:?}: expected one of vj, cubic, vegas, rate")]
pub struct UnknownAlgorithm(pub String);

impl FromStr for CongestionAlgorithm {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.label() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// RFC 5681 equation (4): half the flight, at least two segments.
fn half_flight(flight_size: u64, smss: u64) -> u64 {
    (flight_size / 2).max(2 * smss)
}

/// Slow start with appropriate byte counting (RFC 3465): growth per ACK is
/// the data it acknowledges, so delayed ACKs do not halve the rate of
/// growth. L = 2 SMSS bounds it, as RFC 3465 asks, against the burst a
/// stretch ACK would release; a paced sender sends no burst, and counts an
/// ACK that covers many segments (the adaptive ACK policy's) in full.
fn slow_start_increase(ack: &AckEvent) -> u64 {
    if ack.paced {
        ack.acked
    } else {
        ack.acked.min(2 * ack.smss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_unknown_names_are_refused() {
        for algorithm in CongestionAlgorithm::ALL {
            assert_eq!(algorithm.label().parse::<CongestionAlgorithm>(), Ok(algorithm));
            assert_eq!(algorithm.build(&Config::default(), 3000).algorithm(), algorithm);
        }
        let err = "1".parse::<CongestionAlgorithm>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown congestion control \"1\": expected one of vj, cubic, vegas, rate"
        );
    }
}
