//! What the kernel knows of one of its TCP connections (`struct tcp_info`
//! of linux/tcp.h), so that a kernel-TCP report carries retransmitted bytes
//! beside ours. Asked over sock_diag netlink (sock_diag(7): an exact
//! `inet_diag_req_v2` lookup with `INET_DIAG_INFO`), as `ss -ti` does:
//! `getsockopt(TCP_INFO)` has no safe wrapper in nix or socket2, and the
//! workspace forbids unsafe code.

use std::net::{IpAddr, SocketAddr};

use netlink_sys::{Socket, constants::NETLINK_SOCK_DIAG};

/// The fields of `tcp_info` the reports use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    /// `tcpi_bytes_acked`: bytes the peer acknowledged (Linux 4.1).
    pub bytes_acked: u64,
    /// `tcpi_bytes_received`: bytes received in order (Linux 4.1).
    pub bytes_received: u64,
    /// `tcpi_total_retrans`: segments sent again.
    pub total_retrans: u32,
    /// `tcpi_bytes_retrans`: bytes sent again (Linux 4.19).
    pub bytes_retrans: u64,
}

// linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HEADER_BYTES: usize = 16;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_NOCOOKIE: u32 = !0;
/// `struct inet_diag_msg`: family, state, timer, retrans, the 48-byte
/// socket id, then expires, rqueue, wqueue, uid, inode.
const INET_DIAG_MSG_BYTES: usize = 72;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const IPPROTO_TCP: u8 = 6;

// Offsets in `struct tcp_info` (linux/tcp.h; fields are only ever added at
// its end, and the kernel reports how many bytes it filled).
const TCPI_TOTAL_RETRANS: usize = 100;
const TCPI_BYTES_ACKED: usize = 120;
const TCPI_BYTES_RECEIVED: usize = 128;
const TCPI_BYTES_RETRANS: usize = 208;

impl From<std::io::Error> for TcpInfoError {
    fn from(error: std::io::Error) -> TcpInfoError {
        TcpInfoError::Io(error)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TcpInfoError {
    // Not also the error's `source`: a report of the whole chain would say
    // it twice.
    #[error("sock_diag netlink: {0}")]
    Io(std::io::Error),
    #[error("the kernel knows no TCP connection {local} -> {peer} (error {errno})")]
    NotFound {
        local: SocketAddr,
        peer: SocketAddr,
        errno: i32,
    },
    #[error("the kernel's answer is cut short ({0} bytes)")]
    Truncated(usize),
    #[error("the kernel's answer carries no tcp_info (Linux before 4.19?)")]
    NoInfo,
}

/// The kernel's figures of its TCP connection from `local` to `peer` (in
/// this network namespace).
pub fn tcp_info(local: SocketAddr, peer: SocketAddr) -> Result<TcpInfo, TcpInfoError> {
    parse_reply(&ask(local, peer)?, local, peer)
}

/// The kernel's answer, as it is.
fn ask(local: SocketAddr, peer: SocketAddr) -> Result<Vec<u8>, TcpInfoError> {
    let socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.send(&request(local, peer), 0)?;
    let (reply, _) = socket.recv_from_full()?;
    Ok(reply)
}

/// An IPv4 address in an IPv6 socket (a dual-stack listener's) is asked
/// for as the IPv6 connection it is.
fn family(local: SocketAddr) -> u8 {
    if local.is_ipv4() { AF_INET } else { AF_INET6 }
}

fn address_bytes(ip: IpAddr) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => bytes = v6.octets(),
    }
    bytes
}

