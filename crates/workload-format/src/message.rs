//! The messages of a message stream, as the Iridium paper's test
//! applications framed them: an 8-byte send timestamp (nanoseconds,
//! big-endian), a 4-byte length (big-endian, the whole message) and random
//! bytes. The random bytes are the stream's [`Pattern`] at the message's
//! offset, so the receiver checks every byte. Shared by the simulator's
//! message streams and `scps send`/`scps recv`.

use std::time::Duration;

use crate::payload::Pattern;

/// Bytes of the header: an 8-byte send timestamp and a 4-byte length.
pub const HEADER: usize = 12;

/// When message `index` of a flow of `size`-byte messages offered at
/// `rate_bps` is due, from the start of the test window: `index` intervals
/// in, computed exactly (no accumulated error).
pub fn due(index: u64, size: usize, rate_bps: u64) -> Duration {
    let bits = u128::from(index) * size as u128 * 8;
    let nanos = bits * 1_000_000_000 / u128::from(rate_bps.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Fills `message` (the whole message, at least [`HEADER`] bytes) as the
/// message found at stream offset `offset`, stamped `sent_nanos`.
pub fn write(message: &mut [u8], offset: u64, sent_nanos: u64, pattern: &Pattern) {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    message[..8].copy_from_slice(&sent_nanos.to_be_bytes());
    message[8..HEADER].copy_from_slice(&len.to_be_bytes());
    pattern.fill(offset + HEADER as u64, &mut message[HEADER..]);
}

/// The header of a message: its timestamp and claimed length.
pub fn header(bytes: &[u8; HEADER]) -> (u64, u32) {
    let mut stamp = [0u8; 8];
    stamp.copy_from_slice(&bytes[..8]);
    let mut len = [0u8; 4];
    len.copy_from_slice(&bytes[8..]);
    (u64::from_be_bytes(stamp), u32::from_be_bytes(len))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("message at byte {offset} claims {claimed} bytes, expected {expected}")]
    Length {
        offset: u64,
        claimed: u32,
        expected: usize,
    },
    #[error("message content differs from what was sent, first at byte {0}")]
    Content(u64),
}

/// Checks the message found at stream offset `offset` (`size` bytes, the
/// flow's message size); returns its send timestamp.
pub fn check(message: &[u8], offset: u64, size: usize, pattern: &Pattern) -> Result<u64, MessageError> {
    let mut head = [0u8; HEADER];
    head.copy_from_slice(&message[..HEADER]);
    let (sent, claimed) = header(&head);
    if claimed as usize != size || message.len() != size {
        return Err(MessageError::Length {
            offset,
            claimed,
            expected: size,
        });
    }
    match pattern.first_mismatch(offset + HEADER as u64, &message[HEADER..]) {
        Some(at) => Err(MessageError::Content(at)),
        None => Ok(sent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_fall_due_at_the_offered_rate() {
        assert_eq!(due(0, 64, 1024), Duration::ZERO);
        assert_eq!(due(1, 64, 1024), Duration::from_millis(500));
        assert_eq!(due(120, 64, 1024), Duration::from_secs(60));
    }

    #[test]
    fn a_written_message_checks_and_damage_is_named() {
        let pattern = Pattern::new(3);
        let mut message = vec![0u8; 64];
        write(&mut message, 128, 42, &pattern);
        assert_eq!(check(&message, 128, 64, &pattern), Ok(42));
        assert_eq!(
            check(&message, 128, 96, &pattern),
            Err(MessageError::Length {
                offset: 128,
                claimed: 64,
                expected: 96
            })
        );
        message[20] ^= 1;
        assert_eq!(
            check(&message, 128, 64, &pattern),
            Err(MessageError::Content(148))
        );
    }
}
