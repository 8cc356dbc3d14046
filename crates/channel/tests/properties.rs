//! Property tests: any valid configuration and any traffic run without
//! panicking and keep the books balanced; outage answers are coherent.

use std::time::Duration;

use proptest::prelude::*;
use scps_channel::{
    BurstErrors, CallDrops, Channel, ChannelConfig, ErrorMode, Fate, Jitter, OutageConfig, OutageProcess,
    OutageWindow, Qdisc, RedConfig, ShaperConfig,
};

fn duration_up_to(max_ns: u64) -> impl Strategy<Value = Duration> {
    (0..=max_ns).prop_map(Duration::from_nanos)
}

fn outages() -> impl Strategy<Value = OutageConfig> {
    let window = (duration_up_to(2_000_000_000), duration_up_to(500_000_000))
        .prop_map(|(start, duration)| OutageWindow { start, duration });
    let drops =
        (1u64..2_000_000_000, 0u64..300_000_000, 0u64..300_000_000).prop_map(|(mean, a, b)| CallDrops {
            mean_interval: Duration::from_nanos(mean),
            redial_min: Duration::from_nanos(a.min(b)),
            redial_max: Duration::from_nanos(a.max(b)),
        });
    (prop::collection::vec(window, 0..4), prop::option::of(drops)).prop_map(|(scheduled, call_drops)| {
        OutageConfig {
            scheduled,
            call_drops,
        }
    })
}

fn configs() -> impl Strategy<Value = ChannelConfig> {
    let shaper =
        (1u64..20_000_000, 0u64..20_000_000, 1u64..100_000).prop_map(|(rate, extra, burst)| ShaperConfig {
            rate_bps: rate,
            ceiling_bps: rate + extra,
            burst_bytes: burst,
        });
    let jitter = prop_oneof![
        Just(Jitter::None),
        duration_up_to(100_000_000).prop_map(Jitter::Uniform),
        duration_up_to(100_000_000).prop_map(Jitter::Normal),
    ];
    (
        (
            prop_oneof![1u64..100_000, 100_000u64..10_000_000_000, Just(u64::MAX)],
            prop::option::of(shaper),
        ),
        (1u64..200_000, 0u32..64, duration_up_to(1_000_000_000)),
        (
            jitter,
            any::<bool>(),
            prop_oneof![Just(0.0), 0.0..0.01f64, 0.0..0.999f64],
            any::<bool>(),
        ),
        outages(),
        (
            prop::option::of((1u64..1_000_000_000, 1u64..1_000_000_000, 0.0..0.5f64)),
            prop::option::of((0.0..1.0f64, 0.0..1.0f64, 0.001..1.0f64, 0.001..1.0f64)),
        ),
    )
        .prop_map(
            |(
                (rate_bps, shaper),
                (buffer_bytes, framing_bytes, delay),
                (jitter, allow_reordering, ber, corrupt),
                outages,
                (burst, red),
            )| {
                // RED thresholds as fractions of the buffer, min < max.
                let qdisc = match red {
                    Some((a, b, max_probability, weight)) => {
                        let (low, high) = (a.min(b), a.max(b));
                        let min_bytes = (low * buffer_bytes as f64) as u64;
                        let max_bytes = ((high * buffer_bytes as f64) as u64)
                            .clamp(min_bytes + 1, buffer_bytes.max(min_bytes + 1));
                        if max_bytes > buffer_bytes {
                            Qdisc::DropTail
                        } else {
                            Qdisc::Red(RedConfig {
                                min_bytes,
                                max_bytes,
                                max_probability,
                                weight,
                            })
                        }
                    }
                    None => Qdisc::DropTail,
                };
                ChannelConfig {
                    burst: burst.map(|(good, bad, ber)| BurstErrors {
                        mean_good: Duration::from_nanos(good),
                        mean_bad: Duration::from_nanos(bad),
                        ber,
                    }),
                    qdisc,
                    rate_bps,
                    shaper,
                    buffer_bytes,
                    framing_bytes,
                    delay,
                    jitter,
                    allow_reordering,
                    ber,
                    error_mode: if corrupt {
                        ErrorMode::Corrupt
                    } else {
                        ErrorMode::Drop
                    },
                    outages,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_valid_config_runs_and_balances(
        config in configs(),
        seed in any::<u64>(),
        traffic in prop::collection::vec((0u64..5_000_000, 0usize..3000), 1..150),
    ) {
        prop_assert!(config.validate().is_ok());
        let fifo = !config.allow_reordering;
        let no_jitter = config.jitter == Jitter::None;
        let delay = config.delay;
        let mut ch = Channel::new(config, seed).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut now = Duration::ZERO;
        let mut last_arrival = Duration::ZERO;
        for (gap, len) in traffic {
            now += Duration::from_nanos(gap);
            let mut packet = vec![0xA5u8; len];
            match ch.transmit(now, &mut packet) {
                Fate::Delivered { at, flipped_bits } => {
                    prop_assert!(flipped_bits as usize <= 8 * len);
                    if no_jitter {
                        prop_assert!(at >= now + delay);
                    }
                    if fifo {
                        prop_assert!(at >= last_arrival);
                    }
                    last_arrival = last_arrival.max(at);
                }
                Fate::Dropped(_) => {}
            }
        }
        let s = ch.stats();
        prop_assert_eq!(
            s.packets_in,
            s.packets_delivered + s.dropped_buffer + s.dropped_bit_errors + s.dropped_outage
        );
        prop_assert_eq!(s.packets_transmitted, s.packets_in - s.dropped_buffer);
        prop_assert!(s.queue_delay_max <= s.queue_delay_total);
        prop_assert_eq!(s.queue_delay_histogram.iter().sum::<u64>(), s.packets_transmitted);
    }

    #[test]
    fn next_change_is_a_real_flip(
        config in outages(),
        seed in any::<u64>(),
        queries in prop::collection::vec(0u64..5_000_000_000, 1..40),
    ) {
        let mut p = OutageProcess::new(&config, seed).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for q in queries {
            let t = Duration::from_nanos(q);
            let up = p.is_up(t);
            if let Some(c) = p.next_change(t) {
                prop_assert!(c > t);
                prop_assert_ne!(p.is_up(c), up, "no flip at {:?}", c);
                // The state holds just before the change and half-way to it.
                prop_assert_eq!(p.is_up(c - Duration::from_nanos(1)), up);
                prop_assert_eq!(p.is_up(t + (c - t) / 2), up);
            } else {
                prop_assert!(up, "down forever");
                prop_assert!(p.is_up(t + Duration::from_secs(1_000_000)));
            }
        }
    }
}
