//! The kernel's TCP as the stack of a transfer: its sockets set up as our
//! stack's connections are (keepalive, a user timeout, the congestion
//! control asked for).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use scps_proto::config::Keepalive;
use tokio::net::{TcpListener, TcpStream};

use crate::kernel_congestion;

#[derive(Debug)]
pub struct Kernel {
    pub connect_timeout: Duration,
    pub keepalive: Keepalive,
    /// The congestion controller (the system's default if none).
    pub congestion: Option<String>,
    pub backlog: u16,
}

impl Kernel {
    pub async fn connect(&self, to: SocketAddr) -> anyhow::Result<TcpStream> {
        let socket = if to.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .context("cannot create a TCP socket")?;
        if let Some(name) = &self.congestion {
            kernel_congestion::set(&socket2::SockRef::from(&socket), name)?;
        }
        let connect_timeout = self.connect_timeout;
        let stream = tokio::time::timeout(connect_timeout, socket.connect(to))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "no answer from {to} within {connect_timeout:?}: the peer is unreachable or not listening"
                )
            })?
            .with_context(|| format!("cannot connect to {to}"))?;
        keepalive(&stream, self.keepalive)?;
        Ok(stream)
    }

    /// A listener on `port` of every address, IPv6 and IPv4.
    pub fn listen(&self, port: u16) -> anyhow::Result<TcpListener> {
        // IPv6 unspecified also takes IPv4 (as mapped addresses) unless
        // the host has set bindv6only; a host without IPv6 gets IPv4
        // only.
        let (socket, addr) = match socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None) {
            Ok(socket) => {
                socket.set_only_v6(false).ok();
                (socket, SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port))
            }
            Err(_) => (
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .context("cannot create a TCP socket")?,
                SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
            ),
        };
        socket.set_reuse_address(true).ok();
        // Accepted connections inherit the listener's controller.
        if let Some(name) = &self.congestion {
            kernel_congestion::set(&socket2::SockRef::from(&socket), name)?;
        }
        socket
            .bind(&addr.into())
            .with_context(|| format!("cannot listen on TCP port {port}"))?;
        socket
            .listen(i32::from(self.backlog))
            .with_context(|| format!("cannot listen on TCP port {port}"))?;
        socket.set_nonblocking(true)?;
        Ok(TcpListener::from_std(socket.into())?)
    }
}

/// Keepalive on a kernel socket, as on ours, and the same user timeout
/// (TCP_USER_TIMEOUT): a transfer without progress is given up as soon as
/// a silent idle peer would be.
pub fn keepalive(stream: &TcpStream, keepalive: Keepalive) -> anyhow::Result<()> {
    let socket = socket2::SockRef::from(stream);
    socket
        .set_tcp_user_timeout(Some(keepalive.silence_kept()))
        .context("cannot set TCP_USER_TIMEOUT")?;
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(keepalive.idle)
        .with_interval(keepalive.interval)
        .with_retries(keepalive.probes);
    socket
        .set_tcp_keepalive(&keepalive)
        .context("cannot set TCP keepalive")
}
