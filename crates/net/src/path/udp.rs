//! UDP encapsulation: each IP packet of the engine is the whole payload of
//! one UDP datagram, followed by a CRC-32C of it (`frame_check.rs`;
//! docs/spec/README.md, "Carrying IP packets"). The inner packet keeps real
//! addresses: by default the outer ones, so that a capture of either reads
//! naturally.
//!
//! A path with a fixed peer sends everything there. A path without one (a
//! server) learns each connection's outer address from the datagrams the
//! endpoint takes as part of it, and answers there (`udp_peers`).
//!
//! Datagrams go out and come in several per system call: runs of
//! equal-sized packets to one peer are sent as one segmentation-offload
//! (GSO) send, and coalesced receives (GRO) are split back (quinn-udp).
//!
//! Between two gateways of ours the path is secured ([`UdpPath::secured`],
//! `secured.rs`): every datagram is sealed by the secure link, every one
//! that arrives is authenticated before anything reads it, and the peer
//! is the configured one or, without one, where the latest authenticated
//! datagram came from.

use std::io::IoSliceMut;
use std::net::{IpAddr, SocketAddr};

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};
use scps_proto::FourTuple;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use scps_secure::{Opened, Unsealed};

use super::batch::{RecvBatch, SLOT_BYTES, SLOTS};
use super::secured::{LinkSecurity, Secured, sleep_until};
use super::udp_peers::UdpPeers;
use super::{PacketPath, would_block};
use crate::error::NetError;
use crate::frame_check::{self, Checked, TRAILER_BYTES};

/// Socket buffers large enough for a burst of a fast connection's window.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

pub struct UdpPath {
    socket: UdpSocket,
    state: UdpSocketState,
    peer: Option<SocketAddr>,
    /// Without a fixed peer: where each connection's peer is.
    peers: UdpPeers,
    local_addrs: Vec<IpAddr>,
    unroutable: u64,
    /// Datagrams whose frame check failed, since the driver last asked.
    damaged: u64,
    /// Whether packets sent carry the frame check's trailer.
    frame_check: bool,
    /// Outer addresses reported unreachable (ICMP, through the socket's
    /// error queue) since the driver last asked; `None` for a report that
    /// names no address.
    unreachable: Vec<Option<IpAddr>>,
    /// Packets of one GSO send, back to back.
    gso_buf: Vec<u8>,
    /// The secure link that seals every datagram, between two gateways.
    secure: Option<Secured>,
    /// Secured without a fixed peer: where the latest authenticated
    /// datagram came from.
    learned_peer: Option<SocketAddr>,
    /// Plain, between two gateways: datagrams from anyone but the fixed
    /// peer are dropped unread, and counted here.
    strangers: Option<StrangerCount>,
}

