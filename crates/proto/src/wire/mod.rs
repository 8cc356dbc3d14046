//! Wire formats: zero-copy parsing into plain `Repr` structs and emission
//! back into byte buffers (the smoltcp style).
//!
//! Every malformed input is reported as a typed [`WireError`]; nothing here
//! panics on bad input. Parsers are fuzzed (see `fuzz/`).

pub mod compressed;
mod error;
pub mod icmp;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod packet;
pub mod tcp;
pub mod tcp_options;

pub use compressed::{
    Compressed, CompressedRepr, Compressor, Decompressor, WindowAck, build_compressed_packet,
    build_compressed_packet_as, peek_conn_id,
};
pub use error::{Layer, WireError};
pub use ip::IpRepr;
pub use ipv4::Ipv4Repr;
pub use ipv6::Ipv6Repr;
pub use packet::{build_segment_packet, build_tcp_packet, parse_tcp_packet};
pub use tcp::{TcpFlags, TcpRepr};
pub use tcp_options::{
    MAX_OPTIONS_LEN, OptionList, SackBlock, ScpsCapabilities, Snack, TcpOptions, Timestamps,
};

/// IP protocol number of TCP, and of uncompressed SCPS-TP segments.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of SCPS-TP segments with compressed headers (IANA "SCPS").
pub const IPPROTO_SCPS_COMPRESSED: u8 = 105;
/// SCPS-TP segments, uncompressed, as the RI's standalone builds send them
/// (docs/spec/scps-tp-options.md, "IP protocol numbers"): accepted by configuration,
/// never sent by default.
pub const IPPROTO_SCPS_TP: u8 = 106;
/// IP protocol numbers of ICMP and ICMPv6.
pub const IPPROTO_ICMP: u8 = 1;
pub const IPPROTO_ICMPV6: u8 = 58;
