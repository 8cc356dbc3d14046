//! What a channel's socket hears of ICMP about its datagrams.
//!
//! A connected UDP socket hears on its own only the reports Linux takes as
//! hard errors (port unreachable, administratively prohibited); "host
//! unreachable" from a router whose circuit is down (a modem that lost
//! its call, `scps emulate`'s `circuit_ports`) it ignores. With
//! `IP_RECVERR` every report is kept in the socket's error queue, with
//! the router that sent it: a channel whose peer is reported unreachable
//! is down at once, not two probe intervals after its last answer. A
//! "packet too big" report is path MTU discovery's, not a dead channel.

use std::io::IoSliceMut;
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::libc;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt};
use socket2::Socket;

/// Keeps the ICMP reports about `socket`'s datagrams (IPv4 or IPv6, as
/// `ipv6` says) in its error queue.
pub(super) fn listen(socket: &Socket, ipv6: bool) -> nix::Result<()> {
    if ipv6 {
        setsockopt(socket, sockopt::Ipv6RecvErr, &true)
    } else {
        setsockopt(socket, sockopt::Ipv4RecvErr, &true)
    }
}

/// A report that the peer cannot be reached, read from the error queue of
/// `socket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unreachable {
    /// The error it stands for, its ICMP type and code, and who sent it.
    pub errno: Errno,
    pub icmp_type: u8,
    pub icmp_code: u8,
    pub from: Option<std::net::IpAddr>,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ICMP type {} code {} ({})",
            self.icmp_type,
            self.icmp_code,
            self.errno.desc()
        )?;
        if let Some(from) = self.from {
            write!(f, " from {from}")?;
        }
        Ok(())
    }
}

/// Empties the error queue of `socket`: the last report in it that says
/// the peer cannot be reached, if any.
pub(super) fn take_unreachable(socket: &impl AsRawFd) -> Option<Unreachable> {
    let mut last = None;
    let mut quoted = [0u8; 64];
    let mut control = nix::cmsg_space!(libc::sock_extended_err, libc::sockaddr_in6);
    loop {
        let mut iov = [IoSliceMut::new(&mut quoted)];
        let Ok(message) = recvmsg::<SockaddrStorage>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut control),
            MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
        ) else {
            // Empty (EAGAIN).
            return last;
        };
        let Ok(messages) = message.cmsgs() else {
            continue;
        };
        for cmsg in messages {
            let (error, from) = match cmsg {
                ControlMessageOwned::Ipv4RecvErr(error, from) => (
                    error,
                    from.map(|a| {
                        std::net::IpAddr::V4(std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)))
                    }),
                ),
                ControlMessageOwned::Ipv6RecvErr(error, from) => (
                    error,
                    from.map(|a| std::net::IpAddr::V6(std::net::Ipv6Addr::from(a.sin6_addr.s6_addr))),
                ),
                _ => continue,
            };
            let from_icmp = matches!(
                error.ee_origin,
                libc::SO_EE_ORIGIN_ICMP | libc::SO_EE_ORIGIN_ICMP6
            );
            let errno = Errno::from_raw(error.ee_errno as i32);
            if from_icmp && errno != Errno::EMSGSIZE {
                last = Some(Unreachable {
                    errno,
                    icmp_type: error.ee_type,
                    icmp_code: error.ee_code,
                    from,
                });
            }
        }
    }
}
