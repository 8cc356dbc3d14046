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
//!
//! The kernel hands a socket only reports that quote a datagram of its
//! addresses and ports, which anyone who knows them can forge (as against
//! TCP, RFC 5927). A report is believed only if it quotes the start of a
//! datagram the channel sent lately (as QUIC validates them, RFC 9000
//! 14.2.1): the inner IP header and TCP sequence number of a data
//! datagram, the prober's clock of a probe. One that quotes too little
//! to tell, or something the channel did not send, is counted and
//! ignored; the channel is then down when its probes go unanswered.

use std::collections::VecDeque;
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
    /// The start of the datagram it is about, as far as it quotes it
    /// (at most [`CHECKED_BYTES`]).
    pub quoted: Vec<u8>,
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

/// Empties the error queue of `socket`: the reports in it that say the
/// peer cannot be reached, oldest first.
pub(super) fn take_unreachable(socket: &impl AsRawFd) -> Vec<Unreachable> {
    let mut reports = Vec::new();
    let mut quoted = [0u8; CHECKED_BYTES];
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
            return reports;
        };
        // What the report quotes of the datagram, past its UDP header;
        // more than the buffer is cut to it.
        let length = message.bytes.min(CHECKED_BYTES);
        let Ok(messages) = message.cmsgs() else {
            continue;
        };
        let Some((error, from)) = messages.filter_map(extended_error).last() else {
            continue;
        };
        let from_icmp = matches!(
            error.ee_origin,
            libc::SO_EE_ORIGIN_ICMP | libc::SO_EE_ORIGIN_ICMP6
        );
        let errno = Errno::from_raw(error.ee_errno as i32);
        if from_icmp && errno != Errno::EMSGSIZE {
            reports.push(Unreachable {
                errno,
                icmp_type: error.ee_type,
                icmp_code: error.ee_code,
                from,
                quoted: quoted[..length].to_vec(),
            });
        }
    }
}

/// The extended error a control message of the error queue holds, and
/// who sent its report.
fn extended_error(cmsg: ControlMessageOwned) -> Option<(libc::sock_extended_err, Option<std::net::IpAddr>)> {
    match cmsg {
        ControlMessageOwned::Ipv4RecvErr(error, from) => Some((
            error,
            from.map(|a| std::net::IpAddr::V4(std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)))),
        )),
        ControlMessageOwned::Ipv6RecvErr(error, from) => Some((
            error,
            from.map(|a| std::net::IpAddr::V6(std::net::Ipv6Addr::from(a.sin6_addr.s6_addr))),
        )),
        _ => None,
    }
}

/// How much of the start of a datagram a report must quote to be
/// believed (all of a shorter one): a data datagram's inner IP header
/// (IPv4's or IPv6's) and its TCP ports and sequence number; a probe
/// whole.
pub(super) const CHECKED_BYTES: usize = 48;
/// How many of a channel's latest datagrams a report may be about: a
/// router answers at once, and limits how often (RFC 1812 4.3.2.8).
const REMEMBERED: usize = 512;

/// The starts of the datagrams a channel sent lately, to check the reports
/// about them against.
#[derive(Debug)]
pub(super) struct SentDatagrams {
    /// Each one's length checked (at most [`CHECKED_BYTES`]) and start,
    /// oldest first.
    starts: VecDeque<(u8, [u8; CHECKED_BYTES])>,
}

impl SentDatagrams {
    pub fn new() -> SentDatagrams {
        SentDatagrams {
            starts: VecDeque::with_capacity(REMEMBERED),
        }
    }

    /// `datagram` was sent.
    pub fn sent(&mut self, datagram: &[u8]) {
        let length = datagram.len().min(CHECKED_BYTES);
        let mut start = [0; CHECKED_BYTES];
        start[..length].copy_from_slice(&datagram[..length]);
        if self.starts.len() == REMEMBERED {
            self.starts.pop_front();
        }
        self.starts.push_back((length as u8, start));
    }

    /// Whether `quoted` is the start of a datagram sent lately, long
    /// enough to tell.
    pub fn quotes_one(&self, quoted: &[u8]) -> bool {
        self.starts.iter().any(|(length, start)| {
            let length = usize::from(*length);
            quoted.len() >= length && quoted[..length] == start[..length]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_believed_only_if_it_quotes_enough_of_a_datagram_sent_lately() {
        let mut sent = SentDatagrams::new();
        let data: Vec<u8> = (0..200).collect();
        let probe: Vec<u8> = (100..120).collect();
        sent.sent(&data);
        sent.sent(&probe);
        assert!(sent.quotes_one(&data[..CHECKED_BYTES]));
        assert!(
            sent.quotes_one(&probe),
            "a datagram shorter than the check, whole"
        );
        assert!(!sent.quotes_one(&data[..8]), "too little to tell");
        assert!(!sent.quotes_one(&[]), "nothing quoted");
        assert!(!sent.quotes_one(&probe[..19]), "a short datagram, cut");
        let mut other = data.clone();
        other[CHECKED_BYTES - 1] ^= 1;
        assert!(
            !sent.quotes_one(&other[..CHECKED_BYTES]),
            "differs in its last checked byte"
        );
    }

    #[test]
    fn only_the_latest_datagrams_are_remembered() {
        let mut sent = SentDatagrams::new();
        // Datagrams told apart by their first bytes.
        let datagram = |i: usize| {
            let mut datagram = vec![0x45; 40];
            datagram[..8].copy_from_slice(&(i as u64).to_be_bytes());
            datagram
        };
        for i in 0..REMEMBERED + 10 {
            sent.sent(&datagram(i));
        }
        assert!(!sent.quotes_one(&datagram(9)), "pushed out by later ones");
        assert!(sent.quotes_one(&datagram(10)));
        assert!(sent.quotes_one(&datagram(REMEMBERED + 9)));
    }
}
