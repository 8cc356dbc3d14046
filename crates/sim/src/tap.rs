//! Layers at an interface: a tap sees every packet that leaves a node by
//! one of its interfaces and every packet that arrives there, in the
//! order they cross it, without changing them. A packet capture is one;
//! the world knows taps only by this trait.

use std::path::Path;

use scps_pcap::{Capture, CaptureError};
use scps_proto::time::Instant;

/// Which way a packet crosses the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossing {
    /// Sent by the node, before the link's channel model has it.
    Leaving,
    /// Delivered by the link, before the node has it.
    Arriving,
}

/// What a tap could not do; the run goes on and reports it at the end.
pub type TapError = Box<dyn std::error::Error + Send + Sync>;

pub trait Tap {
    fn packet(&mut self, now: Instant, crossing: Crossing, packet: &[u8]);
    /// Flushes what the tap holds; the first error it met, if any.
    fn finish(self: Box<Self>) -> Result<(), TapError>;
}

/// A pcap file of both ways, stamped with virtual time since the start
/// of the run.
#[derive(Debug)]
pub struct PcapTap {
    /// `None` once writing failed: the rest of the run is not recorded.
    capture: Option<Capture>,
    error: Option<CaptureError>,
}

impl PcapTap {
    pub fn create(path: &Path) -> Result<PcapTap, CaptureError> {
        Ok(PcapTap {
            capture: Some(Capture::create(path)?),
            error: None,
        })
    }
}

impl Tap for PcapTap {
    fn packet(&mut self, now: Instant, _crossing: Crossing, packet: &[u8]) {
        if let Some(capture) = &mut self.capture
            && let Err(error) = capture.record(now.as_duration(), packet)
        {
            self.error = Some(error);
            self.capture = None;
        }
    }

    fn finish(self: Box<Self>) -> Result<(), TapError> {
        if let Some(error) = self.error {
            return Err(error.into());
        }
        self.capture.map_or(Ok(()), Capture::finish).map_err(Into::into)
    }
}
