//! Gilbert-Elliott burst errors lose packets in runs at the rate the two
//! states predict; RED drops early, before the buffer is full.

use std::time::Duration;

use scps_channel::{
    BurstErrors, Channel, ChannelConfig, DropCause, Fate, Qdisc, RedConfig, packet_error_rate,
};

#[test]
fn burst_errors_come_in_runs_at_the_expected_rate() {
    let mut config = ChannelConfig::new(8_000_000);
    let burst = BurstErrors {
        mean_good: Duration::from_millis(90),
        mean_bad: Duration::from_millis(10),
        ber: 1e-3,
    };
    config.burst = Some(burst);
    let seed = 21;
    let mut channel = Channel::new(config, seed).unwrap();
    // 1000-byte packets back to back (1 ms each) for 200 s.
    let lost: Vec<bool> = (0..200_000u64)
        .map(|k| {
            let fate = channel.transmit(Duration::from_millis(k), &mut [0u8; 1000]);
            fate == Fate::Dropped(DropCause::BitErrors)
        })
        .collect();
    let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
    let expected = burst.bad_fraction() * packet_error_rate(1e-3, 1000);
    // Given a loss, the next packet is lost far more often than on average.
    let pairs = lost.windows(2).filter(|w| w[0]).count() as f64;
    let after_loss = lost.windows(2).filter(|w| w[0] && w[1]).count() as f64 / pairs;
    println!("seed {seed}: loss {rate:.4} (expected {expected:.4}), after a loss {after_loss:.3}");
    assert!((rate - expected).abs() < 0.02, "loss {rate}, expected {expected}");
    assert!(after_loss > 0.8, "losses not in runs: {after_loss}");
}

#[test]
fn red_drops_early_and_keeps_the_queue_below_its_maximum() {
    let mut config = ChannelConfig::new(1_000_000);
    config.buffer_bytes = 100_000;
    config.qdisc = Qdisc::Red(RedConfig {
        min_bytes: 10_000,
        max_bytes: 40_000,
        max_probability: 0.1,
        weight: 0.02,
    });
    let mut channel = Channel::new(config, 5).unwrap();
    // 1000-byte packets offered at twice the line rate for 20 s.
    let mut largest_backlog = 0;
    for k in 0..40_000u64 {
        let now = Duration::from_micros(4000 * k / 2);
        channel.transmit(now, &mut [0u8; 1000]);
        largest_backlog = largest_backlog.max(channel.backlog_bytes(now));
    }
    let stats = channel.stats();
    println!(
        "early drops {} of {} buffer drops, largest backlog {largest_backlog}",
        stats.dropped_early, stats.dropped_buffer
    );
    assert_eq!(
        stats.dropped_early, stats.dropped_buffer,
        "the buffer itself never overflowed"
    );
    assert!(
        stats.dropped_early > 15_000,
        "about half must go: {}",
        stats.dropped_early
    );
    assert!(largest_backlog < 100_000);
}

#[test]
fn bad_burst_and_red_settings_name_the_field() {
    let mut config = ChannelConfig::new(1_000_000);
    config.burst = Some(BurstErrors {
        mean_good: Duration::ZERO,
        mean_bad: Duration::from_millis(1),
        ber: 0.1,
    });
    assert_eq!(config.validate().unwrap_err().field(), Some("burst.mean_good"));
    config.burst = None;
    config.buffer_bytes = 50_000;
    config.qdisc = Qdisc::Red(RedConfig {
        min_bytes: 10_000,
        max_bytes: 60_000,
        max_probability: 0.1,
        weight: 0.002,
    });
    assert_eq!(config.validate().unwrap_err().field(), Some("qdisc.max_bytes"));
}

#[test]
fn the_effective_ber_gives_the_mean_packet_error_rate() {
    let mut config = ChannelConfig::new(1_000_000);
    config.ber = 1e-7;
    assert_eq!(config.effective_ber(1500), 1e-7);
    config.burst = Some(BurstErrors {
        mean_good: Duration::from_millis(900),
        mean_bad: Duration::from_millis(100),
        ber: 1e-4,
    });
    let mean = 0.9 * packet_error_rate(1e-7, 1500) + 0.1 * packet_error_rate(1e-4, 1500);
    let effective = packet_error_rate(config.effective_ber(1500), 1500);
    assert!((effective - mean).abs() < 1e-12, "{effective} vs {mean}");
}
