//! The ways the engine's IP packets reach the network. Packets move in
//! batches, so that a path can hand several to the kernel in one system
//! call (UDP GSO and GRO).

mod batch;
mod tun;
mod udp;
mod udp_peers;

pub use tun::TunPath;
pub use udp::UdpPath;

pub(crate) use batch::RecvBatch;

use std::net::{IpAddr, SocketAddr};

use scps_proto::FourTuple;

use crate::error::NetError;

/// A packet path: whole IP packets in and out.
#[derive(Debug)]
pub enum PacketPath {
    Udp(UdpPath),
    Tun(TunPath),
}

impl PacketPath {
    /// The addresses the endpoint answers to on this path.
    pub fn local_addrs(&self) -> Vec<IpAddr> {
        match self {
            PacketPath::Udp(path) => path.local_addrs().to_vec(),
            PacketPath::Tun(path) => path.local_addrs().to_vec(),
        }
    }

    /// Waits for packets and puts those that have arrived in `batch`.
    pub(crate) async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        match self {
            PacketPath::Udp(path) => path.recv(batch).await,
            PacketPath::Tun(path) => path.recv(batch).await,
        }
    }

    /// Puts the packets that have already arrived in `batch` (perhaps
    /// none), without waiting.
    pub(crate) fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        match self {
            PacketPath::Udp(path) => path.try_recv(batch),
            PacketPath::Tun(path) => path.try_recv(batch),
        }
    }

    /// Sends the packets, in order, waiting while the path has no room.
    pub(crate) async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        match self {
            PacketPath::Udp(path) => path.send(packets).await,
            PacketPath::Tun(path) => path.send(packets).await,
        }
    }

    /// The endpoint has handled `packet`, which came from `source` (on
    /// paths whose packets have one): `is_connection` says which
    /// connections the endpoint now holds, and `answered` whether it
    /// queued an answer to a packet of none, so that the path learns
    /// where to send them.
    pub(crate) fn heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: impl Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        match self {
            PacketPath::Udp(path) => path.heard(packet, source, is_connection, answered),
            PacketPath::Tun(_) => {}
        }
    }

    /// Forgets what the path learned for connections that are gone.
    pub(crate) fn forget_closed(&mut self, is_connection: impl Fn(&FourTuple) -> bool) {
        match self {
            PacketPath::Udp(path) => path.forget_closed(is_connection),
            PacketPath::Tun(_) => {}
        }
    }

    /// The peers reported unreachable since the last call (inner
    /// addresses; `None` for every peer). A routed path has none: ICMP
    /// errors reach the endpoint as packets.
    pub(crate) fn take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        match self {
            PacketPath::Udp(path) => path.take_unreachable(),
            PacketPath::Tun(_) => Vec::new(),
        }
    }

    /// Packets the path dropped, damaged, since the last call (the UDP
    /// path's frame check).
    pub(crate) fn take_damaged(&mut self) -> u64 {
        match self {
            PacketPath::Udp(path) => path.take_damaged(),
            PacketPath::Tun(_) => 0,
        }
    }

    /// Peers the path holds addresses of (UDP without a fixed peer).
    pub(crate) fn peers_held(&self) -> usize {
        match self {
            PacketPath::Udp(path) => path.peers_held(),
            PacketPath::Tun(_) => 0,
        }
    }

    /// Packets the path could not deliver (no known peer for the
    /// destination), counted rather than sent anywhere.
    pub(crate) fn unroutable(&self) -> u64 {
        match self {
            PacketPath::Udp(path) => path.unroutable(),
            PacketPath::Tun(_) => 0,
        }
    }
}

/// Whether an I/O error only says "nothing now".
pub(crate) fn would_block(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::WouldBlock
}
