//! A listener served on a thread of its own until dropped: the control
//! socket and the metrics endpoint. One thread serves every client at
//! once, sleeping in `poll` on the listener, the clients and the stop
//! signal (see `wake`), so a client that connects and says nothing holds
//! nobody up.
//!
//! Bounds, so that no client can exhaust the emulator: at most
//! [`MAX_CLIENTS`] at a time (when one more arrives, the one idle longest
//! is closed to make room, so a flood of idle connections cannot lock a
//! real client out); a client silent for [`CLIENT_TIMEOUT`] is closed;
//! a request that grows past [`MAX_PENDING_BYTES`] unanswered ends its
//! connection; and a client is read no further while
//! [`MAX_UNWRITTEN_BYTES`] of answers wait for it to read them
//! (back-pressure: it cannot make the emulator hold more than one more
//! answer), so one that sends requests and never reads their answers
//! falls silent too and is closed after [`CLIENT_TIMEOUT`].

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::{Error, wake};

/// Clients served at once.
pub(crate) const MAX_CLIENTS: usize = 64;

/// Longest a client may stay silent before it is closed.
pub(crate) const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes a client may send that are not yet a whole request.
pub(crate) const MAX_PENDING_BYTES: usize = 64 * 1024;

/// Answers waiting for a client to read them past which its requests are
/// neither read nor answered (one answer may take it over the bound).
pub(crate) const MAX_UNWRITTEN_BYTES: usize = 256 * 1024;

/// A listening socket whose accepted streams do not block.
pub(crate) trait Listen: AsFd + Send + 'static {
    type Stream: AsFd + Send;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()>;
    fn accept_stream(&self) -> io::Result<Self::Stream>;
    fn read_from(stream: &Self::Stream, buf: &mut [u8]) -> io::Result<usize>;
    fn write_to(stream: &Self::Stream, buf: &[u8]) -> io::Result<usize>;
}

impl Listen for UnixListener {
    type Stream = UnixStream;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        UnixListener::set_nonblocking(self, nonblocking)
    }
    fn accept_stream(&self) -> io::Result<UnixStream> {
        let (stream, _) = self.accept()?;
        stream.set_nonblocking(true)?;
        Ok(stream)
    }
    fn read_from(mut stream: &UnixStream, buf: &mut [u8]) -> io::Result<usize> {
        stream.read(buf)
    }
    fn write_to(mut stream: &UnixStream, buf: &[u8]) -> io::Result<usize> {
        stream.write(buf)
    }
}

impl Listen for TcpListener {
    type Stream = TcpStream;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        TcpListener::set_nonblocking(self, nonblocking)
    }
    fn accept_stream(&self) -> io::Result<TcpStream> {
        let (stream, _) = self.accept()?;
        stream.set_nonblocking(true)?;
        Ok(stream)
    }
    fn read_from(mut stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        stream.read(buf)
    }
    fn write_to(mut stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
        stream.write(buf)
    }
}

/// What the server says to one client.
pub(crate) trait Conversation: Send + 'static {
    /// `input` holds what the client sent and was not answered yet: take
    /// the first whole request from its front, if there is one, and
    /// append its answer to `output` (the server asks again while that
    /// takes a request and the answers waiting are under its bound).
    /// `closed`: the client will send nothing more. Returns true once the
    /// conversation is over (the connection closes when `output` is
    /// written).
    fn converse(&mut self, input: &mut Vec<u8>, output: &mut Vec<u8>, closed: bool) -> bool;
}

