//! STATUS: the receiver's report of what it has and what it lacks.
//!
//! ```text
//! flags (32) | session id (32) | [timestamp, 16 bytes, if bit 12]
//!   | progress (descriptor width) | in-response-to (descriptor width)
//!   | zero or more holes: start, end (descriptor width each)
//! ```
//!
//! Flags: 12 timestamp present, 13 metadata received (0 = yes), 14 all
//! holes listed (0 = yes), 15 holes requested (0) or sent voluntarily
//! (1), 24–31 error code.
//!
//! **Offsets are inclusive**, as Vallona sends them (docs/spec/saratoga.md,
//! "STATUS"): a hole's end is the offset of its *last
//! missing byte*, and progress is the offset of the last byte received in
//! order (5679 after 4 × 1420 bytes). The fields here are the values as
//! on the wire; [`Hole::from_range`], [`Hole::range`] and
//! [`progress_to_wire`] / [`progress_from_wire`] convert to and from
//! half-open byte ranges. The drafts' own wording could not be checked;
//! the drafts' author's later Go implementation keeps holes half-open in
//! memory, so a peer writing exclusive ends would make us re-send one byte
//! too many per hole, never one too few.
//!
//! Bytes after the last complete hole pair are ignored: Vallona appends
//! 4 stray bytes to every STATUS. At 32 and 64 bits they are short of a
//! pair; at 16 bits a pair is exactly 4 bytes. So a 16-bit STATUS is read
//! strictly: holes must be in order, each starting after the one before
//! (a receiver lists what it lacks from the start of the file up) and the
//! first not before the progress (bytes up to the progress are held, in
//! either reading of it); the last pair, if it breaks that (or its start
//! is after its end), is Vallona's stray bytes and dropped, and any other
//! pair that breaks it makes the frame malformed ([`WireError::HoleOrder`]).
//! Stray bytes that read as a plausible hole cannot be told apart from
//! one; that is why our engine never sends with 16-bit descriptors
//! (Vallona answers in the sender's width).

use super::data::{TIMESTAMP_LEN, read_timestamp};
use super::error::WireError;
use super::flags::{Descriptor, FrameType, Header, Reader, bit, field, put_value, with_bit, with_field};

/// A STATUS error code (flags bits 24–31). The list is the drafts' as
/// the drafts' author's implementation (charlesetsmith/saratoga,
/// `saratoga.json`, `errcode`) numbers it; unknown codes are kept as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub u8);

impl ErrorCode {
    pub const SUCCESS: ErrorCode = ErrorCode(0);
    pub const UNSPECIFIED: ErrorCode = ErrorCode(1);
    pub const CANNOT_SEND: ErrorCode = ErrorCode(2);
    pub const CANNOT_RECEIVE: ErrorCode = ErrorCode(3);
    pub const FILE_NOT_FOUND: ErrorCode = ErrorCode(4);
    pub const ACCESS_DENIED: ErrorCode = ErrorCode(5);
    pub const UNKNOWN_ID: ErrorCode = ErrorCode(6);
    pub const DID_NOT_DELETE: ErrorCode = ErrorCode(7);
    pub const FILE_TOO_BIG: ErrorCode = ErrorCode(8);
    pub const BAD_OFFSET: ErrorCode = ErrorCode(9);
    pub const BAD_PACKET: ErrorCode = ErrorCode(10);
    pub const BAD_REQUEST: ErrorCode = ErrorCode(11);
    pub const INTERNAL_TIMEOUT: ErrorCode = ErrorCode(12);
    pub const BAD_DATA_FLAG: ErrorCode = ErrorCode(13);
    pub const RX_NOT_INTERESTED: ErrorCode = ErrorCode(14);
    pub const FILE_IN_USE: ErrorCode = ErrorCode(15);
    pub const METADATA_REQUIRED: ErrorCode = ErrorCode(16);
    pub const BAD_STATUS: ErrorCode = ErrorCode(17);
    pub const RX_TIMEOUT: ErrorCode = ErrorCode(18);

    pub fn is_success(self) -> bool {
        self == ErrorCode::SUCCESS
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "success",
            1 => "unspecified error",
            2 => "unable to send",
            3 => "unable to receive",
            4 => "file not found",
            5 => "access denied",
            6 => "unknown session id",
            7 => "did not delete",
            8 => "file too big",
            9 => "bad offset",
            10 => "bad packet",
            11 => "bad request",
            12 => "internal timeout",
            13 => "bad data flag",
            14 => "receiver not interested",
            15 => "file in use",
            16 => "metadata required",
            17 => "bad status",
            18 => "receiver timeout",
            _ => "unknown error code",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// A hole as on the wire: `start` is its first missing byte, `end` its
/// last (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hole {
    pub start: u64,
    pub end: u64,
}

impl Hole {
    /// The hole covering the half-open `range`, which must not be empty.
    pub fn from_range(range: std::ops::Range<u64>) -> Option<Hole> {
        (range.start < range.end).then(|| Hole {
            start: range.start,
            end: range.end - 1,
        })
    }

    /// The half-open range of missing bytes.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.start..self.end.saturating_add(1)
    }
}

/// Progress as written: the offset of the last byte received in order,
/// for `in_order` bytes received from the start; 0 when none is.
pub fn progress_to_wire(in_order: u64) -> u64 {
    in_order.saturating_sub(1)
}