/// Datagrams a plain path that takes its peer's alone dropped from others
/// ([`UdpPath::only_from_peer`]), from any task.
#[derive(Debug, Clone, Default)]
pub struct StrangerCount(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl StrangerCount {
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn add(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl std::fmt::Debug for UdpPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpPath")
            .field("socket", &self.socket)
            .field("peer", &self.peer)
            .field("local_addrs", &self.local_addrs)
            .finish()
    }
}

impl UdpPath {
    /// Binds `bind`; with `peer`, every packet goes there. The inner
    /// addresses of the endpoint are the bound address; if that is
    /// unspecified, the address the kernel picks towards `peer`, or without
    /// a peer every address of the host's interfaces.
    pub fn bind(bind: SocketAddr, peer: Option<SocketAddr>) -> Result<UdpPath, NetError> {
        let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))
            .map_err(NetError::io("cannot create a UDP socket"))?;
        socket
            .bind(&bind.into())
            .map_err(NetError::io(format!("cannot bind UDP {bind}")))?;
        let state = UdpSocketState::new(UdpSockRef::from(&socket))
            .map_err(NetError::io("cannot set up the UDP socket"))?;
        // Best effort: the kernel caps these at net.core.[rw]mem_max
        // unless we may exceed it (CAP_NET_ADMIN).
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER_BYTES);
        // ICMP errors about our datagrams, queued for `take_errors`: a
        // peer that is gone says so (best effort: without it, the
        // engine's timers find out).
        let _ = state.enable_transport_errors(UdpSockRef::from(&socket));
        let _ = nix::sys::socket::setsockopt(
            &socket,
            nix::sys::socket::sockopt::RcvBufForce,
            &SOCKET_BUFFER_BYTES,
        );
        let _ = nix::sys::socket::setsockopt(
            &socket,
            nix::sys::socket::sockopt::SndBufForce,
            &SOCKET_BUFFER_BYTES,
        );
        socket
            .set_nonblocking(true)
            .map_err(NetError::io("cannot make the UDP socket non-blocking"))?;
        let socket = UdpSocket::from_std(socket.into())
            .map_err(NetError::io("cannot register the UDP socket with the runtime"))?;
        let local_addrs = if !bind.ip().is_unspecified() {
            vec![bind.ip()]
        } else if let Some(peer) = peer {
            vec![route_source(bind, peer)?]
        } else {
            interface_addrs(bind.is_ipv4())?
        };
        Ok(UdpPath {
            socket,
            state,
            peer,
            peers: UdpPeers::default(),
            local_addrs,
            unroutable: 0,
            damaged: 0,
            frame_check: true,
            unreachable: Vec::new(),
            gso_buf: Vec::with_capacity(SLOT_BYTES),
            secure: None,
            learned_peer: None,
            strangers: None,
        })
    }

    /// Takes datagrams from the fixed peer alone, counting the others in
    /// `count` (a plain link between two gateways, which nothing
    /// authenticates: at least no one else on the network is heard).
    pub fn only_from_peer(mut self, count: StrangerCount) -> Result<UdpPath, NetError> {
        if self.peer.is_none() {
            return Err(NetError::PathFailed(
                "a path that takes its peer's datagrams alone needs a peer".into(),
            ));
        }
        self.strangers = Some(count);
        Ok(self)
    }

    /// Seals every datagram with the secure link to the far gateway, and
    /// takes only what it authenticates (docs/secure-link.md). The frame
    /// check's trailer is left out: the link's tag covers more.
    pub fn secured(mut self, security: LinkSecurity) -> Result<UdpPath, NetError> {
        self.secure = Some(Secured::new(security)?);
        self.frame_check = false;
        Ok(self)
    }

    /// Sends packets without the frame check's trailer, as the SCPS RI's
    /// UDP encapsulation does (datagrams received are checked either way:
    /// one without a trailer is taken as it is).
    pub fn without_frame_check(mut self) -> UdpPath {
        self.frame_check = false;
        self
    }

    /// Gives the packets inside the datagrams addresses of their own:
    /// the endpoint answers to `addrs` whatever the socket is bound to (a
    /// host behind a router of ours, or a gateway that keeps the
    /// applications' addresses across an encapsulated link).
    pub fn with_inner_addrs(mut self, addrs: Vec<IpAddr>) -> UdpPath {
        self.local_addrs = addrs;
        self
    }

    /// The bound socket address (with the port the kernel chose).
    pub fn local_addr(&self) -> Result<SocketAddr, NetError> {
        self.socket
            .local_addr()
            .map_err(NetError::io("cannot read the UDP socket's address"))
    }

    pub fn local_addrs(&self) -> &[IpAddr] {
        &self.local_addrs
    }

    /// Takes the socket's queued errors (before receiving or sending, as
    /// a pending one would otherwise fail that call), and clears the
    /// socket's error readiness once the queue is empty.
    /// Bytes each datagram adds to its packet.
    fn framing_bytes(&self) -> usize {
        if self.secure.is_some() {
            scps_secure::OVERHEAD
        } else if self.frame_check {
            TRAILER_BYTES
        } else {
            0
        }
    }

    fn take_errors(&mut self) {
        let (socket, state, unreachable) = (&self.socket, &self.state, &mut self.unreachable);
        // The one peer every packet goes to, if any: a report about it is
        // about every connection, whatever addresses the packets inside
        // carry (a transparent gateway's tunnel carries the applications').
        let sole_peer = self.peer.or(self.learned_peer.filter(|_| self.secure.is_some()));
        let _ = socket.try_io(Interest::ERROR, || {
            while let Some(error) = state.recv_transport_error(UdpSockRef::from(socket))? {
                if matches!(error.payload, quinn_udp::TransportErrorPayload::Unreachable) {
                    let about_the_sole_peer = sole_peer.is_some_and(|p| error.addr.is_none_or(|a| a == p));
                    let peer = error.addr.map(|addr| addr.ip()).filter(|_| !about_the_sole_peer);
                    unreachable.push(peer);
                }
            }
            Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
        });
    }

    fn destination(&self, packet: &[u8]) -> Option<SocketAddr> {
        if self.secure.is_some() {
            return self.peer.or(self.learned_peer);
        }
        self.peer.or_else(|| self.peers.destination(packet))
    }

    /// Reads what has arrived into `batch`: each datagram checked (its
    /// source, its seal or its frame check) before anything parses it.
    fn read_datagrams(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        batch.clear();
        self.take_errors();
        let mut meta = [RecvMeta::default(); SLOTS];
        let count = {
            let mut slices: Vec<IoSliceMut<'_>> =
                batch.buf.chunks_mut(SLOT_BYTES).map(IoSliceMut::new).collect();
            let (socket, state) = (&self.socket, &self.state);
            match socket.try_io(Interest::READABLE, || {
                state.recv(UdpSockRef::from(socket), &mut slices, &mut meta)
            }) {
                Ok(count) => count,
                Err(err) if would_block(&err) => return Ok(()),
                // An ICMP error for an earlier datagram: a loss the
                // engine recovers from, as on a routed path; the error
                // queue says which peer.
                Err(err) if is_transient(&err) => {
                    self.take_errors();
                    return Ok(());
                }
                Err(err) => return Err(NetError::io("UDP receive failed")(err)),
            }
        };
        for (slot, meta) in meta.iter().take(count).enumerate() {
            let base = slot * SLOT_BYTES;
            let stride = meta.stride.max(1);
            let mut start = 0;
            while start < meta.len {
                let end = (start + stride).min(meta.len);
                let datagram = base + start..base + end;
                if let Some(strangers) = self.strangers.as_ref().filter(|_| Some(meta.addr) != self.peer) {
                    strangers.add();
                } else if let Some(secure) = &mut self.secure {
                    match secure.open(&batch.buf[datagram.clone()]) {
                        Opened::Packet(packet) => {
                            // Shorter than its datagram, it takes the
                            // datagram's place.
                            let packet_end = datagram.start + packet.len();
                            batch.buf[datagram.start..packet_end].copy_from_slice(packet);
                            batch.push_from(datagram.start..packet_end, meta.addr);
                            self.learned_peer = Some(meta.addr);
                        }
                        Opened::Reply(answer) => {
                            let _ = self.socket.try_send_to(answer, meta.addr);
                        }
                        Opened::Control => self.learned_peer = Some(meta.addr),
                        Opened::Dropped(_) => {}
                    }
                } else {
                    match frame_check::check(&batch.buf[datagram.clone()]) {
                        Checked::Intact(packet) | Checked::Unchecked(packet) => {
                            batch.push_from(datagram.start..datagram.start + packet.len(), meta.addr);
                        }
                        Checked::Damaged => self.damaged += 1,
                    }
                }
                start = end;
            }
        }
        Ok(())
    }

    /// Sends the secure link's own datagrams (initiations, keepalives,
    /// packets it held for the first session) to the peer, if one is
    /// known: sent one by one, they are few.
    fn flush_secure(&mut self) {
        let Some(secure) = &mut self.secure else {
            return;
        };
        secure.handle_timeout();
        let peer = self.peer.or(self.learned_peer);
        while let Some(datagram) = secure.poll_transmit() {
            match peer {
                // A full socket loses it, as the link would: the link
                // repeats what it must.
                Some(to) => {
                    let _ = self.socket.try_send_to(&datagram, to);
                }
                None => self.unroutable += 1,
            }
        }
        secure.publish();
    }
}

