//! A connection of either stack, as one type: ours (`scps_net::Stream`) or
//! the kernel's (`tokio::net::TcpStream`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use scps_net::tcp_info::{TcpInfoError, tcp_info};
use scps_workload::report::{ConnectionFigures, Repairs};

#[derive(Debug)]
pub enum Conn {
    Scps(scps_net::Stream),
    Tcp(TcpStream),
}

/// Resets a connection from outside the task that uses it (Ctrl-C), or
/// reads how far it got.
#[derive(Debug)]
pub enum Abort {
    Scps(scps_net::AbortHandle),
    /// A duplicate of the kernel socket: with a zero linger time, closing
    /// the last descriptor sends a reset.
    Tcp(socket2::Socket),
}

impl Abort {
    /// Bytes the peer has acknowledged, while the connection is known:
    /// our stack's count, or the kernel's (`tcpi_bytes_acked`).
    pub fn bytes_acked(&self) -> Option<u64> {
        match self {
            Abort::Scps(handle) => handle.stats().map(|s| s.bytes_acked),
            Abort::Tcp(socket) => {
                let local = socket.local_addr().ok()?.as_socket()?;
                let peer = socket.peer_addr().ok()?.as_socket()?;
                tcp_info(local, peer).ok().map(|info| info.bytes_acked)
            }
        }
    }

    pub fn abort(self) {
        match self {
            Abort::Scps(handle) => handle.abort(),
            Abort::Tcp(socket) => {
                let _ = socket.set_linger(Some(std::time::Duration::ZERO));
            }
        }
    }
}

impl Conn {
    /// What the connection did, for its report.
    pub fn figures(&self) -> ConnectionFigures {
        let stats = self.stats();
        ConnectionFigures {
            repairs: self.repairs(),
            retransmitted_bytes: self.retransmitted_bytes(),
            scps: self.scps(),
            header_compression: self.header_compression(),
            pacing_rate_bps: stats.as_ref().and_then(|s| s.pacing_rate_bps),
            path_rate_bps: stats.as_ref().and_then(|s| s.path_rate_bps),
        }
    }

    /// Our stack's connection's statistics (none for kernel TCP).
    fn stats(&self) -> Option<scps_proto::ConnectionStats> {
        match self {
            Conn::Scps(stream) => stream.stats(),
            Conn::Tcp(_) => None,
        }
    }

    pub fn abort_handle(&self) -> io::Result<Abort> {
        Ok(match self {
            Conn::Scps(stream) => Abort::Scps(stream.abort_handle()),
            Conn::Tcp(stream) => Abort::Tcp(socket2::SockRef::from(stream).try_clone()?),
        })
    }

    /// How our stack's connection repaired losses: data bytes sent again,
    /// retransmission timeouts and fast recoveries (not known for kernel
    /// TCP, whose retransmitted bytes [`Conn::retransmitted_bytes`] asks
    /// the kernel for).
    pub fn repairs(&self) -> Option<Repairs> {
        self.stats().map(|s| Repairs {
            retransmitted_bytes: s.bytes_retransmitted,
            timeouts: s.timeouts,
            fast_recoveries: s.fast_recoveries,
        })
    }

    /// Sends each write at once (TCP_NODELAY on the kernel's socket,
    /// Nagle's algorithm off in ours), or holds small ones back while one
    /// is unacknowledged.
    pub fn set_nodelay(&self, nodelay: bool) -> anyhow::Result<()> {
        match self {
            Conn::Scps(stream) => stream.set_nodelay(nodelay)?,
            Conn::Tcp(stream) => stream.set_nodelay(nodelay)?,
        }
        Ok(())
    }

    /// Data bytes sent again: our stack's count, or the kernel's
    /// (`tcpi_bytes_retrans`; unknown, with a warning, if the kernel does
    /// not say).
    pub fn retransmitted_bytes(&self) -> Option<u64> {
        match self {
            Conn::Scps(_) => self.stats().map(|s| s.bytes_retransmitted),
            Conn::Tcp(stream) => {
                let info = stream
                    .local_addr()
                    .and_then(|local| Ok((local, stream.peer_addr()?)))
                    .map_err(TcpInfoError::from)
                    .and_then(|(local, peer)| tcp_info(local, peer));
                match info {
                    Ok(info) => Some(info.bytes_retrans),
                    Err(err) => {
                        eprintln!("scps: the kernel's retransmitted bytes are not known: {err}");
                        None
                    }
                }
            }
        }
    }

    /// Whether SCPS-TP was negotiated (not known for kernel TCP, which
    /// never speaks it).
    pub fn scps(&self) -> Option<bool> {
        self.stats().map(|s| s.scps)
    }

    /// Whether header compression was negotiated (not known for kernel
    /// TCP).
    pub fn header_compression(&self) -> Option<bool> {
        self.stats().map(|s| s.header_compression)
    }

    pub fn peer(&self) -> String {
        match self {
            Conn::Scps(stream) => stream.peer_addr().to_string(),
            Conn::Tcp(stream) => stream.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Scps(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tcp(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Scps(s) => Pin::new(s).poll_write(cx, data),
            Conn::Tcp(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Scps(s) => Pin::new(s).poll_flush(cx),
            Conn::Tcp(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Scps(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tcp(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
