//! The Saratoga engine hosted over real UDP sockets, in one task: it
//! sleeps until a datagram comes, the engine's next wake-up is due or a
//! socket that was full can take more (never polling on a timer of its
//! own), and hands the engine's events to its caller one at a time.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::task::Poll;

use anyhow::Context;
use scps_node::Instant;
use scps_saratoga::engine::{Engine, Event, Store};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::capture::{PacketCapture, source_towards};

/// Socket buffers that hold a burst of a fast transfer (the kernel may
/// cap them at net.core.rmem_max and wmem_max).
const SOCKET_BUFFER_BYTES: usize = 8 << 20;
/// Datagrams sent, or received, in a row before the other direction gets
/// its turn: a sender at line rate still hears its peer's STATUS.
const BATCH: usize = 64;
/// Larger than any datagram UDP can carry.
const RECEIVE_BUFFER: usize = 65536;

pub struct Host<S: Store> {
    engine: Engine<S>,
    sockets: Vec<UdpSocket>,
    locals: Vec<SocketAddr>,
    /// The socket each peer was last heard on, to answer it from there.
    routes: HashMap<SocketAddr, usize>,
    /// A datagram the kernel had no room for, kept until it has.
    pending: Option<(usize, SocketAddr, Vec<u8>)>,
    /// The engine's clock starts with the host.
    start: std::time::Instant,
    buf: Vec<u8>,
    capture: Option<PacketCapture>,
    /// Where the capture says our packets to each peer come from.
    sources: HashMap<(usize, SocketAddr), SocketAddr>,
    /// The last error a send met (an unreachable network, say), for the
    /// message of a transfer that then times out.
    pub last_send_error: Option<std::io::Error>,
}

impl<S: Store> std::fmt::Debug for Host<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("locals", &self.locals).finish()
    }
}

/// A UDP socket bound to `addr`, with large buffers; an IPv6 one only
/// for IPv6, so that `0.0.0.0:7542` and `[::]:7542` can both be served.
/// Must be called inside the runtime.
pub fn bind(addr: SocketAddr) -> anyhow::Result<UdpSocket> {
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
    UdpSocket::from_std(socket.into()).with_context(context)
}

impl<S: Store> Host<S> {
    /// Must be called inside the runtime.
    pub fn new(
        engine: Engine<S>,
        binds: &[SocketAddr],
        capture: Option<PacketCapture>,
    ) -> anyhow::Result<Host<S>> {
        let sockets = binds
            .iter()
            .map(|addr| bind(*addr))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Host::over(engine, sockets, capture)
    }

