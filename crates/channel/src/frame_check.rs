//! A link's frame check sequence over a damaged packet: whether the
//! receiver's check finds the damage. CRCs miss some error patterns (one
//! in 2^16 or 2^32 of the long random ones), which is exactly what a
//! scenario with a real frame check wants to see.

use crate::bit_errors::flip;
use crate::config::FrameCheck;

const FCS16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_SDLC);
const FCS32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

impl FrameCheck {
    fn sequence(self, bytes: &[u8]) -> u32 {
        match self {
            FrameCheck::Fcs16 => u32::from(FCS16.checksum(bytes)),
            FrameCheck::Fcs32 => FCS32.checksum(bytes),
        }
    }

    /// Whether the check finds `damaged`, whose bits at `flipped` were
    /// flipped on the way, different from what was sent. `damaged` is
    /// left as it came.
    pub(crate) fn detects(self, damaged: &mut [u8], flipped: &[u64]) -> bool {
        let received = self.sequence(damaged);
        let restore = |packet: &mut [u8]| flipped.iter().for_each(|&bit| flip(packet, bit));
        restore(damaged);
        let sent = self.sequence(damaged);
        restore(damaged);
        received != sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequences_are_the_ppp_ones() {
        // RFC 1662's check values for "123456789".
        assert_eq!(FrameCheck::Fcs16.sequence(b"123456789"), 0x906e);
        assert_eq!(FrameCheck::Fcs32.sequence(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn small_damage_is_always_found_and_the_packet_kept_as_damaged() {
        let original: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
        for check in [FrameCheck::Fcs16, FrameCheck::Fcs32] {
            for flipped in [vec![0u64], vec![5, 11_999], vec![100, 101, 102]] {
                let mut damaged = original.clone();
                flipped.iter().for_each(|&bit| flip(&mut damaged, bit));
                let before = damaged.clone();
                assert!(check.detects(&mut damaged, &flipped), "{check:?} {flipped:?}");
                assert_eq!(damaged, before);
            }
        }
    }

    #[test]
    fn damage_that_is_a_multiple_of_the_generator_goes_unseen() {
        // CRC-CCITT's generator x^16 + x^12 + x^5 + 1 as an error pattern:
        // four flipped bits the 16-bit check cannot see, the 32-bit one
        // can. These CRCs take each byte least significant bit first, and
        // the first bit sent is the highest power, so the generator's
        // terms fall 0, 4, 11 and 16 bits apart on the line; bit j of the
        // line is bit j % 8 of byte j / 8 from the least significant end,
        // while `flip` counts from the most significant.
        let bit = |j: u64| (j / 8) * 8 + (7 - j % 8);
        let flipped: Vec<u64> = [0, 4, 11, 16].map(|j| bit(j + 80)).to_vec();
        let mut packet = vec![0x5au8; 64];
        flipped.iter().for_each(|&b| flip(&mut packet, b));
        assert!(!FrameCheck::Fcs16.detects(&mut packet, &flipped));
        assert!(FrameCheck::Fcs32.detects(&mut packet, &flipped));
    }
}
