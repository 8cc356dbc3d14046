//! Bit errors against 1 - (1 - ber)^(8 L), in every error mode.

mod common;

use std::time::Duration;

use common::{channel, seed, within_3_sigma_proportion};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_channel::{ChannelConfig, DropCause, ErrorMode, Fate, FrameCheck, packet_error_rate};

/// A line fast enough that packets offered every 20 us never queue.
fn noisy(ber: f64, mode: ErrorMode, seed: u64) -> scps_channel::Channel {
    let mut config = ChannelConfig::new(1_000_000_000);
    config.ber = ber;
    config.error_mode = mode;
    config.framing_bytes = 7; // must not be exposed to errors
    channel(config, seed)
}

#[test]
fn loss_fraction_matches_packet_error_rate() {
    const N: u64 = 100_000;
    for (i, &(ber, len)) in [(1e-5, 1500usize), (1e-5, 64), (1e-4, 1500), (1e-6, 1500)]
        .iter()
        .enumerate()
    {
        let seed = seed(100 + i as u64);
        let mut ch = noisy(ber, ErrorMode::Drop, seed);
        let mut packet = vec![0u8; len];
        let mut lost = 0u64;
        for k in 0..N {
            match ch.transmit(Duration::from_micros(20 * k), &mut packet) {
                Fate::Dropped(DropCause::BitErrors) => lost += 1,
                Fate::Delivered { flipped_bits: 0, .. } => {}
                other => panic!("seed {seed}: unexpected {other:?}"),
            }
        }
        let per = packet_error_rate(ber, len);
        let observed = lost as f64 / N as f64;
        assert!(
            within_3_sigma_proportion(observed, per, N),
            "seed {seed}, ber {ber}, L {len}: loss {observed} vs PER {per}"
        );
        assert_eq!(ch.stats().dropped_bit_errors, lost, "seed {seed}");
        // Untouched in Drop mode.
        assert!(
            packet.iter().all(|&b| b == 0),
            "seed {seed}: Drop mode flipped bits"
        );
    }
}

#[test]
fn corrupt_mode_flips_the_reported_bits() {
    const N: u64 = 50_000;
    const L: usize = 1500;
    const BER: f64 = 1e-4;
    let seed = seed(7);
    let mut ch = noisy(BER, ErrorMode::Corrupt, seed);
    let mut data_rng = ChaCha8Rng::seed_from_u64(seed ^ 0xDA7A);
    let mut original = vec![0u8; L];
    let mut packet = vec![0u8; L];
    let mut total_flips = 0u64;
    let mut corrupted = 0u64;
    let mut first_half = 0u64;
    for k in 0..N {
        data_rng.fill(&mut original[..]);
        packet.copy_from_slice(&original);
        let Fate::Delivered { flipped_bits, .. } = ch.transmit(Duration::from_micros(20 * k), &mut packet)
        else {
            panic!("seed {seed}: Corrupt mode must deliver packet {k}");
        };
        let differing: u32 = original
            .iter()
            .zip(&packet)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(differing, flipped_bits, "seed {seed}, packet {k}");
        first_half += original[..L / 2]
            .iter()
            .zip(&packet[..L / 2])
            .map(|(a, b)| u64::from((a ^ b).count_ones()))
            .sum::<u64>();
        total_flips += u64::from(flipped_bits);
        corrupted += u64::from(flipped_bits > 0);
    }
    // Flips per packet ~ Binomial(8 L, ber).
    let bits = 8.0 * L as f64;
    let mean = total_flips as f64 / N as f64;
    let sigma = (bits * BER * (1.0 - BER) / N as f64).sqrt();
    assert!(
        (mean - bits * BER).abs() <= 3.0 * sigma,
        "seed {seed}: mean flips {mean} vs {}",
        bits * BER
    );
    let per = packet_error_rate(BER, L);
    assert!(
        within_3_sigma_proportion(corrupted as f64 / N as f64, per, N),
        "seed {seed}: corrupted fraction vs PER {per}"
    );
    // Errors are spread over the whole packet.
    assert!(
        within_3_sigma_proportion(first_half as f64 / total_flips as f64, 0.5, total_flips),
        "seed {seed}: {first_half} of {total_flips} flips in the first half"
    );
    let stats = ch.stats();
    assert_eq!(stats.bits_flipped, total_flips, "seed {seed}");
    assert_eq!(stats.packets_corrupted, corrupted, "seed {seed}");
    assert_eq!(stats.packets_delivered, N, "seed {seed}");
}

#[test]
fn drop_and_corrupt_modes_hit_the_same_packets() {
    let seed = seed(11);
    let mut drop = noisy(1e-4, ErrorMode::Drop, seed);
    let mut corrupt = noisy(1e-4, ErrorMode::Corrupt, seed);
    let mut hits = 0;
    for k in 0..5_000u64 {
        let now = Duration::from_micros(20 * k);
        let d = drop.transmit(now, &mut [0u8; 1000]);
        let c = corrupt.transmit(now, &mut [0u8; 1000]);
        let corrupted = matches!(
            c,
            Fate::Delivered {
                flipped_bits: 1..,
                ..
            }
        );
        assert_eq!(
            d == Fate::Dropped(DropCause::BitErrors),
            corrupted,
            "seed {seed}, packet {k}"
        );
        hits += usize::from(corrupted);
    }
    assert!(hits > 100, "seed {seed}: {hits}");
}

#[test]
fn a_frame_check_discards_the_packets_it_finds_damaged_and_delivers_the_rest_intact() {
    // At a BER this high nearly every damaged packet has a few bits
    // flipped, which both CRCs always find.
    let seed = seed(12);
    for check in [FrameCheck::Fcs16, FrameCheck::Fcs32] {
        let mut drop = noisy(1e-4, ErrorMode::Drop, seed);
        let mut checked = noisy(1e-4, ErrorMode::FrameCheck(check), seed);
        let sent: Vec<u8> = (0..1000u32).map(|i| (i * 31) as u8).collect();
        for k in 0..5_000u64 {
            let now = Duration::from_micros(20 * k);
            let d = drop.transmit(now, &mut sent.clone());
            let mut packet = sent.clone();
            let c = checked.transmit(now, &mut packet);
            assert_eq!(
                d, c,
                "seed {seed}, {check:?}, packet {k}: the same packets are lost"
            );
            if matches!(c, Fate::Delivered { .. }) {
                assert!(
                    packet == sent,
                    "seed {seed}, {check:?}, packet {k}: delivered damaged"
                );
            }
        }
        let stats = checked.stats();
        assert!(stats.dropped_bit_errors > 100, "seed {seed}: {stats:?}");
        assert_eq!(stats.packets_corrupted, 0, "seed {seed}");
    }
}

#[test]
fn zero_ber_never_errs() {
    let mut ch = noisy(0.0, ErrorMode::Corrupt, 1);
    for k in 0..10_000u64 {
        let fate = ch.transmit(Duration::from_micros(20 * k), &mut [0u8; 1500]);
        assert!(
            matches!(fate, Fate::Delivered { flipped_bits: 0, .. }),
            "{fate:?}"
        );
    }
}
