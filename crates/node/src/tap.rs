//! Layers at an interface: a tap sees every packet that leaves a node by
//! one of its interfaces and every packet that arrives there, in the
//! order they cross it, without changing them. A packet capture is one
//! (`scps_pcap::PcapTap`). The simulator's world and the real drivers know
//! taps only by this trait, so one capture serves all three worlds.

use crate::time::Instant;

/// Which way a packet crosses the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossing {
    /// Sent by the node, before the link (or the path) has it.
    Leaving,
    /// Delivered by the link (or the path), before the node has it.
    Arriving,
}

/// What a tap could not do; the run goes on and reports it at the end.
pub type TapError = Box<dyn std::error::Error + Send + Sync>;

pub trait Tap: Send {
    /// `packet` crossed the interface at `now` (the driver's time: virtual
    /// in the simulator, since the driver started on a real path).
    fn packet(&mut self, now: Instant, crossing: Crossing, packet: &[u8]);
    /// Flushes what the tap holds; the first error it met, if any.
    fn finish(self: Box<Self>) -> Result<(), TapError>;
}