/// The serving thread; dropping this stops and joins it.
#[derive(Debug)]
pub(crate) struct Acceptor {
    stopper: Option<wake::Stopper>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    /// Serves the clients of `listener` on a thread called `name`, each
    /// with a conversation made by `start`.
    pub(crate) fn spawn<L: Listen, C: Conversation>(
        name: &str,
        listener: L,
        start: impl FnMut() -> C + Send + 'static,
    ) -> Result<Acceptor, Error> {
        listener.set_nonblocking(true).map_err(|source| Error::Io {
            what: "make the listener non-blocking".into(),
            source,
        })?;
        let (stopper, waiter) = wake::pair().map_err(|source| Error::Io {
            what: "create the stop signal".into(),
            source,
        })?;
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                Server {
                    listener,
                    start,
                    clients: Vec::new(),
                }
                .run(&waiter);
            })
            .map_err(|source| Error::Io {
                what: format!("start the {name} thread"),
                source,
            })?;
        Ok(Acceptor {
            stopper: Some(stopper),
            thread: Some(thread),
        })
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stopper.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Client<S, C> {
    stream: S,
    conversation: C,
    input: Vec<u8>,
    output: Vec<u8>,
    /// Bytes of `output` already written.
    written: usize,
    /// The client sent all it will.
    closed: bool,
    /// The conversation is over: close once the output is written.
    over: bool,
    last_active: Instant,
}

impl<S, C> Client<S, C> {
    fn unwritten(&self) -> bool {
        self.written < self.output.len()
    }

    /// Enough answers wait for the client to read them: read and answer
    /// no more of its requests until it does.
    fn backlogged(&self) -> bool {
        self.output.len() - self.written >= MAX_UNWRITTEN_BYTES
    }

    fn finished(&self, now: Instant) -> bool {
        let said_all = (self.over || self.closed) && !self.unwritten();
        if said_all {
            return true;
        }
        let silent = now.saturating_duration_since(self.last_active) >= CLIENT_TIMEOUT;
        if silent && self.backlogged() {
            tracing::debug!(
                unread_bytes = self.output.len() - self.written,
                "closing a client that does not read its answers"
            );
        }
        silent
    }
}

struct Server<L: Listen, C, F> {
    listener: L,
    start: F,
    clients: Vec<Client<L::Stream, C>>,
}

impl<L: Listen, C: Conversation, F: FnMut() -> C> Server<L, C, F> {
    fn run(mut self, waiter: &wake::Waiter) {
        loop {
            let Some((stop, listener_ready, ready)) = self.wait(waiter) else {
                return;
            };
            if stop {
                return;
            }
            let now = Instant::now();
            for (client, flags) in self.clients.iter_mut().zip(ready) {
                if flags.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                    receive::<L, C>(client, now);
                }
                if client.unwritten() {
                    send::<L, C>(client, now);
                }
                // Requests held back while answers waited, now that they
                // have gone.
                answer(client);
            }
            if listener_ready {
                self.accept(now);
            }
            self.clients.retain(|client| !client.finished(now));
        }
    }

    /// Sleeps until the stop signal, the listener or a client needs
    /// attention, or a client's silence runs out. Returns whether to stop,
    /// whether the listener is ready, and each client's readiness; `None`
    /// if polling failed.
    fn wait(&self, waiter: &wake::Waiter) -> Option<(bool, bool, Vec<PollFlags>)> {
        let now = Instant::now();
        let timeout = self
            .clients
            .iter()
            .map(|c| (c.last_active + CLIENT_TIMEOUT).saturating_duration_since(now))
            .min()
            .map_or(PollTimeout::NONE, |d| {
                PollTimeout::try_from(d.as_millis().saturating_add(1)).unwrap_or(PollTimeout::MAX)
            });
        let mut fds: Vec<PollFd<'_>> = vec![
            PollFd::new(waiter.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
        ];
        fds.extend(self.clients.iter().map(|c| {
            let mut flags = PollFlags::empty();
            if !c.closed && !c.over && !c.backlogged() {
                flags |= PollFlags::POLLIN;
            }
            if c.unwritten() {
                flags |= PollFlags::POLLOUT;
            }
            PollFd::new(stream_fd::<L>(&c.stream), flags)
        }));
        loop {
            match poll(&mut fds, timeout) {
                Ok(_) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return None,
            }
        }
        let revents: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        Some((
            !revents[0].is_empty(),
            !revents[1].is_empty(),
            revents[2..].to_vec(),
        ))
    }

    /// Takes every waiting connection; at the bound, the client idle
    /// longest makes room.
    fn accept(&mut self, now: Instant) {
        // Another thread may have taken the connection: then WouldBlock.
        while let Ok(stream) = self.listener.accept_stream() {
            if self.clients.len() >= MAX_CLIENTS
                && let Some(idlest) = (0..self.clients.len()).min_by_key(|&i| self.clients[i].last_active)
            {
                self.clients.swap_remove(idlest);
            }
            self.clients.push(Client {
                stream,
                conversation: (self.start)(),
                input: Vec::new(),
                output: Vec::new(),
                written: 0,
                closed: false,
                over: false,
                last_active: now,
            });
        }
    }
}

