//! The Saratoga engine on kernel UDP sockets: the node the simulator runs
//! (`scps_saratoga::node::SaratogaNode`) hosted by `scps_net::NodeHost`
//! like every other node, over one path of IP/UDP packets that is the
//! sockets (`scps_net::UdpSocketsPath`). The driver sleeps until a
//! datagram comes, the engine's next wake-up is due or a socket that was
//! full can take more; the engine's events are handed to the caller one
//! at a time.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use scps_net::{HostOptions, NodeHost, SendErrors, UdpSocketsPath};
use scps_node::{Instant, InterfaceId};
use scps_saratoga::engine::{Engine, Event, Store};
use scps_saratoga::node::SaratogaNode;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::signal::unix::Signal;

/// Socket buffers that hold a burst of a fast transfer (the kernel may
/// cap them at net.core.rmem_max and wmem_max).
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

pub struct Host<S: Store> {
    host: NodeHost<SaratogaNode<S>>,
    locals: Vec<SocketAddr>,
    send_errors: SendErrors,
}

impl<S: Store> std::fmt::Debug for Host<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("locals", &self.locals).finish()
    }
}

/// A UDP socket bound to `addr`, with large buffers and non-blocking; an
/// IPv6 one only for IPv6, so that `0.0.0.0:7542` and `[::]:7542` can
/// both be served.
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::UdpSocket> {
    let context = || format!("cannot listen on UDP {addr}");
    let socket =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).with_context(context)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true).with_context(context)?;
    }
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    socket.set_nonblocking(true).with_context(context)?;
    socket.bind(&addr.into()).with_context(context)?;
    Ok(socket.into())
}

impl<S: Store + Send + 'static> Host<S> {
    /// Starts `engine` on sockets bound to `binds` (with [`bind`]). Must
    /// be called inside the runtime.
    pub fn new(engine: Engine<S>, binds: &[SocketAddr], pcap: Option<&Path>) -> anyhow::Result<Host<S>> {
        let sockets = binds
            .iter()
            .map(|addr| bind(*addr))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Host::over(engine, sockets, None, pcap)
    }

    /// Starts `engine` on sockets already bound (with [`bind`]), every
    /// datagram in and out written to `pcap` if given. With a capture and
    /// `peer`, the peer the engine talks to first, the node sends to it
    /// from the address the kernel sends from, not a socket's wildcard,
    /// before it has heard from it, so that the capture shows real
    /// addresses from the first datagram. Must be called inside the
    /// runtime.
    pub fn over(
        engine: Engine<S>,
        sockets: Vec<std::net::UdpSocket>,
        peer: Option<SocketAddr>,
        pcap: Option<&Path>,
    ) -> anyhow::Result<Host<S>> {
        let mut path = UdpSocketsPath::new(sockets)?;
        let locals = path.locals().to_vec();
        let mut answering = locals.clone();
        if pcap.is_some()
            && let Some(towards) = peer.and_then(|peer| path.address_towards(peer))
            && !answering.contains(&towards)
        {
            // First of its family: where a peer not heard yet is sent
            // from, as a capture shows it.
            answering.insert(0, towards);
        }
        let node = SaratogaNode::hosting(engine, answering);
        // Nothing shows the packets between the node and the sockets
        // without a capture: they go without what only a capture needs,
        // on both sides of the path at once.
        let (path, node) = match pcap {
            None => (path.uncaptured(), node.without_checksums()),
            Some(_) => (path, node),
        };
        let send_errors = path.send_errors();
        let options = HostOptions {
            captures: pcap
                .map(|file| (InterfaceId(0), file.to_owned()))
                .into_iter()
                .collect(),
        };
        let host = NodeHost::start(node, vec![Box::new(path)], options)?;
        Ok(Host {
            host,
            locals,
            send_errors,
        })
    }

    /// The addresses bound (with the ports the system chose).
    pub fn locals(&self) -> &[SocketAddr] {
        &self.locals
    }

    /// Runs `f` on the engine, at the instant it is at now.
    pub fn with<R>(&self, f: impl FnOnce(&mut Engine<S>, Instant) -> R) -> R {
        let now = self.host.now();
        self.host.with(|node| f(node.engine_mut(), now))
    }

    /// The last error a send met (an unreachable network, say), for the
    /// message of a transfer that then times out.
    pub fn last_send_error(&self) -> Option<String> {
        self.send_errors.last()
    }

    /// The engine's next event; `None` when `stop` (Ctrl-C) came first.
    pub async fn next_event(&self, stop: &mut Signal) -> anyhow::Result<Option<Event>> {
        tokio::select! {
            _ = stop.recv() => Ok(None),
            event = self.host.wait_for(|node| node.engine_mut().poll_event()) => Ok(Some(event?)),
        }
    }

    /// Sends what the engine has queued now (a client's last STATUS,
    /// which its peer needs to finish too), then writes out the capture.
    pub async fn finish(self) -> anyhow::Result<()> {
        self.host.stop().await?;
        Ok(())
    }
}
