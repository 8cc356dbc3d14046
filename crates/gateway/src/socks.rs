//! The SOCKS5 server of the explicit modes (RFC 1928): an application
//! configured with the client gateway as its SOCKS5 proxy names its
//! destination in a CONNECT request; the gateway carries it to the far
//! gateway as a link request (`request.rs`, whose address kinds are
//! SOCKS5's), which resolves names at its side, and answers the
//! application with the outcome in SOCKS5's reply codes. A server with
//! users (`users_file`) takes only clients that authenticate with a name
//! and password (RFC 1929); one without takes those that offer no
//! authentication (and its listener then serves only its allow-list, or
//! this host: `clients.rs`).
//!
//! The parsers take the bytes read so far and say "more", a message, or
//! what is wrong with it; `serve` runs one client's exchange.

use std::time::Duration;

use scps_relay::{OpenFailure, Outcome, RelayConfig, Side};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::explicit::FarLink;
use crate::pump::{Connection, pump};
use crate::registry::Listing;
use crate::request::{Destination, RequestError};

const VERSION: u8 = 5;
const NO_AUTHENTICATION: u8 = 0;
const USERNAME_PASSWORD: u8 = 2;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 1;
/// The version of RFC 1929's sub-negotiation, and its statuses.
const AUTH_VERSION: u8 = 1;
const AUTH_SUCCEEDED: u8 = 0;
const AUTH_FAILED: u8 = 1;

/// SOCKS5's reply codes (RFC 1928 section 6) that the gateway sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Succeeded = 0,
    GeneralFailure = 1,
    NotAllowed = 2,
    HostUnreachable = 4,
    ConnectionRefused = 5,
    TtlExpired = 6,
    CommandNotSupported = 7,
    AddressTypeNotSupported = 8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SocksError {
    #[error("SOCKS version {0}, expected 5")]
    Version(u8),
    #[error("no method offered is {0}")]
    NoAcceptableMethod(&'static str),
    #[error("username/password sub-negotiation version {0}, expected 1")]
    AuthVersion(u8),
    #[error("an empty user name or password")]
    EmptyCredential,
    #[error("the user name or password is not known")]
    BadCredentials,
    #[error("SOCKS command {0}: only CONNECT (1) is served")]
    Command(u8),
    #[error("SOCKS address type {0}: expected 1 (IPv4), 3 (name) or 4 (IPv6)")]
    AddressType(u8),
    #[error("SOCKS request with an empty or malformed host name")]
    Name,
    #[error("SOCKS request with reserved byte {0}, expected 0")]
    Reserved(u8),
}

impl SocksError {
    /// The reply that tells the client, where the protocol has one.
    fn reply(&self) -> Option<Reply> {
        match self {
            SocksError::Command(_) => Some(Reply::CommandNotSupported),
            SocksError::AddressType(_) => Some(Reply::AddressTypeNotSupported),
            SocksError::Name | SocksError::Reserved(_) => Some(Reply::GeneralFailure),
            SocksError::Version(_)
            | SocksError::NoAcceptableMethod(_)
            | SocksError::AuthVersion(_)
            | SocksError::EmptyCredential
            | SocksError::BadCredentials => None,
        }
    }
}

/// The greeting (version, method count, methods): the methods offered and
/// the greeting's length, once whole.
pub fn parse_greeting(bytes: &[u8]) -> Result<Option<(&[u8], usize)>, SocksError> {
    let Some(&version) = bytes.first() else {
        return Ok(None);
    };
    if version != VERSION {
        return Err(SocksError::Version(version));
    }
    let Some(&count) = bytes.get(1) else {
        return Ok(None);
    };
    let Some(methods) = bytes.get(2..2 + usize::from(count)) else {
        return Ok(None);
    };
    Ok(Some((methods, 2 + usize::from(count))))
}

/// What a client gave in RFC 1929's sub-negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credentials<'a> {
    pub name: &'a [u8],
    pub password: &'a [u8],
    /// The sub-negotiation's length.
    pub len: usize,
}

