//! The 32-bit flags word every frame begins with, the descriptor size it
//! names, and the cursor the frame modules read and write fields with.
//!
//! Bits are numbered as in the drafts: bit 0 is the most significant
//! bit of the big-endian word. Bits 0–2 hold the version (`001`), 3–7 the
//! frame type, 8–9 the descriptor size; bits 10–31 belong to the frame
//! type. Bits a frame type does not define are ignored on reading and
//! written as zero.

use super::error::WireError;

/// The only version the drafts define (`001`).
pub const VERSION: u32 = 1;

/// The five frame types (flags bits 3–7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameType {
    Beacon = 0,
    Request = 1,
    Metadata = 2,
    Data = 3,
    Status = 4,
}

impl FrameType {
    pub fn from_code(code: u8) -> Result<FrameType, WireError> {
        Ok(match code {
            0 => FrameType::Beacon,
            1 => FrameType::Request,
            2 => FrameType::Metadata,
            3 => FrameType::Data,
            4 => FrameType::Status,
            other => return Err(WireError::FrameType(other)),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FrameType::Beacon => "BEACON",
            FrameType::Request => "REQUEST",
            FrameType::Metadata => "METADATA",
            FrameType::Data => "DATA",
            FrameType::Status => "STATUS",
        }
    }
}

impl std::fmt::Display for FrameType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The width of offsets and sizes in a frame (flags bits 8–9).
///
/// Code 3 (128 bits) is parsed as [`WireError::Descriptor128`]: no file we
/// can hold needs it, and offsets are `u64` throughout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Descriptor {
    D16 = 0,
    D32 = 1,
    D64 = 2,
}

impl Descriptor {
    pub const ALL: [Descriptor; 3] = [Descriptor::D16, Descriptor::D32, Descriptor::D64];

    pub fn from_code(code: u8) -> Result<Descriptor, WireError> {
        match code {
            0 => Ok(Descriptor::D16),
            1 => Ok(Descriptor::D32),
            2 => Ok(Descriptor::D64),
            _ => Err(WireError::Descriptor128),
        }
    }

    pub fn code(self) -> u32 {
        self as u32
    }

    /// Bytes a value of this width takes on the wire.
    pub fn byte_len(self) -> usize {
        match self {
            Descriptor::D16 => 2,
            Descriptor::D32 => 4,
            Descriptor::D64 => 8,
        }
    }

    pub fn bits(self) -> u32 {
        8 * self.byte_len() as u32
    }

    pub fn max_value(self) -> u64 {
        match self {
            Descriptor::D16 => u64::from(u16::MAX),
            Descriptor::D32 => u64::from(u32::MAX),
            Descriptor::D64 => u64::MAX,
        }
    }

    /// The narrowest descriptor that holds `value`.
    pub fn fitting(value: u64) -> Descriptor {
        Descriptor::ALL
            .into_iter()
            .find(|d| value <= d.max_value())
            .unwrap_or(Descriptor::D64)
    }
}

/// Bits `first..=last` of `word` (bit 0 the most significant).
pub(crate) fn field(word: u32, first: u32, last: u32) -> u32 {
    let width = last - first + 1;
    (word >> (31 - last)) & (u32::MAX >> (32 - width))
}

/// `word` with bits `first..=last` set to `value` (truncated to fit).
pub(crate) fn with_field(word: u32, first: u32, last: u32, value: u32) -> u32 {
    let width = last - first + 1;
    let mask = (u32::MAX >> (32 - width)) << (31 - last);
    (word & !mask) | ((value << (31 - last)) & mask)
}

pub(crate) fn bit(word: u32, at: u32) -> bool {
    field(word, at, at) == 1
}

pub(crate) fn with_bit(word: u32, at: u32, on: bool) -> u32 {
    with_field(word, at, at, u32::from(on))
}

/// The common part of every flags word: checks the version and reads the
/// frame type and descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub word: u32,
    pub frame_type: FrameType,
    pub descriptor: Descriptor,
}

impl Header {
    pub fn parse(bytes: &[u8]) -> Result<Header, WireError> {
        let Some(first) = bytes.get(..4) else {
            return Err(WireError::TooShort {
                what: "flags word",
                len: bytes.len(),
            });
        };
        let word = u32::from_be_bytes([first[0], first[1], first[2], first[3]]);
        let version = field(word, 0, 2);
        if version != VERSION {
            return Err(WireError::Version(version as u8));
        }
        let frame_type = FrameType::from_code(field(word, 3, 7) as u8)?;
        let descriptor = Descriptor::from_code(field(word, 8, 9) as u8)?;
        Ok(Header {
            word,
            frame_type,
            descriptor,
        })
    }

