//! Saratoga frames as docs/spec/saratoga.md lays them out, to the byte.
//!
//! One module per frame type. Each frame is a plain struct with `parse`
//! and `emit`; DATA borrows its payload from the datagram. All fields are
//! big-endian. Reading is liberal where the drafts allow it (flag bits a
//! frame type does not define are ignored, STATUS trailing bytes are
//! ignored); anything else that does not fit the layout is a
//! [`WireError`], with a short [`WireError::cause`] for counting.

mod beacon;
mod checksum;
mod data;
mod dirent;
mod error;
mod flags;
mod metadata;
mod request;
mod status;

pub use beacon::{Beacon, Willing};
pub use checksum::{Checksum, ChecksumKind, Hasher, UnknownChecksum};
pub use data::{Data, TIMESTAMP_LEN};
pub use dirent::{DirEntry, EPOCH_2000_UNIX, EntryKind};
pub use error::WireError;
pub use flags::{Descriptor, FrameType, VERSION};
pub use metadata::{Metadata, TransferType};
pub use request::{Request, RequestType};
pub use status::{ErrorCode, Hole, Status, progress_from_wire, progress_to_wire};

/// The UDP port a Saratoga peer listens on.
pub const PORT: u16 = 7542;

/// Any frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    Beacon(Beacon),
    Request(Request),
    Metadata(Metadata),
    Data(Data<'a>),
    Status(Status),
}

impl<'a> Frame<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Frame<'a>, WireError> {
        Ok(match flags::Header::parse(bytes)?.frame_type {
            FrameType::Beacon => Frame::Beacon(Beacon::parse(bytes)?),
            FrameType::Request => Frame::Request(Request::parse(bytes)?),
            FrameType::Metadata => Frame::Metadata(Metadata::parse(bytes)?),
            FrameType::Data => Frame::Data(Data::parse(bytes)?),
            FrameType::Status => Frame::Status(Status::parse(bytes)?),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        match self {
            Frame::Beacon(f) => f.emit(out),
            Frame::Request(f) => f.emit(out),
            Frame::Metadata(f) => f.emit(out),
            Frame::Data(f) => f.emit(out),
            Frame::Status(f) => f.emit(out),
        }
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::new();
        self.emit(&mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
