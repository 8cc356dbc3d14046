//! Kernel UDP sockets as a path of IP/UDP packets, for a node that speaks
//! UDP itself (the Saratoga engine's, `scps_saratoga::node`, the same one
//! the simulator runs). Each datagram a socket receives is handed to the
//! node as the packet that carried it, from the peer to the socket's
//! address and port; each packet the node sends leaves as its datagram,
//! sent to its destination by the socket bound to its source address and
//! port. The kernel does IP and UDP; the headers between it and the node
//! are written and read here (`scps_node::udp`).
//!
//! A socket bound to a wildcard address (`0.0.0.0:7542`) addresses what
//! it receives to the address the kernel sends to that peer from (asked
//! once per peer), so that the node answers from a real address and a
//! capture shows it. Without a capture ([`UdpSocketsPath::uncaptured`])
//! the packets keep the wildcard address and go without a UDP checksum
//! (the kernel checks the real one): the node answers by the same socket
//! either way.
//!
//! A socket whose buffer is full holds the sending up until it has room:
//! no packet the node handed over is dropped for want of it. Other send
//! errors (no route to the peer) lose the packet, as the network would,
//! and the last is kept for the node's user to report ([`SendErrors`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use scps_node::udp::{self, UdpChecksum};
use tokio::net::UdpSocket;

use super::batch::{RecvBatch, SLOT_BYTES};
use super::udp::route_source;
use super::{PacketPath, would_block};
use crate::error::NetError;

/// Datagrams received in one turn, from all sockets together, before the
/// driver hands them to the node (and sends what it answers).
const BATCH: usize = 64;
/// Peers whose source address is remembered before the table is
/// emptied (it is asked of the kernel again as peers come back).
const SOURCES_KEPT: usize = 4096;

/// The last error a send met, read from any task.
#[derive(Debug, Clone, Default)]
pub struct SendErrors(Arc<Mutex<Option<String>>>);

impl SendErrors {
    /// The last error a send met (an unreachable network, say), if any.
    pub fn last(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, error: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    }
}

#[derive(Debug)]
pub struct UdpSocketsPath {
    sockets: Vec<UdpSocket>,
    /// The address each socket is bound to (with the port the system
    /// chose).
    locals: Vec<SocketAddr>,
    /// For a socket bound to a wildcard address: the address the kernel
    /// sends to each peer from.
    sources: HashMap<(usize, IpAddr), IpAddr>,
    /// The socket read first next time, so that a busy one does not keep
    /// the others waiting.
    first: usize,
    send_errors: SendErrors,
    /// Whether the packets received are written as they travelled (for a
    /// capture): a wildcard socket's address resolved, the UDP checksum
    /// computed.
    as_travelled: bool,
    /// Packets that were not IP/UDP from one of the sockets' addresses (a
    /// node's mistake), dropped.
    unroutable: u64,
}

impl UdpSocketsPath {
    /// A path over `sockets`, bound and non-blocking (IPv6 ones only for
    /// IPv6). Must be called inside the runtime.
    pub fn new(sockets: Vec<std::net::UdpSocket>) -> Result<UdpSocketsPath, NetError> {
        let sockets = sockets
            .into_iter()
            .map(UdpSocket::from_std)
            .collect::<Result<Vec<_>, _>>()
            .map_err(NetError::io("cannot register a UDP socket with the runtime"))?;
        let locals = sockets
            .iter()
            .map(UdpSocket::local_addr)
            .collect::<Result<Vec<_>, _>>()
            .map_err(NetError::io("cannot read a UDP socket's address"))?;
        Ok(UdpSocketsPath {
            sockets,
            locals,
            sources: HashMap::new(),
            first: 0,
            send_errors: SendErrors::default(),
            as_travelled: true,
            unroutable: 0,
        })
    }

    /// No capture shows the packets received: they are written as the
    /// node needs them alone, to a wildcard socket's own address (no
    /// routing lookup per peer) and without a UDP checksum (the kernel
    /// has checked the real one), for a node that checks none.
    pub fn uncaptured(mut self) -> UdpSocketsPath {
        self.as_travelled = false;
        self
    }

    /// The addresses the sockets are bound to.
    pub fn locals(&self) -> &[SocketAddr] {
        &self.locals
    }

    /// Where the errors of sends are kept.
    pub fn send_errors(&self) -> SendErrors {
        self.send_errors.clone()
    }

