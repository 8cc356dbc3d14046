//! Scheduled windows and random call drops.

mod common;

use std::time::Duration;

use common::{arrival, channel, ms, seed, us};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_channel::{
    CallDrops, ChannelConfig, DropCause, Fate, OutageConfig, OutageProcess, OutageWindow,
    RETAINED_DOWN_PERIODS, expected_up_fraction,
};

fn window(start: Duration, duration: Duration) -> OutageWindow {
    OutageWindow { start, duration }
}

#[test]
fn scheduled_outage_drops_exactly_the_overlapping_packets() {
    let seed = seed(31);
    let windows = [
        (us(100_500), ms(100)),
        (ms(500), us(250)),
        (ms(700), ms(3)),
        (ms(701), ms(1)), // inside the previous one
    ];
    let mut config = ChannelConfig::new(1_000_000); // 125 bytes = 1 ms
    config.outages.scheduled = windows.iter().map(|&(s, d)| window(s, d)).collect();
    let mut ch = channel(config, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lost = 0;
    for k in 0..500u64 {
        // Every 2 ms at a random offset: the line is always idle, so the
        // packet occupies [now, now + 1 ms).
        let now = ms(2 * k) + Duration::from_nanos(rng.random_range(0..1_000_000));
        let end = now + ms(1);
        let overlaps = windows.iter().any(|&(s, d)| now < s + d && s < end);
        let fate = ch.transmit(now, &mut [0u8; 125]);
        if overlaps {
            assert_eq!(
                fate,
                Fate::Dropped(DropCause::Outage),
                "seed {seed}: packet at {now:?}"
            );
            lost += 1;
        } else {
            assert_eq!(arrival(fate), end, "seed {seed}: packet at {now:?}");
        }
    }
    assert_eq!(ch.stats().dropped_outage, lost, "seed {seed}");
    assert!(lost > 50, "seed {seed}: {lost}");
}

#[test]
fn boundaries_are_half_open() {
    let fresh = || {
        let mut config = ChannelConfig::new(1_000_000); // 125 bytes = 1 ms
        config.outages.scheduled = vec![window(ms(10), ms(10))];
        channel(config, 1)
    };
    let ns = Duration::from_nanos(1);
    let fate_at = |now: Duration| fresh().transmit(now, &mut [0u8; 125]);
    // Ends exactly when the window starts, or starts exactly when it ends:
    // delivered.
    assert_eq!(arrival(fate_at(ms(9))), ms(10));
    assert_eq!(arrival(fate_at(ms(20))), ms(21));
    // One nanosecond of overlap at either end: lost.
    assert_eq!(fate_at(ms(9) + ns), Fate::Dropped(DropCause::Outage));
    assert_eq!(fate_at(ms(20) - ns), Fate::Dropped(DropCause::Outage));
    // An empty packet (no framing) is lost iff the link is down at its start.
    assert_eq!(
        fresh().transmit(ms(10), &mut []),
        Fate::Dropped(DropCause::Outage)
    );
    assert_eq!(arrival(fresh().transmit(ms(10) - ns, &mut [])), ms(10) - ns);
    let mut ch = fresh();
    assert!(ch.is_up(ms(10) - ns));
    assert!(!ch.is_up(ms(10)));
    assert!(ch.is_up(ms(20)));
    assert_eq!(ch.next_change(ms(0)), Some(ms(10)));
    assert_eq!(ch.next_change(ms(15)), Some(ms(20)));
    assert_eq!(ch.next_change(ms(20)), None);
}

#[test]
fn packets_keep_occupying_the_line_during_an_outage() {
    let mut config = ChannelConfig::new(1_000_000);
    config.outages.scheduled = vec![window(Duration::ZERO, us(1500))];
    let mut ch = channel(config, 1);
    let t0 = Duration::ZERO;
    assert_eq!(ch.transmit(t0, &mut [0u8; 125]), Fate::Dropped(DropCause::Outage)); // [0, 1)
    assert_eq!(ch.transmit(t0, &mut [0u8; 125]), Fate::Dropped(DropCause::Outage)); // [1, 2)
    assert_eq!(arrival(ch.transmit(t0, &mut [0u8; 125])), ms(3)); // [2, 3)
    assert_eq!(ch.stats().packets_transmitted, 3);
}

fn iridium_drops() -> CallDrops {
    // iridium-3ch: a drop every ~3 minutes, 10 s wait then 45-50 s redial.
    CallDrops {
        mean_interval: Duration::from_secs(180),
        redial_min: Duration::from_secs(55),
        redial_max: Duration::from_secs(60),
    }
}

/// Walks the process forward through `cycles` down periods, returning
/// (up durations, down durations) in seconds.
fn walk(process: &mut OutageProcess, cycles: usize) -> (Vec<f64>, Vec<f64>) {
    let mut ups = Vec::new();
    let mut downs = Vec::new();
    let mut t = Duration::ZERO;
    assert!(process.is_up(t), "starts up");
    while downs.len() < cycles {
        let Some(down) = process.next_change(t) else {
            panic!("call drops never stop")
        };
        assert!(!process.is_up(down));
        let Some(up) = process.next_change(down) else {
            panic!("redial never ends")
        };
        assert!(process.is_up(up));
        ups.push((down - t).as_secs_f64());
        downs.push((up - down).as_secs_f64());
        t = up;
    }
    (ups, downs)
}

#[test]
fn call_drops_follow_their_distributions() {
    const CYCLES: usize = 20_000;
    let seed = seed(32);
    let config = OutageConfig {
        scheduled: vec![],
        call_drops: Some(iridium_drops()),
    };
    let mut process = OutageProcess::new(&config, seed).expect("valid");
    let (ups, downs) = walk(&mut process, CYCLES);
    let n = CYCLES as f64;
    // Exponential: sd = mean.
    let (mean_up, sd_up) = common::mean_sd(&ups);
    assert!(
        (mean_up - 180.0).abs() <= 3.0 * 180.0 / n.sqrt(),
        "seed {seed}: mean up {mean_up}"
    );
    assert!((sd_up / 180.0 - 1.0).abs() < 0.05, "seed {seed}: sd up {sd_up}");
    // Uniform[55, 60]: mean 57.5, sd 5 / sqrt(12).
    let (mean_down, _) = common::mean_sd(&downs);
    assert!(
        downs.iter().all(|&d| (55.0..=60.0).contains(&d)),
        "seed {seed}: redial out of range"
    );
    let sigma = 5.0 / 12f64.sqrt() / n.sqrt();
    assert!(
        (mean_down - 57.5).abs() <= 3.0 * sigma,
        "seed {seed}: mean down {mean_down}"
    );
    // Availability: close to the analytic one.
    let up: f64 = ups.iter().sum();
    let measured = up / (up + downs.iter().sum::<f64>());
    let expected = process.up_fraction_expected();
    assert!((expected - 180.0 / 237.5).abs() < 1e-12);
    assert!(
        (measured - expected).abs() < 0.005,
        "seed {seed}: {measured} vs {expected}"
    );
}

#[test]
fn channel_outage_loss_matches_expected_availability() {
    let seed = seed(33);
    let drops = CallDrops {
        mean_interval: Duration::from_secs(10),
        redial_min: Duration::from_secs(2),
        redial_max: Duration::from_secs(4),
    };
    let mut config = ChannelConfig::new(1_000_000_000);
    config.outages.call_drops = Some(drops);
    config.outages.scheduled = vec![window(Duration::from_secs(1000), Duration::from_secs(5000))];
    let run = Duration::from_secs(100_000);
    let expected = expected_up_fraction(&config.outages, run);
    assert!((expected - 0.95 * 10.0 / 13.0).abs() < 1e-12);
    let mut ch = channel(config, seed);
    const N: u64 = 1_000_000;
    let mut delivered = 0u64;
    for k in 0..N {
        // Empty packets (no time on the line) every 100 ms sample the state.
        let now = ms(100 * k);
        let up = ch.is_up(now);
        let fate = ch.transmit(now, &mut []);
        assert_eq!(
            up,
            matches!(fate, Fate::Delivered { .. }),
            "seed {seed}: packet {k}"
        );
        delivered += u64::from(up);
    }
    let measured = delivered as f64 / N as f64;
    // ~7700 cycles: the estimate's sd is ~0.002.
    assert!(
        (measured - expected).abs() < 0.01,
        "seed {seed}: {measured} vs {expected}"
    );
}

#[test]
fn answers_do_not_depend_on_query_order() {
    let seed = seed(34);
    let config = OutageConfig {
        scheduled: vec![window(Duration::from_secs(5000), Duration::from_secs(3000))],
        call_drops: Some(CallDrops {
            mean_interval: Duration::from_secs(1),
            redial_min: Duration::ZERO,
            redial_max: Duration::from_millis(500),
        }),
    };
    // Reference: every change, walking forward far past the retained window.
    let mut forward = OutageProcess::new(&config, seed).expect("valid");
    let mut changes = Vec::new();
    let mut t = Duration::ZERO;
    while t < Duration::from_secs(10_000) {
        let Some(c) = forward.next_change(t) else {
            panic!("seed {seed}: no change after {t:?}")
        };
        assert!(c > t, "seed {seed}: change {c:?} not after {t:?}");
        changes.push(c);
        t = c;
    }
    // Far more down periods than are retained: old queries regenerate.
    assert!(changes.len() > 2 * RETAINED_DOWN_PERIODS, "{}", changes.len());
    // State at t: up iff an even number of changes happened at or before t.
    let expected_up = |t: Duration| changes.partition_point(|&c| c <= t) % 2 == 0;
    let expected_next = |t: Duration| changes.get(changes.partition_point(|&c| c <= t)).copied();

    // Random queries, in random order, on a process that has seen the far
    // future and on a fresh one.
    let mut fresh = OutageProcess::new(&config, seed).expect("valid");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..2_000 {
        let t = Duration::from_nanos(rng.random_range(0..9_000_000_000_000u64));
        for p in [&mut forward, &mut fresh] {
            assert_eq!(p.is_up(t), expected_up(t), "seed {seed}: is_up({t:?})");
            assert_eq!(
                p.next_change(t),
                expected_next(t),
                "seed {seed}: next_change({t:?})"
            );
        }
    }
    // The scheduled window masks the drops: one change at its end.
    assert!(!fresh.is_up(Duration::from_secs(6000)));
    let end = fresh.next_change(Duration::from_secs(6000));
    assert!(end >= Some(Duration::from_secs(8000)), "seed {seed}: {end:?}");
}
