//! The shape of everything that handles packets (docs/architecture.md,
//! "The node contract").
//!
//! A [`Node`] is sans-IO code with interfaces: it takes `(now, interface,
//! packet)` and `(now)`, and gives back `(interface, packet)` to send and
//! the next instant it wants to be woken. It never touches a socket, a
//! thread or a clock, so the same node runs in the simulator (virtual
//! time, channel-model links), in the testbed and on real networks (a
//! driver hosting it over real packet paths, one per interface).
//!
//! An endpoint of the engine is a node with one interface; the [`Router`]
//! here is the first with several. The gateway relay, the bonding layer
//! and the Saratoga engine are nodes too.
//!
//! This crate is the vocabulary those pieces share and depends on nothing
//! of ours: [`time::Instant`], [`InterfaceId`], [`IpPrefix`], which
//! addresses are a host's ([`is_host_address`]) and how options write
//! them ([`address_text`]), the [`Tap`] that
//! watches an interface, a [`PerSecond`] bound on answers to floods, and
//! tables that give back their room once mostly empty ([`ShrinkWhenSparse`]),
//! and the Internet checksum ([`checksum::Checksum`]).

pub mod address_text;
pub mod budget;
pub mod checksum;
mod host_address;
pub mod ip_header;
mod prefix;
pub mod router;
pub mod sparse;
pub mod tap;
pub mod time;
pub mod udp;

pub use budget::PerSecond;
pub use host_address::{is_host_address, is_host_socket};
pub use prefix::{IpPrefix, PrefixError};
pub use router::{Route, Router, RouterError, RouterStats};
pub use sparse::ShrinkWhenSparse;
pub use tap::{Crossing, Tap, TapError};
pub use time::Instant;

/// One of a node's interfaces, numbered from 0 in the order the node
/// declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct InterfaceId(pub u16);

impl InterfaceId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for InterfaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interface {}", self.0)
    }
}

/// Anything that takes packets and time and gives packets back.
///
/// A driver (the simulator's world, or a real-I/O driver) calls these in
/// any order, as often as it likes; a node must cope with being asked
/// when it has nothing to do. After handing in packets, a driver calls
/// [`Node::handle_timeout`] and then drains [`Node::poll_transmit`] before
/// it sleeps until [`Node::poll_timeout`].
pub trait Node {
    /// How many interfaces the node has: packets come in and go out on
    /// `InterfaceId(0)` to `InterfaceId(n - 1)`.
    fn interface_count(&self) -> usize;

    /// A packet (a whole IP packet) arrived on `interface` at `now`.
    /// Malformed or unwanted packets are counted and dropped, never a
    /// panic.
    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]);

    /// Writes the next packet to send into `buf` (replacing what it held)
    /// and returns the interface it leaves by; `None` when there is
    /// nothing to send now.
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId>;

    /// The earliest instant at which [`Node::handle_timeout`] has work, if
    /// any.
    fn poll_timeout(&mut self) -> Option<Instant>;

    /// Runs whatever is due at `now` (calling it early is harmless).
    fn handle_timeout(&mut self, now: Instant);

    /// The link on `interface` lost (`up` false) or regained its carrier
    /// at `now`: what a modem's carrier detect or a PPP link going down
    /// tells the host it is plugged into. A node that stripes over several
    /// links takes a lost one out at once; the others have nothing to do
    /// (their transports find the loss from what stops arriving). Drivers
    /// that cannot see a carrier never call it.
    fn handle_carrier(&mut self, now: Instant, interface: InterfaceId, up: bool) {
        let _ = (now, interface, up);
    }
}

impl<N: Node + ?Sized> Node for Box<N> {
    fn interface_count(&self) -> usize {
        (**self).interface_count()
    }
    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]) {
        (**self).handle_packet(now, interface, packet);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        (**self).poll_transmit(now, buf)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        (**self).handle_timeout(now);
    }
    fn handle_carrier(&mut self, now: Instant, interface: InterfaceId, up: bool) {
        (**self).handle_carrier(now, interface, up);
    }
}
