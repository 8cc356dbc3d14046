//! Stream content that both ends can compute: the byte at offset `i` of a
//! stream is a function of the stream's seed and `i`. The sender writes it,
//! the receiver checks every byte against it, so a transfer is verified
//! exactly (not by a checksum that could collide) at memory speed.

/// The content of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    seed: u64,
}

/// SplitMix64's finaliser: consecutive inputs give unrelated outputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        Pattern { seed: mix(seed) }
    }

    fn word(&self, index: u64) -> [u8; 8] {
        mix(self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes()
    }

    /// Writes the bytes at offsets `offset..offset + out.len()`.
    pub fn fill(&self, offset: u64, out: &mut [u8]) {
        // A partial word up to the next multiple of 8, whole words, a
        // partial word at the end.
        let skip = (offset % 8) as usize;
        let head = ((8 - skip) % 8).min(out.len());
        let (first, rest) = out.split_at_mut(head);
        if head > 0 {
            first.copy_from_slice(&self.word(offset / 8)[skip..skip + head]);
        }
        let mut index = (offset + head as u64) / 8;
        let mut words = rest.chunks_exact_mut(8);
        for word in &mut words {
            word.copy_from_slice(&self.word(index));
            index += 1;
        }
        let tail = words.into_remainder();
        let len = tail.len();
        tail.copy_from_slice(&self.word(index)[..len]);
    }

    /// The first offset at which `data` (found at `offset`) differs from
    /// the pattern, if any.
    pub fn first_mismatch(&self, offset: u64, data: &[u8]) -> Option<u64> {
        let mut expected = [0u8; 4096];
        let mut at = offset;
        for block in data.chunks(expected.len()) {
            let expected = &mut expected[..block.len()];
            self.fill(at, expected);
            if block != expected {
                let i = block
                    .iter()
                    .zip(expected.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Some(at + i as u64);
            }
            at += block.len() as u64;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_slice_matches_the_whole() {
        let pattern = Pattern::new(7);
        let mut whole = vec![0u8; 1000];
        pattern.fill(0, &mut whole);
        for (start, len) in [
            (0, 1),
            (3, 17),
            (8, 8),
            (999, 1),
            (500, 500),
            (5, 2),
            (1, 0),
            (7, 993),
        ] {
            let mut part = vec![0u8; len];
            pattern.fill(start as u64, &mut part);
            assert_eq!(part, whole[start..start + len]);
        }
    }

    #[test]
    fn mismatches_are_found_at_their_offset_and_seeds_differ() {
        let pattern = Pattern::new(1);
        let mut data = vec![0u8; 100];
        pattern.fill(40, &mut data);
        assert_eq!(pattern.first_mismatch(40, &data), None);
        data[57] ^= 1;
        assert_eq!(pattern.first_mismatch(40, &data), Some(97));
        let mut long = vec![0u8; 10_000];
        pattern.fill(3, &mut long);
        long[9_000] ^= 0x80;
        assert_eq!(
            pattern.first_mismatch(3, &long),
            Some(9_003),
            "found in a later block"
        );
        let mut other = vec![0u8; 100];
        Pattern::new(2).fill(40, &mut other);
        assert_ne!(other, data);
    }
}
