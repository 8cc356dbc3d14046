//! BEACON: a peer announcing itself and what it is willing to do.
//!
//! ```text
//! flags (32) | [free space, free-space descriptor width, if bit 17] | endpoint identifier, ASCII, to the end
//! ```
//!
//! Flags: 10 bundles, 11 streaming, 12–13 tx-willing, 14–15 rx-willing,
//! 16 UDP-Lite, 17 free space advertised, 18–19 free-space descriptor.
//! The identifier runs to the end of the datagram (Vallona sends
//! "address pid" with no NUL); a trailing NUL, as a sender following the
//! drafts may add, is accepted and dropped. We write none.

use super::error::WireError;
use super::flags::{Descriptor, FrameType, Header, Reader, bit, field, put_value, with_bit, with_field};

/// What a peer is willing to do in one direction (two flag bits; the
/// values as the drafts' author's implementation names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Willing {
    No = 0,
    Invalid = 1,
    Capable = 2,
    Yes = 3,
}

impl Willing {
    pub(crate) fn from_bits(bits: u32) -> Willing {
        match bits & 3 {
            0 => Willing::No,
            1 => Willing::Invalid,
            2 => Willing::Capable,
            _ => Willing::Yes,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beacon {
    pub descriptor: Descriptor,
    pub bundles: bool,
    pub streaming: bool,
    pub tx_willing: Willing,
    pub rx_willing: Willing,
    pub udp_lite: bool,
    /// Free space in bytes (as the peer counts it) and the width it is
    /// written in.
    pub free_space: Option<(Descriptor, u64)>,
    pub endpoint: String,
}

impl Beacon {
    pub fn parse(bytes: &[u8]) -> Result<Beacon, WireError> {
        let header = Header::expect(bytes, FrameType::Beacon)?;
        let w = header.word;
        let mut reader = Reader::after_flags(bytes);
        let free_space = if bit(w, 17) {
            let width = Descriptor::from_code(field(w, 18, 19) as u8)?;
            Some((width, reader.value(width, "free space")?))
        } else {
            None
        };
        let mut endpoint = reader.rest();
        if let [head @ .., 0] = endpoint {
            endpoint = head;
        }
        if !endpoint.iter().all(|b| b.is_ascii() && *b != 0) {
            return Err(WireError::InvalidName);
        }
        Ok(Beacon {
            descriptor: header.descriptor,
            bundles: bit(w, 10),
            streaming: bit(w, 11),
            tx_willing: Willing::from_bits(field(w, 12, 13)),
            rx_willing: Willing::from_bits(field(w, 14, 15)),
            udp_lite: bit(w, 16),
            free_space,
            // ASCII checked above.
            endpoint: String::from_utf8_lossy(endpoint).into_owned(),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if !self.endpoint.bytes().all(|b| b.is_ascii() && b != 0) {
            return Err(WireError::InvalidName);
        }
        let mut w = Header::word(FrameType::Beacon, self.descriptor);
        w = with_bit(w, 10, self.bundles);
        w = with_bit(w, 11, self.streaming);
        w = with_field(w, 12, 13, self.tx_willing as u32);
        w = with_field(w, 14, 15, self.rx_willing as u32);
        w = with_bit(w, 16, self.udp_lite);
        if let Some((width, _)) = self.free_space {
            w = with_bit(w, 17, true);
            w = with_field(w, 18, 19, width.code());
        }
        out.extend_from_slice(&w.to_be_bytes());
        if let Some((width, space)) = self.free_space {
            put_value(out, width, space, "free space")?;
        }
        out.extend_from_slice(self.endpoint.as_bytes());
        Ok(())
    }
}
