//! The UDP port a client sends from and is answered on (`--local-port`).
//!
//! Some Saratoga peers of the drafts' era answer only to port 7542, the
//! Saratoga port, whatever port a request came from: a client on an
//! ephemeral port never hears them. So a client takes port 7542 when it
//! is free, and otherwise (a server on this host holds it, or another
//! client) a port the system picks, saying what that costs. `--local-port
//! 0` always lets the system pick; any other port is taken or the command
//! fails.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use crate::host::bind;
use crate::peer::DEFAULT_PORT;

/// A client's socket, for a peer of `peer`'s family, on `port` (`None`:
/// 7542 if free); when it fell back from 7542, what to tell the user.
pub fn client_socket(peer: SocketAddr, port: Option<u16>) -> anyhow::Result<(UdpSocket, Option<String>)> {
    let on = |port: u16| match peer {
        SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)),
        SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
    };
    if let Some(port) = port {
        return Ok((bind(on(port))?, None));
    }
    let error = match bind(on(DEFAULT_PORT)) {
        Ok(socket) => return Ok((socket, None)),
        Err(error) => error,
    };
    let in_use = error
        .root_cause()
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == ErrorKind::AddrInUse);
    if !in_use {
        return Err(error);
    }
    let socket = bind(on(0))?;
    let port = socket.local_addr()?.port();
    let note = format!(
        "UDP port {DEFAULT_PORT} is in use here (by a `scps saratoga serve`, or another client): \
         using port {port}; a peer that answers only to port {DEFAULT_PORT}, not to the port a \
         request came from, will not be heard (docs/saratoga.md, \"Peers that answer only to port {DEFAULT_PORT}\")"
    );
    Ok((socket, Some(note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_7542_is_taken_when_free_and_another_when_it_is_not() {
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        // Held here if it was free; if something else holds it, the
        // client falls back all the same.
        let holder = std::net::UdpSocket::bind(("0.0.0.0", DEFAULT_PORT));
        let (socket, note) = client_socket(peer, None).unwrap();
        let port = socket.local_addr().unwrap().port();
        assert_ne!(port, DEFAULT_PORT);
        let note = note.expect("the fallback is told");
        assert!(note.contains(&format!("using port {port}")), "{note}");
        // A port asked for is taken or refused, never replaced.
        let error = client_socket(peer, Some(DEFAULT_PORT)).map(|_| ()).unwrap_err();
        assert!(error.to_string().contains("7542"), "{error}");
        let (socket, note) = client_socket(peer, Some(0)).unwrap();
        assert!(note.is_none());
        assert_ne!(socket.local_addr().unwrap().port(), 0);
        drop(holder);
    }
}
