//! Connections and listeners for applications: a [`Stream`] is a
//! byte stream like `tokio::net::TcpStream` (AsyncRead and AsyncWrite), a
//! [`Listener`] hands out the connections made to one address.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use scps_proto::{ConnectionError, ConnectionHandle, ConnectionStats, StreamError};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::NetError;
use crate::shared::Shared;

/// One connection of the endpoint. Dropping it closes the connection:
/// gracefully if everything received was read (a FIN follows the data
/// written), with a reset otherwise (RFC 9293 3.10.4).
#[derive(Debug)]
pub struct Stream {
    shared: Arc<Shared>,
    handle: ConnectionHandle,
    local: SocketAddr,
    peer: SocketAddr,
    /// The connection's figures as they were when this was dropped, for
    /// its abort handles: a connection reset or closed is soon gone from
    /// the endpoint, and a watcher still wants its last count.
    last_stats: Arc<std::sync::Mutex<Option<ConnectionStats>>>,
}

impl Stream {
    pub(crate) fn new(shared: Arc<Shared>, handle: ConnectionHandle) -> Stream {
        let (local, peer) = {
            let mut state = shared.lock();
            state.track(handle);
            let tuple = state.endpoint.connection(handle).map(|c| c.tuple());
            let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
            tuple.map_or((unspecified, unspecified), |t| (t.local, t.remote))
        };
        Stream {
            shared,
            handle,
            local,
            peer,
            last_stats: Arc::default(),
        }
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// The connection's counters and estimates, while it exists.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.shared.lock().endpoint.stats_of(self.handle)
    }

    /// Sends each write at once instead of holding small ones back while
    /// one is unacknowledged (Nagle's algorithm, RFC 9293 3.7.4), like
    /// `TcpStream::set_nodelay`: for applications of small messages.
    pub fn set_nodelay(&self, nodelay: bool) -> Result<(), NetError> {
        let mut state = self.shared.lock();
        state.endpoint.set_nagle(self.handle, !nodelay)?;
        state.dispatch_events();
        drop(state);
        // Data Nagle held may go now.
        self.shared.wake_driver.notify_one();
        Ok(())
    }

    /// Whether Nagle's algorithm is off (see [`Stream::set_nodelay`]).
    pub fn nodelay(&self) -> bool {
        let state = self.shared.lock();
        state
            .endpoint
            .connection(self.handle)
            .is_some_and(|c| !c.config().nagle)
    }

    /// Writes all of `data` as one record: the peer's
    /// [`Stream::read_record`] sees its end (option kind 22,
    /// docs/spec/scps-tp-options.md). A record needs SCPS-TP at neither end: the option is not
    /// negotiated, and a peer that does not know it reads a plain stream.
    /// A record holds at least one byte: an empty `data` writes nothing.
    pub async fn write_record(&mut self, data: &[u8]) -> io::Result<()> {
        let mut written = 0;
        while written < data.len() {
            // The end is marked by the call that takes the last bytes, under
            // the same lock: marked after it, the driver could have sent
            // the last segment already, without the option.
            written += std::future::poll_fn(|cx| {
                self.poll_op(cx, true, |endpoint, handle| {
                    endpoint.send_record(handle, &data[written..])
                })
            })
            .await?;
        }
        Ok(())
    }

    /// Reads into `out`, stopping at the end of a record: the bytes read,
    /// and whether they finish a record. `(0, false)` is the end of the
    /// stream. Reads that mix this with the byte-stream [`AsyncRead`] see
    /// the same bytes in the same order.
    pub async fn read_record(&mut self, out: &mut [u8]) -> io::Result<(usize, bool)> {
        std::future::poll_fn(|cx| {
            self.poll_op(cx, false, |endpoint, handle| endpoint.recv_record(handle, out))
        })
        .await
    }

    /// Resets the connection at once (RFC 9293 3.10.5 ABORT): the peer
    /// learns that the transfer was cut short.
    pub fn abort(&self) {
        self.abort_handle().abort();
    }

    /// A handle that can reset the connection from elsewhere (a Ctrl-C
    /// handler, say) while a task uses the stream.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            shared: self.shared.clone(),
            handle: self.handle,
            last_stats: self.last_stats.clone(),
        }
    }

    /// Runs `op` on the endpoint for this connection, mapping the engine's
    /// answer to what tokio's traits expect.
    fn poll_op<T>(
        &self,
        cx: &mut Context<'_>,
        write: bool,
        op: impl FnOnce(&mut scps_proto::Endpoint, ConnectionHandle) -> Result<T, StreamError>,
    ) -> Poll<io::Result<T>> {
        let mut state = self.shared.lock();
        if let Some(reason) = &state.stopped {
            return Poll::Ready(Err(io::Error::other(reason.clone())));
        }
        let result = op(&mut state.endpoint, self.handle);
        state.dispatch_events();
        match result {
            Ok(n) => {
                drop(state);
                self.shared.wake_driver.notify_one();
                Poll::Ready(Ok(n))
            }
            Err(StreamError::WouldBlock) => {
                if write {
                    state.wait_write(self.handle, cx.waker());
                } else {
                    state.wait_read(self.handle, cx.waker());
                }
                Poll::Pending
            }
            Err(err) => Poll::Ready(Err(to_io_error(err))),
        }
    }
}

