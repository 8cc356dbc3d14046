//! Same seed, same fates; other seed, other fates; and the random
//! processes do not disturb one another.

mod common;

use std::time::Duration;

use common::{ms, seed};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_channel::{
    CallDrops, Channel, ChannelConfig, ChannelStats, DropCause, ErrorMode, Fate, Jitter, OutageWindow,
    ShaperConfig,
};

fn busy_config() -> ChannelConfig {
    let mut c = ChannelConfig::new(2_000_000);
    c.shaper = Some(ShaperConfig {
        rate_bps: 1_500_000,
        ceiling_bps: 1_800_000,
        burst_bytes: 20_000,
    });
    c.buffer_bytes = 30_000;
    c.framing_bytes = 4;
    c.delay = ms(270);
    c.jitter = Jitter::Normal(ms(20));
    c.allow_reordering = true;
    c.ber = 1e-5;
    c.error_mode = ErrorMode::Corrupt;
    c.outages.scheduled = vec![OutageWindow {
        start: Duration::from_secs(3),
        duration: ms(700),
    }];
    c.outages.call_drops = Some(CallDrops {
        mean_interval: Duration::from_secs(4),
        redial_min: ms(200),
        redial_max: ms(900),
    });
    c
}

/// Offers 10,000 packets of random sizes at random times (from `traffic`)
/// and returns their fates, final contents hash and the stats.
fn run(config: ChannelConfig, seed: u64, traffic: u64) -> (Vec<Fate>, u64, ChannelStats) {
    let Ok(mut ch) = Channel::new(config, seed) else {
        panic!("valid config")
    };
    let mut rng = ChaCha8Rng::seed_from_u64(traffic);
    let mut now = Duration::ZERO;
    let mut fates = Vec::new();
    let mut hash = 0u64;
    for _ in 0..10_000 {
        now += Duration::from_micros(rng.random_range(0..6_000));
        let mut packet = vec![0u8; rng.random_range(40..=1500)];
        fates.push(ch.transmit(now, &mut packet));
        hash = packet.iter().fold(hash, |h, &b| h.rotate_left(5) ^ u64::from(b));
    }
    (fates, hash, ch.stats().clone())
}

#[test]
fn same_seed_same_fates_other_seed_other_fates() {
    let seed = seed(41);
    let a = run(busy_config(), seed, 1);
    let b = run(busy_config(), seed, 1);
    assert_eq!(a, b, "seed {seed}");
    // Every cause occurs, so the comparison covers every process.
    let s = &a.2;
    assert!(
        s.dropped_buffer > 0 && s.dropped_outage > 0 && s.packets_corrupted > 0,
        "seed {seed}: {s:?}"
    );
    let c = run(busy_config(), seed.wrapping_add(1), 1);
    assert_ne!(a.0, c.0, "seed {seed}");
}

fn losses(fates: &[Fate], cause: DropCause) -> Vec<usize> {
    fates
        .iter()
        .enumerate()
        .filter(|(_, f)| **f == Fate::Dropped(cause))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn jitter_does_not_shift_bit_errors_or_outages() {
    let seed = seed(42);
    let mut plain = busy_config();
    plain.jitter = Jitter::None;
    plain.error_mode = ErrorMode::Drop;
    let mut jittery = plain.clone();
    jittery.jitter = Jitter::Uniform(ms(100));
    let (a, _, _) = run(plain, seed, 2);
    let (b, _, _) = run(jittery, seed, 2);
    for cause in [DropCause::Buffer, DropCause::BitErrors, DropCause::Outage] {
        let la = losses(&a, cause);
        assert!(!la.is_empty(), "seed {seed}: no {cause:?} losses");
        assert_eq!(la, losses(&b, cause), "seed {seed}: {cause:?}");
    }
    assert_ne!(a, b, "seed {seed}: jitter had no effect");
}

#[test]
fn call_drops_do_not_depend_on_traffic() {
    let seed = seed(43);
    let Ok(mut busy) = Channel::new(busy_config(), seed) else {
        panic!("valid")
    };
    let Ok(mut idle) = Channel::new(busy_config(), seed) else {
        panic!("valid")
    };
    for k in 0..20_000u64 {
        let now = ms(k);
        busy.transmit(now, &mut [0u8; 200]);
        assert_eq!(busy.is_up(now), idle.is_up(now), "seed {seed}: at {now:?}");
    }
}