fn is_transient(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionRefused | HostUnreachable | NetworkUnreachable | NetworkDown
    )
}

/// The source address the kernel would use to reach `peer`.
pub(super) fn route_source(bind: SocketAddr, peer: SocketAddr) -> Result<IpAddr, NetError> {
    let probe = std::net::UdpSocket::bind(SocketAddr::new(bind.ip(), 0))
        .map_err(NetError::io("cannot open a socket to find the route"))?;
    probe
        .connect(peer)
        .map_err(NetError::io(format!("no route to {peer}")))?;
    probe
        .local_addr()
        .map(|a| a.ip())
        .map_err(NetError::io(format!("no route to {peer}")))
}

/// Every address of the host's interfaces of one IP version.
fn interface_addrs(ipv4: bool) -> Result<Vec<IpAddr>, NetError> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| NetError::Io {
        context: "cannot list the interfaces' addresses".into(),
        source: e.into(),
    })?;
    Ok(addrs
        .filter_map(|ifaddr| {
            let addr = ifaddr.address?;
            if ipv4 {
                addr.as_sockaddr_in().map(|a| IpAddr::V4(a.ip()))
            } else {
                addr.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip()))
            }
        })
        .collect())
}

impl PacketPath for UdpPath {
    fn local_addrs(&self) -> Vec<IpAddr> {
        UdpPath::local_addrs(self).to_vec()
    }

