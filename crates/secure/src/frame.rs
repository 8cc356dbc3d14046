//! The secure link's datagrams (docs/secure-link.md "On the wire"): every
//! UDP payload between two gateways is one of three messages, all
//! multi-byte fields big-endian.
//!
//! ```text
//! initiation, 68 bytes:   type 1 | 3 zero bytes | sender index (4) | Noise KK message 1 (60)
//! response, 60 bytes:     type 2 | 3 zero bytes | sender index (4) | receiver index (4) | Noise KK message 2 (48)
//! data, 32 bytes or more: type 3 | 3 zero bytes | receiver index (4) | counter (8) | ciphertext and tag
//! ```
//!
//! An index names a session at the side that chose it; the counter is the
//! AEAD nonce. Parsing only takes the fields apart: nothing here is
//! trusted until the Noise layer has authenticated it.

/// Message types.
pub const INITIATION: u8 = 1;
pub const RESPONSE: u8 = 2;
pub const DATA: u8 = 3;

/// Bytes of the Noise messages of the handshake: an ephemeral key (32),
/// then the encrypted payload and its tag (16): the initiation carries a
/// 12-byte timestamp, the response nothing.
pub const TIMESTAMP_LEN: usize = 12;
pub const INITIATION_NOISE_LEN: usize = 32 + TIMESTAMP_LEN + TAG_LEN;
pub const RESPONSE_NOISE_LEN: usize = 32 + TAG_LEN;
pub const INITIATION_LEN: usize = 8 + INITIATION_NOISE_LEN;
pub const RESPONSE_LEN: usize = 12 + RESPONSE_NOISE_LEN;
/// The data message's header, before the ciphertext.
pub const DATA_HEADER_LEN: usize = 16;
/// The AEAD tag after every ciphertext.
pub const TAG_LEN: usize = 16;
/// What the secure link adds to each packet it carries.
pub const OVERHEAD: usize = DATA_HEADER_LEN + TAG_LEN;

/// A datagram taken apart; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Initiation {
        sender: u32,
        noise: &'a [u8],
    },
    Response {
        sender: u32,
        receiver: u32,
        noise: &'a [u8],
    },
    Data {
        receiver: u32,
        counter: u64,
        /// Ciphertext and tag.
        sealed: &'a [u8],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a datagram of {0} bytes is shorter than any message of the secure link")]
    Short(usize),
    #[error("unknown message type {0}")]
    UnknownType(u8),
    #[error("reserved bytes not zero")]
    Reserved,
    #[error("a message of type {kind} is {expected} bytes, not {got}")]
    WrongLength { kind: u8, expected: usize, got: usize },
}

impl FrameError {
    /// A short name for counting.
    pub fn label(&self) -> &'static str {
        match self {
            FrameError::Short(_) => "short",
            FrameError::UnknownType(_) => "unknown_type",
            FrameError::Reserved => "reserved",
            FrameError::WrongLength { .. } => "wrong_length",
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

impl<'a> Frame<'a> {
    pub fn parse(datagram: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        if datagram.len() < DATA_HEADER_LEN {
            return Err(FrameError::Short(datagram.len()));
        }
        if datagram[1..4] != [0; 3] {
            return Err(FrameError::Reserved);
        }
        let kind = datagram[0];
        let exact = |expected: usize| {
            if datagram.len() == expected {
                Ok(())
            } else {
                Err(FrameError::WrongLength {
                    kind,
                    expected,
                    got: datagram.len(),
                })
            }
        };
        match kind {
            INITIATION => {
                exact(INITIATION_LEN)?;
                Ok(Frame::Initiation {
                    sender: u32_at(datagram, 4),
                    noise: &datagram[8..],
                })
            }
            RESPONSE => {
                exact(RESPONSE_LEN)?;
                Ok(Frame::Response {
                    sender: u32_at(datagram, 4),
                    receiver: u32_at(datagram, 8),
                    noise: &datagram[12..],
                })
            }
            DATA => {
                if datagram.len() < OVERHEAD {
                    return Err(FrameError::Short(datagram.len()));
                }
                Ok(Frame::Data {
                    receiver: u32_at(datagram, 4),
                    counter: u64::from_be_bytes(datagram[8..16].try_into().expect("eight bytes")),
                    sealed: &datagram[DATA_HEADER_LEN..],
                })
            }
            other => Err(FrameError::UnknownType(other)),
        }
    }
}

/// Appends an initiation's header to `out`; its Noise message follows.
pub(crate) fn initiation_header(sender: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&[INITIATION, 0, 0, 0]);
    out.extend_from_slice(&sender.to_be_bytes());
}

/// Appends a response's header to `out`; its Noise message follows.
pub(crate) fn response_header(sender: u32, receiver: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&[RESPONSE, 0, 0, 0]);
    out.extend_from_slice(&sender.to_be_bytes());
    out.extend_from_slice(&receiver.to_be_bytes());
}

/// Appends a data message's header to `out`; the ciphertext follows.
pub(crate) fn data_header(receiver: u32, counter: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&[DATA, 0, 0, 0]);
    out.extend_from_slice(&receiver.to_be_bytes());
    out.extend_from_slice(&counter.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_parses_back_to_its_fields() {
        let mut initiation = Vec::new();
        initiation_header(0x0102_0304, &mut initiation);
        initiation.extend_from_slice(&[7; INITIATION_NOISE_LEN]);
        assert_eq!(initiation.len(), INITIATION_LEN);
        assert_eq!(
            Frame::parse(&initiation),
            Ok(Frame::Initiation {
                sender: 0x0102_0304,
                noise: &[7; INITIATION_NOISE_LEN]
            })
        );
        let mut response = Vec::new();
        response_header(5, 6, &mut response);
        response.extend_from_slice(&[8; RESPONSE_NOISE_LEN]);
        assert_eq!(
            Frame::parse(&response),
            Ok(Frame::Response {
                sender: 5,
                receiver: 6,
                noise: &[8; RESPONSE_NOISE_LEN]
            })
        );
        let mut data = Vec::new();
        data_header(9, u64::MAX - 1, &mut data);
        data.extend_from_slice(&[1; TAG_LEN + 3]);
        assert_eq!(
            Frame::parse(&data),
            Ok(Frame::Data {
                receiver: 9,
                counter: u64::MAX - 1,
                sealed: &[1; TAG_LEN + 3]
            })
        );
    }

    #[test]
    fn malformed_datagrams_are_named() {
        assert_eq!(Frame::parse(&[3; 5]), Err(FrameError::Short(5)));
        assert_eq!(
            Frame::parse(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(FrameError::Short(17))
        );
        assert_eq!(Frame::parse(&[9; 40]), Err(FrameError::Reserved));
        let mut unknown = vec![0; 40];
        unknown[0] = 4;
        assert_eq!(Frame::parse(&unknown), Err(FrameError::UnknownType(4)));
        let mut long = vec![0; INITIATION_LEN + 1];
        long[0] = INITIATION;
        assert_eq!(
            Frame::parse(&long),
            Err(FrameError::WrongLength {
                kind: INITIATION,
                expected: INITIATION_LEN,
                got: INITIATION_LEN + 1
            })
        );
    }
}
