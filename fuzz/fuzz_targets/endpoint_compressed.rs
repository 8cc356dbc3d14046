//! An endpoint with a connection whose header compression is in force,
//! fed arbitrary protocol-105 segments from its peer's address: each one
//! either dropped and counted or processed as TCP input, never a panic.
//! Half of the segments get their connection id and checksum made right,
//! so that the fuzzer reaches the connection with reconstructed segments
//! of every shape rather than stopping at the checksum.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_proto::time::Instant;
use scps_proto::wire::{CompressedRepr, IPPROTO_SCPS_COMPRESSED, IpRepr, build_compressed_packet};
use scps_proto::{Config, Endpoint, EndpointConfig};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

fn endpoint(addr: IpAddr, secret: u64) -> Endpoint {
    let connection = Config {
        scps: true,
        header_compression: true,
        ..Config::default()
    };
    let config = EndpointConfig {
        connection,
        secret,
        ..EndpointConfig::default()
    };
    Endpoint::new(config, [addr]).expect("valid configuration")
}

/// Delivers what each side sends to the other until both are quiet.
fn shuttle(a: &mut Endpoint, b: &mut Endpoint, now: Instant) {
    let mut buf = Vec::new();
    for _ in 0..16 {
        let mut moved = false;
        while a.poll_transmit(now, &mut buf) {
            b.handle_packet(now, &buf);
            moved = true;
        }
        while b.poll_transmit(now, &mut buf) {
            a.handle_packet(now, &buf);
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

/// A protocol-105 packet from A to B carrying `segment` as it is.
fn raw_packet(segment: &[u8]) -> Option<Vec<u8>> {
    let ip = IpRepr::new(A, B, IPPROTO_SCPS_COMPRESSED, segment.len(), 64).ok()?;
    let mut packet = vec![0u8; ip.header_len() + segment.len()];
    let len = ip.emit(&mut packet).ok()?;
    packet[len..].copy_from_slice(segment);
    Some(packet)
}

fuzz_target!(|data: &[u8]| {
    let mut now = Instant::from_duration(Duration::from_secs(1));
    let (mut a, mut b) = (endpoint(A, 1), endpoint(B, 2));
    let server = SocketAddr::new(B, 80);
    b.listen(server, None).expect("listen");
    let ca = a.connect(now, server, None, None).expect("connect");
    shuttle(&mut a, &mut b, now);
    let Some((Some(id), _)) = a.connection(ca).map(|c| c.compression_ids()) else {
        panic!("A offers compression");
    };
    assert!(b.accept(server).is_some(), "the handshake completes");

    // Segments: a length byte (its top bit: fix id and checksum), then
    // that many bytes.
    let mut rest = data;
    while let Some((&head, tail)) = rest.split_first() {
        let len = usize::from(head & 0x7f).min(tail.len());
        let (segment, after) = tail.split_at(len);
        rest = after;
        let packet = if head & 0x80 != 0 {
            let mut fixed = segment.to_vec();
            if let Some(first) = fixed.first_mut() {
                *first = id.get();
            }
            let Ok(mut repr) = CompressedRepr::parse(&fixed, A, B, false) else {
                continue;
            };
            repr.conn_id = id.get();
            let mut packet = Vec::new();
            if build_compressed_packet(A, B, 64, &repr, &mut packet).is_err() {
                continue;
            }
            packet
        } else {
            let Some(packet) = raw_packet(segment) else {
                continue;
            };
            packet
        };
        let received = b.stats().packets_received;
        b.handle_packet(now, &packet);
        assert_eq!(b.stats().packets_received, received + 1);
        now += Duration::from_millis(10);
        b.handle_timeout(now);
        a.handle_timeout(now);
        shuttle(&mut a, &mut b, now);
    }
});
