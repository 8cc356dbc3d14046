//! The explicit modes (no root, no routing control): the client's gateway
//! takes LAN connections on a socket of its own (a port forward, or the
//! SOCKS5 server) and opens, for each, an SCPS-TP connection to the far
//! gateway over UDP encapsulation, whose first bytes name the destination
//! (`request.rs`); the far gateway checks the destination against what it
//! allows, connects to it with kernel TCP, answers with the outcome, and
//! both relay.
//!
//! - [`FarLink::open`] is the client gateway's half: the link connection,
//!   the request, the far gateway's answer mapped to an [`OpenFailure`]
//!   (so a refusal at the far end reaches the client as a reset);
//! - [`serve_link`] is the far gateway's: one link connection from its
//!   request to the end of the relay.
//!
//! The `_listed` forms list the split connection for `scps status` and
//! the metrics (`registry.rs`); the plain ones are for callers that keep
//! no list.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use scps_net::{Net, Stream};
use scps_node::IpPrefix;
use scps_relay::{OpenFailure, Outcome, RelayConfig, Side};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::pump::{net_open_failure, open_failure, pump};
use crate::registry::Listing;
use crate::request::{Destination, MAX_REQUEST, RequestError, Status};

/// How long a link connection may take to send its whole request, and
/// the far gateway to connect and answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the far gateway lets its link connections reach: no rule, no
/// destination (never an open relay).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    pub rules: Vec<AllowRule>,
}

/// Destinations in `prefix`, on ports `ports` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowRule {
    pub prefix: IpPrefix,
    pub ports: (u16, u16),
}

impl Allowed {
    pub fn allows(&self, destination: SocketAddr) -> bool {
        self.rules.iter().any(|rule| {
            rule.prefix.contains(destination.ip())
                && (rule.ports.0..=rule.ports.1).contains(&destination.port())
        })
    }
}

/// How the far gateway reaches destinations.
#[derive(Debug, Clone)]
pub struct FarConfig {
    pub allowed: Allowed,
    /// How long a connection to a destination may take.
    pub connect_timeout: Duration,
    pub relay: RelayConfig,
}

/// How a client gateway reaches the far one: its link endpoint, the far
/// gateway's link address, and how long a destination may take to answer
/// (`relay.connect_timeout`: the far gateway connects within its own,
/// the same key on both sides).
#[derive(Debug, Clone)]
pub struct FarLink {
    pub net: Arc<Net>,
    pub far: SocketAddr,
    pub connect_timeout: Duration,
}

impl FarLink {
    /// The link connection for `destination`: connected to the far
    /// gateway, the request sent, the answer read. A far end that refused,
    /// or could not be reached, is the matching failure.
    pub async fn open(&self, destination: &Destination) -> Result<Stream, OpenFailure> {
        open_link(
            &self.net,
            self.far,
            destination,
            REQUEST_TIMEOUT + self.connect_timeout,
        )
        .await
    }
}

/// [`FarLink::open`], waiting at most `answer_within` for the far
/// gateway's answer once connected.
async fn open_link(
    net: &Net,
    far: SocketAddr,
    destination: &Destination,
    answer_within: Duration,
) -> Result<Stream, OpenFailure> {
    let mut link = net.connect(far).await.map_err(|err| {
        tracing::info!(%far, %err, "the far gateway cannot be reached");
        net_open_failure(&err)
    })?;
    let answer = async {
        link.write_all(&destination.encode()).await?;
        let mut reply = [0u8; 2];
        link.read_exact(&mut reply).await?;
        Ok::<_, std::io::Error>(reply)
    };
    let reply = match tokio::time::timeout(answer_within, answer).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(err)) => {
            tracing::info!(%far, %err, "the link connection failed before the far gateway answered");
            link.abort();
            return Err(open_failure(&err));
        }
        Err(_) => {
            link.abort();
            return Err(OpenFailure::TimedOut);
        }
    };
    match Status::parse(&reply) {
        Ok(Some(status)) => match status.failure() {
            None => Ok(link),
            Some(failure) => {
                tracing::info!(%destination, %status, "the far gateway did not connect");
                Err(failure)
            }
        },
        Ok(None) | Err(_) => {
            tracing::warn!(%far, ?reply, "the far gateway's answer is malformed");
            link.abort();
            Err(OpenFailure::Unreachable)
        }
    }
}

/// Relays a LAN connection accepted by the client gateway to
/// `destination` through the far gateway.
pub async fn relay_to_far(
    link: FarLink,
    lan: TcpStream,
    destination: Destination,
    config: RelayConfig,
) -> Outcome {
    relay_to_far_listed(link, lan, destination, config, &Listing::unlisted()).await
}

