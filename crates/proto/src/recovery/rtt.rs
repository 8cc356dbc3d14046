//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// The RTO before backoff.
    base_rto: Duration,
    /// Consecutive doublings (RFC 6298 5.5), reset by a new sample (Karn).
    backoff: u32,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    min: Duration,
    max: Duration,
    /// Lower bound of the variance term K·RTTVAR: RFC 6298 2.3's clock
    /// granularity G, or more (Linux puts its 200 ms minimum RTO here,
    /// the SCPS RI 500 ms), so that a steady RTT does not bring the RTO
    /// down to the RTT itself.
    margin_min: Duration,
}

/// RFC 6298 5.7: after a SYN times out, data starts with at least 3 s.
const RTO_AFTER_SYN_TIMEOUT: Duration = Duration::from_secs(3);

impl RttEstimator {
    pub fn new(initial: Duration, min: Duration, max: Duration, margin_min: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            base_rto: initial.clamp(min, max),
            backoff: 0,
            min_rtt: None,
            latest: None,
            min,
            max,
            margin_min,
        }
    }

    /// Takes one RTT measurement (RFC 6298 2.2 and 2.3).
    pub fn on_sample(&mut self, rtt: Duration) {
        self.latest = Some(rtt);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let deviation = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + deviation) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(rtt);
        self.base_rto = (srtt + self.margin_min.max(self.rttvar * 4)).clamp(self.min, self.max);
        self.backoff = 0;
    }

    /// The current timeout, backoff included, never above the maximum.
    pub fn rto(&self) -> Duration {
        let factor = 1u32.checked_shl(self.backoff.min(31)).unwrap_or(u32::MAX);
        self.base_rto.saturating_mul(factor).min(self.max)
    }

    /// Doubles the timeout after an expiry (RFC 6298 5.5).
    pub fn back_off(&mut self) {
        if self.rto() < self.max {
            self.backoff += 1;
        }
    }

    /// Forgets the backoff: the path answered again after an outage, which
    /// says nothing about its RTT but that the doubling was the outage's.
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// RFC 6298 5.7, for the first data after a SYN or SYN-ACK had to be
    /// retransmitted and no RTT sample was taken.
    pub fn after_syn_timeout(&mut self) {
        if self.srtt.is_none() {
            self.base_rto = self.base_rto.max(RTO_AFTER_SYN_TIMEOUT).min(self.max);
        }
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn estimator() -> RttEstimator {
        RttEstimator::new(ms(1000), ms(200), ms(60_000), ms(1))
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut rtt = estimator();
        assert_eq!(rtt.rto(), ms(1000));
        rtt.on_sample(ms(100));
        assert_eq!(rtt.srtt(), Some(ms(100)));
        assert_eq!(rtt.rttvar(), ms(50));
        // RTO = SRTT + 4 RTTVAR = 300 ms.
        assert_eq!(rtt.rto(), ms(300));
    }

    #[test]
    fn later_samples_use_the_rfc_6298_gains() {
        let mut rtt = estimator();
        rtt.on_sample(ms(100));
        rtt.on_sample(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 62.5; SRTT = 7/8 100 + 1/8 200 = 112.5
        assert_eq!(rtt.rttvar(), Duration::from_micros(62_500));
        assert_eq!(rtt.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(rtt.rto(), Duration::from_micros(362_500));
    }

    #[test]
    fn a_steady_rtt_keeps_the_rto_a_margin_above_it() {
        let mut rtt = RttEstimator::new(ms(1000), ms(200), ms(60_000), ms(500));
        for _ in 0..50 {
            rtt.on_sample(ms(600));
        }
        assert!(rtt.rttvar() < ms(1), "{:?}", rtt.rttvar());
        assert_eq!(rtt.rto(), ms(1100), "SRTT + the 500 ms floor of 4 RTTVAR");
    }

    #[test]
    fn rto_is_clamped_and_backoff_stops_at_the_maximum() {
        let mut rtt = estimator();
        rtt.on_sample(ms(10));
        assert_eq!(rtt.rto(), ms(200), "minimum applies");
        for _ in 0..40 {
            rtt.back_off();
        }
        assert_eq!(rtt.rto(), ms(60_000));
        rtt.on_sample(ms(10));
        assert_eq!(rtt.rto(), ms(200), "a new sample clears the backoff");
    }

    #[test]
    fn syn_timeout_raises_the_initial_rto_to_three_seconds() {
        let mut rtt = estimator();
        rtt.back_off();
        rtt.after_syn_timeout();
        assert_eq!(rtt.rto(), ms(3000));
    }
}
