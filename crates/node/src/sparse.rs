//! Tables that give back their room once mostly empty. A standard
//! collection keeps the capacity of its fullest moment: a gateway's
//! tables sized by one burst of ten thousand connections would hold that
//! memory for the life of the process. Shrinking when at most a quarter
//! is used, to twice what is, keeps the cost of regrowing amortised.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Below this many entries' room, a table is left as it is.
const ROOM_KEPT: usize = 64;

/// A collection that can give back room it no longer needs.
pub trait ShrinkWhenSparse {
    /// Gives back most of the room if at most a quarter of it is used.
    fn shrink_when_sparse(&mut self);
}

/// The room to shrink to, if `capacity` is four times what `len` needs.
fn shrunk_room(len: usize, capacity: usize) -> Option<usize> {
    let wanted = len.max(ROOM_KEPT) * 2;
    (capacity >= wanted * 2).then_some(wanted)
}

/// The one implementation, for each standard collection that has
/// `len`, `capacity` and `shrink_to`: `[GENERICS] TYPE;`.
macro_rules! shrink_when_sparse {
    ($([$($generics:tt)*] $table:ty;)*) => {$(
        impl<$($generics)*> ShrinkWhenSparse for $table {
            fn shrink_when_sparse(&mut self) {
                if let Some(room) = shrunk_room(self.len(), self.capacity()) {
                    self.shrink_to(room);
                }
            }
        }
    )*};
}

shrink_when_sparse! {
    [T] Vec<T>;
    [T] VecDeque<T>;
    [T: Ord] BinaryHeap<T>;
    [K: Eq + Hash, V, S: BuildHasher] HashMap<K, V, S>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_emptied_after_a_burst_gives_its_room_back() {
        let mut table: HashMap<u32, [u8; 64]> = (0..10_000).map(|i| (i, [0; 64])).collect();
        let full = table.capacity();
        table.retain(|&i, _| i < 10);
        table.shrink_when_sparse();
        assert!(
            table.capacity() < full / 50,
            "{} of {full} kept",
            table.capacity()
        );
        assert_eq!(table.len(), 10);
    }

    #[test]
    fn a_table_still_well_used_is_left_alone() {
        let mut queue: VecDeque<u32> = (0..1000).collect();
        let full = queue.capacity();
        queue.drain(..600);
        queue.shrink_when_sparse();
        assert_eq!(queue.capacity(), full, "400 of {full} used: not sparse");
        let mut small: Vec<u32> = Vec::with_capacity(200);
        small.push(1);
        small.shrink_when_sparse();
        assert_eq!(small.capacity(), 200, "small tables are not worth shrinking");
    }
}
