//! What the engine remembers of sessions that are over or never were
//! (answers given, DATA that came without its METADATA). It is keyed by
//! whatever a peer sends, spoofed or not, so it is bounded (the entry that
//! would expire first makes room) and its deadlines are kept in order:
//! the next is found without scanning, and expiring costs only what
//! expires.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use scps_node::Instant;

use super::Key;

/// Keyed by a session (`Key`) unless said otherwise.
#[derive(Debug)]
pub(crate) struct Expiring<V, K = Key> {
    entries: HashMap<K, (V, Instant)>,
    deadlines: BTreeSet<(Instant, K)>,
    capacity: usize,
}

impl<V, K: Copy + Eq + Hash + Ord> Expiring<V, K> {
    pub fn new(capacity: usize) -> Expiring<V, K> {
        Expiring {
            entries: HashMap::new(),
            deadlines: BTreeSet::new(),
            capacity,
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(value, _)| value)
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// Remembers `value` for `key` until `until`; returns whether an entry
    /// was dropped to make room.
    pub fn insert(&mut self, key: K, value: V, until: Instant) -> bool {
        self.remove(&key);
        if self.capacity == 0 {
            return true;
        }
        let full = self.entries.len() >= self.capacity;
        if full && let Some((_, soonest)) = self.deadlines.pop_first() {
            self.entries.remove(&soonest);
        }
        self.entries.insert(key, (value, until));
        self.deadlines.insert((until, key));
        full
    }

    pub fn remove(&mut self, key: &K) {
        if let Some((_, until)) = self.entries.remove(key) {
            self.deadlines.remove(&(until, *key));
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }

    pub fn next_expiry(&self) -> Option<Instant> {
        self.deadlines.first().map(|(until, _)| *until)
    }

    /// Forgets every entry whose deadline is `now` or earlier.
    pub fn expire(&mut self, now: Instant) {
        while let Some(&(until, key)) = self.deadlines.first()
            && until <= now
        {
            self.deadlines.pop_first();
            self.entries.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn entries_expire_in_order_and_the_soonest_makes_room() {
        let key = |i: u32| -> Key { ("10.0.0.1:1".parse().unwrap(), i) };
        let at = |s: u64| Instant::ZERO + Duration::from_secs(s);
        let mut map = Expiring::new(2);
        assert!(!map.insert(key(1), 'a', at(30)));
        assert!(!map.insert(key(2), 'b', at(10)));
        assert_eq!(map.next_expiry(), Some(at(10)));
        assert!(map.insert(key(3), 'c', at(20)), "full: the soonest goes");
        assert_eq!((map.get(&key(2)), map.entries.len()), (None, 2));
        assert!(!map.insert(key(3), 'd', at(40)), "a key replaced, not added");
        map.expire(at(30));
        assert_eq!((map.get(&key(1)), map.get(&key(3))), (None, Some(&'d')));
        assert_eq!(map.next_expiry(), Some(at(40)));
        let mut none = Expiring::new(0);
        assert!(none.insert(key(1), (), at(1)));
        assert!(!none.contains_key(&key(1)));
    }
}
