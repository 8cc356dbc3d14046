//! A set of byte offsets kept as disjoint, non-adjacent half-open ranges:
//! what a receiver holds, what a sender has queued to send again.

use std::collections::BTreeMap;
use std::ops::Range;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start → end, disjoint and never touching.
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Bytes in the set.
    pub fn len(&self) -> u64 {
        self.ranges.iter().map(|(start, end)| end - start).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.ranges.iter().map(|(start, end)| *start..*end)
    }

    pub fn first(&self) -> Option<Range<u64>> {
        self.ranges.iter().next().map(|(start, end)| *start..*end)
    }

    pub fn insert(&mut self, range: Range<u64>) {
        if range.start >= range.end {
            return;
        }
        let (mut start, mut end) = (range.start, range.end);
        // Merge with a range that begins before and reaches `start`.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back()
            && e >= start
        {
            start = s;
            end = end.max(e);
            self.ranges.remove(&s);
        }
        // Swallow ranges that begin inside (or at the end of) the new one.
        while let Some((&s, &e)) = self.ranges.range(start..=end).next() {
            end = end.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(start, end);
    }

    pub fn remove(&mut self, range: Range<u64>) {
        if range.start >= range.end {
            return;
        }
        let overlapping: Vec<(u64, u64)> = self
            .ranges
            .range(..range.end)
            .rev()
            .take_while(|(_, e)| **e > range.start)
            .map(|(s, e)| (*s, *e))
            .collect();
        for (s, e) in overlapping {
            self.ranges.remove(&s);
            if s < range.start {
                self.ranges.insert(s, range.start);
            }
            if e > range.end {
                self.ranges.insert(range.end, e);
            }
        }
    }

    #[cfg(test)]
    pub fn contains(&self, offset: u64) -> bool {
        self.ranges
            .range(..=offset)
            .next_back()
            .is_some_and(|(_, e)| *e > offset)
    }

    /// Bytes from 0 held without a gap.
    pub fn prefix(&self) -> u64 {
        match self.ranges.iter().next() {
            Some((0, end)) => *end,
            _ => 0,
        }
    }

    /// The parts of `within` not in the set, in order. Called for every
    /// DATA frame, so it looks only at the ranges that can meet `within`:
    /// the one at or before its start, and those starting inside it.
    pub fn gaps(&self, within: Range<u64>) -> Vec<Range<u64>> {
        let mut gaps = Vec::new();
        if within.start >= within.end {
            return gaps;
        }
        let before = self.ranges.range(..=within.start).next_back();
        let inside = self.ranges.range(within.start + 1..within.end);
        let mut at = within.start;
        for (&start, &end) in before.into_iter().chain(inside) {
            if start > at {
                gaps.push(at..start);
            }
            at = at.max(end);
        }
        if at < within.end {
            gaps.push(at..within.end);
        }
        gaps
    }
}

impl FromIterator<Range<u64>> for RangeSet {
    fn from_iter<I: IntoIterator<Item = Range<u64>>>(iter: I) -> RangeSet {
        let mut set = RangeSet::new();
        for range in iter {
            set.insert(range);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ranges_merge_split_and_report_gaps() {
        let mut set = RangeSet::new();
        set.insert(10..20);
        set.insert(30..40);
        set.insert(20..30);
        assert_eq!(set.first(), Some(10..40));
        assert_eq!(set.iter().count(), 1);
        set.remove(15..25);
        assert_eq!(set.iter().collect::<Vec<_>>(), [10..15, 25..40]);
        assert_eq!(set.gaps(0..50), [0..10, 15..25, 40..50]);
        assert_eq!(set.gaps(12..14), []);
        assert_eq!(set.prefix(), 0);
        set.insert(0..10);
        assert_eq!(set.prefix(), 15);
        assert!(set.contains(14) && !set.contains(15));
        assert_eq!(set.len(), 30);
        assert_eq!(set.first(), Some(0..15));
    }

    proptest! {
        #[test]
        fn a_set_matches_a_bitmap(ops in prop::collection::vec((any::<bool>(), 0u64..64, 0u64..16), 0..40),
            window in (0u64..80, 0u64..80)) {
            let mut set = RangeSet::new();
            let mut bits = [false; 80];
            for (add, start, len) in ops {
                let range = start..start + len;
                if add { set.insert(range.clone()) } else { set.remove(range.clone()) }
                for bit in &mut bits[range.start as usize..range.end as usize] { *bit = add; }
            }
            for (offset, bit) in bits.iter().enumerate() {
                prop_assert_eq!(set.contains(offset as u64), *bit);
            }
            prop_assert_eq!(set.len(), bits.iter().filter(|b| **b).count() as u64);
            let gaps: u64 = set.gaps(0..80).iter().map(|g| g.end - g.start).sum();
            prop_assert_eq!(gaps + set.len(), 80);
            // Any window: exactly the offsets not held, in order, merged.
            let (from, to) = (window.0.min(window.1), window.0.max(window.1));
            let expected: Vec<u64> = (from..to).filter(|o| !bits[*o as usize]).collect();
            let found: Vec<Range<u64>> = set.gaps(from..to);
            prop_assert_eq!(found.iter().flat_map(|g| g.clone()).collect::<Vec<u64>>(), expected);
            for pair in found.windows(2) { prop_assert!(pair[0].end < pair[1].start); }
            let ranges: Vec<_> = set.iter().collect();
            for pair in ranges.windows(2) { prop_assert!(pair[0].end < pair[1].start); }
        }
    }
}
