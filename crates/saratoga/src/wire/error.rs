//! Why a frame was not read (or could not be written).

use super::flags::{Descriptor, FrameType};

/// Every way a frame can be malformed. [`WireError::cause`] gives a short
/// fixed label for counting drops by cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("frame of {len} bytes ends inside its {what}")]
    TooShort { what: &'static str, len: usize },
    #[error("version {0}: only version 1 (binary 001) is defined")]
    Version(u8),
    #[error("frame type {0}: 0 BEACON, 1 REQUEST, 2 METADATA, 3 DATA, 4 STATUS are defined")]
    FrameType(u8),
    #[error("a {found} frame where a {expected} frame was expected")]
    WrongFrame { expected: FrameType, found: FrameType },
    #[error("descriptor size 3 (128 bits) is not supported")]
    Descriptor128,
    #[error("a name without its terminating NUL")]
    NameNotTerminated,
    #[error("a name that is not UTF-8 text (or an endpoint identifier that is not ASCII)")]
    InvalidName,
    #[error("{what} {value} does not fit a {}-bit descriptor", descriptor.bits())]
    ValueTooLarge {
        what: &'static str,
        value: u64,
        descriptor: Descriptor,
    },
    #[error("a hole from {start} to {end}: its start is after its end")]
    HoleReversed { start: u64, end: u64 },
    #[error(
        "a 16-bit STATUS with a hole at {start} out of order (progress {progress}): holes must be listed from the start of the file up"
    )]
    HoleOrder { start: u64, progress: u64 },
    #[error("request type {0}: 0 to 6 are defined")]
    RequestType(u8),
    #[error("checksum type {0}: 0 none, 1 CRC32, 2 MD5, 3 SHA-1 are defined")]
    ChecksumType(u8),
    #[error("checksum type {kind} with a length of {words} 32-bit words")]
    ChecksumLength { kind: u8, words: u8 },
    #[error("directory entry flags {0:#06x}: the most significant bit must be 1")]
    DirentFlags(u16),
}

impl WireError {
    /// A short fixed label per cause, for counters.
    pub fn cause(&self) -> &'static str {
        match self {
            WireError::TooShort { .. } => "too_short",
            WireError::Version(_) => "version",
            WireError::FrameType(_) => "frame_type",
            WireError::WrongFrame { .. } => "wrong_frame",
            WireError::Descriptor128 => "descriptor_128",
            WireError::NameNotTerminated => "name_unterminated",
            WireError::InvalidName => "name_invalid",
            WireError::ValueTooLarge { .. } => "value_too_large",
            WireError::HoleReversed { .. } => "hole_reversed",
            WireError::HoleOrder { .. } => "hole_order",
            WireError::RequestType(_) => "request_type",
            WireError::ChecksumType(_) => "checksum_type",
            WireError::ChecksumLength { .. } => "checksum_length",
            WireError::DirentFlags(_) => "dirent_flags",
        }
    }
}
