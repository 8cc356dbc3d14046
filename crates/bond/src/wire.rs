//! The bonding layer's control frames, which share each channel with the
//! IP packets they carry (docs/bonding.md has the layout).
//!
//! A frame starts with a zero byte. An IP packet starts with its version
//! (4 or 6) in the high nibble, so a receiver tells the two apart by the
//! first byte alone.
//!
//! ```text
//! probe  (16 bytes): 0x00 | 0x01 | channel | 0x00 | seq (u32) | sent_ns (u64)
//! answer (28 bytes): 0x00 | 0x02 | channel | 0x00 | seq (u32) | sent_ns (u64) | received (u64) | held_us (u32)
//! ```
//!
//! All integers are big-endian. `channel` is the index of the channel the
//! probe was sent on, as the prober numbers them; `sent_ns` is the
//! prober's clock when it sent the probe, echoed back; `received` is how
//! many bytes (frames included) the answering end has received on that
//! channel since it started; `held_us` is how long the answer waits at the
//! answering end, behind what that end has given the channel, before it
//! leaves (microseconds, by the answering end's account): the prober takes
//! it out of the round trip, so that a queue on the way back (data the
//! answering end sends) is not taken for one on the way out.

/// The first byte of every control frame.
pub const CONTROL: u8 = 0x00;
const PROBE: u8 = 1;
const ANSWER: u8 = 2;
pub const PROBE_LEN: usize = 16;
pub const ANSWER_LEN: usize = 28;

/// A probe, or the answer to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    Probe(Probe),
    Answer {
        probe: Probe,
        received: u64,
        held_us: u32,
    },
}

/// What a probe carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub channel: u8,
    pub seq: u32,
    pub sent_ns: u64,
}

/// Why a control frame was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a control frame of {len} bytes: a probe is {PROBE_LEN} bytes, an answer {ANSWER_LEN}")]
    Length { len: usize },
    #[error("control frame kind {0}: 1 (probe) or 2 (answer) expected")]
    Kind(u8),
    #[error("control frame with reserved byte {0:#04x}: 0 expected")]
    Reserved(u8),
}

/// Whether `datagram` is a control frame (else it is data: an IP packet).
pub fn is_control(datagram: &[u8]) -> bool {
    datagram.first() == Some(&CONTROL)
}

impl Frame {
    /// Reads a control frame (one that [`is_control`]).
    pub fn parse(bytes: &[u8]) -> Result<Frame, FrameError> {
        if bytes.len() < PROBE_LEN {
            return Err(FrameError::Length { len: bytes.len() });
        }
        let (kind, channel, reserved) = (bytes[1], bytes[2], bytes[3]);
        if reserved != 0 {
            return Err(FrameError::Reserved(reserved));
        }
        let u32_at = |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let u64_at = |at: usize| (u64::from(u32_at(at)) << 32) | u64::from(u32_at(at + 4));
        let probe = Probe {
            channel,
            seq: u32_at(4),
            sent_ns: u64_at(8),
        };
        match (kind, bytes.len()) {
            (PROBE, PROBE_LEN) => Ok(Frame::Probe(probe)),
            (ANSWER, ANSWER_LEN) => Ok(Frame::Answer {
                probe,
                received: u64_at(16),
                held_us: u32_at(24),
            }),
            (PROBE | ANSWER, len) => Err(FrameError::Length { len }),
            (kind, _) => Err(FrameError::Kind(kind)),
        }
    }

    /// The frame's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (kind, probe, answer) = match *self {
            Frame::Probe(probe) => (PROBE, probe, None),
            Frame::Answer {
                probe,
                received,
                held_us,
            } => (ANSWER, probe, Some((received, held_us))),
        };
        let mut bytes = Vec::with_capacity(ANSWER_LEN);
        bytes.extend([CONTROL, kind, probe.channel, 0]);
        bytes.extend(probe.seq.to_be_bytes());
        bytes.extend(probe.sent_ns.to_be_bytes());
        if let Some((received, held_us)) = answer {
            bytes.extend(received.to_be_bytes());
            bytes.extend(held_us.to_be_bytes());
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_probe_has_the_documented_layout() {
        let probe = Probe {
            channel: 2,
            seq: 0x0102_0304,
            sent_ns: 0x1122_3344_5566_7788,
        };
        assert_eq!(
            Frame::Probe(probe).to_bytes(),
            [
                0, 1, 2, 0, 1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88
            ]
        );
        let answer = Frame::Answer {
            probe,
            received: 7,
            held_us: 0x0a0b_0c0d,
        }
        .to_bytes();
        assert_eq!(answer.len(), ANSWER_LEN);
        assert_eq!(&answer[..2], [0, 2]);
        assert_eq!(&answer[16..24], 7u64.to_be_bytes());
        assert_eq!(&answer[24..], [0x0a, 0x0b, 0x0c, 0x0d]);
    }

    #[test]
    fn bad_frames_name_what_is_wrong() {
        assert_eq!(Frame::parse(&[0, 1, 0]), Err(FrameError::Length { len: 3 }));
        let mut probe = Frame::Probe(Probe {
            channel: 0,
            seq: 1,
            sent_ns: 2,
        })
        .to_bytes();
        probe.push(0);
        assert_eq!(Frame::parse(&probe), Err(FrameError::Length { len: 17 }));
        probe.pop();
        probe[1] = 9;
        assert_eq!(Frame::parse(&probe), Err(FrameError::Kind(9)));
        probe[1] = 1;
        probe[3] = 0x80;
        assert_eq!(Frame::parse(&probe), Err(FrameError::Reserved(0x80)));
        assert!(!is_control(&[0x45, 0]), "an IPv4 packet is data");
        assert!(!is_control(&[]));
    }

    proptest! {
        #[test]
        fn frames_read_back_as_written(channel: u8, seq: u32, sent_ns: u64, answer: Option<(u64, u32)>) {
            let probe = Probe { channel, seq, sent_ns };
            let frame = match answer {
                Some((received, held_us)) => Frame::Answer { probe, received, held_us },
                None => Frame::Probe(probe),
            };
            let bytes = frame.to_bytes();
            prop_assert!(is_control(&bytes));
            prop_assert_eq!(Frame::parse(&bytes), Ok(frame));
        }

        #[test]
        fn any_bytes_parse_or_fail_without_panicking(bytes: Vec<u8>) {
            let _ = Frame::parse(&bytes);
        }
    }
}
