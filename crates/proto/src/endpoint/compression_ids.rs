//! The endpoint's side of header compression (docs/spec/compression.md,
//! "Demultiplexing and connection ids"): the
//! connection ids we hand out, and the table that finds the connection of a
//! compressed segment.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU8;

use super::ConnectionHandle;

/// Ids of our connections that use header compression, and our
/// connections by the peer's id.
#[derive(Debug, Default)]
pub(super) struct CompressionIds {
    /// Our ids in use, per [`IdScope`]: an id is unique within its scope
    /// among our live connections that offer compression.
    ours: HashMap<IdScope, IdSet>,
    /// Where the search for a free id starts: ids go round, so that a
    /// straggler of a finished connection is not taken for a new one's.
    next: u8,
    /// Connections by (our address, the peer's address, the peer's id).
    /// The standard demultiplexes by source address and id; the destination
    /// is in the key too because a peer makes its ids unique per address
    /// of ours, not across them.
    by_peer_id: HashMap<(IpAddr, IpAddr, u8), ConnectionHandle>,
}

/// Among which of our connections an id must be unique. The receiving
/// host demultiplexes our compressed segments by their source address and
/// id (docs/spec/compression.md), so two connections that reach
/// one host from one address of ours need different ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum IdScope {
    /// A connection from an address of our own: unique per peer address,
    /// which names the one host that receives them all.
    Peer(IpAddr),
    /// A transparent connection (from an address we act as): the remote
    /// address does not name the receiving host, since a gateway there
    /// may answer for many addresses, so unique per source address.
    Source(IpAddr),
}

/// A set of ids 1..=255.
#[derive(Debug, Default, Clone, Copy)]
struct IdSet([u64; 4]);

impl IdSet {
    fn contains(&self, id: u8) -> bool {
        self.0[usize::from(id / 64)] & (1 << (id % 64)) != 0
    }

    fn set(&mut self, id: u8, present: bool) {
        let word = &mut self.0[usize::from(id / 64)];
        if present {
            *word |= 1 << (id % 64);
        } else {
            *word &= !(1 << (id % 64));
        }
    }

    fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }
}

impl CompressionIds {
    /// A free id for a new connection in `scope`, now taken; `None` when
    /// all 255 are in use (the connection then does not offer
    /// compression).
    pub(super) fn allocate(&mut self, scope: IdScope) -> Option<NonZeroU8> {
        let used = self.ours.entry(scope).or_default();
        let start = self.next;
        let id = (0..255u16)
            .map(|i| ((u16::from(start) + i) % 255 + 1) as u8)
            .find(|&id| !used.contains(id))?;
        used.set(id, true);
        self.next = id;
        NonZeroU8::new(id)
    }

    /// Files `handle` under the id the peer announced. A newer connection
    /// takes over an id from an older one still held (in TIME-WAIT, say):
    /// the peer has let go of that one, or it would not reuse its id.
    pub(super) fn register_peer(
        &mut self,
        local: IpAddr,
        peer: IpAddr,
        id: NonZeroU8,
        handle: ConnectionHandle,
    ) {
        self.by_peer_id.insert((local, peer, id.get()), handle);
    }

    /// The connection whose peer sends compressed segments from `peer` to
    /// `local` with id `id`.
    pub(super) fn find(&self, local: IpAddr, peer: IpAddr, id: u8) -> Option<ConnectionHandle> {
        self.by_peer_id.get(&(local, peer, id)).copied()
    }

    /// Frees the ids of a connection that is gone (ours allocated in
    /// `scope`).
    pub(super) fn release(
        &mut self,
        scope: IdScope,
        (local, peer): (IpAddr, IpAddr),
        (ours, theirs): (Option<NonZeroU8>, Option<NonZeroU8>),
        handle: ConnectionHandle,
    ) {
        if let Some(id) = ours
            && let Some(used) = self.ours.get_mut(&scope)
        {
            used.set(id.get(), false);
            if used.is_empty() {
                self.ours.remove(&scope);
            }
        }
        if let Some(id) = theirs {
            let key = (local, peer, id.get());
            if self.by_peer_id.get(&key) == Some(&handle) {
                self.by_peer_id.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3));
    const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    fn handle(index: u32) -> ConnectionHandle {
        ConnectionHandle { index, generation: 0 }
    }

    #[test]
    fn ids_are_unique_per_peer_and_run_out_after_255() {
        let mut ids = CompressionIds::default();
        let mut seen = IdSet::default();
        for _ in 0..255 {
            let id = ids.allocate(IdScope::Peer(PEER)).expect("a free id").get();
            assert!(!seen.contains(id), "id {id} handed out twice");
            seen.set(id, true);
        }
        assert_eq!(ids.allocate(IdScope::Peer(PEER)), None, "all 255 in use");
        assert!(
            ids.allocate(IdScope::Peer(OTHER)).is_some(),
            "another peer has its own ids"
        );
        assert!(
            ids.allocate(IdScope::Source(PEER)).is_some(),
            "a source scope is not a peer scope, even for the same address"
        );
        let freed = NonZeroU8::new(77).unwrap();
        ids.release(IdScope::Peer(PEER), (LOCAL, PEER), (Some(freed), None), handle(0));
        assert_eq!(ids.allocate(IdScope::Peer(PEER)), Some(freed));
    }

    #[test]
    fn ids_go_round_rather_than_reusing_the_last_freed() {
        let mut ids = CompressionIds::default();
        let first = ids.allocate(IdScope::Peer(PEER)).unwrap();
        ids.release(IdScope::Peer(PEER), (LOCAL, PEER), (Some(first), None), handle(0));
        let second = ids.allocate(IdScope::Peer(PEER)).unwrap();
        assert_ne!(first, second);
    }

    #[test]
    fn a_peer_id_finds_its_connection_until_a_newer_one_takes_it() {
        let mut ids = CompressionIds::default();
        let id = NonZeroU8::new(9).unwrap();
        ids.register_peer(LOCAL, PEER, id, handle(1));
        assert_eq!(ids.find(LOCAL, PEER, 9), Some(handle(1)));
        assert_eq!(ids.find(LOCAL, OTHER, 9), None, "keyed by the source address");
        assert_eq!(ids.find(LOCAL, PEER, 10), None);
        ids.register_peer(LOCAL, PEER, id, handle(2));
        // The old connection going away leaves the new one's entry alone.
        ids.release(IdScope::Peer(PEER), (LOCAL, PEER), (None, Some(id)), handle(1));
        assert_eq!(ids.find(LOCAL, PEER, 9), Some(handle(2)));
        ids.release(IdScope::Peer(PEER), (LOCAL, PEER), (None, Some(id)), handle(2));
        assert_eq!(ids.find(LOCAL, PEER, 9), None);
    }
}
