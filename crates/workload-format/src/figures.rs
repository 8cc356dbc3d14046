//! A message stream's figures, as `scps sim --json` and `scps send
//! --json` both print them: what was offered and delivered, and the
//! messages' latencies.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A message stream's figures, for the forward flow (and the reverse one
/// of a two-way test).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageFigures {
    #[serde(flatten)]
    pub forward: FlowFigures,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<FlowFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowFigures {
    pub offered_bps: f64,
    pub actual_bps: f64,
    pub messages: u64,
    pub latency_p50_s: f64,
    pub latency_p95_s: f64,
    pub latency_max_s: f64,
}

/// The `p`-th percentile (nearest rank) of `samples`, in seconds; 0 if
/// there are none.
pub fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    samples[rank.min(samples.len()) - 1].as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<Duration> = (1..=20).rev().map(Duration::from_secs).collect();
        assert_eq!(percentile(&mut samples, 50.0), 10.0);
        assert_eq!(percentile(&mut samples, 95.0), 19.0);
        assert_eq!(percentile(&mut samples, 100.0), 20.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
    }
}
