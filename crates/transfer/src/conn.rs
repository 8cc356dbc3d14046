//! A connection of either stack, as one type: ours (`scps_net::Stream`) or
//! the kernel's (`tokio::net::TcpStream`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use scps_net::tcp_info::{TcpInfoError, tcp_info};
use scps_workload::report::{ConnectionFigures, Repairs};

use crate::{News, Tell};

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
    /// What the connection did, for its report: our stack's connection
    /// tells it all in one read of its statistics; kernel TCP only its
    /// retransmitted bytes, and `tell` why if it cannot.
    pub fn figures(&self, tell: &Tell) -> ConnectionFigures {
        let stream = match self {
            Conn::Scps(stream) => stream,
            Conn::Tcp(stream) => {
                return ConnectionFigures {
                    retransmitted_bytes: kernel_retransmitted_bytes(stream, tell),
                    ..ConnectionFigures::default()
                };
            }
        };
        let Some(stats) = stream.stats() else {
            return ConnectionFigures::default();
        };
        ConnectionFigures {
            repairs: Some(Repairs {
                retransmitted_bytes: stats.bytes_retransmitted,
                timeouts: stats.timeouts,
                fast_recoveries: stats.fast_recoveries,
            }),
            retransmitted_bytes: Some(stats.bytes_retransmitted),
            scps: Some(stats.scps),
            header_compression: Some(stats.header_compression),
            pacing_rate_bps: stats.pacing_rate_bps,
            path_rate_bps: stats.path_rate_bps,
        }
    }

    pub fn abort_handle(&self) -> io::Result<Abort> {
        Ok(match self {
            Conn::Scps(stream) => Abort::Scps(stream.abort_handle()),
            Conn::Tcp(stream) => Abort::Tcp(socket2::SockRef::from(stream).try_clone()?),
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

/// The kernel's count of a connection's data bytes sent again
/// (`tcpi_bytes_retrans`; unknown, told why, if the kernel does not say).
fn kernel_retransmitted_bytes(stream: &TcpStream, tell: &Tell) -> Option<u64> {
    let info = stream
        .local_addr()
        .and_then(|local| Ok((local, stream.peer_addr()?)))
        .map_err(TcpInfoError::from)
        .and_then(|(local, peer)| tcp_info(local, peer));
    match info {
        Ok(info) => Some(info.bytes_retrans),
        Err(err) => {
            tell(News::Unknown(format!(
                "the kernel's retransmitted bytes are not known: {err}"
            )));
            None
        }
    }
}
