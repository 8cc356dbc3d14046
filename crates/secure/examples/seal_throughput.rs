//! How fast one core seals and opens 1400-byte packets with the secure
//! link: `cargo run --release -p scps-secure --example seal_throughput`.

use std::time::{Duration, Instant as Clock};

use scps_node::Instant;
use scps_secure::{Opened, PrivateKey, SecureConfig, SecureLink, Unsealed};

fn main() {
    let (ka, kb) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
    let wall = Duration::from_secs(1_800_000_000);
    let now = Instant::ZERO;
    let mut a = SecureLink::new(SecureConfig::new(ka.clone(), kb.public_key()), now, wall).unwrap();
    let mut b = SecureLink::new(SecureConfig::new(kb, ka.public_key()), now, wall).unwrap();
    a.handle_timeout(now);
    let initiation = a.poll_transmit().unwrap();
    let Opened::Reply(response) = b.open(now, &initiation) else {
        panic!("no answer")
    };
    let response = response.to_vec();
    assert_eq!(a.open(now, &response), Opened::Control);
    let packet = vec![0x45u8; 1400];
    let count = 400_000;
    let mut sealed = Vec::with_capacity(count);
    let started = Clock::now();
    for _ in 0..count {
        let mut datagram = Vec::with_capacity(1500);
        assert!(a.seal(now, &packet, &mut datagram, Unsealed::Drop));
        sealed.push(datagram);
    }
    let seal = started.elapsed();
    let started = Clock::now();
    for datagram in &sealed {
        assert!(matches!(b.open(now, datagram), Opened::Packet(_)));
    }
    let open = started.elapsed();
    let bytes = (count * packet.len()) as f64;
    println!(
        "{count} packets of {} bytes: sealed at {:.2} Gbit/s, opened at {:.2} Gbit/s ({})",
        packet.len(),
        bytes * 8.0 / seal.as_secs_f64() / 1e9,
        bytes * 8.0 / open.as_secs_f64() / 1e9,
        scps_secure::link::NOISE_PROTOCOL,
    );
}
