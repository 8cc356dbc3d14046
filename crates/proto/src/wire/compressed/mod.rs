//! SCPS-TP compressed headers, IP protocol 105 (CCSDS 714.0-B-2;
//! docs/spec/compression.md).
//!
//! ```text
//! [conn id: 1][control 1: 1][control 2: 1, only if MORE]
//! [urgent pointer: 2 (URG)] [window: 2, ack: 4 (A)] [seq: 4 (S)]
//! [TSval: 4 (TS1)] [TSecr: 4 (TS2)] [option length: 1, options (OPTS)]
//! [pad: 1 (PAD)] [checksum: 2] payload
//! ```
//!
//! [`CompressedRepr`] is the format alone. [`Compressor`] (one per
//! connection, sending) and [`Decompressor`] (one per peer address and
//! peer connection id, receiving) hold what each side knows, so that a
//! header can leave out what the receiver infers. Used only after both SYNs
//! set the compression bit of the SCPS capabilities option; SYNs always
//! travel uncompressed.

mod context;
mod header;

pub use context::{Compressed, Compressor, Decompressor, WINDOW_ACK_REFRESH_SEGMENTS};
pub use header::{
    COMPRESSIBLE_FLAGS, CompressedRepr, WindowAck, build_compressed_packet, build_compressed_packet_as,
    peek_conn_id,
};
