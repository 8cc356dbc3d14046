//! UDP over IPv4 and IPv6 (RFC 768, RFC 791, RFC 8200) for nodes that
//! speak UDP themselves, such as the Saratoga engine: a datagram wrapped
//! in the two headers with their lengths and checksums, and a packet
//! checked and unwrapped. The checks are what a host's stack makes before
//! it delivers a datagram; a packet that fails one is named by its cause,
//! for a node to count and drop. A path that carries such a node over
//! kernel sockets writes the headers in front of a datagram received
//! ([`write_headers`]) and reads them off a packet sent ([`read_headers`]);
//! between the two the UDP checksum may be left out ([`UdpChecksum`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::checksum::Checksum;

/// IPv4 header without options (20 bytes) and UDP header (8).
pub const IPV4_UDP_HEADER_LEN: usize = 28;
/// IPv6 header without extension headers (40 bytes) and UDP header (8).
pub const IPV6_UDP_HEADER_LEN: usize = 48;

const UDP: u8 = 17;
/// IPv6's next header value of a fragment header.
const IPV6_FRAGMENT: u8 = 44;
const TTL: u8 = 64;

/// Whether a packet's UDP checksum is computed. A packet that only passes
/// between a node and kernel sockets, which compute and check the real
/// checksum on the wire, may go without (zero), unless a capture is to
/// show it: that saves a pass over every byte sent, and two over every
/// byte received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpChecksum {
    #[default]
    Computed,
    /// Left zero, and not checked (IPv4 calls a zero checksum "none";
    /// IPv6 would refuse it on a wire these packets never reach).
    Zero,
}

/// The bytes of IP and UDP headers before the payload of a datagram
/// between addresses of `addr`'s family.
pub fn header_len(addr: SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => IPV4_UDP_HEADER_LEN,
        SocketAddr::V6(_) => IPV6_UDP_HEADER_LEN,
    }
}

/// Writes `payload` from `src` to `dst` into `out` (replacing what it
/// held) as one IP packet of their family; `id` is an IPv4 packet's
/// identification field. `None` if the addresses are of two families or
/// the packet would not fit its length fields.
pub fn wrap(src: SocketAddr, dst: SocketAddr, id: u16, payload: &[u8], out: &mut Vec<u8>) -> Option<()> {
    wrap_with(src, dst, id, UdpChecksum::Computed, payload, out)
}

/// As [`wrap`], with the UDP checksum computed or left zero.
pub fn wrap_with(
    src: SocketAddr,
    dst: SocketAddr,
    id: u16,
    checksum: UdpChecksum,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    out.clear();
    out.resize(header_len(src), 0);
    out.extend_from_slice(payload);
    write_headers(src, dst, id, checksum, out)
}

/// Writes the IP and UDP headers of a datagram from `src` to `dst` into
/// the first [`header_len`] bytes of `packet`, whose payload is the rest
/// (as [`wrap_with`], without moving the payload).
pub fn write_headers(
    src: SocketAddr,
    dst: SocketAddr,
    id: u16,
    checksum: UdpChecksum,
    packet: &mut [u8],
) -> Option<()> {
    match (src, dst) {
        (SocketAddr::V4(src), SocketAddr::V4(dst)) => write_v4(src, dst, id, checksum, packet),
        (SocketAddr::V6(src), SocketAddr::V6(dst)) => write_v6(src, dst, checksum, packet),
        _ => None,
    }
}

fn write_v4(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    id: u16,
    checksum: UdpChecksum,
    packet: &mut [u8],
) -> Option<()> {
    let total = u16::try_from(packet.len()).ok()?;
    let udp_len = total.checked_sub(20).filter(|len| *len >= 8)?;
    // Version 4, 5 words; no TOS; total length; id; don't fragment.
    let [total_hi, total_lo] = total.to_be_bytes();
    let [id_hi, id_lo] = id.to_be_bytes();
    packet[..12].copy_from_slice(&[0x45, 0, total_hi, total_lo, id_hi, id_lo, 0x40, 0, TTL, UDP, 0, 0]);
    packet[12..16].copy_from_slice(&src.ip().octets());
    packet[16..20].copy_from_slice(&dst.ip().octets());
    let header_checksum = Checksum::of(&packet[..20]).finish();
    packet[10..12].copy_from_slice(&header_checksum.to_be_bytes());
    let pseudo = Checksum::pseudo_header_v4(*src.ip(), *dst.ip(), UDP, udp_len);
    write_udp(
        src.port(),
        dst.port(),
        udp_len,
        checksum.then_over(pseudo),
        &mut packet[20..],
    );
    Some(())
}

