//! Received packets, one after another in one buffer.

use std::net::SocketAddr;
use std::ops::Range;

/// Bytes of receive buffer: room for several coalesced (GRO) datagrams of
/// up to 64 KiB each.
pub(crate) const SLOT_BYTES: usize = 65_536;
pub(crate) const SLOTS: usize = 8;

/// Packets received, one after another in one buffer, with where each
/// came from: what a [`PacketPath`](super::PacketPath) fills for the
/// driver (the paths of this crate write into its buffer directly).
#[derive(Debug)]
pub struct RecvBatch {
    /// `SLOTS` receive slots of `SLOT_BYTES` each.
    pub(crate) buf: Vec<u8>,
    /// Where each packet lies in `buf`.
    packets: Vec<Range<usize>>,
    /// Where each packet came from, on paths where that is an address
    /// (UDP); empty on the others.
    sources: Vec<SocketAddr>,
}

impl RecvBatch {
    pub(crate) fn new() -> RecvBatch {
        RecvBatch {
            buf: vec![0; SLOTS * SLOT_BYTES],
            packets: Vec::with_capacity(SLOTS * 64),
            sources: Vec::with_capacity(SLOTS * 64),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.packets.clear();
        self.sources.clear();
    }

    /// Adds a packet that came from `source`. A batch holds packets with
    /// sources or packets without, not both.
    pub(crate) fn push_from(&mut self, range: Range<usize>, source: SocketAddr) {
        self.packets.push(range);
        self.sources.push(source);
    }

    /// Adds a packet written into `buf` at `range`, of no source.
    pub(crate) fn push(&mut self, range: Range<usize>) {
        self.packets.push(range);
    }

    /// Bytes used from the start of `buf` when packets are appended one
    /// after another.
    pub(crate) fn used(&self) -> usize {
        self.packets.last().map_or(0, |r| r.end)
    }

    /// Copies `packet` after the last one; false if it does not fit.
    pub(crate) fn append(&mut self, packet: &[u8]) -> bool {
        let start = self.used();
        let Some(room) = self.buf.get_mut(start..start + packet.len()) else {
            return false;
        };
        room.copy_from_slice(packet);
        self.packets.push(start..start + packet.len());
        true
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The packets, each with its source where the path knows one.
    pub(crate) fn packets(&self) -> impl Iterator<Item = (&[u8], Option<SocketAddr>)> {
        let sources = self
            .sources
            .iter()
            .copied()
            .map(Some)
            .chain(std::iter::repeat(None));
        self.packets.iter().map(|r| &self.buf[r.clone()]).zip(sources)
    }
}
