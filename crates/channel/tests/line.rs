//! Queue, line rate, framing, shaper and constant delay against their
//! formulas.

mod common;

use std::time::Duration;

use common::{arrival, channel, ms, seed};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_channel::{ChannelConfig, DropCause, Fate, ShaperConfig};

#[test]
fn back_to_back_packets_are_spaced_by_framed_serialisation_time() {
    // (1500 + 8) bytes * 8 / 2 Mbit/s = 6.032 ms per packet.
    let mut config = ChannelConfig::new(2_000_000);
    config.framing_bytes = 8;
    let mut ch = channel(config, 1);
    let mut packet = vec![0u8; 1500];
    for k in 1..=100u64 {
        let at = arrival(ch.transmit(Duration::ZERO, &mut packet));
        assert_eq!(at, Duration::from_micros(6032 * k), "packet {k}");
    }
    // Queueing delay of packet k is (k - 1) * 6.032 ms.
    let stats = ch.stats();
    assert_eq!(stats.queue_delay_max, Duration::from_micros(6032 * 99));
    assert_eq!(
        stats.queue_delay_total,
        Duration::from_micros(6032 * 99 * 100 / 2)
    );
}

/// Offers `n` packets back to back (each offered just before the line
/// frees, so the queue stays short) and returns the last arrival.
fn last_of_back_to_back(rate_bps: u64, len: usize, n: u64) -> Duration {
    let mut ch = channel(ChannelConfig::new(rate_bps), 1);
    let mut packet = vec![0u8; len];
    let mut now = Duration::ZERO;
    let mut last = Duration::ZERO;
    for _ in 0..n {
        last = arrival(ch.transmit(now, &mut packet));
        // One nanosecond before the (rounded-up) end: the line is still
        // busy, so the next packet starts exactly at the previous end.
        now = last - Duration::from_nanos(1);
    }
    last
}

#[test]
fn a_million_back_to_back_packets_do_not_drift() {
    const N: u64 = 1_000_000;
    // 8 Mbit/s: 1.5 ms per packet, 1500 s in all.
    let last = last_of_back_to_back(8_000_000, 1500, N);
    let exact = Duration::from_secs(1500);
    assert!(
        last.abs_diff(exact) < Duration::from_micros(1),
        "8 Mbit/s: {last:?} vs {exact:?}"
    );

    // 7 Mbit/s: 1_714_285.714... ns per packet, which rounding per packet
    // would turn into ~286 us of drift.
    let last = last_of_back_to_back(7_000_000, 1500, N);
    let exact_ns = (N as u128 * 12_000 * 1_000_000_000).div_ceil(7_000_000);
    let exact = Duration::from_nanos(exact_ns as u64);
    assert!(
        last.abs_diff(exact) < Duration::from_micros(1),
        "7 Mbit/s: {last:?} vs {exact:?}"
    );
}

