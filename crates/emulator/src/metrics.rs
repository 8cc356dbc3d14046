//! Prometheus metrics over HTTP: `GET /metrics` on the configured address
//! answers with the text exposition of the current counters.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use crate::Error;
use crate::acceptor::Acceptor;
use crate::bridge::{Shared, lock};

/// The HTTP listener and its thread.
#[derive(Debug)]
pub(crate) struct MetricsServer {
    address: SocketAddr,
    _acceptor: Acceptor,
}

impl MetricsServer {
    pub(crate) fn start(address: SocketAddr, shared: Shared) -> Result<Self, Error> {
        let listener = TcpListener::bind(address).map_err(|source| Error::Io {
            what: format!("listen for metrics on {address}"),
            source,
        })?;
        let address = listener.local_addr().map_err(|source| Error::Io {
            what: "read the metrics address".into(),
            source,
        })?;
        let acceptor = Acceptor::spawn("emulator-metrics", listener, move |stream| {
            let _ = serve(stream, &shared);
        })?;
        Ok(MetricsServer {
            address,
            _acceptor: acceptor,
        })
    }

    /// Where it listens (useful when the configured port was 0).
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(std::io::Read::take(stream.try_clone()?, 16 * 1024));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes the answer.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut words = request_line.split_whitespace();
    let (status, content_type, body) = match (words.next(), words.next()) {
        (Some("GET"), Some("/metrics")) => {
            let stats = lock(&shared.state).stats(shared.now());
            (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                stats.prometheus(),
            )
        }
        _ => (
            "404 Not Found",
            "text/plain",
            "only GET /metrics is served\n".to_owned(),
        ),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
