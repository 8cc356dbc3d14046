//! What sessions hand back to the engine: control frames to send now,
//! events for the user, counters.

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::event::{Event, Stats};
use crate::wire::Frame;

#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// Frames sent ahead of paced DATA (METADATA, STATUS, REQUEST, probes).
    pub control: VecDeque<(SocketAddr, Vec<u8>)>,
    pub events: VecDeque<Event>,
    pub stats: Stats,
}

impl Outbox {
    /// Queues a frame. Every frame the engine builds fits its descriptor
    /// (chosen from the size it carries); one that does not is counted
    /// under `malformed["emit"]` and not sent.
    pub fn send(&mut self, peer: SocketAddr, frame: &Frame<'_>) {
        match frame.to_bytes() {
            Ok(bytes) => {
                if matches!(frame, Frame::Status(_)) {
                    self.stats.status_sent += 1;
                }
                self.control.push_back((peer, bytes));
            }
            Err(_) => *self.stats.malformed.entry("emit").or_default() += 1,
        }
    }

    pub fn event(&mut self, event: Event) {
        self.events.push_back(event);
    }
}
