//! A receiver's listeners on either stack, accepting connections as one
//! [`Conn`] type.

use anyhow::{Context, bail};
use scps_net::Listener;
use scps_proto::config::Keepalive;
use tokio::net::TcpListener;

use crate::conn::Conn;
use crate::kernel;

#[derive(Debug)]
pub enum Acceptor {
    /// Our stack's listeners, one per address family it has addresses of.
    Ours(Vec<Listener>),
    Kernel {
        listener: TcpListener,
        keepalive: Keepalive,
    },
}

impl Acceptor {
    /// The port connections are accepted on (the one the system chose, for
    /// kernel TCP and port 0).
    pub fn port(&self) -> u16 {
        match self {
            Acceptor::Ours(listeners) => listeners.first().map_or(0, |l| l.local_addr().port()),
            Acceptor::Kernel { listener, .. } => listener.local_addr().map_or(0, |a| a.port()),
        }
    }

    pub async fn accept(&self) -> anyhow::Result<Conn> {
        match self {
            Acceptor::Ours(listeners) => {
                let stream = match listeners.as_slice() {
                    [one] => one.accept().await?,
                    [v4, v6] => tokio::select! {
                        s = v4.accept() => s?,
                        s = v6.accept() => s?,
                    },
                    _ => bail!("the stack has no address to listen on"),
                };
                Ok(Conn::Scps(stream))
            }
            Acceptor::Kernel { listener, keepalive } => {
                let (stream, _) = listener.accept().await.context("accepting a TCP connection")?;
                kernel::keepalive(&stream, *keepalive)?;
                Ok(Conn::Tcp(stream))
            }
        }
    }
}