    /// The engine over sockets already bound (with [`bind`]).
    pub fn over(
        engine: Engine<S>,
        sockets: Vec<UdpSocket>,
        capture: Option<PacketCapture>,
    ) -> anyhow::Result<Host<S>> {
        let locals = sockets
            .iter()
            .map(|s| s.local_addr().context("the socket's address"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Host {
            engine,
            sockets,
            locals,
            routes: HashMap::new(),
            pending: None,
            start: std::time::Instant::now(),
            buf: vec![0; RECEIVE_BUFFER],
            capture,
            sources: HashMap::new(),
            last_send_error: None,
        })
    }

    /// The addresses bound (with the ports the system chose).
    pub fn locals(&self) -> &[SocketAddr] {
        &self.locals
    }

    pub fn now(&self) -> Instant {
        Instant::from_duration(self.start.elapsed())
    }

    pub fn engine(&self) -> &Engine<S> {
        &self.engine
    }

    pub fn engine_mut(&mut self) -> &mut Engine<S> {
        &mut self.engine
    }

    /// Sends what the engine has queued now (a client's last STATUS,
    /// which its peer needs to finish too), then writes out the capture.
    pub fn finish(mut self) -> anyhow::Result<()> {
        let now = self.now();
        self.transmit(now)?;
        if let Some(capture) = self.capture {
            capture.finish()?;
        }
        Ok(())
    }

    /// Runs the engine until it has an event, which is returned; `None`
    /// when `stop` (Ctrl-C) came first.
    pub async fn next_event(
        &mut self,
        stop: &mut tokio::signal::unix::Signal,
    ) -> anyhow::Result<Option<Event>> {
        loop {
            if let Some(event) = self.engine.poll_event() {
                return Ok(Some(event));
            }
            let now = self.now();
            if self.engine.poll_timeout().is_some_and(|at| at <= now) {
                self.engine.handle_timeout(now);
            }
            let more_to_send = self.transmit(now)?;
            let received = self.receive_ready()?;
            if more_to_send || received > 0 || self.engine.poll_timeout().is_some_and(|at| at <= now) {
                continue;
            }
            // What the timers and sends just did may have ended a transfer.
            if let Some(event) = self.engine.poll_event() {
                return Ok(Some(event));
            }
            // Nothing due: sleep until something is.
            let wake = match &self.pending {
                // A full socket first: the engine's timers would find its
                // turn taken.
                Some(_) => None,
                None => self
                    .engine
                    .poll_timeout()
                    .map(|at| tokio::time::Instant::from_std(self.start + at.as_duration())),
            };
            let woken = {
                let Host {
                    sockets,
                    buf,
                    pending,
                    ..
                } = &mut *self;
                let full = pending.as_ref().map(|(index, _, _)| &sockets[*index]);
                tokio::select! {
                    _ = stop.recv() => Woken::Stop,
                    (index, from, len) = std::future::poll_fn(|cx| poll_receive(sockets, buf, cx)) => {
                        Woken::Datagram(index, from, len)
                    }
                    _ = async {
                        match full {
                            Some(socket) => socket.writable().await,
                            None => std::future::pending().await,
                        }
                    } => Woken::Writable,
                    _ = async {
                        match wake {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    } => Woken::Timer,
                }
            };
            match woken {
                Woken::Stop => return Ok(None),
                Woken::Datagram(index, from, len) => self.deliver(index, from, len)?,
                Woken::Writable | Woken::Timer => {}
            }
        }
    }

    /// Sends what the engine has due, at most a batch; whether more may be.
    fn transmit(&mut self, now: Instant) -> anyhow::Result<bool> {
        if let Some((index, peer, bytes)) = self.pending.take()
            && !self.send(index, peer, bytes)?
        {
            return Ok(false);
        }
        for _ in 0..BATCH {
            let Some((peer, bytes)) = self.engine.poll_transmit(now) else {
                return Ok(false);
            };
            let index = self.socket_for(peer);
            if !self.send(index, peer, bytes)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn socket_for(&self, peer: SocketAddr) -> usize {
        self.routes.get(&peer).copied().unwrap_or_else(|| {
            // A peer not heard yet: the first socket of its family.
            self.locals
                .iter()
                .position(|local| local.is_ipv4() == peer.is_ipv4())
                .unwrap_or(0)
        })
    }

    /// Sends one datagram; false when the socket is full (it is kept).
    /// Other errors (no route, say) lose the datagram, as the network
    /// would: the engine re-sends.
    fn send(&mut self, index: usize, peer: SocketAddr, bytes: Vec<u8>) -> anyhow::Result<bool> {
        match self.sockets[index].try_send_to(&bytes, peer) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                self.pending = Some((index, peer, bytes));
                return Ok(false);
            }
            Err(error) => {
                tracing::debug!(%peer, %error, "saratoga: send failed");
                self.last_send_error = Some(error);
                return Ok(true);
            }
        }
        if self.capture.is_some() {
            let src = self.source(index, peer);
            if let Some(capture) = &mut self.capture {
                capture.record(src, peer, &bytes)?;
            }
        }
        Ok(true)
    }

    fn source(&mut self, index: usize, peer: SocketAddr) -> SocketAddr {
        let local = self.locals[index];
        *self
            .sources
            .entry((index, peer))
            .or_insert_with(|| source_towards(local, peer))
    }

    /// Hands the engine what has arrived, without waiting; how many.
    fn receive_ready(&mut self) -> anyhow::Result<usize> {
        let mut received = 0;
        for index in 0..self.sockets.len() {
            while received < BATCH {
                match self.sockets[index].try_recv_from(&mut self.buf) {
                    Ok((len, from)) => {
                        self.deliver(index, from, len)?;
                        received += 1;
                    }
                    Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                    // An ICMP error reported on the socket: nothing to read.
                    Err(error) => {
                        tracing::debug!(%error, "saratoga: receive failed");
                        break;
                    }
                }
            }
        }
        Ok(received)
    }

    fn deliver(&mut self, index: usize, from: SocketAddr, len: usize) -> anyhow::Result<()> {
        self.routes.insert(from, index);
        if self.capture.is_some() {
            let dst = self.source(index, from);
            if let Some(capture) = &mut self.capture {
                capture.record(from, dst, &self.buf[..len])?;
            }
        }
        let now = self.now();
        self.engine.handle_datagram(now, from, &self.buf[..len]);
        Ok(())
    }
}

enum Woken {
    Stop,
    Datagram(usize, SocketAddr, usize),
    Writable,
    Timer,
}

/// The first datagram any of `sockets` has, as (socket, sender, length).
/// Receive errors (ICMP reports) are skipped.
fn poll_receive(
    sockets: &[UdpSocket],
    buf: &mut [u8],
    cx: &mut std::task::Context<'_>,
) -> Poll<(usize, SocketAddr, usize)> {
    for (index, socket) in sockets.iter().enumerate() {
        loop {
            let mut read = tokio::io::ReadBuf::new(buf);
            match socket.poll_recv_from(cx, &mut read) {
                Poll::Ready(Ok(from)) => return Poll::Ready((index, from, read.filled().len())),
                Poll::Ready(Err(_)) => continue,
                Poll::Pending => break,
            }
        }
    }
    Poll::Pending
}
