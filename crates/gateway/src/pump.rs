//! The tokio side of one relay: it moves bytes and events between two
//! connections and the sans-IO [`Relay`], and does what the relay asks
//! (half-close, reset). All decisions are the relay's; this file only
//! reads what the relay has room for, writes what it has waiting, and
//! sleeps until a connection or the relay's timer has news. One task per
//! split connection; bytes are read into a chunk buffer of the worker
//! thread's and copied into the relay's. After each round it publishes
//! the connection's state and bytes relayed ([`Progress`]: a few atomic
//! stores) for `scps status` and the metrics.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use scps_node::Instant;
use scps_relay::{Action, OpenFailure, Outcome, Relay, RelayConfig, Resource, Side};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::registry::{Progress, Relayed, State};

/// Bytes read from a connection at a time.
const READ_CHUNK: usize = 64 * 1024;

thread_local! {
    /// The chunk a worker thread reads into. A read and the copy of what
    /// it got into the relay's buffers happen in one poll, with no await
    /// between, so one chunk per thread serves every relay the thread
    /// runs; one per relay held 64 kB for each of thousands of idle
    /// connections.
    static CHUNK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; READ_CHUNK]);
}

/// A byte stream the pump can also abort with a reset: kernel TCP
/// (`tokio::net::TcpStream`) and our own (`scps_net::Stream`).
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send {
    /// Aborts the connection: the peer gets a reset, not an end of stream.
    fn reset(self);
    /// Makes any close but [`Connection::close`] a reset, a close the
    /// relay did not ask for included (the process killed, or dying of a
    /// panic): a peer must never take a relay cut short for a whole one.
    fn reset_unless_closed(&self);
    /// Closes the connection once both directions ended cleanly: what is
    /// still unsent goes, then the end of stream, as a close normally does.
    fn close(self);
}

/// A kernel socket's linger: zero makes its close send a reset and
/// discard what is unsent (RFC 9293 3.10.5's ABORT); none, an orderly
/// close. It also holds when the kernel closes the socket of a process
/// that died.
fn set_linger(socket: &tokio::net::TcpStream, linger: Option<std::time::Duration>) {
    if let Err(err) = socket2::SockRef::from(socket).set_linger(linger) {
        tracing::debug!(%err, "SO_LINGER not set");
    }
}

impl Connection for tokio::net::TcpStream {
    fn reset(self) {
        set_linger(&self, Some(std::time::Duration::ZERO));
    }

    fn reset_unless_closed(&self) {
        set_linger(self, Some(std::time::Duration::ZERO));
    }

    fn close(self) {
        set_linger(&self, None);
    }
}

impl Connection for scps_net::Stream {
    fn reset(self) {
        self.abort();
    }

    /// The engine lives in the process: if it dies, so does the link
    /// connection, and the far gateway learns it from the link.
    fn reset_unless_closed(&self) {}

    fn close(self) {}
}

/// The relay's clock: instants since the pump started.
#[derive(Debug, Clone, Copy)]
struct Clock(tokio::time::Instant);

impl Clock {
    fn now(self) -> Instant {
        Instant::from_duration(self.0.elapsed())
    }

    fn deadline(self, at: Instant) -> tokio::time::Instant {
        self.0 + at.as_duration()
    }
}

/// One of the two connections, through its life.
enum End<C, F> {
    /// Being opened by this future.
    Opening(Pin<Box<F>>),
    Open {
        connection: C,
        /// A shutdown asked for and not yet done.
        shutting_down: bool,
    },
    /// Reset, failed to open, or shut down and done with.
    Gone,
}

