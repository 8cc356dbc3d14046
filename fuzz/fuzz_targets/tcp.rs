//! `TcpRepr::parse` between two fixed IPv4 addresses, checksum verified and
//! not. A verified segment also parses unverified, to the same thing; what
//! parses re-emits and parses back (checksummed) the same.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::TcpRepr;

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const DST: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 2));

fuzz_target!(|data: &[u8]| {
    let verified = TcpRepr::parse(data, SRC, DST, true);
    let unverified = TcpRepr::parse(data, SRC, DST, false);
    if let Ok(repr) = verified {
        assert_eq!(unverified, Ok(repr));
    }
    let Ok(repr) = unverified else {
        return;
    };
    // Options read from at most 40 bytes always encode in at most 40.
    let mut segment = vec![0u8; repr.segment_len()];
    assert_eq!(repr.emit(&mut segment, SRC, DST), Ok(segment.len()));
    assert_eq!(TcpRepr::parse(&segment, SRC, DST, true), Ok(repr));
});
