//! Message streams, the test applications of the Iridium paper: each
//! message is a send timestamp, a length and random bytes; messages are
//! offered at a fixed rate for a test window, and the receiving end
//! measures the actual rate (bytes of whole messages received in the
//! window) and each message's latency (receive time less timestamp).
//!
//! Like the paper's applications, a sender writes message `i` when its
//! time comes (`i` intervals into the window) and stamps it as it writes
//! it; while the connection's send buffer is full the write waits, and the
//! messages that fell due meanwhile go one after the other as soon as
//! there is room (the offered rate is kept, not the exact times). Latency
//! therefore counts the send buffer and the network, not an unbounded
//! queue in the application. Each end's window starts when its end of the
//! connection is established.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use scps_config::MessageFlow;
use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint, State, StreamError};
use scps_workload_format::message;
use scps_workload_format::payload::Pattern;

use crate::world::App;

/// What one direction's receiver measured.
#[derive(Debug, Default, Clone)]
pub struct FlowReport {
    /// Whole messages received within the sender's window.
    pub messages: u64,
    pub bytes: u64,
    pub latencies: Vec<Duration>,
}

#[derive(Debug, Default)]
pub struct MessageProgress {
    pub client: Option<ConnectionHandle>,
    pub server: Option<ConnectionHandle>,
    /// Test window of each sending end: the client's (forward flow) and
    /// the server's (reverse flow).
    pub windows: [Option<(Instant, Instant)>; 2],
    /// Indexed like `windows`, by the flow's sender.
    pub received: [FlowReport; 2],
    pub error: Option<String>,
}

pub type Shared = Rc<RefCell<MessageProgress>>;

/// Writes messages on schedule, one at a time.
#[derive(Debug)]
struct Sender {
    flow: MessageFlow,
    pattern: Pattern,
    next_index: u64,
    /// The message being written and how much of it the connection took.
    writing: Option<(Vec<u8>, usize)>,
}

impl Sender {
    /// When the next message is created: message `i` at `i` times the
    /// interval into the window, computed exactly (no accumulated error).
    fn due(&self, window: (Instant, Instant)) -> Option<Instant> {
        let at = window.0 + message::due(self.next_index, self.flow.size, self.flow.rate_bps);
        (at < window.1).then_some(at)
    }

    /// Message `next_index`, stamped `now`.
    fn message(&self, now: Instant) -> Vec<u8> {
        let offset = self.next_index * self.flow.size as u64;
        let mut bytes = vec![0u8; self.flow.size];
        message::write(&mut bytes, offset, now.as_nanos(), &self.pattern);
        bytes
    }

    /// Writes the message in hand and every message due by `now`, until
    /// the connection takes no more.
    fn pump(
        &mut self,
        now: Instant,
        window: (Instant, Instant),
        endpoint: &mut Endpoint,
        handle: ConnectionHandle,
    ) -> Result<(), StreamError> {
        loop {
            if self.writing.is_none() {
                if self.due(window).is_none_or(|at| at > now) {
                    return Ok(());
                }
                self.writing = Some((self.message(now), 0));
                self.next_index += 1;
            }
            let Some((message, written)) = &mut self.writing else {
                return Ok(());
            };
            match endpoint.send(handle, &message[*written..]) {
                Ok(0) | Err(StreamError::WouldBlock) => return Ok(()),
                Ok(n) => *written += n,
                Err(err) => return Err(err),
            }
            if *written == message.len() {
                self.writing = None;
            }
        }
    }
}

/// Splits the byte stream into messages and checks them.
#[derive(Debug)]
struct Receiver {
    size: usize,
    pattern: Pattern,
    /// Stream offset of the first byte of `partial`.
    offset: u64,
    partial: Vec<u8>,
    buf: Vec<u8>,
}

