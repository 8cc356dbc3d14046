//! DATA that came before its METADATA, in a session already known (a PUT
//! REQUEST accepted, or a REQUEST of ours not yet answered). A sender
//! that never re-sends (some of the drafts' era do not) would otherwise
//! never finish: its first pass, dropped for want of the METADATA that
//! overtook or followed it, is all it sends. What is kept is handed to
//! the receiver when the METADATA comes.
//!
//! A known session is still one any datagram can open, so the bytes kept
//! for all sessions together are bounded ([`super::Config::max_early_data_bytes`]);
//! what does not fit is dropped and counted, as is what is kept for a
//! session that ends without its METADATA.

use std::collections::HashMap;

use super::Key;
use super::event::Stats;

/// One DATA frame's offset and payload.
pub(crate) type Piece = (u64, Vec<u8>);

#[derive(Debug)]
pub(crate) struct EarlyData {
    sessions: HashMap<Key, Vec<Piece>>,
    /// Payload bytes held, for all sessions.
    held: u64,
    capacity: u64,
}

impl EarlyData {
    pub fn new(capacity: u64) -> EarlyData {
        EarlyData {
            sessions: HashMap::new(),
            held: 0,
            capacity,
        }
    }

    /// Keeps `payload`, at `offset`, for `key` if there is room; counts
    /// it either way.
    pub fn keep(&mut self, key: Key, offset: u64, payload: &[u8], stats: &mut Stats) {
        let len = payload.len() as u64;
        if self.held.saturating_add(len) > self.capacity {
            stats.early_data_dropped_bytes += len;
            return;
        }
        self.held += len;
        stats.early_data_bytes += len;
        self.sessions
            .entry(key)
            .or_default()
            .push((offset, payload.to_vec()));
    }

    /// What was kept for `key`, in the order it came; forgotten here.
    pub fn take(&mut self, key: &Key) -> Vec<Piece> {
        let pieces = self.sessions.remove(key).unwrap_or_default();
        self.held -= pieces.iter().map(|(_, p)| p.len() as u64).sum::<u64>();
        pieces
    }

    /// Drops what is kept for sessions `live` says are over, counting it.
    pub fn retain(&mut self, mut live: impl FnMut(&Key) -> bool, stats: &mut Stats) {
        let over: Vec<Key> = self.sessions.keys().filter(|key| !live(key)).copied().collect();
        for key in over {
            let bytes: u64 = self.take(&key).iter().map(|(_, p)| p.len() as u64).sum();
            stats.early_data_dropped_bytes += bytes;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_kept_within_the_bound_and_dropped_beyond_it() {
        let key = |id| -> Key { ("10.0.0.1:7542".parse().unwrap(), id) };
        let mut stats = Stats::default();
        let mut early = EarlyData::new(10);
        early.keep(key(1), 0, b"abcd", &mut stats);
        early.keep(key(2), 0, b"efgh", &mut stats);
        early.keep(key(1), 4, b"ijk", &mut stats);
        assert_eq!((stats.early_data_bytes, stats.early_data_dropped_bytes), (8, 3));
        assert_eq!(early.take(&key(1)), [(0, b"abcd".to_vec())]);
        // Room again for what was taken.
        early.keep(key(3), 0, b"lmnopq", &mut stats);
        assert_eq!(stats.early_data_dropped_bytes, 3);
        early.retain(|k| *k == key(3), &mut stats);
        assert_eq!(stats.early_data_dropped_bytes, 3 + 4);
        assert_eq!(early.take(&key(3)), [(0, b"lmnopq".to_vec())]);
        assert!(early.is_empty());
        assert_eq!(early.held, 0);
    }
}
