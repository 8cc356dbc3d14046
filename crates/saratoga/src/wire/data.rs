//! DATA: a piece of the file, read in place.
//!
//! ```text
//! flags (32) | session id (32) | [timestamp, 16 bytes, if bit 12] | offset (descriptor width) | payload, to the end
//! ```
//!
//! Flags: 10–11 transfer type, 12 timestamp present, 15 request status
//! (answer with a STATUS now), 16 end of data.
//!
//! The timestamp is carried as the drafts' 16 opaque bytes (timestamp or
//! nonce, echoed in STATUS); Vallona's typed, variable-length form is not
//! read: interoperation runs without timestamps (docs/spec/saratoga.md,
//! "DATA").
//! Payloads are of any length, empty included.

use super::error::WireError;
use super::flags::{Descriptor, FrameType, Header, Reader, bit, field, put_value, with_bit, with_field};
use super::metadata::TransferType;

/// Length of the timestamp field in DATA and STATUS.
pub const TIMESTAMP_LEN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data<'a> {
    pub descriptor: Descriptor,
    pub transfer_type: TransferType,
    pub request_status: bool,
    pub end_of_data: bool,
    pub session: u32,
    pub timestamp: Option<[u8; TIMESTAMP_LEN]>,
    pub offset: u64,
    pub payload: &'a [u8],
}

impl<'a> Data<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Data<'a>, WireError> {
        let header = Header::expect(bytes, FrameType::Data)?;
        let w = header.word;
        let mut reader = Reader::after_flags(bytes);
        let session = reader.u32("session id")?;
        let timestamp = read_timestamp(&mut reader, bit(w, 12))?;
        let offset = reader.value(header.descriptor, "offset")?;
        Ok(Data {
            descriptor: header.descriptor,
            transfer_type: TransferType::from_bits(field(w, 10, 11)),
            request_status: bit(w, 15),
            end_of_data: bit(w, 16),
            session,
            timestamp,
            offset,
            payload: reader.rest(),
        })
    }

    /// Bytes before the payload with these flags.
    pub fn header_len(descriptor: Descriptor, timestamp: bool) -> usize {
        8 + descriptor.byte_len() + if timestamp { TIMESTAMP_LEN } else { 0 }
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let mut w = Header::word(FrameType::Data, self.descriptor);
        w = with_field(w, 10, 11, self.transfer_type as u32);
        w = with_bit(w, 12, self.timestamp.is_some());
        w = with_bit(w, 15, self.request_status);
        w = with_bit(w, 16, self.end_of_data);
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        if let Some(timestamp) = &self.timestamp {
            out.extend_from_slice(timestamp);
        }
        put_value(out, self.descriptor, self.offset, "offset")?;
        out.extend_from_slice(self.payload);
        Ok(())
    }
}

pub(crate) fn read_timestamp(
    reader: &mut Reader<'_>,
    present: bool,
) -> Result<Option<[u8; TIMESTAMP_LEN]>, WireError> {
    if !present {
        return Ok(None);
    }
    let bytes = reader.take(TIMESTAMP_LEN, "timestamp")?;
    let mut timestamp = [0; TIMESTAMP_LEN];
    timestamp.copy_from_slice(bytes);
    Ok(Some(timestamp))
}
