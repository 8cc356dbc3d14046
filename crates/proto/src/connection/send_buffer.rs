//! Bytes the application has written and the peer has not yet acknowledged.

use super::ring::Ring;

#[derive(Debug)]
pub(crate) struct SendBuffer {
    ring: Ring,
    /// Stream offset (data bytes from 0) of the first byte held: the oldest
    /// unacknowledged byte.
    head: u64,
}

impl SendBuffer {
    pub(crate) fn new(capacity: usize) -> SendBuffer {
        SendBuffer {
            ring: Ring::new(capacity),
            head: 0,
        }
    }

    /// Stream offset one past the last byte written.
    pub(crate) fn end(&self) -> u64 {
        self.head + self.ring.len() as u64
    }

    pub(crate) fn free(&self) -> usize {
        self.ring.free()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_empty()
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
}