/// Resets one connection on demand, or reads its figures, from outside
/// the task that uses it; see [`Stream::abort_handle`].
#[derive(Debug, Clone)]
pub struct AbortHandle {
    shared: Arc<Shared>,
    handle: ConnectionHandle,
    last_stats: Arc<std::sync::Mutex<Option<ConnectionStats>>>,
}

impl AbortHandle {
    /// The connection's counters and estimates (a watcher can sample them
    /// from another task): while the endpoint holds it, as they are now;
    /// once it is gone, as they were when its stream was dropped; `None`
    /// if it went before.
    pub fn stats(&self) -> Option<ConnectionStats> {
        let now = self.shared.lock().endpoint.stats_of(self.handle);
        now.or_else(|| {
            self.last_stats
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
    }

    pub fn abort(&self) {
        let now = self.shared.clock.now();
        let mut state = self.shared.lock();
        let _ = state.endpoint.abort(now, self.handle);
        state.dispatch_events();
        drop(state);
        self.shared.wake_driver.notify_one();
    }
}

/// The I/O error kind an application expects for each way a connection
/// ends, with the engine's message kept.
pub(crate) fn to_io_error(err: StreamError) -> io::Error {
    let kind = match err {
        StreamError::WouldBlock => io::ErrorKind::WouldBlock,
        StreamError::SendClosed => io::ErrorKind::BrokenPipe,
        StreamError::Connection(c) => match c {
            ConnectionError::Refused => io::ErrorKind::ConnectionRefused,
            ConnectionError::Reset | ConnectionError::Desynchronized { .. } => io::ErrorKind::ConnectionReset,
            ConnectionError::Aborted => io::ErrorKind::ConnectionAborted,
            ConnectionError::HandshakeTimedOut { .. }
            | ConnectionError::TimedOut { .. }
            | ConnectionError::KeepaliveTimedOut { .. } => io::ErrorKind::TimedOut,
            ConnectionError::Unreachable { .. } => io::ErrorKind::HostUnreachable,
        },
    };
    io::Error::new(kind, err)
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let out = buf.initialize_unfilled();
        match self.poll_op(cx, false, |endpoint, handle| endpoint.recv(handle, out)) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_op(cx, true, |endpoint, handle| endpoint.send(handle, data))
    }

    /// Data written is the engine's to deliver: there is nothing to flush.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Closes the sending side: a FIN follows the data written (half-close;
    /// reading goes on).
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = self.shared.lock();
        let _ = state.endpoint.shutdown(self.handle);
        state.dispatch_events();
        drop(state);
        self.shared.wake_driver.notify_one();
        Poll::Ready(Ok(()))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let now = self.shared.clock.now();
        let mut state = self.shared.lock();
        *self
            .last_stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state.endpoint.stats_of(self.handle);
        let _ = state.endpoint.close(now, self.handle);
        state.dispatch_events();
        state.let_go(self.handle);
        drop(state);
        self.shared.wake_driver.notify_one();
    }
}

/// Connections made to one local address.
#[derive(Debug)]
pub struct Listener {
    shared: Arc<Shared>,
    local: SocketAddr,
}

impl Listener {
    pub(crate) fn new(shared: Arc<Shared>, local: SocketAddr) -> Listener {
        Listener { shared, local }
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The next established connection.
    pub async fn accept(&self) -> Result<Stream, NetError> {
        let local = self.local;
        accept_next(&self.shared, |endpoint| endpoint.accept(local)).await
    }
}

/// Waits until `take` finds an established connection of a listener, and
/// hands it to the application as a [`Stream`].
pub(crate) async fn accept_next(
    shared: &Arc<Shared>,
    mut take: impl FnMut(&mut scps_proto::Endpoint) -> Option<ConnectionHandle>,
) -> Result<Stream, NetError> {
    let handle = std::future::poll_fn(|cx| {
        let mut state = shared.lock();
        if state.stopped.is_some() {
            return Poll::Ready(Err(NetError::DriverStopped));
        }
        match take(&mut state.endpoint) {
            Some(handle) => Poll::Ready(Ok(handle)),
            None => {
                state.wait_accept(cx.waker());
                Poll::Pending
            }
        }
    })
    .await?;
    Ok(Stream::new(shared.clone(), handle))
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shared.lock().endpoint.unlisten(self.local);
    }
}
