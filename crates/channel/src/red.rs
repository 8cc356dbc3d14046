//! Random early detection (Floyd and Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", 1993; recommended by RFC 2309).
//!
//! At each arrival the average backlog is updated, `avg = (1 - w) avg + w
//! q`, with `q` the bytes waiting. Below `min` the packet is admitted;
//! at or above `max` it is dropped; in between, with `p_b = max_p (avg -
//! min) / (max - min)`, it is dropped with probability `p_b / (1 - count
//! p_b)`, `count` being the packets admitted since the last early drop
//! (which spreads drops out evenly). The drop-tail limit still applies.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::RedConfig;

/// ChaCha stream of the early drops (see `channel.rs`).
pub(crate) const RED_STREAM: u64 = 4;

#[derive(Debug, Clone)]
pub(crate) struct Red {
    config: RedConfig,
    average: f64,
    count: u64,
    rng: ChaCha8Rng,
}

impl Red {
    pub(crate) fn new(config: RedConfig, seed: u64) -> Red {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(RED_STREAM);
        Red {
            config,
            average: 0.0,
            count: 0,
            rng,
        }
    }

    /// Whether a packet arriving with `backlog_bytes` waiting is admitted.
    pub(crate) fn admit(&mut self, backlog_bytes: u64) -> bool {
        let RedConfig {
            min_bytes,
            max_bytes,
            max_probability,
            weight,
        } = self.config;
        self.average = (1.0 - weight) * self.average + weight * backlog_bytes as f64;
        if self.average < min_bytes as f64 {
            self.count = 0;
            return true;
        }
        let drop = if self.average >= max_bytes as f64 {
            true
        } else {
            let p_b = max_probability * (self.average - min_bytes as f64) / (max_bytes - min_bytes) as f64;
            let denominator = 1.0 - self.count as f64 * p_b;
            let p_a = if denominator <= 0.0 {
                1.0
            } else {
                p_b / denominator
            };
            self.rng.random::<f64>() < p_a
        };
        if drop {
            self.count = 0;
        } else {
            self.count += 1;
        }
        !drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red() -> Red {
        Red::new(
            RedConfig {
                min_bytes: 10_000,
                max_bytes: 30_000,
                max_probability: 0.1,
                weight: 1.0,
            },
            1,
        )
    }

    #[test]
    fn drops_nothing_below_min_everything_above_max_and_some_between() {
        let mut r = red();
        assert!((0..1000).all(|_| r.admit(5_000)));
        assert!((0..1000).all(|_| !r.admit(40_000)));
        // At the midpoint p_b = 0.05; with the count correction drops come
        // about every 1 / (2 p_b) = 10 packets.
        let dropped = (0..10_000).filter(|_| !r.admit(20_000)).count();
        assert!((700..1300).contains(&dropped), "{dropped}");
    }
}