fn write_v6(src: SocketAddrV6, dst: SocketAddrV6, checksum: UdpChecksum, packet: &mut [u8]) -> Option<()> {
    let udp_len = u16::try_from(packet.len().checked_sub(40)?)
        .ok()
        .filter(|len| *len >= 8)?;
    // Version 6, no traffic class or flow label; payload length; UDP;
    // hop limit.
    let [len_hi, len_lo] = udp_len.to_be_bytes();
    packet[..8].copy_from_slice(&[0x60, 0, 0, 0, len_hi, len_lo, UDP, TTL]);
    packet[8..24].copy_from_slice(&src.ip().octets());
    packet[24..40].copy_from_slice(&dst.ip().octets());
    let pseudo = Checksum::pseudo_header_v6(*src.ip(), *dst.ip(), UDP, u32::from(udp_len));
    write_udp(
        src.port(),
        dst.port(),
        udp_len,
        checksum.then_over(pseudo),
        &mut packet[40..],
    );
    Some(())
}

impl UdpChecksum {
    /// The pseudo-header's sum `pseudo` when the checksum is computed.
    fn then_over(self, pseudo: Checksum) -> Option<Checksum> {
        (self == UdpChecksum::Computed).then_some(pseudo)
    }
}

/// The UDP header in front of the payload `udp` holds after 8 bytes; its
/// checksum over `pseudo` (the pseudo-header's sum) and the datagram, or
/// zero without one.
fn write_udp(src_port: u16, dst_port: u16, udp_len: u16, pseudo: Option<Checksum>, udp: &mut [u8]) {
    udp[0..2].copy_from_slice(&src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].fill(0);
    let Some(mut sum) = pseudo else {
        return;
    };
    sum.add_bytes(udp);
    let checksum = match sum.finish() {
        // RFC 768: a computed zero is sent as all ones (zero means none).
        0 => 0xffff,
        sum => sum,
    };
    udp[6..8].copy_from_slice(&checksum.to_be_bytes());
}

/// A UDP datagram found in an IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub payload: &'a [u8],
}

/// The UDP datagram `packet` carries, checked. IPv4: header length, total
/// length and checksum; not a fragment; a zero UDP checksum is none (RFC
/// 768). IPv6: payload length; UDP straight after the header (extension
/// headers, a fragment's among them, are not read); a UDP checksum, which
/// IPv6 requires (RFC 8200 8.1). Then the UDP length and checksum. Bytes
/// past the packet's length (a link's padding) are ignored. Otherwise the
/// cause of the drop.
pub fn unwrap(packet: &[u8]) -> Result<Datagram<'_>, &'static str> {
    read(packet, true)
}

/// The datagram of a packet built by [`wrap`] or [`write_headers`]: its
/// lengths checked, not its checksums (what a path reads to send the
/// datagram itself, and a node reads of packets without a UDP checksum).
pub fn read_headers(packet: &[u8]) -> Result<Datagram<'_>, &'static str> {
    read(packet, false)
}

fn read(packet: &[u8], verify: bool) -> Result<Datagram<'_>, &'static str> {
    match packet.first().map(|b| b >> 4) {
        None => Err("truncated"),
        Some(4) => read_v4(packet, verify),
        Some(6) => read_v6(packet, verify),
        Some(_) => Err("not_ip"),
    }
}

fn read_v4(packet: &[u8], verify: bool) -> Result<Datagram<'_>, &'static str> {
    if packet.len() < 20 {
        return Err("truncated");
    }
    let header_len = usize::from(packet[0] & 0x0f) * 4;
    if header_len < 20 || header_len > packet.len() {
        return Err("bad_header_length");
    }
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if total < header_len || total > packet.len() {
        return Err("bad_length");
    }
    if verify && Checksum::of(&packet[..header_len]).finish() != 0 {
        return Err("bad_checksum");
    }
    if packet[9] != UDP {
        return Err("not_udp");
    }
    // More fragments, or an offset: we never fragment, and do not reassemble.
    if u16::from_be_bytes([packet[6], packet[7]]) & 0x3fff != 0 {
        return Err("fragment");
    }
    let ip = |at: usize| Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    let (src, dst) = (ip(12), ip(16));
    let udp = udp_of(&packet[header_len..total])?;
    // Zero: the sender computed none.
    let unchecked = udp[6..8] == [0, 0];
    if verify && !unchecked && !sums_to_zero(Checksum::pseudo_header_v4(src, dst, UDP, udp.len() as u16), udp)
    {
        return Err("bad_udp_checksum");
    }
    Ok(datagram(src.into(), dst.into(), udp))
}

