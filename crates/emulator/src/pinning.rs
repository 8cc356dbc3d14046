//! Circuits pinned by UDP port (`emulate.circuit_ports`).
//!
//! A bundle the hosts run themselves (a gateway's `[engine.bundle]`,
//! `scps send --channel`) stripes its own packets over its channels, each
//! a UDP flow from and to a port of its own. Real channels are separate
//! modems; here they cross one emulator, so a datagram to or from the
//! i-th port of `circuit_ports` rides the i-th circuit alone, whatever
//! `link.bond` does with the other packets. A datagram's later fragments
//! carry no ports and go with the other packets: a bundle keeps its
//! datagrams within the path's MTU.

/// IP protocol number of UDP.
const UDP: u8 = 17;

/// The circuit `packet` (an IP packet) is pinned to: the index in `ports`
/// of its UDP destination port, else of its source port.
pub fn pinned_circuit(packet: &[u8], ports: &[u16]) -> Option<usize> {
    if ports.is_empty() {
        return None;
    }
    let udp = udp_header(packet)?;
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    let index = |port: u16| ports.iter().position(|&p| p == port);
    index(port(2)).or_else(|| index(port(0)))
}

/// The first four bytes of the UDP header of `packet` (its ports), if it
/// is a UDP datagram or its first fragment.
fn udp_header(packet: &[u8]) -> Option<&[u8]> {
    let header_length = match packet.first()? >> 4 {
        4 => {
            let header_length = usize::from(packet.first()? & 0x0f) * 4;
            let fragment_offset = u16::from_be_bytes([*packet.get(6)?, *packet.get(7)?]) & 0x1fff;
            let protocol = *packet.get(9)?;
            if header_length < 20 || protocol != UDP || fragment_offset != 0 {
                return None;
            }
            header_length
        }
        // Only a UDP header straight after the fixed one: a bundle sends
        // no extension headers.
        6 if *packet.get(6)? == UDP => 40,
        _ => return None,
    };
    packet.get(header_length..header_length + 4)
}

/// A UDP datagram over IPv4 from port `source` to `destination`,
/// `length` bytes in all (at least 28): the tests' packet.
#[cfg(test)]
pub(crate) fn ipv4_udp(source: u16, destination: u16, length: usize) -> Vec<u8> {
    let mut packet = vec![0u8; length];
    packet[0] = 0x45;
    packet[9] = UDP;
    packet[20..22].copy_from_slice(&source.to_be_bytes());
    packet[22..24].copy_from_slice(&destination.to_be_bytes());
    packet
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_udp(source: u16, destination: u16) -> Vec<u8> {
        ipv4_udp(source, destination, 28)
    }

    fn v6_udp(source: u16, destination: u16) -> Vec<u8> {
        let mut packet = vec![0u8; 48];
        packet[0] = 0x60;
        packet[6] = UDP;
        packet[40..42].copy_from_slice(&source.to_be_bytes());
        packet[42..44].copy_from_slice(&destination.to_be_bytes());
        packet
    }

    const PORTS: [u16; 3] = [7001, 7002, 7003];

    #[test]
    fn a_datagram_rides_the_circuit_of_its_port() {
        assert_eq!(pinned_circuit(&v4_udp(40000, 7002), &PORTS), Some(1));
        assert_eq!(pinned_circuit(&v4_udp(7003, 40000), &PORTS), Some(2));
        // Both ports listed: the destination's.
        assert_eq!(pinned_circuit(&v4_udp(7001, 7003), &PORTS), Some(2));
        assert_eq!(pinned_circuit(&v6_udp(7001, 7001), &PORTS), Some(0));
        let mut options = v4_udp(0, 0);
        options[0] = 0x46;
        options.splice(20..20, [0u8; 4]);
        options[24..28].copy_from_slice(&[0x1b, 0x59, 0x1b, 0x5a]);
        assert_eq!(pinned_circuit(&options, &PORTS), Some(1), "after IPv4 options");
    }

    #[test]
    fn anything_else_is_not_pinned() {
        assert_eq!(pinned_circuit(&v4_udp(40000, 40001), &PORTS), None);
        assert_eq!(pinned_circuit(&v4_udp(7001, 7001), &[]), None);
        let mut tcp = v4_udp(7001, 7001);
        tcp[9] = 6;
        assert_eq!(pinned_circuit(&tcp, &PORTS), None);
        let mut later_fragment = v4_udp(7001, 7001);
        later_fragment[7] = 185;
        assert_eq!(pinned_circuit(&later_fragment, &PORTS), None);
        let mut bad_length = v4_udp(7001, 7001);
        bad_length[0] = 0x44;
        assert_eq!(pinned_circuit(&bad_length, &PORTS), None);
        let mut extension = v6_udp(7001, 7001);
        extension[6] = 0;
        assert_eq!(pinned_circuit(&extension, &PORTS), None);
        // Truncated anywhere: not pinned, never a panic.
        let whole = v4_udp(7001, 7001);
        for length in 0..24 {
            assert_eq!(pinned_circuit(&whole[..length], &PORTS), None, "{length} bytes");
        }
        let whole = v6_udp(7001, 7001);
        for length in 0..44 {
            assert_eq!(pinned_circuit(&whole[..length], &PORTS), None, "{length} bytes");
        }
    }
}