#[test]
fn drop_tail_refuses_exactly_when_the_buffer_is_full() {
    // 1000-byte packets at 8 Mbit/s take 1 ms; the buffer holds 3 of them
    // (the one on the line is not in the buffer).
    let mut config = ChannelConfig::new(8_000_000);
    config.buffer_bytes = 3000;
    let mut ch = channel(config, 1);
    let mut p1000 = vec![0u8; 1000];
    let mut p500 = vec![0u8; 500];
    let at = |fate| arrival(fate);
    let t0 = Duration::ZERO;
    assert_eq!(at(ch.transmit(t0, &mut p1000)), ms(1)); // on the line
    assert_eq!(at(ch.transmit(t0, &mut p1000)), ms(2)); // buffer 1000
    assert_eq!(at(ch.transmit(t0, &mut p1000)), ms(3)); // buffer 2000
    assert_eq!(at(ch.transmit(t0, &mut p1000)), ms(4)); // buffer 3000: full
    assert_eq!(ch.transmit(t0, &mut p1000), Fate::Dropped(DropCause::Buffer));
    assert_eq!(ch.transmit(t0, &mut p500), Fate::Dropped(DropCause::Buffer));
    assert_eq!(ch.backlog_bytes(t0), 3000);
    // Just before 1 ms the second packet has not started: still full.
    let before = ms(1) - Duration::from_nanos(1);
    assert_eq!(ch.transmit(before, &mut p500), Fate::Dropped(DropCause::Buffer));
    // At 1 ms it starts and frees 1000 bytes: one more fits, then full.
    assert_eq!(at(ch.transmit(ms(1), &mut p1000)), ms(5));
    assert_eq!(ch.transmit(ms(1), &mut p500), Fate::Dropped(DropCause::Buffer));
    // At 2.5 ms: 2000 bytes wait (packets starting at 3 and 4 ms), room for 1000.
    let t = Duration::from_micros(2500);
    assert_eq!(at(ch.transmit(t, &mut p500)), Duration::from_micros(5500));
    assert_eq!(at(ch.transmit(t, &mut p500)), ms(6));
    assert_eq!(ch.transmit(t, &mut p500), Fate::Dropped(DropCause::Buffer));
    assert_eq!(ch.stats().dropped_buffer, 5);
    assert_eq!(ch.stats().packets_delivered, 7);

    // A packet larger than the whole buffer never fits, even on an idle line.
    let mut config = ChannelConfig::new(8_000_000);
    config.buffer_bytes = 1000;
    let mut ch = channel(config, 1);
    assert_eq!(
        ch.transmit(t0, &mut vec![0u8; 1001]),
        Fate::Dropped(DropCause::Buffer)
    );
    assert_eq!(at(ch.transmit(t0, &mut p1000)), ms(1));
}

#[test]
fn drop_tail_matches_a_reference_queue_on_random_arrivals() {
    // At 8 Mbit/s a byte is exactly 1000 ns, so a straightforward integer
    // reference model is exact.
    let seed = seed(0xD7A1);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut config = ChannelConfig::new(8_000_000);
    config.buffer_bytes = 20_000;
    let mut ch = channel(config, seed);
    let mut accepted: Vec<(u64, u64)> = Vec::new(); // (start ns, len)
    let mut line_free = 0u64;
    let mut now = 0u64;
    let mut drops = 0;
    for i in 0..20_000 {
        now += rng.random_range(0..1_200_000u64);
        let len = rng.random_range(40..=1500u64);
        let waiting: u64 = accepted.iter().filter(|(s, _)| *s > now).map(|(_, l)| l).sum();
        let fate = ch.transmit(Duration::from_nanos(now), &mut vec![0u8; len as usize]);
        if waiting + len > 20_000 {
            assert_eq!(fate, Fate::Dropped(DropCause::Buffer), "seed {seed}, packet {i}");
            drops += 1;
        } else {
            let start = now.max(line_free);
            line_free = start + len * 1000;
            accepted.push((start, len));
            accepted.retain(|(s, _)| *s > now);
            assert_eq!(
                arrival(fate),
                Duration::from_nanos(line_free),
                "seed {seed}, packet {i}"
            );
        }
    }
    // The arrival process overloads the line, so the buffer must have acted.
    assert!(drops > 100, "seed {seed}: only {drops} drops");
}

fn geo_shaper_channel() -> scps_channel::Channel {
    // geo-8mbit: token bucket 8 Mbit/s rate, 10 Mbit/s ceiling, 128 KiB
    // burst, on a faster physical line.
    let mut config = ChannelConfig::new(100_000_000);
    config.shaper = Some(ShaperConfig {
        rate_bps: 8_000_000,
        ceiling_bps: 10_000_000,
        burst_bytes: 128 * 1024,
    });
    channel(config, 1)
}

