//! `scps_net::tcp_info::parse_reply` on arbitrary bytes, as if the kernel's
//! sock_diag answer were anything at all: figures or an error, never a
//! panic.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use scps_net::tcp_info::parse_reply;

fuzz_target!(|data: &[u8]| {
    let local: SocketAddr = "10.0.0.1:5001".parse().unwrap();
    let peer: SocketAddr = "10.0.0.2:40000".parse().unwrap();
    let _ = parse_reply(data, local, peer);
});
