//! `parse_tcp_packet` on arbitrary bytes; a TCP packet that parses is
//! rebuilt with `build_tcp_packet` and must parse back to the same segment.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::{IpRepr, build_tcp_packet, parse_tcp_packet};

fuzz_target!(|data: &[u8]| {
    let Ok((ip, Some(tcp))) = parse_tcp_packet(data) else {
        return;
    };
    let hop_limit = match ip {
        IpRepr::V4(v4) => v4.ttl,
        IpRepr::V6(v6) => v6.hop_limit,
    };
    let mut packet = Vec::new();
    build_tcp_packet(ip.src(), ip.dst(), hop_limit, &tcp, &mut packet)
        .expect("a parsed segment always rebuilds");
    let expected_ip = IpRepr::new(ip.src(), ip.dst(), 6, tcp.segment_len(), hop_limit).unwrap();
    assert_eq!(parse_tcp_packet(&packet), Ok((expected_ip, Some(tcp))));
});
