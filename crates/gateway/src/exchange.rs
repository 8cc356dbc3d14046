//! Serving sockets where each client sends one request and gets one
//! answer, then the connection closes: the metrics endpoint (HTTP) and
//! the control socket. Bounded so that no client can hold the server or
//! its memory: a request is read up to [`Limits::request`] bytes, reading
//! it and writing the answer each get [`Limits::time`], and at most
//! [`Limits::clients`] are served at once, [`Limits::per_source`] of them
//! from one address.
//!
//! Idle clients cannot lock out a scraper: a client that finds every
//! place taken (or its address's share) takes the place of the one that
//! has waited longest without sending its whole request. A real client
//! sends its request as soon as it connects, and so is answered; one
//! that opens connections and sends nothing only displaces its like, or
//! itself, within its address's share.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::{AbortHandle, JoinSet};

/// A listening socket whose clients are byte streams.
pub(crate) trait Accept: Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept_stream(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
    /// The address a client connects from, if its kind of socket has one.
    fn source(stream: &Self::Stream) -> Option<IpAddr>;
}

impl Accept for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept_stream(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _)| stream)
    }
    fn source(stream: &Self::Stream) -> Option<IpAddr> {
        stream.peer_addr().ok().map(|peer| peer.ip())
    }
}

impl Accept for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept_stream(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _)| stream)
    }
    fn source(_: &Self::Stream) -> Option<IpAddr> {
        None
    }
}

/// How much a client may ask of the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The longest request, in bytes, its end included.
    pub request: usize,
    /// How long reading the request may take, and then writing the
    /// answer.
    pub time: Duration,
    /// Clients served at once.
    pub clients: usize,
    /// Clients served at once from one address.
    pub per_source: usize,
}

/// A client being served.
struct Seat {
    source: Option<IpAddr>,
    /// Until its whole request has come: while it may give its place up.
    waiting: Arc<AtomicBool>,
    task: AbortHandle,
}

/// Makes room among `seats` for a client from `source`: ends the client
/// that has waited longest for its own request among those of `source`
/// if they hold its share, else among all if they hold every place.
/// Whether there is room now.
fn make_room(seats: &mut Vec<Seat>, source: Option<IpAddr>, limits: Limits) -> bool {
    seats.retain(|seat| !seat.task.is_finished());
    let same = |seat: &Seat| source.is_some() && seat.source == source;
    let among_same = seats.iter().filter(|seat| same(seat)).count() >= limits.per_source;
    if !among_same && seats.len() < limits.clients {
        return true;
    }
    let oldest_waiting = seats
        .iter()
        .position(|seat| (!among_same || same(seat)) && seat.waiting.load(Ordering::Relaxed));
    match oldest_waiting {
        Some(at) => {
            seats.remove(at).task.abort();
            true
        }
        None => false,
    }
}

/// What came of reading a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// The bytes up to its end, the end included.
    Whole(Vec<u8>),
    /// The client closed before the end, having sent these.
    Truncated(Vec<u8>),
    /// Longer than the limit, with no end in it.
    TooLong,
    /// Not whole within the time allowed.
    Slow,
}

/// Serves `listener`'s clients until dropped (or the task is aborted):
/// each that `admits` (which counts those it does not) has its request
/// read up to the first place `end` finds (the length of the request
/// there), answered with what `answer` makes of it (nothing written if it
/// makes nothing), and the connection closed.
pub(crate) async fn serve<L: Accept>(
    listener: L,
    limits: Limits,
    end: fn(&[u8]) -> Option<usize>,
    answer: impl Fn(Request) -> Vec<u8> + Send + Sync + 'static,
    admits: impl Fn(&L::Stream) -> bool + Send,
) {
    let answer = Arc::new(answer);
    // In the order they came: the first that still waits goes first.
    let mut seats: Vec<Seat> = Vec::new();
    // Dropped with this task, taking the clients' tasks with it.
    let mut clients = JoinSet::new();
    loop {
        let stream = match listener.accept_stream().await {
            Ok(stream) if !admits(&stream) => continue,
            Ok(stream) => stream,
            Err(err) => {
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(crate::counters::ACCEPT_RETRY).await;
                continue;
            }
        };
        while clients.try_join_next().is_some() {}
        let source = L::source(&stream);
        if !make_room(&mut seats, source, limits) {
            tracing::debug!(
                clients = limits.clients,
                "every client is being answered: one more closed"
            );
            continue;
        }
        let answer = answer.clone();
        let waiting = Arc::new(AtomicBool::new(true));
        let task = clients.spawn({
            let waiting = waiting.clone();
            async move { exchange(stream, limits, end, &*answer, &waiting).await }
        });
        seats.push(Seat {
            source,
            waiting,
            task,
        });
    }
}

/// One client: its request, the answer, the end.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    limits: Limits,
    end: fn(&[u8]) -> Option<usize>,
    answer: &(impl Fn(Request) -> Vec<u8> + ?Sized),
    waiting: &AtomicBool,
) {
    let request = tokio::time::timeout(limits.time, read_request(&mut stream, limits.request, end))
        .await
        .unwrap_or(Request::Slow);
    waiting.store(false, Ordering::Relaxed);
    let reply = answer(request);
    let written = async {
        stream.write_all(&reply).await?;
        stream.shutdown().await?;
        // What the client sent past the request is read and dropped until
        // it closes: closing with bytes unread would reset the connection,
        // and the reset could take the answer with it.
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    };
    if let Ok(Err(err)) = tokio::time::timeout(limits.time, written).await {
        tracing::debug!(%err, "the answer could not be written");
    }
}