    /// Like [`Header::parse`], and the frame must be of type `expected`.
    pub fn expect(bytes: &[u8], expected: FrameType) -> Result<Header, WireError> {
        let header = Header::parse(bytes)?;
        if header.frame_type != expected {
            return Err(WireError::WrongFrame {
                expected,
                found: header.frame_type,
            });
        }
        Ok(header)
    }

    /// The flags word of a frame, before its type's own bits are set.
    pub fn word(frame_type: FrameType, descriptor: Descriptor) -> u32 {
        let word = with_field(0, 0, 2, VERSION);
        let word = with_field(word, 3, 7, frame_type as u32);
        with_field(word, 8, 9, descriptor.code())
    }
}

/// Reads fields in order from a frame, naming the field that is cut short.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader from the first byte.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// A reader past the flags word (which [`Header::parse`] checked is
    /// there).
    pub fn after_flags(bytes: &'a [u8]) -> Reader<'a> {
        Reader {
            bytes,
            at: 4.min(bytes.len()),
        }
    }

    pub fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        let rest = &self.bytes[self.at..];
        if rest.len() < len {
            return Err(WireError::TooShort {
                what,
                len: self.bytes.len(),
            });
        }
        self.at += len;
        Ok(&rest[..len])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A value of the descriptor's width.
    pub fn value(&mut self, descriptor: Descriptor, what: &'static str) -> Result<u64, WireError> {
        let b = self.take(descriptor.byte_len(), what)?;
        Ok(b.iter().fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte)))
    }

    /// A NUL-terminated UTF-8 name; the NUL is consumed.
    pub fn name(&mut self) -> Result<&'a str, WireError> {
        let rest = &self.bytes[self.at..];
        let Some(nul) = rest.iter().position(|b| *b == 0) else {
            return Err(WireError::NameNotTerminated);
        };
        let name = std::str::from_utf8(&rest[..nul]).map_err(|_| WireError::InvalidName)?;
        self.at += nul + 1;
        Ok(name)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.at..];
        self.at = self.bytes.len();
        rest
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
}

/// Appends a value of the descriptor's width, or says it does not fit.
pub(crate) fn put_value(
    out: &mut Vec<u8>,
    descriptor: Descriptor,
    value: u64,
    what: &'static str,
) -> Result<(), WireError> {
    if value > descriptor.max_value() {
        return Err(WireError::ValueTooLarge {
            what,
            value,
            descriptor,
        });
    }
    out.extend_from_slice(&value.to_be_bytes()[8 - descriptor.byte_len()..]);
    Ok(())
}

/// Appends a name and its NUL; a name holding a NUL cannot be written.
pub(crate) fn put_name(out: &mut Vec<u8>, name: &str) -> Result<(), WireError> {
    if name.as_bytes().contains(&0) {
        return Err(WireError::InvalidName);
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_zero_is_the_most_significant() {
        assert_eq!(with_bit(0, 0, true), 0x8000_0000);
        assert_eq!(with_bit(0, 31, true), 1);
        assert_eq!(field(0x2000_0000, 0, 2), 1, "version 001");
        assert_eq!(with_field(0, 24, 31, 0xab), 0xab);
        assert_eq!(with_field(0, 8, 9, 2), 0x0080_0000);
        assert_eq!(field(0x0080_0000, 8, 9), 2);
        assert_eq!(Header::word(FrameType::Status, Descriptor::D32), 0x2440_0000);
    }

    #[test]
    fn descriptors_fit_their_values() {
        assert_eq!(Descriptor::fitting(0), Descriptor::D16);
        assert_eq!(Descriptor::fitting(65_535), Descriptor::D16);
        assert_eq!(Descriptor::fitting(65_536), Descriptor::D32);
        assert_eq!(Descriptor::fitting(1 << 32), Descriptor::D64);
        let mut out = Vec::new();
        put_value(&mut out, Descriptor::D16, 0x1234, "x").unwrap();
        put_value(&mut out, Descriptor::D32, 5679, "x").unwrap();
        assert_eq!(out, [0x12, 0x34, 0, 0, 0x16, 0x2f]);
        assert_eq!(
            put_value(&mut out, Descriptor::D16, 65_536, "offset"),
            Err(WireError::ValueTooLarge {
                what: "offset",
                value: 65_536,
                descriptor: Descriptor::D16
            })
        );
    }
}