fn stream_fd<L: Listen>(stream: &L::Stream) -> BorrowedFd<'_> {
    stream.as_fd()
}

/// Reads what the client sent and lets the conversation answer it, until
/// nothing more has come or enough answers wait for the client to read.
fn receive<L: Listen, C: Conversation>(client: &mut Client<L::Stream, C>, now: Instant) {
    let mut buf = [0u8; 4096];
    while !client.closed && !client.over && !client.backlogged() {
        match L::read_from(&client.stream, &mut buf) {
            Ok(0) => client.closed = true,
            Ok(n) => {
                client.input.extend_from_slice(&buf[..n]);
                client.last_active = now;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                client.closed = true;
                client.over = true;
                client.output.clear();
                client.written = 0;
                return;
            }
        }
        answer(client);
        // Not backlogged: every whole request was answered.
        if !client.backlogged() && client.input.len() > MAX_PENDING_BYTES {
            // Not a request of ours: stop listening to it.
            client.over = true;
            client.input.clear();
        }
    }
}

/// Answers the client's whole requests while the answers waiting for it
/// are under the bound.
fn answer<S, C: Conversation>(client: &mut Client<S, C>) {
    // What was written is not kept.
    client.output.drain(..client.written);
    client.written = 0;
    while !client.over && !client.backlogged() {
        let before = (client.input.len(), client.output.len());
        client.over = client
            .conversation
            .converse(&mut client.input, &mut client.output, client.closed);
        if (client.input.len(), client.output.len()) == before {
            break;
        }
    }
}