async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    limit: usize,
    end: fn(&[u8]) -> Option<usize>,
) -> Request {
    let mut request = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(length) = end(&request) {
            request.truncate(length);
            return Request::Whole(request);
        }
        if request.len() >= limit {
            return Request::TooLong;
        }
        let room = (limit - request.len()).min(chunk.len());
        match stream.read(&mut chunk[..room]).await {
            Ok(0) | Err(_) => return Request::Truncated(request),
            Ok(read) => request.extend_from_slice(&chunk[..read]),
        }
    }
}

/// The end of a line: the length up to and with the first `\n`.
pub(crate) fn line_end(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::{TcpListener, TcpStream};

    const LIMITS: Limits = Limits {
        request: 64,
        time: Duration::from_millis(300),
        clients: 2,
        per_source: 2,
    };

    /// A server that answers each request with what it made of it.
    async fn server(limits: Limits) -> std::net::SocketAddr {
        server_counting(limits).await.0
    }

    /// Clients a server has taken from its listener, and word of each.
    #[derive(Default)]
    struct Taken {
        count: std::sync::atomic::AtomicUsize,
        news: tokio::sync::Notify,
    }

    impl Taken {
        /// Waits until the server has taken `count` clients in all.
        async fn reach(&self, count: usize) {
            loop {
                let news = self.news.notified();
                if self.count.load(Ordering::SeqCst) >= count {
                    return;
                }
                news.await;
            }
        }
    }

    /// [`server`], and the clients it has taken: each is seated (or
    /// refused) before the server takes the next.
    async fn server_counting(limits: Limits) -> (std::net::SocketAddr, Arc<Taken>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let taken = Arc::new(Taken::default());
        let counting = taken.clone();
        tokio::spawn(serve(
            listener,
            limits,
            line_end,
            |request| format!("{request:?}").into_bytes(),
            move |_| {
                counting.count.fetch_add(1, Ordering::SeqCst);
                counting.news.notify_waiters();
                true
            },
        ));
        (addr, taken)
    }

    /// Sends `request` (and closes the sending side if `close`), and reads
    /// the answer until the server closes (a server that closes without
    /// reading the request may reset the connection instead).
    async fn ask(addr: std::net::SocketAddr, request: &[u8], close: bool) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        if close {
            stream.shutdown().await.unwrap();
        }
        let mut answer = Vec::new();
        let mut chunk = [0u8; 256];
        let read_all = async {
            while let Ok(read @ 1..) = stream.read(&mut chunk).await {
                answer.extend_from_slice(&chunk[..read]);
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read_all)
            .await
            .expect("the server closes");
        String::from_utf8(answer).unwrap()
    }

    #[tokio::test]
    async fn a_request_is_read_to_its_end_and_no_further() {
        let addr = server(LIMITS).await;
        assert_eq!(
            ask(addr, b"status\nmore", false).await,
            "Whole([115, 116, 97, 116, 117, 115, 10])"
        );
        assert_eq!(ask(addr, b"sta", true).await, "Truncated([115, 116, 97])");
    }

    #[tokio::test]
    async fn a_request_too_long_or_too_slow_is_cut_short_and_answered() {
        let addr = server(LIMITS).await;
        assert_eq!(ask(addr, &[b'x'; 200], false).await, "TooLong");
        // Half a request, then silence: answered once the time is out.
        assert_eq!(ask(addr, b"stat", false).await, "Slow");
    }

    /// Connections from `addr` to the server that send nothing.
    async fn silent(addr: std::net::SocketAddr, from: &str, count: usize) -> Vec<TcpStream> {
        let mut streams = Vec::new();
        for _ in 0..count {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
            streams.push(socket.connect(addr).await.unwrap());
        }
        streams
    }

    #[tokio::test]
    async fn clients_that_send_nothing_give_their_places_to_one_that_asks() {
        let limits = Limits {
            time: Duration::from_secs(30),
            clients: 4,
            per_source: 2,
            ..LIMITS
        };
        let (addr, taken) = server_counting(limits).await;
        // Two addresses fill every place with connections that send
        // nothing, and would hold them for 30 s.
        let mut idle = silent(addr, "127.0.0.2", 2).await;
        idle.extend(silent(addr, "127.0.0.3", 2).await);
        taken.reach(4).await;
        // One that asks is answered at once, in the place of the oldest.
        for _ in 0..3 {
            assert!(ask(addr, b"status\n", false).await.starts_with("Whole"));
        }
        // An address over its share displaces only its own.
        let more = silent(addr, "127.0.0.3", 8).await;
        taken.reach(4 + 3 + 8).await;
        assert!(ask(addr, b"status\n", false).await.starts_with("Whole"));
        drop((idle, more));
    }

    #[tokio::test]
    async fn clients_beyond_the_bound_are_closed_at_once_when_all_are_being_answered() {
        // Answers that take long: each client stays in its place after its
        // request, until it closes; it can no longer give the place up.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            time: Duration::from_secs(30),
            ..LIMITS
        };
        tokio::spawn(serve(
            listener,
            limits,
            line_end,
            |_| vec![b'x'; 8 << 20],
            |_| true,
        ));
        let mut held = Vec::new();
        for _ in 0..limits.clients {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(b"status\n").await.unwrap();
            // Its answer started: the request was read.
            let mut first = [0u8; 1];
            stream.read_exact(&mut first).await.unwrap();
            held.push(stream);
        }
        assert_eq!(
            ask(addr, b"status\n", false).await,
            "",
            "closed without an answer"
        );
        drop(held);
    }
}
