use std::io;

use scps_proto::{ConnectionError, EndpointError};

/// What can go wrong in the driver or when opening a connection.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` failed: {message}")]
    Command { command: String, message: String },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("connection to {remote}: {source}")]
    Connection {
        remote: std::net::SocketAddr,
        #[source]
        source: ConnectionError,
    },
    #[error("no answer from {remote} within {waited:?}: the peer is unreachable or not listening")]
    ConnectTimedOut {
        remote: std::net::SocketAddr,
        waited: std::time::Duration,
    },
    #[error(transparent)]
    Capture(#[from] scps_pcap::CaptureError),
    /// A tap (the capture of `--pcap`) failed; the connections went on.
    #[error("{0}")]
    Tap(scps_node::TapError),
    #[error("the packet path failed: {0}")]
    PathFailed(String),
    #[error("the node has {interfaces} interfaces but {paths} paths were given: one path per interface")]
    InterfacesMismatch { interfaces: usize, paths: usize },
    #[error("no {interface} on the node: it has {interfaces} interfaces")]
    NoSuchInterface {
        interface: scps_node::InterfaceId,
        interfaces: usize,
    },
    #[error("the driver has stopped")]
    DriverStopped,
}

impl NetError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> NetError {
        let context = context.into();
        move |source| NetError::Io { context, source }
    }
}