fn read_v6(packet: &[u8], verify: bool) -> Result<Datagram<'_>, &'static str> {
    if packet.len() < 40 {
        return Err("truncated");
    }
    let payload_len = usize::from(u16::from_be_bytes([packet[4], packet[5]]));
    if 40 + payload_len > packet.len() {
        return Err("bad_length");
    }
    match packet[6] {
        UDP => {}
        IPV6_FRAGMENT => return Err("fragment"),
        _ => return Err("not_udp"),
    }
    let ip = |at: usize| {
        let mut octets = [0; 16];
        octets.copy_from_slice(&packet[at..at + 16]);
        Ipv6Addr::from(octets)
    };
    let (src, dst) = (ip(8), ip(24));
    let udp = udp_of(&packet[40..40 + payload_len])?;
    let unchecked = udp[6..8] == [0, 0];
    if verify
        && (unchecked || !sums_to_zero(Checksum::pseudo_header_v6(src, dst, UDP, udp.len() as u32), udp))
    {
        return Err("bad_udp_checksum");
    }
    Ok(datagram(src.into(), dst.into(), udp))
}

/// The UDP datagram (header and payload) at the start of `ip_payload`,
/// as long as its header says.
fn udp_of(ip_payload: &[u8]) -> Result<&[u8], &'static str> {
    if ip_payload.len() < 8 {
        return Err("truncated");
    }
    let udp_len = usize::from(u16::from_be_bytes([ip_payload[4], ip_payload[5]]));
    if udp_len < 8 || udp_len > ip_payload.len() {
        return Err("bad_udp_length");
    }
    Ok(&ip_payload[..udp_len])
}

fn datagram(src: IpAddr, dst: IpAddr, udp: &[u8]) -> Datagram<'_> {
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    Datagram {
        src: SocketAddr::new(src, port(0)),
        dst: SocketAddr::new(dst, port(2)),
        payload: &udp[8..],
    }
}

