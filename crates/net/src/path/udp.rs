//! UDP encapsulation: each IP packet of the engine is the whole payload of
//! one UDP datagram (DESIGN.md "On the wire"). The inner packet keeps real
//! addresses: by default the outer ones, so that a capture of either reads
//! naturally.
//!
//! A path with a fixed peer sends everything there. A path without one (a
//! server) learns, from each datagram it receives, which outer address the
//! inner source address lives at, and answers there.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use scps_proto::wire::IpRepr;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::error::NetError;

/// Socket buffers large enough for a burst of a fast connection's window.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

#[derive(Debug)]
pub struct UdpPath {
    socket: UdpSocket,
    peer: Option<SocketAddr>,
    /// Inner source address -> the outer address it was last seen at.
    learned: HashMap<IpAddr, SocketAddr>,
    local_addrs: Vec<IpAddr>,
    unroutable: u64,
}

impl UdpPath {
    /// Binds `bind`; with `peer`, every packet goes there. The inner
    /// addresses of the endpoint are the bound address; if that is
    /// unspecified, the address the kernel picks towards `peer`, or without
    /// a peer every address of the host's interfaces.
    pub fn bind(bind: SocketAddr, peer: Option<SocketAddr>) -> Result<UdpPath, NetError> {
        let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))
            .map_err(NetError::io("cannot create a UDP socket"))?;
        // Best effort: the kernel caps these at net.core.[rw]mem_max.
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
        socket
            .bind(&bind.into())
            .map_err(NetError::io(format!("cannot bind UDP {bind}")))?;
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
            peer,
            learned: HashMap::new(),
            local_addrs,
            unroutable: 0,
        })
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

    pub(crate) fn unroutable(&self) -> u64 {
        self.unroutable
    }

    fn learn(&mut self, packet: &[u8], from: SocketAddr) {
        if self.peer.is_none()
            && let Ok((ip, _)) = IpRepr::parse(packet)
        {
            self.learned.insert(ip.src(), from);
        }
    }

    pub(crate) async fn recv(&mut self, buf: &mut [u8]) -> Result<usize, NetError> {
        let (n, from) = self
            .socket
            .recv_from(buf)
            .await
            .map_err(NetError::io("UDP receive failed"))?;
        self.learn(&buf[..n], from);
        Ok(n)
    }

    pub(crate) fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, NetError> {
        let (n, from) = self
            .socket
            .try_recv_from(buf)
            .map_err(NetError::io("UDP receive failed"))?;
        self.learn(&buf[..n], from);
        Ok(n)
    }

    pub(crate) async fn send(&mut self, packet: &[u8]) -> Result<(), NetError> {
        let to = match self.peer {
            Some(peer) => Some(peer),
            None => IpRepr::parse(packet)
                .ok()
                .and_then(|(ip, _)| self.learned.get(&ip.dst()).copied()),
        };
        let Some(to) = to else {
            self.unroutable += 1;
            return Ok(());
        };
        match self.socket.send_to(packet, to).await {
            Ok(_) => Ok(()),
            // ICMP errors from an earlier datagram surface on a later send;
            // the engine's retransmission timers deal with the loss, as
            // they would on a routed path.
            Err(err) if is_transient(&err) => Ok(()),
            Err(err) => Err(NetError::io(format!("UDP send to {to} failed"))(err)),
        }
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
fn route_source(bind: SocketAddr, peer: SocketAddr) -> Result<IpAddr, NetError> {
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