/// [`relay_to_far`], the connection shown in `listing`.
pub async fn relay_to_far_listed(
    link: FarLink,
    lan: TcpStream,
    destination: Destination,
    config: RelayConfig,
    listing: &Listing,
) -> Outcome {
    listing.set_destination(&destination);
    let opening = async move {
        let stream = link.open(&destination).await?;
        listing.link_opened(&stream);
        Ok(stream)
    };
    pump(config, Side::Lan, lan, opening, listing.progress()).await
}

/// Why the far gateway turned a link connection down.
#[derive(Debug, thiserror::Error)]
pub enum FarError {
    #[error("malformed link request: {0}")]
    Request(#[from] RequestError),
    #[error("the link connection ended within its request")]
    Truncated,
    #[error("no whole request within {REQUEST_TIMEOUT:?}")]
    Slow,
    #[error("{destination} {status}")]
    Destination {
        destination: Destination,
        status: Status,
    },
    #[error("the link connection failed: {0}")]
    Link(#[from] std::io::Error),
}

/// The far gateway's side of one link connection: reads the request,
/// connects to the destination if allowed, answers, and relays. Returns
/// how the relay ended, or why there was none (the client gateway has
/// been answered with the matching status).
pub async fn serve_link(link: Stream, config: &FarConfig) -> Result<Outcome, FarError> {
    serve_link_listed(link, config, &Listing::unlisted()).await
}

/// [`serve_link`], the connection shown in `listing`.
pub async fn serve_link_listed(
    mut link: Stream,
    config: &FarConfig,
    listing: &Listing,
) -> Result<Outcome, FarError> {
    listing.link_opened(&link);
    let request = tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut link)).await;
    let destination = match request {
        Ok(Ok(destination)) => destination,
        Ok(Err(err)) => {
            if matches!(err, FarError::Request(_)) {
                answer_and_close(link, Status::BadRequest).await?;
            }
            return Err(err);
        }
        Err(_) => {
            link.abort();
            return Err(FarError::Slow);
        }
    };
    listing.set_destination(&destination);
    let lan = match connect(&destination, config).await {
        Ok(lan) => lan,
        Err(status) => {
            answer_and_close(link, status).await?;
            return Err(FarError::Destination { destination, status });
        }
    };
    link.write_all(&Status::Connected.encode()).await?;
    let relayed = pump(
        config.relay,
        Side::Link,
        link,
        std::future::ready(Ok(lan)),
        listing.progress(),
    );
    Ok(relayed.await)
}

/// Answers a link connection that will not be relayed, and closes it
/// once the client gateway has closed its side (or after a while): bytes
/// it sent after the request are read and dropped, since closing with
/// bytes unread would reset the connection and take the answer with it.
async fn answer_and_close(mut link: Stream, status: Status) -> std::io::Result<()> {
    link.write_all(&status.encode()).await?;
    link.shutdown().await?;
    let mut sink = [0u8; 4096];
    let drain = async {
        while link.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, drain).await {
        Ok(result) => result,
        Err(_) => {
            link.abort();
            Ok(())
        }
    }
}

/// Reads a whole request from the start of `link`, and not a byte more.
async fn read_request(link: &mut Stream) -> Result<Destination, FarError> {
    let mut request = Vec::with_capacity(MAX_REQUEST);
    loop {
        if let Some((destination, _)) = Destination::parse(&request)? {
            return Ok(destination);
        }
        // The shortest read that can complete the request: a byte at a
        // time is enough, and the request is a few bytes long.
        let mut byte = [0u8; 1];
        if link.read(&mut byte).await? == 0 {
            return Err(FarError::Truncated);
        }
        request.push(byte[0]);
    }
}

/// Connects to `destination` if the far gateway allows it (a name only
/// if the address it resolves to is allowed).
async fn connect(destination: &Destination, config: &FarConfig) -> Result<TcpStream, Status> {
    let addresses: Vec<SocketAddr> = match destination {
        Destination::Address(addr) => vec![*addr],
        Destination::Name(name, port) => tokio::net::lookup_host((name.as_str(), *port))
            .await
            .map_err(|_| Status::NameNotFound)?
            .collect(),
    };
    let allowed: Vec<SocketAddr> = addresses
        .into_iter()
        .filter(|addr| config.allowed.allows(*addr))
        .collect();
    let Some(&first) = allowed.first() else {
        tracing::info!(%destination, "link request for a destination no rule allows");
        return Err(Status::NotAllowed);
    };
    let mut status = Status::Unreachable;
    for addr in allowed {
        match tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(err)) => {
                tracing::debug!(%addr, %err, "connect failed");
                status = Status::of_failure(open_failure(&err));
            }
            Err(_) => status = Status::TimedOut,
        }
    }
    tracing::info!(destination = %first, %status, "the destination cannot be reached");
    Err(status)
}
