//! Prometheus metrics over HTTP: `GET /metrics` on the configured address
//! answers with the text exposition of the current counters.

use std::net::{SocketAddr, TcpListener};

use crate::Error;
use crate::acceptor::{Acceptor, Conversation};
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
        let acceptor = Acceptor::spawn("emulator-metrics", listener, move || Exchange {
            shared: shared.clone(),
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

/// One HTTP exchange: the request line and headers, then the answer and
/// the end of the connection.
struct Exchange {
    shared: Shared,
}

impl Conversation for Exchange {
    fn converse(&mut self, input: &mut Vec<u8>, output: &mut Vec<u8>, closed: bool) -> bool {
        // The headers end at the first empty line; nothing in them
        // changes the answer.
        let Some(head_len) = header_end(input) else {
            return closed;
        };
        let head = String::from_utf8_lossy(&input[..head_len]).into_owned();
        input.clear();
        let mut words = head.split_whitespace();
        let (status, content_type, body) = match (words.next(), words.next()) {
            (Some("GET"), Some("/metrics")) => {
                let stats = lock(&self.shared.state).stats(self.shared.now());
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
        output.extend_from_slice(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        true
    }
}

/// Where the request's headers end (after the empty line), if they have.
fn header_end(input: &[u8]) -> Option<usize> {
    let crlf = input.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = input.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    crlf.into_iter().chain(lf).min()
}