/// RFC 1929's sub-negotiation (version 1, name length, name, password
/// length, password), once whole.
pub fn parse_credentials(bytes: &[u8]) -> Result<Option<Credentials<'_>>, SocksError> {
    let Some(&version) = bytes.first() else {
        return Ok(None);
    };
    if version != AUTH_VERSION {
        return Err(SocksError::AuthVersion(version));
    }
    let Some(&name_len) = bytes.get(1) else {
        return Ok(None);
    };
    let name_end = 2 + usize::from(name_len);
    let Some(&password_len) = bytes.get(name_end) else {
        return Ok(None);
    };
    let end = name_end + 1 + usize::from(password_len);
    if bytes.len() < end {
        return Ok(None);
    }
    if name_len == 0 || password_len == 0 {
        return Err(SocksError::EmptyCredential);
    }
    Ok(Some(Credentials {
        name: &bytes[2..name_end],
        password: &bytes[name_end + 1..end],
        len: end,
    }))
}

/// A SOCKS5 server's users (RFC 1929): names and passwords, from a file of
/// `NAME:PASSWORD` lines (blank lines and `#` comments aside). `Debug`
/// shows the names alone.
#[derive(Clone, PartialEq, Eq)]
pub struct Users(std::collections::BTreeMap<Vec<u8>, Vec<u8>>);

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.0.keys().map(|name| String::from_utf8_lossy(name)).collect();
        f.debug_tuple("Users").field(&names).finish()
    }
}

impl Users {
    /// Reads the users file's text; what is wrong names the line.
    pub fn parse(text: &str) -> Result<Users, String> {
        let mut users = std::collections::BTreeMap::new();
        for (number, line) in text.lines().enumerate().map(|(i, line)| (i + 1, line.trim_end())) {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((name, password)) = line.split_once(':') else {
                return Err(format!("line {number}: NAME:PASSWORD expected"));
            };
            let fits = |part: &str| (1..=255).contains(&part.len());
            if !fits(name) || !fits(password) {
                return Err(format!(
                    "line {number}: a name and a password of 1 to 255 bytes each"
                ));
            }
            if users
                .insert(name.as_bytes().to_vec(), password.as_bytes().to_vec())
                .is_some()
            {
                return Err(format!("line {number}: the user {name} a second time"));
            }
        }
        if users.is_empty() {
            return Err("no user in it".to_owned());
        }
        Ok(Users(users))
    }

