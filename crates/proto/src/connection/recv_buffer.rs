//! Bytes received and not yet read by the application, including data that
//! arrived out of order (RFC 9293 section 3.10.7.4, "segment text").
//!
//! Out-of-order data is written straight to its place in the ring; a sorted
//! list of the ranges held beyond the contiguous end (the "assembler") says
//! which places are filled. Because we never advertise a window beyond the
//! free space, everything acceptable fits in the ring.
//!
//! Record boundaries (option kind 22, docs/spec/scps-tp-options.md) are kept by stream
//! offset as they arrive, in order or not, so a reader that asks for
//! records stops at each.

use std::collections::BTreeSet;
use std::ops::Range;

use super::ring::Ring;

#[derive(Debug)]
pub(crate) struct RecvBuffer {
    ring: Ring,
    /// Stream offset of the next byte the application reads.
    read: u64,
    /// Disjoint, sorted, non-adjacent ranges of stream offsets held beyond
    /// the contiguous end.
    out_of_order: Vec<Range<u64>>,
    /// Stream offsets one past the last byte of a record, not yet read
    /// past. At most one per byte of the buffer: only offsets within it
    /// are taken.
    record_ends: BTreeSet<u64>,
}

/// What storing a segment's data did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    /// Bytes newly made contiguous (readable).
    pub(crate) advanced: u64,
    /// The data landed beyond a hole.
    pub(crate) out_of_order: bool,
}

impl RecvBuffer {
    pub(crate) fn new(capacity: usize) -> RecvBuffer {
        RecvBuffer {
            ring: Ring::new(capacity),
            read: 0,
            out_of_order: Vec::new(),
            record_ends: BTreeSet::new(),
        }
    }

    /// Stream offset of the next byte the application reads.
    pub(crate) fn read_offset(&self) -> u64 {
        self.read
    }

    /// Stream offset one past the last contiguous byte.
    pub(crate) fn contiguous_end(&self) -> u64 {
        self.read + self.ring.len() as u64
    }

    /// Stream offset one past the last byte that fits.
    pub(crate) fn limit(&self) -> u64 {
        self.read + self.ring.capacity() as u64
    }

