use std::fmt;

use scps_node::checksum::PseudoHeaderError;

/// The header layer a [`WireError`] was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ipv4,
    Ipv6,
    Tcp,
    TcpOptions,
    /// The SCPS-TP compressed header (IP protocol 105).
    Compressed,
    /// ICMP or ICMPv6 (a destination-unreachable report).
    Icmp,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Tcp => "TCP",
            Layer::TcpOptions => "TCP options",
            Layer::Compressed => "SCPS compressed header",
            Layer::Icmp => "ICMP",
        })
    }
}

/// Why a packet could not be parsed or built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{layer} truncated: need {needed} bytes, have {available}")]
    Truncated {
        layer: Layer,
        needed: usize,
        available: usize,
    },
    #[error("IP version {0} is neither 4 nor 6")]
    BadIpVersion(u8),
    #[error("IPv4 header length {0} bytes is below the minimum of 20")]
    BadIpv4HeaderLength(usize),
    #[error(
        "IPv4 total length {total} is below the header length {header} or beyond the {available} bytes received"
    )]
    BadIpv4TotalLength {
        total: usize,
        header: usize,
        available: usize,
    },
    #[error("IPv6 payload length {payload} is beyond the {available} bytes received")]
    BadIpv6PayloadLength { payload: usize, available: usize },
    #[error("fragmented IP packet (reassembly is not supported)")]
    Fragmented,
    #[error("{layer} checksum mismatch")]
    BadChecksum { layer: Layer },
    #[error("TCP data offset {0} bytes is below 20 or beyond the segment")]
    BadTcpDataOffset(usize),
    #[error("TCP option kind {kind} has invalid length {len}")]
    BadOptionLength { kind: u8, len: u8 },
    #[error("TCP option kind {kind} runs past the end of the header")]
    OptionOverrun { kind: u8 },
    #[error("TCP options need {0} bytes, more than the 40 a header can carry")]
    OptionsTooLong(usize),
    #[error("source and destination addresses are of different IP versions")]
    AddressFamilyMismatch,
    #[error("payload of {0} bytes does not fit the IP length field")]
    PayloadTooLong(usize),
    #[error("buffer of {available} bytes is too small, need {needed}")]
    BufferTooSmall { needed: usize, available: usize },
    #[error("a segment with {0} cannot travel with a compressed header")]
    NotCompressible(&'static str),
    #[error("compressed header sets the SNACK bit but its options carry no SNACK")]
    SnackBitWithoutSnack,
    #[error("compressed header omits the {0} and the decompressor has no value to infer it from")]
    CompressedFieldUnknown(&'static str),
    #[error("compressed segment is for connection id {got}, the decompressor for id {expected}")]
    ConnectionIdMismatch { expected: u8, got: u8 },
}

impl WireError {
    /// A short, stable label for per-cause drop counters.
    pub fn label(&self) -> &'static str {
        match self {
            WireError::Truncated { .. } => "truncated",
            WireError::BadIpVersion(_) => "bad_ip_version",
            WireError::BadIpv4HeaderLength(_) => "bad_ipv4_header_length",
            WireError::BadIpv4TotalLength { .. } => "bad_ipv4_total_length",
            WireError::BadIpv6PayloadLength { .. } => "bad_ipv6_payload_length",
            WireError::Fragmented => "fragmented",
            WireError::BadChecksum { .. } => "bad_checksum",
            WireError::BadTcpDataOffset(_) => "bad_tcp_data_offset",
            WireError::BadOptionLength { .. } => "bad_option_length",
            WireError::OptionOverrun { .. } => "option_overrun",
            WireError::OptionsTooLong(_) => "options_too_long",
            WireError::AddressFamilyMismatch => "address_family_mismatch",
            WireError::PayloadTooLong(_) => "payload_too_long",
            WireError::BufferTooSmall { .. } => "buffer_too_small",
            WireError::NotCompressible(_) => "not_compressible",
            WireError::SnackBitWithoutSnack => "snack_bit_without_snack",
            WireError::CompressedFieldUnknown(_) => "compressed_field_unknown",
            WireError::ConnectionIdMismatch { .. } => "connection_id_mismatch",
        }
    }
}

impl From<PseudoHeaderError> for WireError {
    fn from(error: PseudoHeaderError) -> WireError {
        match error {
            PseudoHeaderError::AddressFamilyMismatch => WireError::AddressFamilyMismatch,
            PseudoHeaderError::PayloadTooLong(len) => WireError::PayloadTooLong(len),
        }
    }
}
