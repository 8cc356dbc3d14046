//! METADATA: what is about to be sent.
//!
//! ```text
//! flags (32) | session id (32) | [checksum, checksum length × 4 bytes] | directory entry
//! ```
//!
//! Flags: 10–11 transfer type, 12 transfer in progress (0) or terminated
//! (1), 13 reliability (UDP-Lite), 24–27 checksum length in 32-bit words,
//! 28–31 checksum type. Bytes after the directory entry are ignored.

use super::checksum::Checksum;
use super::dirent::DirEntry;
use super::error::WireError;
use super::flags::{Descriptor, FrameType, Header, Reader, bit, field, with_bit, with_field};

/// METADATA and DATA flags bits 10–11 (values as the drafts' author's
/// implementation defines them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferType {
    File = 0,
    Directory = 1,
    Bundle = 2,
    Stream = 3,
}

impl TransferType {
    pub(crate) fn from_bits(bits: u32) -> TransferType {
        match bits & 3 {
            0 => TransferType::File,
            1 => TransferType::Directory,
            2 => TransferType::Bundle,
            _ => TransferType::Stream,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub descriptor: Descriptor,
    pub transfer_type: TransferType,
    /// Flags bit 12: the sender has terminated the transfer.
    pub terminated: bool,
    pub udp_lite: bool,
    pub session: u32,
    pub checksum: Checksum,
    pub entry: DirEntry,
}

impl Metadata {
    pub fn parse(bytes: &[u8]) -> Result<Metadata, WireError> {
        let header = Header::expect(bytes, FrameType::Metadata)?;
        let w = header.word;
        let mut reader = Reader::after_flags(bytes);
        let session = reader.u32("session id")?;
        let (words, kind) = (field(w, 24, 27) as u8, field(w, 28, 31) as u8);
        let checksum_bytes = reader.take(4 * usize::from(words), "checksum")?;
        let checksum = Checksum::from_wire(kind, words, checksum_bytes)?;
        let entry = DirEntry::read(&mut reader)?;
        Ok(Metadata {
            descriptor: header.descriptor,
            transfer_type: TransferType::from_bits(field(w, 10, 11)),
            terminated: bit(w, 12),
            udp_lite: bit(w, 13),
            session,
            checksum,
            entry,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let kind = self.checksum.kind();
        let mut w = Header::word(FrameType::Metadata, self.descriptor);
        w = with_field(w, 10, 11, self.transfer_type as u32);
        w = with_bit(w, 12, self.terminated);
        w = with_bit(w, 13, self.udp_lite);
        w = with_field(w, 24, 27, u32::from(kind.words()));
        w = with_field(w, 28, 31, kind as u32);
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.checksum.bytes());
        self.entry.emit(out)
    }
}
