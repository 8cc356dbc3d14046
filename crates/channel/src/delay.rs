//! Propagation delay, jitter and (optionally) FIFO delivery.
//!
//! `arrival = end of transmission + max(0, delay + jitter)`; without
//! reordering, `arrival = max(arrival, previous delivered arrival)`, i.e. a
//! packet overtaken by jitter waits for its predecessor, as on a single
//! physical path.
//!
//! One jitter sample is drawn for every packet that goes on the line, lost
//! or not, so that changing the error model or the outages does not shift
//! the jitter sequence (and jitter has its own ChaCha stream, so enabling
//! it does not shift the other processes either).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::config::Jitter;
use crate::time::to_ns;

/// ChaCha stream of the jitter process (see `channel.rs`).
pub(crate) const JITTER_STREAM: u64 = 1;

#[derive(Debug, Clone)]
enum JitterNs {
    None,
    /// Uniform integer nanoseconds in [-a, a].
    Uniform(i64),
    /// Standard deviation in ns.
    Normal(f64),
}

#[derive(Debug, Clone)]
pub(crate) struct DelayModel {
    delay_ns: u64,
    jitter: JitterNs,
    allow_reordering: bool,
    rng: ChaCha8Rng,
    last_arrival: u64,
}

impl DelayModel {
    pub(crate) fn new(delay: std::time::Duration, jitter: Jitter, allow_reordering: bool, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(JITTER_STREAM);
        let jitter = match jitter {
            Jitter::None => JitterNs::None,
            Jitter::Uniform(a) if a.is_zero() => JitterNs::None,
            Jitter::Normal(sd) if sd.is_zero() => JitterNs::None,
            Jitter::Uniform(a) => JitterNs::Uniform(i64::try_from(to_ns(a)).unwrap_or(i64::MAX)),
            Jitter::Normal(sd) => JitterNs::Normal(to_ns(sd) as f64),
        };
        DelayModel {
            delay_ns: to_ns(delay),
            jitter,
            allow_reordering,
            rng,
            last_arrival: 0,
        }
    }

    /// New delay, jitter and ordering; the random stream and the FIFO
    /// state carry on.
    pub(crate) fn reconfigure(&mut self, delay: std::time::Duration, jitter: Jitter, allow_reordering: bool) {
        let fresh = DelayModel::new(delay, jitter, allow_reordering, 0);
        self.delay_ns = fresh.delay_ns;
        self.jitter = fresh.jitter;
        self.allow_reordering = allow_reordering;
    }

    fn draw_jitter(&mut self) -> i128 {
        match self.jitter {
            JitterNs::None => 0,
            JitterNs::Uniform(a) => i128::from(self.rng.random_range(-a..=a)),
            JitterNs::Normal(sd) => {
                let z: f64 = StandardNormal.sample(&mut self.rng);
                // `as` saturates; NaN cannot occur (finite sd and z).
                (z * sd).round() as i128
            }
        }
    }

    /// Arrival of a packet whose last bit leaves the line at `end_ns`,
    /// before the FIFO rule. Draws one jitter sample.
    pub(crate) fn arrival(&mut self, end_ns: u64) -> u64 {
        let total = (i128::from(self.delay_ns) + self.draw_jitter()).max(0);
        let arrival = i128::from(end_ns) + total;
        u64::try_from(arrival).unwrap_or(u64::MAX)
    }

    /// Commits a delivery at `arrival`, applying the FIFO rule.
    pub(crate) fn deliver(&mut self, arrival: u64) -> u64 {
        let at = if self.allow_reordering {
            arrival
        } else {
            arrival.max(self.last_arrival)
        };
        self.last_arrival = self.last_arrival.max(at);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn constant_delay_is_exact() {
        let mut d = DelayModel::new(Duration::from_millis(250), Jitter::None, false, 1);
        assert_eq!(d.arrival(1_000), 250_001_000);
    }

    #[test]
    fn total_delay_is_truncated_at_zero() {
        let mut d = DelayModel::new(Duration::ZERO, Jitter::Normal(Duration::from_secs(1)), true, 1);
        for end in 0..1000u64 {
            assert!(d.arrival(end) >= end);
        }
    }

    #[test]
    fn fifo_holds_back_overtaking_packets() {
        let mut d = DelayModel::new(Duration::ZERO, Jitter::None, false, 1);
        assert_eq!(d.deliver(100), 100);
        assert_eq!(d.deliver(50), 100);
        let mut r = DelayModel::new(Duration::ZERO, Jitter::None, true, 1);
        assert_eq!(r.deliver(100), 100);
        assert_eq!(r.deliver(50), 50);
    }
}
