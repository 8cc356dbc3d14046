//! Kernel sockets that stand in for other hosts (`IP_TRANSPARENT`): the
//! listener TPROXY hands intercepted connections to, whose accepted
//! sockets have the address the client dialled as their local address,
//! and connections opened from a client's address to a server.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use scps_relay::routes::Family;

/// Connections waiting to be accepted.
const BACKLOG: i32 = 1024;

fn transparent_socket(domain: Domain) -> io::Result<Socket> {
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    if domain == Domain::IPV6 {
        // IPv4 has a listener of its own: no mapped addresses here.
        socket.set_only_v6(true)?;
        socket.set_ip_transparent_v6(true)?;
    } else {
        socket.set_ip_transparent_v4(true)?;
    }
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Whether this process may open transparent sockets (`CAP_NET_ADMIN`):
/// checked on start, so that a gateway without the right fails at once,
/// naming it, instead of on its first connection.
pub fn check_transparent() -> io::Result<()> {
    transparent_socket(Domain::IPV4).map(drop)
}

/// The interception listener of `family`, on every address at `port`.
pub fn intercepting_listener(family: Family, port: u16) -> io::Result<TcpListener> {
    let (domain, any) = match family {
        Family::V4 => (Domain::IPV4, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        Family::V6 => (Domain::IPV6, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
    };
    let socket = transparent_socket(domain)?;
    socket.set_reuse_address(true)?;
    socket.bind(&SocketAddr::new(any, port).into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

/// Opens kernel TCP from `local` (any address, a client's: a port the
/// kernel picks) to `remote`.
pub async fn connect_from(local: IpAddr, remote: SocketAddr) -> io::Result<TcpStream> {
    let socket = transparent_socket(Domain::for_address(remote))?;
    socket.bind(&SocketAddr::new(local, 0).into())?;
    let socket = TcpSocket::from_std_stream(socket.into());
    let stream = socket.connect(remote).await?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
