//! `scps_proto::wire::icmp::parse_unreachable` on arbitrary ICMP and
//! ICMPv6 messages: a quoted connection, nothing or an error, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::icmp::parse_unreachable;
use scps_proto::wire::{IPPROTO_ICMP, IPPROTO_ICMPV6, IpRepr};

fuzz_target!(|data: &[u8]| {
    let Some((&version, message)) = data.split_first() else {
        return;
    };
    let ip = if version & 1 == 0 {
        IpRepr::new("10.0.0.254".parse().unwrap(), "10.0.0.1".parse().unwrap(), IPPROTO_ICMP, message.len(), 64)
    } else {
        IpRepr::new("fd00::fe".parse().unwrap(), "fd00::1".parse().unwrap(), IPPROTO_ICMPV6, message.len(), 64)
    };
    if let Ok(ip) = ip
        && let Ok(Some(report)) = parse_unreachable(&ip, message)
    {
        assert_eq!(report.src.is_ipv4(), version & 1 == 0, "a quoted packet of the report's IP version");
    }
});