/// Whether the pseudo-header's sum and `udp` (its checksum included) sum
/// to all ones, as an intact datagram does.
fn sums_to_zero(mut pseudo: Checksum, udp: &[u8]) -> bool {
    pseudo.add_bytes(udp);
    pseudo.finish() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_wrapped_datagram_unwraps_to_itself() {
        let (src, dst) = (addr("10.0.0.1:40000"), addr("10.0.0.2:7542"));
        for len in [0, 1, 7, 1472] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut packet = vec![9; 3];
            wrap(src, dst, 5, &payload, &mut packet).unwrap();
            assert_eq!(packet.len(), IPV4_UDP_HEADER_LEN + len);
            assert_eq!(Checksum::of(&packet[..20]).finish(), 0);
            let datagram = unwrap(&packet).unwrap();
            assert_eq!(
                (datagram.src, datagram.dst, datagram.payload),
                (src, dst, &payload[..])
            );
        }
    }

    #[test]
    fn the_udp_checksum_covers_the_pseudo_header_in_one_sum() {
        // Summed in one pass over pseudo-header, header and payload (odd
        // length, padded with a zero byte), as RFC 768 defines it.
        let payload = b"odd length";
        let (src, dst) = (addr("192.168.1.10:53535"), addr("8.8.8.8:53"));
        let mut packet = Vec::new();
        wrap(src, dst, 0, &payload[..9], &mut packet).unwrap();
        let udp = &packet[20..];
        let mut whole = Vec::new();
        let octets = |a: SocketAddr| match a.ip() {
            IpAddr::V4(ip) => ip.octets(),
            IpAddr::V6(_) => unreachable!("IPv4 addresses"),
        };
        whole.extend_from_slice(&octets(src));
        whole.extend_from_slice(&octets(dst));
        whole.extend_from_slice(&[0, UDP]);
        whole.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        whole.extend_from_slice(udp);
        assert_eq!(Checksum::of(&whole).finish(), 0);
        assert_eq!(&udp[4..6], &17u16.to_be_bytes());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_read_as_a_datagram_or_a_cause(bytes in proptest::collection::vec(0u8.., 0..80)) {
            // Seeded with a real header half the time, so that the checks
            // past the first are reached.
            let mut packet = Vec::new();
            wrap(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 0, &bytes, &mut packet).unwrap();
            let mixed: Vec<u8> = packet.iter().zip(bytes.iter().cycle()).map(|(p, b)| p ^ (b & 1)).collect();
            for input in [&bytes[..], &mixed[..]] {
                if let Ok(datagram) = unwrap(input) {
                    let mut again = Vec::new();
                    wrap(datagram.src, datagram.dst, 0, datagram.payload, &mut again).unwrap();
                    proptest::prop_assert_eq!(unwrap(&again), Ok(datagram));
                }
            }
        }
    }

    #[test]
    fn damaged_or_unrelated_packets_are_named() {
        let mut good = Vec::new();
        wrap(addr("10.0.0.1:1"), addr("10.0.0.2:7542"), 1, b"data", &mut good).unwrap();
        let damaged = |at: usize| {
            let mut p = good.clone();
            p[at] ^= 0x10;
            unwrap(&p).map(|_| ())
        };
        assert_eq!(damaged(12), Err("bad_checksum"));
        assert_eq!(damaged(29), Err("bad_udp_checksum"));
        assert_eq!(unwrap(&good[..10]).map(|_| ()), Err("truncated"));
        assert_eq!(unwrap(&[]).map(|_| ()), Err("truncated"));
        assert_eq!(unwrap(&good[..good.len() - 1]).map(|_| ()), Err("bad_length"));
        assert_eq!(unwrap(&[0x50; 48]).map(|_| ()), Err("not_ip"));
        // Padding after the packet is no part of it.
        let mut padded = good.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(unwrap(&padded).unwrap().payload, b"data");
        // No checksum at all is allowed.
        let mut unchecked = good.clone();
        unchecked[26..28].fill(0);
        assert_eq!(unwrap(&unchecked).unwrap().payload, b"data");
        // A TCP packet, a fragment, a UDP length past the packet: each with
        // the IP checksum made right again.
        let reseal = |mut p: Vec<u8>| {
            p[10..12].fill(0);
            let sum = Checksum::of(&p[..20]).finish();
            p[10..12].copy_from_slice(&sum.to_be_bytes());
            unwrap(&p).map(|_| ())
        };
        let mut tcp = good.clone();
        tcp[9] = 6;
        assert_eq!(reseal(tcp), Err("not_udp"));
        let mut fragment = good.clone();
        fragment[6] = 0x20;
        assert_eq!(reseal(fragment), Err("fragment"));
        let mut long = good.clone();
        long[25] = 200;
        assert_eq!(unwrap(&long).map(|_| ()), Err("bad_udp_length"));
    }

    #[test]
    fn ipv6_datagrams_wrap_and_unwrap_with_their_checksum_required() {
        let (src, dst) = (addr("[fd00::1]:40000"), addr("[fd00::2]:7542"));
        let mut packet = Vec::new();
        for len in [0, 1, 7, 1452] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 5 + 1) as u8).collect();
            wrap(src, dst, 0, &payload, &mut packet).unwrap();
            assert_eq!(packet.len(), IPV6_UDP_HEADER_LEN + len);
            let datagram = unwrap(&packet).unwrap();
            assert_eq!(
                (datagram.src, datagram.dst, datagram.payload),
                (src, dst, &payload[..])
            );
        }
        wrap(src, dst, 0, b"data", &mut packet).unwrap();
        let mut damaged = packet.clone();
        damaged[50] ^= 1;
        assert_eq!(unwrap(&damaged).map(|_| ()), Err("bad_udp_checksum"));
        // What a path reads to send: the lengths, not the checksum.
        assert_eq!(read_headers(&damaged).unwrap().dst, dst);
        let mut unchecked = packet.clone();
        unchecked[46..48].fill(0);
        assert_eq!(unwrap(&unchecked).map(|_| ()), Err("bad_udp_checksum"));
        let mut fragment = packet.clone();
        fragment[6] = 44;
        assert_eq!(unwrap(&fragment).map(|_| ()), Err("fragment"));
        assert_eq!(unwrap(&packet[..47]).map(|_| ()), Err("bad_length"));
        assert!(wrap(src, addr("10.0.0.2:7542"), 0, b"", &mut packet).is_none());
    }

    #[test]
    fn headers_written_in_place_are_those_wrap_writes() {
        for (src, dst) in [
            (addr("10.0.0.1:1"), addr("10.0.0.2:7542")),
            (addr("[fd00::1]:1"), addr("[fd00::2]:7542")),
        ] {
            let mut wrapped = Vec::new();
            wrap(src, dst, 9, b"payload", &mut wrapped).unwrap();
            let mut in_place = vec![0xaa; header_len(src)];
            in_place.extend_from_slice(b"payload");
            write_headers(src, dst, 9, UdpChecksum::Computed, &mut in_place).unwrap();
            assert_eq!(in_place, wrapped);
            // Without the checksum: zero, and the rest the same.
            write_headers(src, dst, 9, UdpChecksum::Zero, &mut in_place).unwrap();
            let at = header_len(src) - 2;
            assert_eq!(in_place[at..at + 2], [0, 0]);
            assert_eq!(
                (&in_place[..at], &in_place[at + 2..]),
                (&wrapped[..at], &wrapped[at + 2..])
            );
            assert_eq!(read_headers(&in_place).unwrap().payload, b"payload");
        }
    }
}