impl Receiver {
    fn pump(
        &mut self,
        now: Instant,
        endpoint: &mut Endpoint,
        handle: ConnectionHandle,
        window_end: Option<Instant>,
        report: &mut FlowReport,
    ) -> Result<(), String> {
        loop {
            match endpoint.recv(handle, &mut self.buf) {
                Ok(0) | Err(StreamError::WouldBlock) => return Ok(()),
                Ok(n) => self.partial.extend_from_slice(&self.buf[..n]),
                Err(err) => return Err(err.to_string()),
            }
            while self.partial.len() >= self.size {
                let sent = message::check(&self.partial[..self.size], self.offset, self.size, &self.pattern)
                    .map_err(|e| e.to_string())?;
                if window_end.is_some_and(|end| now <= end) {
                    report.messages += 1;
                    report.bytes += self.size as u64;
                    report
                        .latencies
                        .push(now.saturating_since(Instant::from_nanos(sent)));
                }
                self.partial.drain(..self.size);
                self.offset += self.size as u64;
            }
        }
    }
}

/// One end of a message-stream connection: it may send a flow and may
/// receive the other end's.
#[derive(Debug)]
pub struct MessageEnd {
    /// The server's address; the client connects to it, the server
    /// listens on it.
    server: SocketAddr,
    /// 0 for the client, 1 for the server: the index of the flow it sends.
    end: usize,
    /// The index of the flow its receiver takes: the other end's, or its
    /// own sent back by an echoing server.
    hears: usize,
    duration: Duration,
    sender: Option<Sender>,
    receiver: Option<Receiver>,
    progress: Shared,
    /// When it was last polled: wake-ups must lie ahead of it.
    polled_at: Instant,
}

/// The two ends of a message-stream test.
pub fn stream(
    server: SocketAddr,
    forward: MessageFlow,
    reverse: Option<MessageFlow>,
    duration: Duration,
    patterns: [Pattern; 2],
) -> (MessageEnd, MessageEnd, Shared) {
    let progress = Shared::default();
    let client = MessageEnd {
        server,
        end: 0,
        hears: 1,
        duration,
        sender: Some(sender(forward, patterns[0])),
        receiver: reverse.map(|flow| receiver(flow, patterns[1])),
        progress: progress.clone(),
        polled_at: Instant::ZERO,
    };
    let server_end = MessageEnd {
        server,
        end: 1,
        hears: 0,
        duration,
        sender: reverse.map(|flow| sender(flow, patterns[1])),
        receiver: Some(receiver(forward, patterns[0])),
        progress: progress.clone(),
        polled_at: Instant::ZERO,
    };
    (client, server_end, progress)
}

fn sender(flow: MessageFlow, pattern: Pattern) -> Sender {
    Sender {
        flow,
        pattern,
        next_index: 0,
        writing: None,
    }
}

fn receiver(flow: MessageFlow, pattern: Pattern) -> Receiver {
    Receiver {
        size: flow.size,
        pattern,
        offset: 0,
        partial: Vec::new(),
        buf: vec![0; 64 * 1024],
    }
}

/// The two ends of an interactive echo test: the client sends `flow` and
/// measures each message as it comes back (its latency is the round
/// trip); the server sends back what arrives, as it arrives.
pub fn echo(
    server: SocketAddr,
    flow: MessageFlow,
    duration: Duration,
    pattern: Pattern,
) -> (MessageEnd, EchoServer, Shared) {
    let progress = Shared::default();
    let client = MessageEnd {
        server,
        end: 0,
        hears: 0,
        duration,
        sender: Some(sender(flow, pattern)),
        receiver: Some(receiver(flow, pattern)),
        progress: progress.clone(),
        polled_at: Instant::ZERO,
    };
    let echo = EchoServer {
        server,
        pending: Vec::new(),
        buf: vec![0; 64 * 1024],
        progress: progress.clone(),
    };
    (client, echo, progress)
}

