//! The ways the engine's IP packets reach the network. Packets move in
//! batches, so that a path can hand several to the kernel in one system
//! call (UDP GSO and GRO).

mod batch;
mod boxed;
mod bundle;
mod icmp_reports;
mod secured;
mod tapped;
mod tun;
mod udp;
mod udp_peers;
mod udp_sockets;

pub use bundle::{BundleChannelAddrs, BundleEvent, BundleMonitor, BundlePath, BundleReport, open_bundle};
pub use secured::{LinkSecurity, SecureMonitor};
pub use tun::TunPath;
pub use udp::{StrangerCount, UdpPath};
pub use udp_sockets::{SendErrors, UdpSocketsPath};

pub use batch::RecvBatch;
pub use boxed::{BoxedPath, DynPath};
pub(crate) use tapped::Tapped;

use std::net::{IpAddr, SocketAddr};

use scps_proto::{FourTuple, PathCapacity};

use crate::error::NetError;

/// A packet path: whole IP packets in and out, in batches. [`TunPath`],
/// [`UdpPath`], [`BundlePath`] and [`UdpSocketsPath`] are the ones this
/// crate has; a driver ([`crate::Net`], [`crate::NodeHost`]) runs a node
/// over any of them, and layers (a tap such as the capture of `--pcap`,
/// `tapped.rs`) wrap one path as another.
///
/// The hooks after `send` let a path keep what it needs to deliver the
/// engine's packets (the UDP path's peer addresses) and tell the driver
/// what it learned on the way (peers unreachable, packets dropped as
/// damaged); a path that needs none keeps the defaults.
pub trait PacketPath: Send + 'static {
    /// The addresses the endpoint answers to on this path.
    fn local_addrs(&self) -> Vec<IpAddr>;

    /// Waits for packets and puts those that have arrived in `batch` (or
    /// returns with none when the path has news for the driver).
    fn recv(&mut self, batch: &mut RecvBatch) -> impl Future<Output = Result<(), NetError>> + Send;

    /// Puts the packets that have already arrived in `batch` (perhaps
    /// none), without waiting.
    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError>;

    /// Sends the packets, in order, waiting while the path has no room.
    fn send(&mut self, packets: &[Vec<u8>]) -> impl Future<Output = Result<(), NetError>> + Send;

    /// The endpoint has handled `packet`, which came from `source` (on
    /// paths whose packets have one): `is_connection` says which
    /// connections the endpoint now holds, and `answered` whether it
    /// queued an answer to a packet of none, so that the path learns
    /// where to send them.
    fn heard(
        &mut self,
        _packet: &[u8],
        _source: SocketAddr,
        _is_connection: impl Fn(&FourTuple) -> bool,
        _answered: bool,
    ) {
    }

    /// Forgets what the path learned for connections that are gone.
    fn forget_closed(&mut self, _is_connection: impl Fn(&FourTuple) -> bool) {}

    /// The peers reported unreachable since the last call (inner
    /// addresses; `None` for every peer). A routed path has none: ICMP
    /// errors reach the endpoint as packets.
    fn take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        Vec::new()
    }

    /// Packets the path dropped, damaged, since the last call.
    fn take_damaged(&mut self) -> u64 {
        0
    }

    /// Peers the path holds addresses of.
    fn peers_held(&self) -> usize {
        0
    }

    /// Packets the path had nowhere to send, counted rather than sent.
    fn unroutable(&self) -> u64 {
        0
    }

    /// What the path says it carries now, if it knows (a bundle: the sum
    /// of its channels that are up): the endpoint's route rates follow it.
    fn capacity(&self) -> Option<PathCapacity> {
        None
    }

    /// The driver has stopped: what the path must still do (a capture
    /// writes itself out), and the first error it kept.
    fn finish(&mut self) -> Result<(), NetError> {
        Ok(())
    }
}

/// Whether an I/O error only says "nothing now".
pub(crate) fn would_block(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::WouldBlock
}