    /// The address and port `peer` is answered from: those of the first
    /// socket of its family, the address the kernel picks if the socket's
    /// is a wildcard. `None` if no socket is of its family.
    pub fn address_towards(&mut self, peer: SocketAddr) -> Option<SocketAddr> {
        let index = self.locals.iter().position(|l| l.is_ipv4() == peer.is_ipv4())?;
        Some(self.source(index, peer))
    }

    /// The address datagrams from socket `index` to `peer` leave from.
    fn source(&mut self, index: usize, peer: SocketAddr) -> SocketAddr {
        let local = self.locals[index];
        if !local.ip().is_unspecified() {
            return local;
        }
        if self.sources.len() >= SOURCES_KEPT {
            self.sources.clear();
        }
        let ip = *self
            .sources
            .entry((index, peer.ip()))
            .or_insert_with(|| route_source(local, peer).map_or(local.ip(), |ip| ip));
        SocketAddr::new(ip, local.port())
    }

    /// The socket bound to `src`: to its address, or to the wildcard of
    /// its family, and its port.
    fn socket_of(&self, src: SocketAddr) -> Option<usize> {
        let bound = |local: &SocketAddr| local.port() == src.port() && local.is_ipv4() == src.is_ipv4();
        self.locals
            .iter()
            .position(|local| bound(local) && local.ip() == src.ip())
            .or_else(|| {
                self.locals
                    .iter()
                    .position(|local| bound(local) && local.ip().is_unspecified())
            })
    }
}

impl PacketPath for UdpSocketsPath {
    fn local_addrs(&self) -> Vec<IpAddr> {
        let mut addrs: Vec<IpAddr> = self.locals.iter().map(SocketAddr::ip).collect();
        addrs.dedup();
        addrs
    }

    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        loop {
            let sockets = &self.sockets;
            std::future::poll_fn(|cx| {
                sockets
                    .iter()
                    .find_map(|socket| match socket.poll_recv_ready(cx) {
                        Poll::Ready(ready) => Some(Poll::Ready(ready)),
                        Poll::Pending => None,
                    })
                    .unwrap_or(Poll::Pending)
            })
            .await
            .map_err(NetError::io("UDP receive failed"))?;
            self.try_recv(batch)?;
            if !batch.is_empty() {
                return Ok(());
            }
        }
    }

    /// Reads what the sockets have, each datagram straight into the batch
    /// after room for its headers, which are then written in front of it.
    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        batch.clear();
        let count = self.sockets.len();
        let mut received = 0;
        for turn in 0..count {
            let index = (self.first + turn) % count;
            let header = udp::header_len(self.locals[index]);
            while received < BATCH {
                let start = batch.used();
                let Some(room) = batch.buf.get_mut(start..start + header + SLOT_BYTES) else {
                    return Ok(());
                };
                let (len, peer) = match self.sockets[index].try_recv_from(&mut room[header..]) {
                    Ok(received) => received,
                    Err(error) if would_block(&error) => break,
                    // An ICMP error reported on the socket: nothing to read.
                    Err(error) => {
                        tracing::debug!(%error, "UDP receive failed");
                        break;
                    }
                };
                received += 1;
                let (to, checksum) = match self.as_travelled {
                    true => (self.source(index, peer), UdpChecksum::Computed),
                    false => (self.locals[index], UdpChecksum::Zero),
                };
                let room = &mut batch.buf[start..start + header + len];
                // A peer of the other family (an IPv4-mapped address on a
                // socket that also takes IPv4) has no packet here.
                if udp::write_headers(peer, to, 0, checksum, room).is_some() {
                    batch.push(start..start + header + len);
                }
            }
        }
        self.first = (self.first + 1) % count.max(1);
        Ok(())
    }

    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        for packet in packets {
            let Ok(datagram) = udp::read_headers(packet) else {
                self.unroutable += 1;
                continue;
            };
            let Some(index) = self.socket_of(datagram.src) else {
                self.unroutable += 1;
                continue;
            };
            let socket = &self.sockets[index];
            loop {
                match socket.try_send_to(datagram.payload, datagram.dst) {
                    Ok(_) => break,
                    // The kernel's buffer is full: wait for room.
                    Err(error) if would_block(&error) => {
                        socket.writable().await.map_err(NetError::io("UDP send failed"))?
                    }
                    Err(error) => {
                        tracing::debug!(peer = %datagram.dst, %error, "UDP send failed");
                        self.send_errors.set(error.to_string());
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn unroutable(&self) -> u64 {
        self.unroutable
    }
}
