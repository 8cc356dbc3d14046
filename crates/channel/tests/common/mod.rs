//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use scps_channel::{Channel, ChannelConfig, Fate};

/// The seed of a randomised test: `default`, or `SCPS_CHANNEL_SEED` from
/// the environment to replay or explore. Tests put it in every assert
/// message.
pub fn seed(default: u64) -> u64 {
    std::env::var("SCPS_CHANNEL_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

pub fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

pub fn channel(config: ChannelConfig, seed: u64) -> Channel {
    match Channel::new(config, seed) {
        Ok(c) => c,
        Err(e) => panic!("test config must be valid: {e}"),
    }
}

/// Arrival time of a delivered packet; panics (the test fails) otherwise.
pub fn arrival(fate: Fate) -> Duration {
    match fate {
        Fate::Delivered { at, .. } => at,
        other => panic!("expected delivery, got {other:?}"),
    }
}

/// Mean and (sample) standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// |observed - expected| <= 3 sigma of a proportion over n trials.
pub fn within_3_sigma_proportion(observed: f64, p: f64, n: u64) -> bool {
    let sigma = (p * (1.0 - p) / n as f64).sqrt();
    (observed - p).abs() <= 3.0 * sigma
}