/// A netlink message: `nlmsghdr`, then `inet_diag_req_v2` naming the
/// connection exactly.
fn request(local: SocketAddr, peer: SocketAddr) -> Vec<u8> {
    let mut body = vec![
        family(local),
        IPPROTO_TCP,
        1 << (INET_DIAG_INFO - 1), // idiag_ext: ask for tcp_info
        0,
    ];
    body.extend_from_slice(&u32::MAX.to_ne_bytes()); // idiag_states: any
    body.extend_from_slice(&local.port().to_be_bytes());
    body.extend_from_slice(&peer.port().to_be_bytes());
    body.extend_from_slice(&address_bytes(local.ip()));
    body.extend_from_slice(&address_bytes(peer.ip()));
    body.extend_from_slice(&0u32.to_ne_bytes()); // interface: any
    body.extend_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());
    body.extend_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());
    let mut message = Vec::with_capacity(NLMSG_HEADER_BYTES + body.len());
    message.extend_from_slice(&((NLMSG_HEADER_BYTES + body.len()) as u32).to_ne_bytes());
    message.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    message.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
    message.extend_from_slice(&body);
    message
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The `tcp_info` in the kernel's answer: one `inet_diag_msg` and its
/// attributes, or an error message. (Public for the fuzz target.)
pub fn parse_reply(reply: &[u8], local: SocketAddr, peer: SocketAddr) -> Result<TcpInfo, TcpInfoError> {
    let truncated = || TcpInfoError::Truncated(reply.len());
    let length = u32_at(reply, 0).ok_or_else(truncated)? as usize;
    let kind = u16_at(reply, 4).ok_or_else(truncated)?;
    let message = reply.get(..length).ok_or_else(truncated)?;
    if kind == NLMSG_ERROR {
        let errno = u32_at(message, NLMSG_HEADER_BYTES).ok_or_else(truncated)? as i32;
        return Err(TcpInfoError::NotFound {
            local,
            peer,
            // The kernel sends -errno; any other value is only reported.
            errno: errno.saturating_neg(),
        });
    }
    // Attributes (`rtattr`: length, type, data padded to 4 bytes).
    let mut at = NLMSG_HEADER_BYTES + INET_DIAG_MSG_BYTES;
    while at + 4 <= message.len() {
        let attr_len = usize::from(u16_at(message, at).ok_or_else(truncated)?);
        let attr_type = u16_at(message, at + 2).ok_or_else(truncated)?;
        if attr_len < 4 {
            return Err(truncated());
        }
        let data = message.get(at + 4..at + attr_len).ok_or_else(truncated)?;
        if attr_type == INET_DIAG_INFO {
            return Ok(TcpInfo {
                total_retrans: u32_at(data, TCPI_TOTAL_RETRANS).ok_or(TcpInfoError::NoInfo)?,
                bytes_acked: u64_at(data, TCPI_BYTES_ACKED).ok_or(TcpInfoError::NoInfo)?,
                bytes_received: u64_at(data, TCPI_BYTES_RECEIVED).ok_or(TcpInfoError::NoInfo)?,
                bytes_retrans: u64_at(data, TCPI_BYTES_RETRANS).ok_or(TcpInfoError::NoInfo)?,
            });
        }
        at += attr_len.next_multiple_of(4);
    }
    Err(TcpInfoError::NoInfo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn the_kernel_counts_what_its_connection_moved() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let data = vec![7u8; 300_000];
        client.write_all(&data).unwrap();
        let mut received = vec![0u8; data.len()];
        server.read_exact(&mut received).unwrap();
        // The server's ACK of the last byte is on its way; the reply to a
        // byte from the server follows it on the same path.
        server.write_all(b"x").unwrap();
        client.read_exact(&mut [0u8; 1]).unwrap();
        let (local, peer) = (client.local_addr().unwrap(), client.peer_addr().unwrap());
        let sender = tcp_info(local, peer).unwrap();
        assert_eq!(
            sender.bytes_acked,
            data.len() as u64 + 1,
            "data and SYN: {sender:?}"
        );
        assert_eq!(sender.bytes_received, 1, "{sender:?}");
        assert_eq!((sender.total_retrans, sender.bytes_retrans), (0, 0), "{sender:?}");
        let receiver = tcp_info(server.local_addr().unwrap(), server.peer_addr().unwrap()).unwrap();
        assert_eq!(receiver.bytes_received, data.len() as u64, "{receiver:?}");

        // None runs from the client's port to port 1.
        let err = tcp_info(local, "127.0.0.1:1".parse().unwrap()).unwrap_err();
        assert!(err.to_string().contains("knows no TCP connection"), "{err}");
    }

    #[test]
    fn an_error_message_with_any_errno_is_an_error() {
        // Found by the fuzz target: an errno field of i32::MIN.
        let reply = [
            0x14, 0, 0, 0, 0x02, 0, 0xff, 0xff, 0xff, 0, 0, 0xff, 0x17, 0, 0xff, 0xff, 0, 0, 0, 0x80,
        ];
        let (local, peer) = ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
        assert!(matches!(
            parse_reply(&reply, local, peer),
            Err(TcpInfoError::NotFound { errno: i32::MAX, .. })
        ));
    }

    #[test]
    fn damaged_answers_are_errors_not_panics() {
        // A real answer, cut at every length and with every byte changed
        // in turn: the parser may fail, never panic or read out of bounds.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (local, peer) = (client.local_addr().unwrap(), client.peer_addr().unwrap());
        let reply = ask(local, peer).unwrap();
        assert!(parse_reply(&reply, local, peer).is_ok());
        for len in 0..reply.len() {
            let _ = parse_reply(&reply[..len], local, peer);
        }
        for at in 0..reply.len() {
            for value in [0x00, 0x01, 0x7f, 0xff] {
                let mut damaged = reply.clone();
                damaged[at] = value;
                let _ = parse_reply(&damaged, local, peer);
            }
        }
        let mut zero_length = reply.clone();
        zero_length[..4].fill(0);
        assert!(parse_reply(&zero_length, local, peer).is_err());
    }
}