    /// Waits until packets arrive (or a peer is reported unreachable).
    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        loop {
            let deadline = self.secure.as_ref().and_then(Secured::deadline);
            tokio::select! {
                // Queued errors (ICMP) are readiness of their own.
                ready = self.socket.ready(Interest::READABLE | Interest::ERROR) => {
                    ready.map_err(NetError::io("UDP receive failed"))?;
                }
                () = sleep_until(deadline) => {}
            }
            self.try_recv(batch)?;
            if !batch.is_empty() || !self.unreachable.is_empty() {
                return Ok(());
            }
        }
    }

    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        let read = self.read_datagrams(batch);
        // The secure link's timers run whether or not anything came (the
        // wake-up may be theirs alone: the first initiation at start, a
        // rekey on an idle link).
        self.flush_secure();
        read
    }

    /// Sends runs of packets to one destination as single GSO sends: all of
    /// a run's packets but the last have the size of the first (the
    /// kernel's rule for segmentation offload).
    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        // A pending error would fail (and lose) the first send.
        self.take_errors();
        if let Some(secure) = &mut self.secure
            && !secure.is_up()
        {
            // Kept for the first session, and sent with it.
            for packet in packets {
                secure.seal(packet, &mut Vec::new(), Unsealed::Hold);
            }
            self.flush_secure();
            return Ok(());
        }
        let max_segments = self.state.max_gso_segments().max(1);
        let mut i = 0;
        // The destination of `packets[i]` when the run before it already
        // looked it up (each packet's is looked up once).
        let mut known = None;
        while i < packets.len() {
            let destination = known.take().unwrap_or_else(|| self.destination(&packets[i]));
            let Some(to) = destination else {
                self.unroutable += 1;
                i += 1;
                continue;
            };
            let size = packets[i].len();
            let segment = size + self.framing_bytes();
            let mut end = i + 1;
            while end < packets.len()
                && end - i < max_segments
                && packets[end - 1].len() == size
                && packets[end].len() <= size
                && (end - i + 1) * segment <= SLOT_BYTES
            {
                let next = self.destination(&packets[end]);
                if next != Some(to) {
                    known = Some(next);
                    break;
                }
                end += 1;
            }
            self.gso_buf.clear();
            for packet in &packets[i..end] {
                if let Some(secure) = &mut self.secure {
                    // Up (checked above): it seals.
                    secure.seal(packet, &mut self.gso_buf, Unsealed::Drop);
                } else if self.frame_check {
                    frame_check::append(packet, &mut self.gso_buf);
                } else {
                    self.gso_buf.extend_from_slice(packet);
                }
            }
            let transmit = Transmit {
                destination: to,
                ecn: None,
                contents: &self.gso_buf,
                segment_size: (end - i > 1).then_some(segment),
                src_ip: None,
            };
            let (socket, state) = (&self.socket, &self.state);
            let sent = socket
                .async_io(Interest::WRITABLE, || {
                    state.try_send(UdpSockRef::from(socket), &transmit)
                })
                .await;
            match sent {
                Ok(()) => {}
                // ICMP errors from an earlier datagram surface on a later
                // send; the engine's timers deal with the loss, the error
                // queue says which peer.
                Err(err) if is_transient(&err) => self.take_errors(),
                Err(err) => return Err(NetError::io(format!("UDP send to {to} failed"))(err)),
            }
            i = end;
        }
        self.flush_secure();
        Ok(())
    }

    /// The endpoint has handled `packet`, which came from `source`: learn
    /// where its connection's peer is, or where its answer goes (a secured
    /// path has one peer for everything).
    fn heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: impl Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        if self.peer.is_none() && self.secure.is_none() {
            self.peers.learn(packet, source, is_connection, answered);
        }
    }

    /// Forgets the peers of connections that are gone.
    fn forget_closed(&mut self, is_connection: impl Fn(&FourTuple) -> bool) {
        self.peers.forget(is_connection);
    }

    /// The peers reported unreachable since the last call, as the inner
    /// addresses of the connections to them (`None`: every connection,
    /// on a path with one fixed peer).
    fn take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        let reports = std::mem::take(&mut self.unreachable);
        if reports.is_empty() {
            return Vec::new();
        }
        if self.peer.is_some() {
            return vec![None];
        }
        let mut remotes: Vec<Option<IpAddr>> = reports
            .into_iter()
            .flatten()
            .flat_map(|outer| self.peers.remotes_at(outer))
            .map(Some)
            .collect();
        remotes.sort();
        remotes.dedup();
        remotes
    }

    /// Datagrams dropped for a failed frame check since the last call.
    fn take_damaged(&mut self) -> u64 {
        std::mem::take(&mut self.damaged)
    }

    /// Peers held for answering (connections and recent strays).
    fn peers_held(&self) -> usize {
        self.peers.len()
    }

    fn unroutable(&self) -> u64 {
        self.unroutable
    }
}
