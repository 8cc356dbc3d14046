//! REQUEST: ask a peer to send, receive, delete or list.
//!
//! ```text
//! flags (32) | session id (32) | file name, NUL-terminated | [authentication, to the end]
//! ```
//!
//! Flags: 10 bundles, 11 streams, 12–13 willingness, 14 session type,
//! 15 file (0) or directory (1), 16 UDP-Lite, 24–31 request type.

use super::error::WireError;
use super::flags::{Descriptor, FrameType, Header, Reader, bit, field, put_name, with_bit, with_field};

/// Flags bits 24–31. 1 to 6 are the drafts'; 0 ("no action") is defined
/// by the drafts' author's implementation and accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestType {
    NoAction = 0,
    Get = 1,
    Put = 2,
    GetDelete = 3,
    PutDelete = 4,
    Delete = 5,
    GetDir = 6,
}

impl RequestType {
    pub fn from_code(code: u8) -> Result<RequestType, WireError> {
        Ok(match code {
            0 => RequestType::NoAction,
            1 => RequestType::Get,
            2 => RequestType::Put,
            3 => RequestType::GetDelete,
            4 => RequestType::PutDelete,
            5 => RequestType::Delete,
            6 => RequestType::GetDir,
            other => return Err(WireError::RequestType(other)),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub descriptor: Descriptor,
    pub request_type: RequestType,
    pub session: u32,
    pub name: String,
    /// The name is a directory (flags bit 15).
    pub directory: bool,
    pub bundles: bool,
    pub streams: bool,
    /// Flags bits 12–13, kept as read.
    pub willingness: u8,
    /// Flags bit 14, kept as read.
    pub session_type: bool,
    pub udp_lite: bool,
    /// Whatever follows the name's NUL.
    pub auth: Vec<u8>,
}

impl Request {
    /// A plain request: no optional flags, no authentication.
    pub fn new(request_type: RequestType, session: u32, name: &str) -> Request {
        Request {
            descriptor: Descriptor::D32,
            request_type,
            session,
            name: name.to_owned(),
            directory: request_type == RequestType::GetDir,
            bundles: false,
            streams: false,
            willingness: 0,
            session_type: false,
            udp_lite: false,
            auth: Vec::new(),
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Request, WireError> {
        let header = Header::expect(bytes, FrameType::Request)?;
        let w = header.word;
        let request_type = RequestType::from_code(field(w, 24, 31) as u8)?;
        let mut reader = Reader::after_flags(bytes);
        let session = reader.u32("session id")?;
        let name = reader.name()?.to_owned();
        Ok(Request {
            descriptor: header.descriptor,
            request_type,
            session,
            name,
            directory: bit(w, 15),
            bundles: bit(w, 10),
            streams: bit(w, 11),
            willingness: field(w, 12, 13) as u8,
            session_type: bit(w, 14),
            udp_lite: bit(w, 16),
            auth: reader.rest().to_vec(),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let mut w = Header::word(FrameType::Request, self.descriptor);
        w = with_bit(w, 10, self.bundles);
        w = with_bit(w, 11, self.streams);
        w = with_field(w, 12, 13, u32::from(self.willingness));
        w = with_bit(w, 14, self.session_type);
        w = with_bit(w, 15, self.directory);
        w = with_bit(w, 16, self.udp_lite);
        w = with_field(w, 24, 31, self.request_type as u32);
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        put_name(out, &self.name)?;
        out.extend_from_slice(&self.auth);
        Ok(())
    }
}