/// Bytes received in order from a progress value. Inclusive progress 0 is
/// either "nothing" or "one byte"; the holes tell: a hole starting at 0
/// means nothing (`first_hole_start` is the start of the first hole, if
/// any, or the file size if the STATUS lists none and the size is known).
pub fn progress_from_wire(progress: u64, first_hole_start: Option<u64>) -> u64 {
    if progress == 0 && first_hole_start == Some(0) {
        0
    } else {
        progress.saturating_add(1)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub descriptor: Descriptor,
    pub session: u32,
    pub timestamp: Option<[u8; TIMESTAMP_LEN]>,
    /// Flags bit 13 clear.
    pub metadata_received: bool,
    /// Flags bit 14 clear: every hole is listed.
    pub all_holes: bool,
    /// Flags bit 15 set: sent on the receiver's own timer, not asked for.
    pub voluntary: bool,
    pub error: ErrorCode,
    /// Inclusive (see the module's notes).
    pub progress: u64,
    pub in_response_to: u64,
    pub holes: Vec<Hole>,
}

impl Status {
    /// A STATUS that carries only its code (an error, or the answer to a
    /// request): nothing received, no holes, and no METADATA either, so
    /// that a sender never reads it as a report on its transfer. 32-bit,
    /// the narrowest width our engine sends (see the module's notes).
    pub fn error(session: u32, error: ErrorCode) -> Status {
        Status {
            descriptor: Descriptor::D32,
            session,
            timestamp: None,
            metadata_received: false,
            all_holes: true,
            voluntary: false,
            error,
            progress: 0,
            in_response_to: 0,
            holes: Vec::new(),
        }
    }

    /// A receiver's report that all goes well, every hole listed: the
    /// METADATA received, `in_order` bytes held from the start and the
    /// `holes` (half-open) beyond them; sent on its own timer if
    /// `voluntary`, else in answer to the DATA frame at `in_response_to`.
    /// As wide as its values need, and at least 32-bit (as
    /// [`Status::error`]).
    pub fn report(
        session: u32,
        in_order: u64,
        holes: &[std::ops::Range<u64>],
        voluntary: bool,
        in_response_to: u64,
    ) -> Status {
        let widest = holes
            .iter()
            .map(|h| h.end)
            .chain([in_order, in_response_to])
            .max();
        Status {
            descriptor: Descriptor::fitting(widest.unwrap_or(0)).max(Descriptor::D32),
            metadata_received: true,
            voluntary,
            progress: progress_to_wire(in_order),
            in_response_to,
            holes: holes.iter().cloned().filter_map(Hole::from_range).collect(),
            ..Status::error(session, ErrorCode::SUCCESS)
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Status, WireError> {
        let header = Header::expect(bytes, FrameType::Status)?;
        let (w, descriptor) = (header.word, header.descriptor);
        let mut reader = Reader::after_flags(bytes);
        let session = reader.u32("session id")?;
        let timestamp = read_timestamp(&mut reader, bit(w, 12))?;
        let progress = reader.value(descriptor, "progress")?;
        let in_response_to = reader.value(descriptor, "in-response-to")?;
        let pair = 2 * descriptor.byte_len();
        let mut holes: Vec<Hole> = Vec::with_capacity(reader.remaining() / pair);
        // Trailing bytes short of a whole pair are ignored (Vallona).
        while reader.remaining() >= pair {
            let last = reader.remaining() < 2 * pair;
            let start = reader.value(descriptor, "hole start")?;
            let end = reader.value(descriptor, "hole end")?;
            let in_order = match holes.last() {
                Some(before) => start > before.end,
                None => start >= progress,
            };
            if descriptor == Descriptor::D16 && (start > end || !in_order) {
                if last {
                    // Vallona's 4 stray bytes (see the module's notes).
                    break;
                }
                if in_order {
                    return Err(WireError::HoleReversed { start, end });
                }
                return Err(WireError::HoleOrder { start, progress });
            }
            if start > end {
                return Err(WireError::HoleReversed { start, end });
            }
            holes.push(Hole { start, end });
        }
        Ok(Status {
            descriptor,
            session,
            timestamp,
            metadata_received: !bit(w, 13),
            all_holes: !bit(w, 14),
            voluntary: bit(w, 15),
            error: ErrorCode(field(w, 24, 31) as u8),
            progress,
            in_response_to,
            holes,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let mut w = Header::word(FrameType::Status, self.descriptor);
        w = with_bit(w, 12, self.timestamp.is_some());
        w = with_bit(w, 13, !self.metadata_received);
        w = with_bit(w, 14, !self.all_holes);
        w = with_bit(w, 15, self.voluntary);
        w = with_field(w, 24, 31, u32::from(self.error.0));
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        if let Some(timestamp) = &self.timestamp {
            out.extend_from_slice(timestamp);
        }
        put_value(out, self.descriptor, self.progress, "progress")?;
        put_value(out, self.descriptor, self.in_response_to, "in-response-to")?;
        for hole in &self.holes {
            if hole.start > hole.end {
                return Err(WireError::HoleReversed {
                    start: hole.start,
                    end: hole.end,
                });
            }
            put_value(out, self.descriptor, hole.start, "hole start")?;
            put_value(out, self.descriptor, hole.end, "hole end")?;
        }
        Ok(())
    }
}
