//! Jitter distributions and the reordering switch.

mod common;

use std::time::Duration;

use common::{arrival, channel, mean_sd, ms, seed};
use scps_channel::{ChannelConfig, Jitter};

const DELAY_NS: f64 = 100e6;

/// Jitter samples in ns: arrival - (offer + serialisation + delay), with
/// packets far apart so nothing queues and reordering allowed.
fn jitter_samples(jitter: Jitter, n: u64, seed: u64) -> Vec<f64> {
    let mut config = ChannelConfig::new(1_000_000_000);
    config.delay = ms(100);
    config.jitter = jitter;
    config.allow_reordering = true;
    let mut ch = channel(config, seed);
    let mut packet = [0u8; 125]; // 1 us on the line
    (0..n)
        .map(|k| {
            let now = ms(k);
            let at = arrival(ch.transmit(now, &mut packet));
            (at - now).as_nanos() as f64 - 1_000.0 - DELAY_NS
        })
        .collect()
}

#[test]
fn uniform_jitter_has_the_right_mean_spread_and_bounds() {
    const N: u64 = 50_000;
    let seed = seed(21);
    let a = 10e6; // 10 ms
    let xs = jitter_samples(Jitter::Uniform(ms(10)), N, seed);
    let (mean, sd) = mean_sd(&xs);
    let sd_expected = a / 3f64.sqrt();
    assert!(
        mean.abs() <= 3.0 * sd_expected / (N as f64).sqrt(),
        "seed {seed}: mean {mean} ns"
    );
    // Relative sd of a sample sd: sqrt((kurtosis - 1) / 4n), kurtosis 9/5.
    let rel = (0.8 / (4.0 * N as f64)).sqrt();
    assert!(
        (sd / sd_expected - 1.0).abs() <= 3.0 * rel,
        "seed {seed}: sd {sd} vs {sd_expected}"
    );
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(lo >= -a && hi <= a, "seed {seed}: range [{lo}, {hi}]");
    // The whole range is used.
    assert!(lo < -0.99 * a && hi > 0.99 * a, "seed {seed}: range [{lo}, {hi}]");
}

#[test]
fn normal_jitter_has_the_right_mean_and_sd() {
    const N: u64 = 50_000;
    let seed = seed(22);
    let sd_expected = 10e6;
    let xs = jitter_samples(Jitter::Normal(ms(10)), N, seed);
    let (mean, sd) = mean_sd(&xs);
    assert!(
        mean.abs() <= 3.0 * sd_expected / (N as f64).sqrt(),
        "seed {seed}: mean {mean} ns"
    );
    // Relative sd of a sample sd for a normal: sqrt(1 / 2n).
    let rel = (0.5 / N as f64).sqrt();
    assert!(
        (sd / sd_expected - 1.0).abs() <= 3.0 * rel,
        "seed {seed}: sd {sd}"
    );
    // About 68.3% within one sd.
    let inside = xs.iter().filter(|x| x.abs() <= sd_expected).count() as f64 / N as f64;
    assert!(
        common::within_3_sigma_proportion(inside, 0.6827, N),
        "seed {seed}: {inside}"
    );
}

#[test]
fn total_delay_is_truncated_at_zero() {
    let seed = seed(23);
    let mut config = ChannelConfig::new(1_000_000_000);
    config.delay = ms(1);
    config.jitter = Jitter::Normal(ms(10));
    config.allow_reordering = true;
    let mut ch = channel(config, seed);
    let mut at_line_end = 0;
    for k in 0..10_000u64 {
        let now = ms(100 * k);
        let at = arrival(ch.transmit(now, &mut [0u8; 125]));
        let end = now + Duration::from_micros(1);
        assert!(
            at >= end,
            "seed {seed}: packet {k} arrived before leaving the line"
        );
        at_line_end += usize::from(at == end);
    }
    // P(delay + jitter < 0) = P(Z < -0.1) ~ 46%.
    assert!(
        at_line_end > 4000 && at_line_end < 5200,
        "seed {seed}: {at_line_end}"
    );
}

fn arrivals_with_large_jitter(allow_reordering: bool, seed: u64) -> Vec<Duration> {
    let mut config = ChannelConfig::new(10_000_000);
    config.delay = ms(300);
    config.jitter = Jitter::Normal(ms(50));
    config.allow_reordering = allow_reordering;
    let mut ch = channel(config, seed);
    (0..5_000u64)
        .map(|k| arrival(ch.transmit(ms(k), &mut [0u8; 500])))
        .collect()
}

#[test]
fn no_reordering_when_disallowed_some_when_allowed() {
    let seed = seed(24);
    let fifo = arrivals_with_large_jitter(false, seed);
    assert!(
        fifo.windows(2).all(|w| w[0] <= w[1]),
        "seed {seed}: FIFO violated"
    );
    let free = arrivals_with_large_jitter(true, seed);
    let inversions = free.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(inversions > 500, "seed {seed}: only {inversions} inversions");
    // Same jitter draws: FIFO only ever holds packets back.
    assert!(fifo.iter().zip(&free).all(|(f, r)| f >= r), "seed {seed}");
}