    /// Whether `name` is a user and `password` theirs (compared in time
    /// that does not depend on where they differ).
    fn check(&self, name: &[u8], password: &[u8]) -> bool {
        let Some(known) = self.0.get(name) else {
            return false;
        };
        known.len() == password.len()
            && known
                .iter()
                .zip(password)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// The request (version, command, reserved, address type, address,
/// port): the destination of a CONNECT and the request's length.
pub fn parse_request(bytes: &[u8]) -> Result<Option<(Destination, usize)>, SocksError> {
    let Some(head) = bytes.get(..4) else {
        return match bytes.first() {
            Some(&version) if version != VERSION => Err(SocksError::Version(version)),
            _ => Ok(None),
        };
    };
    if head[0] != VERSION {
        return Err(SocksError::Version(head[0]));
    }
    if head[1] != CONNECT {
        return Err(SocksError::Command(head[1]));
    }
    if head[2] != 0 {
        return Err(SocksError::Reserved(head[2]));
    }
    // SOCKS5's address types are the link request's kinds: after the
    // first three bytes comes a link request's address part.
    match Destination::parse_address(&bytes[3..]) {
        Ok(Some((destination, len))) => Ok(Some((destination, 3 + len))),
        Ok(None) => Ok(None),
        Err(RequestError::Kind(kind)) => Err(SocksError::AddressType(kind)),
        Err(_) => Err(SocksError::Name),
    }
}

/// A reply with an empty bound address (the gateway does not say which
/// address the far side connected from).
pub fn encode_reply(reply: Reply) -> [u8; 10] {
    [VERSION, reply as u8, 0, 1, 0, 0, 0, 0, 0, 0]
}

fn reply_for(failure: OpenFailure) -> Reply {
    match failure {
        OpenFailure::Refused => Reply::ConnectionRefused,
        OpenFailure::TimedOut => Reply::TtlExpired,
        OpenFailure::Unreachable => Reply::HostUnreachable,
        OpenFailure::NotAllowed => Reply::NotAllowed,
        OpenFailure::OutOf(_) => Reply::GeneralFailure,
    }
}

/// Why a SOCKS client was not relayed.
#[derive(Debug, thiserror::Error)]
pub enum SocksRefusal {
    #[error("{0}")]
    Protocol(#[from] SocksError),
    /// It did not authenticate (it offered no method the server takes,
    /// or gave a name or password it does not know).
    #[error("not authenticated: {0}")]
    NotAuthenticated(SocksError),
    #[error("the client closed during its handshake")]
    Truncated,
    #[error("no whole handshake within {0:?}")]
    Slow(Duration),
    #[error("{destination}: the far end {failure}")]
    Far {
        destination: Destination,
        failure: OpenFailure,
    },
    #[error("the client's connection failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one client's handshake (greeting, authentication if the server
/// has `users`, request) within `deadline`: the destination it asks for.
/// A malformed one is answered with SOCKS5's reply where it has one.
pub async fn read_handshake(
    client: &mut TcpStream,
    users: Option<&Users>,
    deadline: Duration,
) -> Result<Destination, SocksRefusal> {
    match tokio::time::timeout(deadline, handshake(client, users)).await {
        Ok(Ok(destination)) => Ok(destination),
        Ok(Err(refusal)) => {
            if let SocksRefusal::Protocol(error) = &refusal
                && let Some(reply) = error.reply()
            {
                let _ = client.write_all(&encode_reply(reply)).await;
            }
            Err(refusal)
        }
        Err(_) => Err(SocksRefusal::Slow(deadline)),
    }
}

/// Turns away a client whose handshake is done, for want of a place among
/// the split connections: SOCKS5's general failure, then a reset.
pub async fn refuse(mut client: TcpStream) {
    let _ = client.write_all(&encode_reply(Reply::GeneralFailure)).await;
    client.reset();
}

/// Carries a client whose handshake asked for `destination`: the link
/// connection to the far gateway, the reply, and the relay, shown in
/// `listing`.
pub async fn relay(
    mut client: TcpStream,
    destination: Destination,
    far: FarLink,
    config: RelayConfig,
    listing: &Listing,
) -> Result<Outcome, SocksRefusal> {
    listing.set_destination(&destination);
    let link = match far.open(&destination).await {
        Ok(link) => {
            listing.link_opened(&link);
            link
        }
        Err(failure) => {
            let _ = client.write_all(&encode_reply(reply_for(failure))).await;
            return Err(SocksRefusal::Far { destination, failure });
        }
    };
    if let Err(err) = client.write_all(&encode_reply(Reply::Succeeded)).await {
        link.reset();
        return Err(err.into());
    }
    let relayed = pump(
        config,
        Side::Lan,
        client,
        std::future::ready(Ok(link)),
        listing.progress(),
    );
    Ok(relayed.await)
}

/// Reads the greeting, answers it, authenticates the client if the server
/// has `users`, reads the request: the destination. Reads a byte at a
/// time, never past the request (what follows it is the relayed stream).
async fn handshake(client: &mut TcpStream, users: Option<&Users>) -> Result<Destination, SocksRefusal> {
    let (method, name) = match users {
        Some(_) => (USERNAME_PASSWORD, "username/password"),
        None => (NO_AUTHENTICATION, "\"no authentication\""),
    };
    let mut bytes = Vec::new();
    let offered = loop {
        match parse_greeting(&bytes)? {
            Some((methods, _)) => break methods.contains(&method),
            None => bytes.push(read_byte(client).await?),
        }
    };
    if !offered {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await?;
        let refused = SocksError::NoAcceptableMethod(name);
        return Err(match users {
            Some(_) => SocksRefusal::NotAuthenticated(refused),
            None => refused.into(),
        });
    }
    client.write_all(&[VERSION, method]).await?;
    if let Some(users) = users {
        bytes.clear();
        let known = loop {
            match parse_credentials(&bytes).map_err(SocksRefusal::NotAuthenticated)? {
                Some(given) => break users.check(given.name, given.password),
                None => bytes.push(read_byte(client).await?),
            }
        };
        if !known {
            client.write_all(&[AUTH_VERSION, AUTH_FAILED]).await?;
            return Err(SocksRefusal::NotAuthenticated(SocksError::BadCredentials));
        }
        client.write_all(&[AUTH_VERSION, AUTH_SUCCEEDED]).await?;
    }
    bytes.clear();
    loop {
        if let Some((destination, _)) = parse_request(&bytes)? {
            return Ok(destination);
        }
        bytes.push(read_byte(client).await?);
    }
}

async fn read_byte(client: &mut TcpStream) -> Result<u8, SocksRefusal> {
    let mut byte = [0u8; 1];
    if client.read(&mut byte).await? == 0 {
        return Err(SocksRefusal::Truncated);
    }
    Ok(byte[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

    #[test]
    fn a_users_file_reads_names_and_passwords_and_checks_them() {
        let users = Users::parse("# operators\nops:correct horse\n\nalice:s3cret:with:colons\n").unwrap();
        assert!(users.check(b"ops", b"correct horse"));
        assert!(users.check(b"alice", b"s3cret:with:colons"));
        assert!(!users.check(b"ops", b"correct hors"));
        assert!(!users.check(b"bob", b"correct horse"));
        assert!(!format!("{users:?}").contains("horse"), "Debug hides passwords");
        assert_eq!(
            Users::parse("ops\n"),
            Err("line 1: NAME:PASSWORD expected".to_owned())
        );
        assert!(
            Users::parse("a:b\na:c\n")
                .unwrap_err()
                .contains("line 2: the user a a second time")
        );
        assert!(Users::parse(":x\n").unwrap_err().contains("1 to 255 bytes"));
        assert_eq!(Users::parse("# nobody\n"), Err("no user in it".to_owned()));
    }

    #[test]
    fn requests_of_every_address_type_parse_and_say_their_length() {
        let v4 = [5, 1, 0, 1, 10, 1, 0, 5, 0, 22, 0xaa];
        assert_eq!(
            parse_request(&v4),
            Ok(Some((
                Destination::Address(SocketAddr::new(Ipv4Addr::new(10, 1, 0, 5).into(), 22)),
                10
            )))
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0x1f, 0x90]);
        assert_eq!(
            parse_request(&v6),
            Ok(Some((
                Destination::Address(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 8080)),
                22
            )))
        );
        let name = [
            5, 1, 0, 3, 9, b'l', b'o', b'c', b'a', b'l', b'h', b'o', b's', b't', 0, 80,
        ];
        assert_eq!(
            parse_request(&name),
            Ok(Some((Destination::Name("localhost".into(), 80), 16)))
        );
        for cut in 0..name.len() {
            assert_eq!(parse_request(&name[..cut]), Ok(None), "{cut} bytes ask for more");
        }
    }

    #[test]
    fn malformed_greetings_and_requests_say_what_is_wrong() {
        assert_eq!(parse_greeting(&[4, 1, 0]), Err(SocksError::Version(4)));
        assert_eq!(parse_greeting(&[5, 1, 2]), Ok(Some((&[2][..], 3))));
        assert_eq!(parse_greeting(&[5, 2, 2]), Ok(None));
        assert_eq!(parse_greeting(&[5, 2, 2, 0]), Ok(Some((&[2, 0][..], 4))));
        assert_eq!(
            parse_credentials(&[1, 2, b'o', b'p', 1, b'x', 9]),
            Ok(Some(Credentials {
                name: b"op",
                password: b"x",
                len: 6
            }))
        );
        assert_eq!(parse_credentials(&[1, 2, b'o', b'p', 1]), Ok(None));
        assert_eq!(parse_credentials(&[5, 2]), Err(SocksError::AuthVersion(5)));
        assert_eq!(
            parse_credentials(&[1, 0, 1, b'x']),
            Err(SocksError::EmptyCredential)
        );
        assert_eq!(parse_request(&[5, 2, 0, 1]), Err(SocksError::Command(2)));
        assert_eq!(parse_request(&[5, 1, 0, 9]), Err(SocksError::AddressType(9)));
        assert_eq!(parse_request(&[5, 1, 7, 1]), Err(SocksError::Reserved(7)));
        assert_eq!(parse_request(&[5, 1, 0, 3, 0, 0, 80]), Err(SocksError::Name));
        assert_eq!(SocksError::Command(2).reply(), Some(Reply::CommandNotSupported));
        assert_eq!(encode_reply(Reply::NotAllowed)[1], 2);
    }
}
