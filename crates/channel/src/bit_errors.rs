//! Independent bit errors, drawn as geometric gaps over the bit stream.
//!
//! Every bit on the line is in error with probability `ber`, independently.
//! Drawing a Bernoulli per bit would cost a random number per bit; instead
//! the number of good bits before the next error is drawn from
//! Geometric(ber) (`P(k) = (1 - ber)^k ber`) and carried from packet to
//! packet. Because gaps are memoryless this is exactly the per-bit model,
//! so `P(packet of L bytes has an error) = 1 - (1 - ber)^(8 L)`.
//!
//! Bits are numbered from the first byte, most significant bit first (the
//! order a serial line sends IP bytes). Framing bits are not part of the
//! stream: errors there are the link's business, not the packet's.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// ChaCha stream of the bit-error process (see `channel.rs`).
pub(crate) const BIT_ERROR_STREAM: u64 = 0;

/// ln(1 - ber), or `None` when no bit can be in error. ln_1p keeps
/// precision for tiny ber, where 1 - ber rounds to 1.
fn ln_good(ber: f64) -> Option<f64> {
    (ber > 0.0).then(|| (-ber).ln_1p()).filter(|l| *l < 0.0)
}

#[derive(Debug, Clone)]
pub(crate) struct BitErrors {
    /// ln(1 - ber) < 0, or `None` when ber = 0 (no errors, no draws).
    ln_good: Option<f64>,
    rng: ChaCha8Rng,
    /// Error-free bits before the next error.
    gap: u64,
}

impl BitErrors {
    pub(crate) fn new(ber: f64, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(BIT_ERROR_STREAM);
        let mut errors = BitErrors {
            ln_good: ln_good(ber),
            rng,
            gap: u64::MAX,
        };
        errors.gap = errors.draw_gap();
        errors
    }

    /// Changes the rate from here on. Gaps are memoryless, so redrawing
    /// the current one with the new rate is exact.
    pub(crate) fn set_ber(&mut self, ber: f64) {
        self.ln_good = ln_good(ber);
        self.gap = self.draw_gap();
    }

    /// Geometric(ber) by inversion: floor(ln U / ln(1 - ber)), U in (0, 1].
    fn draw_gap(&mut self) -> u64 {
        match self.ln_good {
            None => u64::MAX,
            Some(ln_good) => {
                let u = 1.0 - self.rng.random::<f64>();
                // Non-negative; `as` saturates the astronomically large.
                (u.ln() / ln_good).floor() as u64
            }
        }
    }

    /// Advances over a packet of `bits` bits, calling `on_error` with the
    /// index of each errored bit (ascending); returns how many there were.
    pub(crate) fn pass(&mut self, bits: u64, mut on_error: impl FnMut(u64)) -> u64 {
        if self.ln_good.is_none() {
            return 0;
        }
        let mut pos = 0u64;
        let mut count = 0u64;
        loop {
            let remaining = bits - pos;
            if self.gap >= remaining {
                self.gap -= remaining;
                return count;
            }
            let bit = pos + self.gap;
            on_error(bit);
            count += 1;
            pos = bit + 1;
            self.gap = self.draw_gap();
        }
    }
}

/// Flips bit `bit` of `packet` (bit 0 = most significant bit of byte 0).
pub(crate) fn flip(packet: &mut [u8], bit: u64) {
    let byte = usize::try_from(bit / 8).ok();
    if let Some(b) = byte.and_then(|i| packet.get_mut(i)) {
        *b ^= 0x80 >> (bit % 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_ber_never_errs() {
        let mut e = BitErrors::new(0.0, 1);
        assert_eq!(e.pass(u64::MAX, |_| panic!("no error expected")), 0);
    }

    #[test]
    fn errors_are_in_range_ascending_and_counted() {
        let mut e = BitErrors::new(0.01, 7);
        let mut seen = Vec::new();
        let n = e.pass(100_000, |b| seen.push(b));
        assert_eq!(n as usize, seen.len());
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
        assert!(seen.iter().all(|&b| b < 100_000));
        // 1000 expected, sd ~31.
        assert!((850..1150).contains(&n), "n = {n}");
    }

    #[test]
    fn splitting_the_stream_does_not_change_error_positions() {
        let mut whole = BitErrors::new(0.001, 9);
        let mut a = Vec::new();
        whole.pass(80_000, |b| a.push(b));
        let mut split = BitErrors::new(0.001, 9);
        let mut b = Vec::new();
        for k in 0..10u64 {
            split.pass(8_000, |bit| b.push(k * 8_000 + bit));
        }
        assert_eq!(a, b);
    }

    #[test]
    fn flip_is_msb_first() {
        let mut p = [0u8; 2];
        flip(&mut p, 0);
        flip(&mut p, 15);
        flip(&mut p, 99);
        assert_eq!(p, [0x80, 0x01]);
    }
}
