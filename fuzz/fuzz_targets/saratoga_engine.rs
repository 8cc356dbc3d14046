//! A Saratoga engine with transfers under way, fed arbitrary datagrams:
//! it counts what it cannot read and never panics, whatever the frames
//! claim (sizes, offsets, holes, session ids, error codes).
#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_node::Instant;
use scps_saratoga::engine::{Config, Engine, MemoryStore};

fuzz_target!(|data: &[u8]| {
    let peer: SocketAddr = "192.0.2.1:7542".parse().unwrap();
    let mut store = MemoryStore::new();
    store.insert("f", vec![1; 5000], 0);
    store.insert("d/g", vec![2; 10], 0);
    let config = Config {
        rate_bps: 0,
        inactivity_timeout: Duration::from_secs(30),
        ..Config::default()
    };
    let mut engine = Engine::new(config, store).unwrap();
    let mut now = Instant::ZERO;
    // Sessions 1 to 3: a put, a get and a listing of our own.
    engine.put(now, peer, "f", "f").unwrap();
    engine.get(now, peer, "r", "l");
    engine.list(now, peer, "d");
    // The datagrams are the input cut where a byte is 0xff.
    for datagram in data.split(|b| *b == 0xff) {
        now += Duration::from_millis(300);
        engine.handle_datagram(now, peer, datagram);
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
        }
        while engine.poll_transmit(now).is_some() {}
        while engine.poll_event().is_some() {}
    }
    let _ = engine.stats();
});