    pub(crate) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Lets the buffer hold up to `capacity` bytes (never fewer than it
    /// may already): the limit moves right, nothing held moves.
    pub(crate) fn grow(&mut self, capacity: usize) {
        self.ring.grow(capacity);
    }

    /// Gives its storage back if it holds nothing, in order or not.
    pub(crate) fn release_if_empty(&mut self) {
        let nothing_past_tail = !self.has_holes();
        self.ring.release_if_empty(nothing_past_tail);
    }

    /// Bytes ready for the application.
    pub(crate) fn readable(&self) -> usize {
        self.ring.len()
    }

    pub(crate) fn out_of_order(&self) -> &[Range<u64>] {
        &self.out_of_order
    }

    pub(crate) fn has_holes(&self) -> bool {
        !self.out_of_order.is_empty()
    }

    /// Bytes from the contiguous end to the end of the last range held
    /// past a hole (holes included); 0 without holes.
    pub(crate) fn held_past_holes(&self) -> u64 {
        self.out_of_order
            .last()
            .map_or(0, |range| range.end - self.contiguous_end())
    }

    /// Stores `data` found at stream offset `start`. Bytes already held or
    /// beyond [`RecvBuffer::limit`] are ignored.
    pub(crate) fn insert(&mut self, start: u64, data: &[u8]) -> Stored {
        let contiguous = self.contiguous_end();
        let lo = start.max(contiguous);
        let hi = (start + data.len() as u64).min(self.limit());
        if lo >= hi {
            return Stored {
                advanced: 0,
                out_of_order: false,
            };
        }
        let slice = &data[(lo - start) as usize..(hi - start) as usize];
        self.ring.write_at((lo - self.read) as usize, slice);
        if lo > contiguous {
            self.add_range(lo..hi);
            return Stored {
                advanced: 0,
                out_of_order: true,
            };
        }
        // In order: extend, then swallow any held ranges now reached.
        let mut end = hi;
        while let Some(first) = self.out_of_order.first() {
            if first.start > end {
                break;
            }
            end = end.max(first.end);
            self.out_of_order.remove(0);
        }
        self.ring.extend((end - contiguous) as usize);
        Stored {
            advanced: end - contiguous,
            out_of_order: false,
        }
    }

    fn add_range(&mut self, new: Range<u64>) {
        // First range that ends at or after the new start may touch it.
        let i = self.out_of_order.partition_point(|r| r.end < new.start);
        let mut merged = new;
        let mut j = i;
        while j < self.out_of_order.len() && self.out_of_order[j].start <= merged.end {
            merged.start = merged.start.min(self.out_of_order[j].start);
            merged.end = merged.end.max(self.out_of_order[j].end);
            j += 1;
        }
        self.out_of_order.splice(i..j, std::iter::once(merged));
    }

    /// Notes that a record ends at stream offset `end` (the segment
    /// carrying the boundary ended there). Offsets already read past or
    /// beyond the buffer are ignored.
    pub(crate) fn mark_record_end(&mut self, end: u64) {
        if end > self.read && end <= self.limit() {
            self.record_ends.insert(end);
        }
    }

    /// Copies readable bytes into `out` and releases them, passing any
    /// record boundaries.
    pub(crate) fn read(&mut self, out: &mut [u8]) -> usize {
        let n = self.ring.read(out);
        self.advance_read(n);
        n
    }

    /// Like [`RecvBuffer::read`], but stops at the end of the current
    /// record; also says whether the bytes read finish it.
    pub(crate) fn read_record(&mut self, out: &mut [u8]) -> (usize, bool) {
        let boundary = self.record_ends.first().copied();
        let to_boundary = boundary.map_or(usize::MAX, |end| {
            usize::try_from(end - self.read).unwrap_or(usize::MAX)
        });
        let limit = out.len().min(to_boundary);
        let n = self.ring.read(&mut out[..limit]);
        let finished = n > 0 && n == to_boundary;
        self.advance_read(n);
        (n, finished)
    }

    /// Discards everything readable (the application will never read it).
    pub(crate) fn discard_readable(&mut self) -> usize {
        let n = self.ring.len();
        self.ring.consume(n);
        self.advance_read(n);
        n
    }

    fn advance_read(&mut self, n: usize) {
        self.read += n as u64;
        while self.record_ends.first().is_some_and(|&end| end <= self.read) {
            self.record_ends.pop_first();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(buf: &mut RecvBuffer) -> Vec<u8> {
        let mut out = vec![0u8; buf.readable()];
        let n = buf.read(&mut out);
        out.truncate(n);
        out
    }

    #[test]
    fn holes_fill_in_any_order() {
        let mut buf = RecvBuffer::new(100);
        assert!(buf.insert(6, b"ghi").out_of_order);
        assert!(buf.insert(12, b"mn").out_of_order);
        assert_eq!(buf.out_of_order(), &[6..9, 12..14]);
        assert_eq!(buf.held_past_holes(), 14);
        assert!(buf.insert(9, b"jkl").out_of_order);
        assert_eq!(buf.out_of_order(), std::slice::from_ref(&(6..14)));
        let stored = buf.insert(0, b"abcdef");
        assert_eq!(
            stored,
            Stored {
                advanced: 14,
                out_of_order: false
            }
        );
        assert!(!buf.has_holes());
        assert_eq!(buf.held_past_holes(), 0);
        assert_eq!(read_all(&mut buf), b"abcdefghijklmn");
    }

    #[test]
    fn duplicates_and_overlaps_are_trimmed() {
        let mut buf = RecvBuffer::new(100);
        buf.insert(0, b"abcd");
        assert_eq!(buf.insert(2, b"cdef").advanced, 2);
        assert_eq!(buf.insert(0, b"ab").advanced, 0);
        buf.insert(10, b"kl");
        buf.insert(8, b"ijklmn");
        assert_eq!(buf.out_of_order(), std::slice::from_ref(&(8..14)));
        assert_eq!(read_all(&mut buf), b"abcdef");
    }

    #[test]
    fn record_reads_stop_at_boundaries_that_arrived_in_any_order() {
        let mut buf = RecvBuffer::new(100);
        buf.insert(5, b"fghij");
        buf.mark_record_end(10);
        buf.insert(0, b"abcde");
        buf.mark_record_end(2);
        buf.mark_record_end(2);
        let mut out = [0u8; 8];
        assert_eq!(buf.read_record(&mut out), (2, true));
        assert_eq!(&out[..2], b"ab");
        assert_eq!(
            buf.read_record(&mut out[..3]),
            (3, false),
            "a short buffer reads part"
        );
        assert_eq!(buf.read_record(&mut out), (5, true));
        assert_eq!(&out[..5], b"fghij");
        assert_eq!(buf.read_record(&mut out), (0, false), "nothing left");
        buf.insert(10, b"klm");
        buf.mark_record_end(12);
        buf.mark_record_end(5);
        assert_eq!(buf.read(&mut out), 3, "a plain read passes boundaries");
        buf.insert(13, b"no");
        assert_eq!(buf.read_record(&mut out), (2, false), "no boundary left behind");
    }

    #[test]
    fn a_grown_buffer_takes_data_beyond_its_old_limit() {
        let mut buf = RecvBuffer::new(4);
        buf.insert(2, b"cd");
        assert_eq!(buf.insert(4, b"ef").advanced, 0, "beyond the limit");
        buf.grow(8);
        assert_eq!(buf.limit(), 8);
        buf.insert(4, b"efgh");
        assert_eq!(buf.insert(0, b"ab").advanced, 8);
        assert_eq!(read_all(&mut buf), b"abcdefgh");
    }

    #[test]
    fn nothing_is_stored_beyond_the_capacity() {
        let mut buf = RecvBuffer::new(4);
        assert_eq!(buf.insert(0, b"abcdef").advanced, 4);
        assert_eq!(buf.insert(4, b"ef").advanced, 0);
        assert_eq!(read_all(&mut buf), b"abcd");
        assert_eq!(buf.limit(), 8);
        assert_eq!(buf.insert(4, b"efghij").advanced, 4);
        assert_eq!(read_all(&mut buf), b"efgh");
    }
}
