//! The table of connection slots after a burst: cut back as connections
//! end, and never handing a stale handle someone else's connection.

use std::net::SocketAddr;

use super::{Endpoint, EndpointConfig};
use crate::time::Instant;

fn endpoint() -> Endpoint {
    Endpoint::new(EndpointConfig::default(), ["10.0.0.1".parse().unwrap()]).unwrap()
}

/// Aborts `handle`, lets it go, and sends what that takes, so that the
/// endpoint forgets the connection.
fn abort(endpoint: &mut Endpoint, handle: super::ConnectionHandle) {
    endpoint.abort(Instant::ZERO, handle).unwrap();
    endpoint.release(Instant::ZERO, handle).unwrap();
    let mut packet = Vec::new();
    while endpoint.poll_transmit(Instant::ZERO, &mut packet) {}
}

#[test]
fn the_table_shrinks_back_once_a_burst_of_connections_ends() {
    let mut endpoint = endpoint();
    let server: SocketAddr = "10.0.0.2:80".parse().unwrap();
    let burst: Vec<_> = (0..5000)
        .map(|_| endpoint.connect(Instant::ZERO, server, None, None).unwrap())
        .collect();
    let long_lived = endpoint.connect(Instant::ZERO, server, None, None).unwrap();
    assert_eq!(endpoint.slots.len(), 5001);
    for handle in burst {
        abort(&mut endpoint, handle);
    }
    assert_eq!(endpoint.connection_count(), 1);
    // The one left sits at the end: only the slots past it are cut.
    assert_eq!(endpoint.slots.len(), 5001);
    abort(&mut endpoint, long_lived);
    assert_eq!(endpoint.slots.len(), 0, "every slot cut once all are free");
    assert!(
        endpoint.slots.capacity() <= 128,
        "room given back: {}",
        endpoint.slots.capacity()
    );
    assert!(
        endpoint.by_tuple.capacity() <= 256,
        "{}",
        endpoint.by_tuple.capacity()
    );
    assert!(endpoint.free_slots.is_empty());
}

#[test]
fn a_stale_handle_does_not_reach_the_connection_made_in_a_cut_slot() {
    let mut endpoint = endpoint();
    let server: SocketAddr = "10.0.0.2:80".parse().unwrap();
    let first = endpoint.connect(Instant::ZERO, server, None, None).unwrap();
    abort(&mut endpoint, first);
    assert!(endpoint.slots.is_empty(), "its slot was cut");
    let second = endpoint.connect(Instant::ZERO, server, None, None).unwrap();
    assert_eq!(second.index, first.index, "the same slot, made anew");
    assert!(endpoint.state(first).is_none(), "the old handle is dead");
    assert!(endpoint.abort(Instant::ZERO, first).is_err());
    assert!(endpoint.state(second).is_some());
}

#[test]
fn free_slots_are_taken_lowest_first() {
    let mut endpoint = endpoint();
    let server: SocketAddr = "10.0.0.2:80".parse().unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| endpoint.connect(Instant::ZERO, server, None, None).unwrap())
        .collect();
    abort(&mut endpoint, handles[2]);
    abort(&mut endpoint, handles[0]);
    let next = endpoint.connect(Instant::ZERO, server, None, None).unwrap();
    assert_eq!(
        next.index, 0,
        "the lowest free slot, so that the free gather at the end"
    );
}
