//! Bytes the application has written and the peer has not yet acknowledged,
//! with the ends of the records among them (option kind 22,
//! docs/spec/scps-tp-options.md).

use std::collections::VecDeque;

use super::ring::Ring;

#[derive(Debug)]
pub(crate) struct SendBuffer {
    ring: Ring,
    /// Stream offset (data bytes from 0) of the first byte held: the oldest
    /// unacknowledged byte.
    head: u64,
    /// Stream offsets one past the last byte of each record the
    /// application ended, ascending, kept until acknowledged so that a
    /// retransmission carries the boundary again.
    record_ends: VecDeque<u64>,
}

impl SendBuffer {
    pub(crate) fn new(capacity: usize) -> SendBuffer {
        SendBuffer {
            ring: Ring::new(capacity),
            head: 0,
            record_ends: VecDeque::new(),
        }
    }

    /// Stream offset one past the last byte written.
    pub(crate) fn end(&self) -> u64 {
        self.head + self.ring.len() as u64
    }

    pub(crate) fn free(&self) -> usize {
        self.ring.free()
    }

    /// Bytes held: not yet acknowledged, sent or not.
    pub(crate) fn held(&self) -> usize {
        self.ring.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Gives its storage back if it holds nothing.
    pub(crate) fn release_if_empty(&mut self) {
        self.ring.release_if_empty(true);
    }

    /// Queues as much of `data` as fits; returns how much.
    pub(crate) fn write(&mut self, data: &[u8]) -> usize {
        self.ring.push(data)
    }

    /// Replaces the contents of `out` with the `len` bytes from stream
    /// offset `start`, which must be held.
    pub(crate) fn copy_to_vec(&self, start: u64, len: usize, out: &mut Vec<u8>) {
        if len == 0 {
            // Segments without data pass any start, even one released.
            out.clear();
            return;
        }
        debug_assert!(start >= self.head && start + len as u64 <= self.end());
        self.ring.copy_to_vec((start - self.head) as usize, len, out);
    }

    /// Forgets every byte before stream offset `offset` (acknowledged).
    pub(crate) fn release_to(&mut self, offset: u64) {
        let offset = offset.min(self.end());
        if offset > self.head {
            self.ring.consume((offset - self.head) as usize);
            self.head = offset;
        }
        while self.record_ends.front().is_some_and(|&end| end <= self.head) {
            self.record_ends.pop_front();
        }
    }

    /// Ends a record after the last byte written. Returns false when no
    /// byte was written since the previous end (a record cannot be empty:
    /// the boundary travels on the record's last segment).
    pub(crate) fn end_record(&mut self) -> bool {
        let end = self.end();
        if end == self.head || self.record_ends.back().is_some_and(|&last| last >= end) {
            return false;
        }
        self.record_ends.push_back(end);
        true
    }

    /// Whether a record ends at stream offset `offset`.
    pub(crate) fn is_record_end(&self, offset: u64) -> bool {
        self.record_ends.binary_search(&offset).is_ok()
    }

    /// The first record end after stream offset `offset`.
    pub(crate) fn next_record_end(&self, offset: u64) -> Option<u64> {
        let index = self.record_ends.partition_point(|&end| end <= offset);
        self.record_ends.get(index).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_bytes_free_space_for_new_ones() {
        let mut buf = SendBuffer::new(8);
        assert_eq!(buf.write(b"abcdefghij"), 8);
        assert_eq!(buf.free(), 0);
        buf.release_to(3);
        assert_eq!(buf.write(b"XYZ!"), 3);
        let mut out = Vec::new();
        buf.copy_to_vec(3, 8, &mut out);
        assert_eq!(out, b"defghXYZ");
        assert_eq!(buf.end(), 11);
        buf.release_to(100);
        assert!(buf.is_empty());
        assert_eq!(buf.end(), 11);
    }

    #[test]
    fn record_ends_are_kept_until_acknowledged() {
        let mut buf = SendBuffer::new(100);
        assert!(!buf.end_record(), "nothing written: no record to end");
        buf.write(b"abc");
        assert!(buf.end_record());
        assert!(!buf.end_record(), "a record cannot be empty");
        buf.write(b"defgh");
        assert!(buf.end_record());
        assert!(buf.is_record_end(3) && buf.is_record_end(8) && !buf.is_record_end(5));
        assert_eq!(buf.next_record_end(0), Some(3));
        assert_eq!(buf.next_record_end(3), Some(8));
        assert_eq!(buf.next_record_end(8), None);
        buf.release_to(3);
        assert!(!buf.is_record_end(3), "acknowledged: never sent again");
        assert_eq!(buf.next_record_end(0), Some(8));
        buf.release_to(8);
        assert!(!buf.end_record(), "everything acknowledged, nothing new");
    }
}