/// Runs a relay of `config` between `open`, the connection already
/// established on `open_side`, and the other one, which `opening`
/// establishes (or fails to); returns how the relay ended once both
/// connections are done with. The relay's time starts with the pump's
/// clock, at zero. How far it has got is published to `progress`.
pub async fn pump<A, B, F>(
    config: RelayConfig,
    open_side: Side,
    open: A,
    opening: F,
    progress: &Progress,
) -> Outcome
where
    A: Connection,
    B: Connection,
    F: Future<Output = Result<B, OpenFailure>> + Send,
{
    let clock = Clock(tokio::time::Instant::now());
    let mut relay = Relay::new(Instant::ZERO, config, open_side);
    open.reset_unless_closed();
    let mut first: End<A, F> = End::Open {
        connection: open,
        shutting_down: false,
    };
    let mut second: End<B, F> = End::Opening(Box::pin(opening));
    let sleep = tokio::time::sleep(std::time::Duration::from_secs(86_400));
    tokio::pin!(sleep);
    // Once the relay has asked for a shutdown or a reset, the connection
    // is closing.
    let mut closing = false;
    let outcome = std::future::poll_fn(|cx| {
        loop {
            let now = clock.now();
            relay.handle_timeout(now);
            let mut moved = open_second(&mut second, &mut relay, now, cx);
            moved |= move_bytes(&mut first, open_side, &mut relay, now, cx);
            moved |= move_bytes(&mut second, open_side.other(), &mut relay, now, cx);
            while let Some(action) = relay.poll_action() {
                moved = true;
                closing = true;
                let (side, shutdown) = match action {
                    Action::Shutdown(side) => (side, true),
                    Action::Reset(side) => (side, false),
                };
                if side == open_side {
                    act(&mut first, shutdown);
                } else {
                    act(&mut second, shutdown);
                }
            }
            moved |= finish_shutdown(&mut first, cx);
            moved |= finish_shutdown(&mut second, cx);
            publish(progress, &relay, &second, closing);
            if let Some(outcome) = relay.outcome()
                && !is_shutting_down(&first)
                && !is_shutting_down(&second)
            {
                return Poll::Ready(outcome);
            }
            if moved {
                continue;
            }
            if let Some(at) = relay.poll_timeout() {
                sleep.as_mut().reset(clock.deadline(at));
                if sleep.as_mut().poll(cx).is_ready() {
                    continue;
                }
            }
            return Poll::Pending;
        }
    })
    .await;
    if outcome == Outcome::Closed {
        close(first);
        close(second);
    }
    outcome
}

/// Closes a connection that ended cleanly in both directions.
fn close<C: Connection, F>(end: End<C, F>) {
    if let End::Open { connection, .. } = end {
        connection.close();
    }
}

/// Publishes the connection's state and the bytes relayed so far.
fn publish<B, F>(progress: &Progress, relay: &Relay, second: &End<B, F>, closing: bool) {
    let state = if matches!(second, End::Opening(_)) {
        State::Opening
    } else if closing || relay.outcome().is_some() {
        State::Closing
    } else {
        State::Relaying
    };
    progress.publish(
        state,
        Relayed {
            lan_to_link: relay.bytes_to(Side::Link),
            link_to_lan: relay.bytes_to(Side::Lan),
        },
    );
}

/// Polls the opening of the second connection; true if it ended.
fn open_second<B: Connection, F: Future<Output = Result<B, OpenFailure>>>(
    end: &mut End<B, F>,
    relay: &mut Relay,
    now: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let End::Opening(opening) = end else {
        return false;
    };
    match opening.as_mut().poll(cx) {
        Poll::Pending => false,
        Poll::Ready(Ok(connection)) => {
            connection.reset_unless_closed();
            *end = End::Open {
                connection,
                shutting_down: false,
            };
            relay.opened(now);
            true
        }
        Poll::Ready(Err(failure)) => {
            *end = End::Gone;
            relay.open_failed(failure);
            true
        }
    }
}

/// Writes what the relay has for `side`, then reads what it has room for;
/// true if anything moved or ended.
fn move_bytes<C: Connection, F>(
    end: &mut End<C, F>,
    side: Side,
    relay: &mut Relay,
    now: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let End::Open { connection, .. } = end else {
        return false;
    };
    let mut progress = false;
    loop {
        let waiting = relay.to_write(side);
        if waiting.is_empty() {
            break;
        }
        match Pin::new(&mut *connection).poll_write(cx, waiting) {
            Poll::Ready(Ok(0)) => {
                relay.failed(side);
                return true;
            }
            Poll::Ready(Ok(written)) => {
                relay.wrote(now, side, written);
                progress = true;
            }
            Poll::Ready(Err(err)) => {
                tracing::debug!(%side, %err, "write failed");
                relay.failed(side);
                return true;
            }
            Poll::Pending => break,
        }
    }
    CHUNK.with_borrow_mut(|chunk| read_what_fits(connection, side, relay, chunk, now, cx)) || progress
}