#[test]
fn token_bucket_bursts_at_ceiling_then_holds_the_shaper_rate() {
    let mut ch = geo_shaper_channel();
    let mut packet = vec![0u8; 1500];
    let burst = 131_072f64;
    // At the ceiling a packet takes 1.2 ms, during which 1200 bytes of
    // tokens come back: each packet drains 300 bytes net. Packet k goes at
    // the ceiling while burst - 300 k >= 1500.
    let at_ceiling = ((burst - 1500.0) / 300.0).floor() as u64 + 1;
    assert_eq!(at_ceiling, 432);
    let mut arrivals = Vec::new();
    // 100 MB in 1500-byte packets, all offered at once.
    let n = 100_000_000u64.div_ceil(1500);
    for _ in 0..n {
        arrivals.push(arrival(ch.transmit(Duration::ZERO, &mut packet)));
    }
    for (k, at) in arrivals.iter().take(at_ceiling as usize).enumerate() {
        assert_eq!(*at, Duration::from_micros(1200 * (k as u64 + 1)), "packet {k}");
    }
    // The next one waits 28 bytes of tokens (28 us at 1 MB/s).
    assert_eq!(arrivals[432], Duration::from_micros(432 * 1200 + 28 + 1200));

    // Steady state: exactly the shaper rate.
    let from = 1000;
    let last = arrivals.len() - 1;
    let bits = ((last - from) * 1500 * 8) as f64;
    let rate = bits / (arrivals[last] - arrivals[from]).as_secs_f64();
    assert!((rate / 8e6 - 1.0).abs() < 1e-3, "steady rate {rate}");
    // Whole run: the last packet starts when n * 1500 bytes of tokens have
    // been available (bucket + refill), then takes 1.2 ms.
    let start_last = (n as f64 * 1500.0 - burst) / 1e6;
    let expected = Duration::from_secs_f64(start_last + 1.2e-3);
    assert!(
        arrivals[last].abs_diff(expected) < Duration::from_micros(1),
        "{:?} vs {expected:?}",
        arrivals[last]
    );
    let overall = (n * 1500 * 8) as f64 / arrivals[last].as_secs_f64();
    // Only the initial burst lifts the average above 8 Mbit/s (by 131 KB
    // in 100 MB).
    assert!(overall > 8e6 && overall < 8e6 * 1.002, "overall {overall}");
}

#[test]
fn token_bucket_refills_while_idle() {
    let mut ch = geo_shaper_channel();
    let mut packet = vec![0u8; 1500];
    // Drain the bucket.
    for _ in 0..1000 {
        ch.transmit(Duration::ZERO, &mut packet);
    }
    // Long idle period: the bucket is full again, the burst repeats.
    let t = Duration::from_secs(10);
    for k in 1..=100u64 {
        assert_eq!(
            arrival(ch.transmit(t, &mut packet)),
            t + Duration::from_micros(1200 * k)
        );
    }
}

#[test]
fn delay_is_exact_without_jitter() {
    let mut config = ChannelConfig::new(1_000_000);
    config.delay = Duration::from_millis(250);
    let mut ch = channel(config, 1);
    let mut packet = vec![0u8; 125]; // 1 ms on the line
    for k in 0..50u64 {
        let now = Duration::from_millis(10 * k) + Duration::from_nanos(k);
        assert_eq!(arrival(ch.transmit(now, &mut packet)), now + ms(251));
    }
    // Queued behind one another: end of previous + 1 ms + 250 ms.
    let now = ms(1000);
    for k in 1..=5u64 {
        assert_eq!(arrival(ch.transmit(now, &mut packet)), now + ms(k) + ms(250));
    }
}

#[test]
fn asymmetric_link_is_two_independent_channels() {
    // lowrate-leo-geo: 115200 bit/s forward, 2400 bit/s return, 120 ms.
    let mut forward = ChannelConfig::new(115_200);
    forward.delay = ms(120);
    let mut back = forward.clone();
    back.rate_bps = 2400;
    let mut fwd = channel(forward, 1);
    let mut ret = channel(back, 2);
    let mut data = vec![0u8; 1000];
    let mut ack = vec![0u8; 40];
    for k in 1..=10u64 {
        let d = arrival(fwd.transmit(Duration::ZERO, &mut data));
        let a = arrival(ret.transmit(Duration::ZERO, &mut ack));
        // 8000 bits / 115200 = 69.444... ms; 320 bits / 2400 = 133.333... ms.
        let d_exact = (k as u128 * 8000 * 1_000_000_000).div_ceil(115_200);
        let a_exact = (k as u128 * 320 * 1_000_000_000).div_ceil(2400);
        assert_eq!(d, ms(120) + Duration::from_nanos(d_exact as u64), "forward {k}");
        assert_eq!(a, ms(120) + Duration::from_nanos(a_exact as u64), "return {k}");
    }
    assert_eq!(fwd.stats().bytes_delivered, 10_000);
    assert_eq!(ret.stats().bytes_delivered, 400);
}
