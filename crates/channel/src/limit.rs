//! The physical limit against which every result is judged
//! (docs/scenarios.md, "The limit").

use std::time::Duration;

use crate::config::OutageConfig;

/// Probability that a packet of `len_bytes` bytes carries at least one bit
/// error: `1 - (1 - ber)^(8 L)`.
///
/// Computed as `-expm1(8 L ln1p(-ber))`, which stays accurate when `ber`
/// is tiny (where `1 - ber` would round to 1). `ber` is clamped to [0, 1].
pub fn packet_error_rate(ber: f64, len_bytes: usize) -> f64 {
    if len_bytes == 0 || ber.is_nan() || ber <= 0.0 {
        return 0.0;
    }
    if ber >= 1.0 {
        return 1.0;
    }
    let bits = 8.0 * len_bytes as f64;
    -(bits * (-ber).ln_1p()).exp_m1()
}

/// Goodput limit in bit/s: `R (1 - PER(L)) (L - H) / L * up_fraction`.
///
/// `rate_bps` is the line rate R, `packet_len` the IP packet length L,
/// `header_len` the header bytes H within it, `up_fraction` the fraction of
/// time the link is up (see [`expected_up_fraction`]). Returns 0 for an
/// empty packet or one that is all header.
pub fn goodput_limit_bps(
    rate_bps: f64,
    ber: f64,
    packet_len: usize,
    header_len: usize,
    up_fraction: f64,
) -> f64 {
    if packet_len == 0 || header_len >= packet_len {
        return 0.0;
    }
    let payload_share = (packet_len - header_len) as f64 / packet_len as f64;
    rate_bps * (1.0 - packet_error_rate(ber, packet_len)) * payload_share * up_fraction
}

/// Expected fraction of a run of `run_length` (starting at time 0) during
/// which the link is up: the part of the run outside the scheduled windows,
/// times the long-run availability of the call drops. The two sources are
/// independent, so the product is the expected combined availability
/// (to the extent the run is long against the call-drop cycle: the process
/// starts up at time 0, which slightly favours short runs).
pub fn expected_up_fraction(outages: &OutageConfig, run_length: Duration) -> f64 {
    outages.scheduled_up_fraction(run_length) * outages.call_drop_availability()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CallDrops, OutageWindow};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn scenario_table_limits() {
        let g = goodput_limit_bps(8e6, 1e-5, 1500, 52, 1.0);
        assert!(close(g, 6.85e6, 0.01e6), "8 Mbit/s: {g}");
        let g = goodput_limit_bps(8e6, 0.0, 1500, 52, 1.0);
        assert!(close(g, 7.72e6, 0.01e6), "8 Mbit/s clean: {g}");
        let g = goodput_limit_bps(115_200.0, 1e-5, 1500, 52, 1.0);
        assert!(close(g, 98.6e3, 0.1e3), "115200: {g}");
        let g = goodput_limit_bps(1.544e6, 1e-5, 1500, 52, 1.0);
        assert!(close(g, 1.32e6, 0.01e6), "T1: {g}");
        // Best L with H=28 at 1e-5: 7.27 Mbit/s at L=604.
        let g = goodput_limit_bps(8e6, 1e-5, 604, 28, 1.0);
        assert!(close(g, 7.27e6, 0.01e6), "L=604: {g}");
    }

    #[test]
    fn per_is_stable_and_bounded() {
        assert_eq!(packet_error_rate(0.0, 1500), 0.0);
        assert_eq!(packet_error_rate(1.0, 1500), 1.0);
        assert_eq!(packet_error_rate(1e-5, 0), 0.0);
        // Tiny ber: PER ~ 8 L ber, where the naive formula returns 0.
        let per = packet_error_rate(1e-18, 1500);
        assert!(close(per, 1.2e-14, 1e-20), "{per}");
        let per = packet_error_rate(1e-5, 1500);
        assert!(close(per, 1.0 - (1.0f64 - 1e-5).powi(12_000), 1e-12));
    }

    #[test]
    fn up_fraction_combines_windows_and_call_drops() {
        let outages = OutageConfig {
            scheduled: vec![
                OutageWindow {
                    start: Duration::from_secs(10),
                    duration: Duration::from_secs(10),
                },
                OutageWindow {
                    start: Duration::from_secs(15),
                    duration: Duration::from_secs(10),
                },
                OutageWindow {
                    start: Duration::from_secs(95),
                    duration: Duration::from_secs(10),
                },
            ],
            call_drops: Some(CallDrops {
                mean_interval: Duration::from_secs(180),
                redial_min: Duration::from_secs(55),
                redial_max: Duration::from_secs(65),
            }),
        };
        // 15 s + 5 s (clipped at 100 s) of 100 s down; 180 / 240 up.
        let f = expected_up_fraction(&outages, Duration::from_secs(100));
        assert!(close(f, 0.8 * 0.75, 1e-12), "{f}");
        assert_eq!(
            expected_up_fraction(&OutageConfig::default(), Duration::ZERO),
            1.0
        );
    }
}