/// Reads from `connection` through `chunk` what the relay has room for
/// on `side`; true if anything was read or the reading ended.
fn read_what_fits<C: Connection>(
    connection: &mut C,
    side: Side,
    relay: &mut Relay,
    chunk: &mut [u8],
    now: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let mut progress = false;
    loop {
        let room = relay.read_room(side).min(chunk.len());
        if room == 0 {
            return progress;
        }
        let mut read = ReadBuf::new(&mut chunk[..room]);
        match Pin::new(&mut *connection).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) if read.filled().is_empty() => {
                relay.ended(side);
                return true;
            }
            Poll::Ready(Ok(())) => {
                relay.received(now, side, read.filled());
                progress = true;
            }
            Poll::Ready(Err(err)) => {
                tracing::debug!(%side, %err, "read failed");
                relay.failed(side);
                return true;
            }
            Poll::Pending => return progress,
        }
    }
}

/// Does what the relay asked to a connection: a shutdown (completed by
/// [`finish_shutdown`]) or a reset.
fn act<C: Connection, F>(end: &mut End<C, F>, shutdown: bool) {
    match (std::mem::replace(end, End::Gone), shutdown) {
        (End::Open { connection, .. }, true) => {
            *end = End::Open {
                connection,
                shutting_down: true,
            }
        }
        (End::Open { connection, .. }, false) => connection.reset(),
        // A reset of a connection still opening cancels the opening (the
        // future is dropped); nothing else is left to do.
        (_, _) => {}
    }
}

/// Drives a shutdown asked for to its end; true when it finished.
fn finish_shutdown<C: Connection, F>(end: &mut End<C, F>, cx: &mut Context<'_>) -> bool {
    let End::Open {
        connection,
        shutting_down: shutting_down @ true,
    } = end
    else {
        return false;
    };
    match Pin::new(&mut *connection).poll_shutdown(cx) {
        Poll::Pending => false,
        Poll::Ready(result) => {
            if let Err(err) = result {
                tracing::debug!(%err, "shutdown failed");
            }
            *shutting_down = false;
            true
        }
    }
}

fn is_shutting_down<C, F>(end: &End<C, F>) -> bool {
    matches!(
        end,
        End::Open {
            shutting_down: true,
            ..
        }
    )
}

/// What an I/O error on opening says about the far end.
pub fn open_failure(err: &io::Error) -> OpenFailure {
    match err.raw_os_error() {
        Some(nix::libc::EMFILE | nix::libc::ENFILE) => return OpenFailure::OutOf(Resource::Descriptors),
        Some(nix::libc::EADDRNOTAVAIL) => return OpenFailure::OutOf(Resource::LocalPorts),
        _ => {}
    }
    match err.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset => OpenFailure::Refused,
        io::ErrorKind::TimedOut => OpenFailure::TimedOut,
        _ => OpenFailure::Unreachable,
    }
}

/// What a link connection that did not open says about the far end.
pub fn net_open_failure(err: &scps_net::NetError) -> OpenFailure {
    use scps_proto::ConnectionError;
    match err {
        scps_net::NetError::Endpoint(scps_proto::EndpointError::NoFreePort(_)) => {
            OpenFailure::OutOf(Resource::LocalPorts)
        }
        scps_net::NetError::Connection {
            source: ConnectionError::Refused,
            ..
        } => OpenFailure::Refused,
        scps_net::NetError::Connection {
            source: ConnectionError::Unreachable { .. },
            ..
        } => OpenFailure::Unreachable,
        _ => OpenFailure::TimedOut,
    }
}
