//! An endpoint is a node with one interface (docs/architecture.md, "The
//! node contract"): every
//! packet comes in and goes out on `InterfaceId(0)`.

use scps_node::{InterfaceId, Node};

use super::Endpoint;
use crate::time::Instant;

/// The endpoint's one interface.
pub const INTERFACE: InterfaceId = InterfaceId(0);

impl Node for Endpoint {
    fn interface_count(&self) -> usize {
        1
    }

    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]) {
        if interface != INTERFACE {
            self.stats.packets_received += 1;
            return self.drop_packet("no_such_interface");
        }
        Endpoint::handle_packet(self, now, packet);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        Endpoint::poll_transmit(self, now, buf).then_some(INTERFACE)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        Endpoint::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Endpoint::handle_timeout(self, now);
    }
}