/// Sends back what arrives on its one connection.
#[derive(Debug)]
pub struct EchoServer {
    server: SocketAddr,
    /// Bytes received and not yet taken back by the connection.
    pending: Vec<u8>,
    buf: Vec<u8>,
    progress: Shared,
}

impl App for EchoServer {
    fn poll(&mut self, _now: Instant, endpoint: &mut Endpoint) {
        let mut progress = self.progress.borrow_mut();
        if progress.server.is_none() {
            progress.server = endpoint.accept(self.server);
        }
        let Some(handle) = progress.server else {
            return;
        };
        loop {
            if !self.pending.is_empty() {
                match endpoint.send(handle, &self.pending) {
                    Ok(n) => {
                        self.pending.drain(..n);
                    }
                    Err(StreamError::WouldBlock) => {}
                    Err(error) => {
                        progress
                            .error
                            .get_or_insert_with(|| format!("echoing failed: {error}"));
                        return;
                    }
                }
            }
            // Take more only once what came is on its way back: the
            // connection's windows, not this buffer, hold the backlog.
            if !self.pending.is_empty() {
                return;
            }
            match endpoint.recv(handle, &mut self.buf) {
                Ok(0) | Err(StreamError::WouldBlock) => return,
                Ok(n) => self.pending.extend_from_slice(&self.buf[..n]),
                Err(error) => {
                    progress
                        .error
                        .get_or_insert_with(|| format!("echo server: {error}"));
                    return;
                }
            }
        }
    }
}

impl MessageEnd {
    fn handle(&mut self, now: Instant, endpoint: &mut Endpoint) -> Option<ConnectionHandle> {
        let mut progress = self.progress.borrow_mut();
        let slot = if self.end == 0 {
            &mut progress.client
        } else {
            &mut progress.server
        };
        if let Some(handle) = *slot {
            return Some(handle);
        }
        let handle = if self.end == 0 {
            match endpoint.connect(now, self.server, None, None) {
                Ok(handle) => handle,
                Err(error) => {
                    progress
                        .error
                        .get_or_insert_with(|| format!("cannot connect: {error}"));
                    return None;
                }
            }
        } else {
            endpoint.accept(self.server)?
        };
        *slot = Some(handle);
        Some(handle)
    }
}

impl App for MessageEnd {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        self.polled_at = now;
        if self.progress.borrow().error.is_some() {
            return;
        }
        let Some(handle) = self.handle(now, endpoint) else {
            return;
        };
        let connection = endpoint.connection(handle);
        if let Some(error) = connection.and_then(|c| c.error()) {
            self.progress
                .borrow_mut()
                .error
                .get_or_insert_with(|| format!("connection failed: {error}"));
            return;
        }
        let established =
            connection.is_some_and(|c| c.state() != State::SynSent && c.state() != State::SynReceived);
        let mut progress = self.progress.borrow_mut();
        if established && progress.windows[self.end].is_none() {
            progress.windows[self.end] = Some((now, now + self.duration));
        }
        if let (Some(sender), Some(window)) = (&mut self.sender, progress.windows[self.end])
            && let Err(error) = sender.pump(now, window, endpoint, handle)
        {
            progress
                .error
                .get_or_insert_with(|| format!("sending failed: {error}"));
            return;
        }
        let heard = self.hears;
        let window_end = progress.windows[heard].map(|w| w.1);
        if let Some(receiver) = &mut self.receiver
            && let Err(error) =
                receiver.pump(now, endpoint, handle, window_end, &mut progress.received[heard])
        {
            progress.error.get_or_insert(error);
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let window = self.progress.borrow().windows[self.end]?;
        // A message waiting for room is moved on by the ACKs that make it.
        let next_message = self
            .sender
            .as_ref()
            .filter(|s| s.writing.is_none())
            .and_then(|s| s.due(window));
        // Wake for the next message, else once more at the window's end.
        next_message.or(Some(window.1).filter(|end| *end > self.polled_at))
    }
}
