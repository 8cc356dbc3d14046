//! A byte ring buffer with a fixed capacity, allocated as it fills.
//!
//! Both stream buffers use it: the send buffer appends at the tail and
//! releases acknowledged bytes at the head; the receive buffer also writes
//! out-of-order data at offsets past the tail (within the capacity) before
//! it becomes contiguous. Storage grows on demand so that a connection
//! configured with a large window costs memory only when it uses it.

#[derive(Debug)]
pub(crate) struct Ring {
    storage: Vec<u8>,
    /// Index in `storage` of the first valid byte.
    head: usize,
    /// Valid (contiguous) bytes from the head.
    len: usize,
    capacity: usize,
}

const INITIAL_STORAGE: usize = 16 * 1024;

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            storage: Vec::new(),
            head: 0,
            len: 0,
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Raises the capacity to `capacity` (never lowers it). Storage still
    /// grows only as bytes are written.
    pub(crate) fn grow(&mut self, capacity: usize) {
        self.capacity = self.capacity.max(capacity);
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn free(&self) -> usize {
        self.capacity - self.len
    }

    /// Gives the storage back if the ring holds nothing (out-of-order
    /// bytes past the tail included, which the caller knows of): a
    /// connection that has finished with its stream holds no memory for
    /// it while it waits out TIME-WAIT.
    pub(crate) fn release_if_empty(&mut self, nothing_past_tail: bool) {
        if self.len == 0 && nothing_past_tail {
            self.storage = Vec::new();
            self.head = 0;
        }
    }

    /// Makes sure bytes up to `end` (counted from the head) have storage,
    /// growing and straightening the ring if needed.
    fn reserve(&mut self, end: usize) {
        debug_assert!(end <= self.capacity);
        if end <= self.storage.len() {
            return;
        }
        let new_size = end
            .max(self.storage.len() * 2)
            .max(INITIAL_STORAGE)
            .min(self.capacity);
        let mut grown = vec![0u8; new_size];
        // Everything that may hold data (valid or out-of-order) moves, in
        // order, to the front of the new storage.
        let old = self.storage.len();
        for (i, slot) in grown.iter_mut().take(old).enumerate() {
            *slot = self.storage[(self.head + i) % old];
        }
        self.storage = grown;
        self.head = 0;
    }

    /// Copies `data` to `offset` bytes past the head; the caller guarantees
    /// `offset + data.len() <= capacity`. Does not change `len`.
    pub(crate) fn write_at(&mut self, offset: usize, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = offset + data.len();
        debug_assert!(end <= self.capacity);
        self.reserve(end);
        let size = self.storage.len();
        let start = (self.head + offset) % size;
        let first = data.len().min(size - start);
        self.storage[start..start + first].copy_from_slice(&data[..first]);
        self.storage[..data.len() - first].copy_from_slice(&data[first..]);
    }

    /// Appends as much of `data` as fits; returns how much.
    pub(crate) fn push(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        self.write_at(self.len, &data[..n]);
        self.len += n;
        n
    }

    /// Marks `n` bytes already written past the tail with [`Ring::write_at`]
    /// as valid.
    pub(crate) fn extend(&mut self, n: usize) {
        debug_assert!(self.len + n <= self.capacity);
        self.len += n;
    }

    /// Copies `out.len()` valid bytes starting `offset` past the head.
    pub(crate) fn copy_out(&self, offset: usize, out: &mut [u8]) {
        debug_assert!(offset + out.len() <= self.len);
        if out.is_empty() {
            return;
        }
        let size = self.storage.len();
        let start = (self.head + offset) % size;
        let first = out.len().min(size - start);
        out[..first].copy_from_slice(&self.storage[start..start + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.storage[..rest]);
    }

    /// Replaces the contents of `out` with the `len` valid bytes starting
    /// `offset` past the head (no zero-filling on the way).
    pub(crate) fn copy_to_vec(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        debug_assert!(offset + len <= self.len);
        out.clear();
        if len == 0 {
            return;
        }
        let size = self.storage.len();
        let start = (self.head + offset) % size;
        let first = len.min(size - start);
        out.extend_from_slice(&self.storage[start..start + first]);
        out.extend_from_slice(&self.storage[..len - first]);
    }

    /// Releases `n` bytes from the head.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len);
        self.len -= n;
        if self.storage.is_empty() {
            return;
        }
        self.head = (self.head + n) % self.storage.len();
    }

    /// Copies up to `out.len()` bytes from the head and releases them.
    pub(crate) fn read(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        self.copy_out(0, &mut out[..n]);
        self.consume(n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_survives_wrapping_and_growth() {
        let mut ring = Ring::new(40_000);
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(ring.push(&data[..10_000]), 10_000);
        let mut out = vec![0u8; 7_000];
        assert_eq!(ring.read(&mut out), 7_000);
        assert_eq!(out, data[..7_000]);
        // Wraps in the initial storage, then forces growth with data split
        // across the end of the old storage.
        assert_eq!(ring.push(&data[10_000..19_000]), 9_000);
        assert_eq!(ring.push(&data[19_000..]), 21_000);
        assert_eq!(ring.len(), 33_000);
        let mut all = vec![0u8; 33_000];
        ring.copy_out(0, &mut all);
        assert_eq!(all, data[7_000..]);
        assert_eq!(ring.push(&data), 7_000, "only the free space is taken");
    }

    #[test]
    fn a_grown_ring_keeps_wrapped_data_and_takes_more() {
        let data: Vec<u8> = (0..60_000u32).map(|i| (i % 253) as u8).collect();
        let mut ring = Ring::new(20_000);
        assert_eq!(ring.push(&data[..16_000]), 16_000);
        assert_eq!(ring.read(&mut [0u8; 10_000]), 10_000);
        // Wraps around the end of its storage, then fills up.
        assert_eq!(ring.push(&data[16_000..40_000]), 14_000);
        ring.grow(50_000);
        ring.grow(30_000);
        assert_eq!(ring.capacity(), 50_000, "never lowered");
        assert_eq!(ring.push(&data[30_000..]), 30_000);
        let mut all = vec![0u8; 50_000];
        assert_eq!(ring.read(&mut all), 50_000);
        assert_eq!(all, data[10_000..]);
    }

    #[test]
    fn empty_writes_need_no_storage() {
        let mut ring = Ring::new(10);
        assert_eq!(ring.push(&[]), 0);
        ring.write_at(3, &[]);
        assert_eq!(ring.read(&mut [0u8; 4]), 0);
    }

    #[test]
    fn out_of_order_writes_become_valid_when_extended() {
        let mut ring = Ring::new(100);
        ring.write_at(10, b"world");
        ring.write_at(0, b"hello, ___");
        ring.extend(15);
        let mut out = [0u8; 15];
        ring.copy_out(0, &mut out);
        assert_eq!(&out, b"hello, ___world");
        let mut vec = vec![1, 2, 3];
        ring.copy_to_vec(7, 5, &mut vec);
        assert_eq!(vec, b"___wo");
        assert_eq!(ring.push(&[7u8; 200]), 85);
        assert_eq!(ring.free(), 0);
    }
}
