//! The ways the engine's IP packets reach the network.

mod tun;
mod udp;

pub use tun::TunPath;
pub use udp::UdpPath;

use std::net::IpAddr;

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

    /// Waits for the next packet; returns its length in `buf`.
    pub(crate) async fn recv(&mut self, buf: &mut [u8]) -> Result<usize, NetError> {
        match self {
            PacketPath::Udp(path) => path.recv(buf).await,
            PacketPath::Tun(path) => path.recv(buf).await,
        }
    }

    /// The next packet if one is waiting.
    pub(crate) fn try_recv(&mut self, buf: &mut [u8]) -> Result<Option<usize>, NetError> {
        let result = match self {
            PacketPath::Udp(path) => path.try_recv(buf),
            PacketPath::Tun(path) => path.try_recv(buf),
        };
        match result {
            Ok(n) => Ok(Some(n)),
            Err(NetError::Io { source, .. }) if source.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Sends one packet, waiting while the path has no room.
    pub(crate) async fn send(&mut self, packet: &[u8]) -> Result<(), NetError> {
        match self {
            PacketPath::Udp(path) => path.send(packet).await,
            PacketPath::Tun(path) => path.send(packet).await,
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