/// Writes what the socket takes of the client's answers.
fn send<L: Listen, C>(client: &mut Client<L::Stream, C>, now: Instant) {
    while client.unwritten() {
        match L::write_to(&client.stream, &client.output[client.written..]) {
            Ok(0) => break,
            Ok(n) => {
                client.written += n;
                client.last_active = now;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // The client went away: nothing more to say to it.
                client.over = true;
                client.written = client.output.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every line with its length.
    struct Echo;

    impl Conversation for Echo {
        fn converse(&mut self, input: &mut Vec<u8>, output: &mut Vec<u8>, closed: bool) -> bool {
            let Some(end) = input.iter().position(|&b| b == b'\n') else {
                return closed;
            };
            let line: Vec<u8> = input.drain(..=end).collect();
            output.extend_from_slice(format!("{}\n", line.len() - 1).as_bytes());
            false
        }
    }

    /// Answers every line with [`Big::REPLY`] bytes, and keeps the most
    /// answers it ever saw waiting for the client.
    struct Big(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Big {
        const REPLY: usize = 100;
    }

    impl Conversation for Big {
        fn converse(&mut self, input: &mut Vec<u8>, output: &mut Vec<u8>, closed: bool) -> bool {
            let Some(end) = input.iter().position(|&b| b == b'\n') else {
                return closed;
            };
            input.drain(..=end);
            output.extend_from_slice(&[b'a'; Big::REPLY]);
            self.0
                .fetch_max(output.len(), std::sync::atomic::Ordering::Relaxed);
            false
        }
    }

    fn socket_in(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("scps-acceptor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        (dir, path)
    }

    fn ask(path: &std::path::Path, line: &str) -> io::Result<String> {
        let mut stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(line.as_bytes())?;
        stream.shutdown(std::net::Shutdown::Write)?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    #[test]
    fn idle_clients_neither_delay_nor_lock_out_a_real_one() {
        let dir = std::env::temp_dir().join(format!("scps-acceptor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        let _ = std::fs::remove_file(&path);
        let acceptor = Acceptor::spawn("test", UnixListener::bind(&path).unwrap(), || Echo).unwrap();
        // Far more idle clients than may be served at once, each of which
        // would have held a one-at-a-time server for the whole timeout.
        let idle: Vec<UnixStream> = (0..4 * MAX_CLIENTS)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        // Answered within the asker's 10 s, where serving the idle ones
        // first would have taken their timeouts end to end (8 minutes).
        assert_eq!(ask(&path, "hello\nworld!\n").unwrap(), "5\n6\n");
        // The oldest idle clients were closed to make room.
        let mut first = &idle[0];
        first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(first.read(&mut [0u8; 8]).unwrap(), 0, "evicted: end of stream");
        drop(acceptor);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_endless_request_ends_its_connection() {
        let dir = std::env::temp_dir().join(format!("scps-acceptor-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        let _ = std::fs::remove_file(&path);
        let acceptor = Acceptor::spawn("test", UnixListener::bind(&path).unwrap(), || Echo).unwrap();
        let mut stream = UnixStream::connect(&path).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let chunk = vec![b'x'; 8192];
        // The server stops reading past the bound and closes: writes fail
        // or the read sees the end.
        for _ in 0..(MAX_PENDING_BYTES / chunk.len() + 2) {
            if stream.write_all(&chunk).is_err() {
                break;
            }
        }
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        assert!(rest.is_empty(), "no answer to a request that never ends");
        assert_eq!(ask(&path, "ok\n").unwrap(), "2\n", "others are still served");
        drop(acceptor);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An acceptor at `path` whose clients are each answered by [`Big`],
    /// and the most answers it saw waiting for one.
    fn big_acceptor(path: &std::path::Path) -> (Acceptor, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let conversation = most.clone();
        let acceptor = Acceptor::spawn("test", UnixListener::bind(path).unwrap(), move || {
            Big(conversation.clone())
        })
        .unwrap();
        (acceptor, most)
    }

    #[test]
    fn a_client_that_never_reads_is_held_to_the_bound_then_closed() {
        let (dir, path) = socket_in("unread");
        let (acceptor, most) = big_acceptor(&path);
        let mut stream = UnixStream::connect(&path).unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
        // Small requests in small pieces, never reading an answer: 1 MiB
        // of them would be 50 MiB of answers, unless the server stops
        // reading; then the socket fills, the writes wait, and the server
        // closes the client that has gone silent.
        let piece = b"s\n".repeat(16);
        let mut sent = 0;
        let ended = loop {
            if sent >= 1 << 20 {
                break None;
            }
            match stream.write_all(&piece) {
                Ok(()) => sent += piece.len(),
                Err(e) => break Some(e),
            }
        };
        let most = most.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            most <= MAX_UNWRITTEN_BYTES + Big::REPLY,
            "{most} bytes of answers held for a client that does not read"
        );
        let ended = ended.expect("the server stops reading a client that does not read");
        assert!(
            matches!(
                ended.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ),
            "closed by the server, not timed out: {ended}"
        );
        assert_eq!(
            ask(&path, "s\n").unwrap().len(),
            Big::REPLY,
            "others are still served"
        );
        drop(acceptor);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_request_is_answered_past_the_bound_for_a_client_that_reads() {
        let (dir, path) = socket_in("reads");
        let (acceptor, most) = big_acceptor(&path);
        let mut stream = UnixStream::connect(&path).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // Eight times the bound in answers, asked all at once.
        let requests = 8 * MAX_UNWRITTEN_BYTES / Big::REPLY;
        let mut writer = stream.try_clone().unwrap();
        let writing = std::thread::spawn(move || {
            writer.write_all(&b"s\n".repeat(requests))?;
            writer.shutdown(std::net::Shutdown::Write)
        });
        let mut answers = Vec::new();
        stream.read_to_end(&mut answers).unwrap();
        writing.join().unwrap().unwrap();
        assert_eq!(answers.len(), requests * Big::REPLY, "every request answered");
        let most = most.load(std::sync::atomic::Ordering::Relaxed);
        assert!(most <= MAX_UNWRITTEN_BYTES + Big::REPLY, "{most}");
        drop(acceptor);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
