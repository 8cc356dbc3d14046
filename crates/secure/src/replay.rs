//! Which counters of a session have arrived: each is taken once, in any
//! order within [`WINDOW`] of the highest seen, so that the link's
//! reordering (channels of a bundle with different delays) and losses
//! cost nothing, while a copy replayed from a capture is refused. The
//! scheme is RFC 6479's (a bitmap of the counters behind the highest),
//! the window WireGuard's.

/// Counters behind the highest seen that can still arrive: at 8 Mbit/s of
/// 1500-byte packets, about twelve seconds of reordering.
pub const WINDOW: u64 = 8192;

const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Debug, Clone)]
pub(crate) struct ReplayWindow {
    /// The highest counter taken, if any.
    highest: Option<u64>,
    /// Bit `c % WINDOW` is set for a taken counter `c` within the window.
    seen: Box<[u64; WORDS]>,
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            highest: None,
            seen: Box::new([0; WORDS]),
        }
    }
}

fn bit(counter: u64) -> (usize, u64) {
    let slot = counter % WINDOW;
    ((slot / 64) as usize, 1 << (slot % 64))
}

impl ReplayWindow {
    /// Whether `counter` may be taken: new, and not too old. Asked before
    /// the datagram is authenticated, so that a replay costs no
    /// decryption; [`ReplayWindow::take`] records it once it is.
    pub(crate) fn admits(&self, counter: u64) -> bool {
        match self.highest {
            None => true,
            Some(highest) if counter > highest => true,
            Some(highest) if highest - counter >= WINDOW => false,
            Some(_) => {
                let (word, mask) = bit(counter);
                self.seen[word] & mask == 0
            }
        }
    }

    /// Records `counter` as taken (it was admitted and authenticated).
    pub(crate) fn take(&mut self, counter: u64) {
        match self.highest {
            Some(highest) if counter <= highest => {}
            Some(highest) => {
                // The counters the window moves past are forgotten: their
                // bits will stand for the new ones.
                let advance = counter - highest;
                if advance >= WINDOW {
                    self.seen.fill(0);
                } else {
                    for skipped in highest + 1..=counter {
                        let (word, mask) = bit(skipped);
                        self.seen[word] &= !mask;
                    }
                }
                self.highest = Some(counter);
            }
            None => self.highest = Some(counter),
        }
        let (word, mask) = bit(counter);
        self.seen[word] |= mask;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn each_counter_once_in_any_order_within_the_window() {
        let mut window = ReplayWindow::default();
        for counter in [5, 3, 9, 4, 0] {
            assert!(window.admits(counter));
            window.take(counter);
            assert!(!window.admits(counter), "{counter} again");
        }
        window.take(WINDOW + 9);
        assert!(!window.admits(9), "fell behind the window");
        assert!(window.admits(10), "still within it, never taken");
        assert!(!window.admits(WINDOW + 9));
        window.take(10 * WINDOW);
        assert!(!window.admits(9 * WINDOW), "a jump forgets everything behind");
        assert!(window.admits(9 * WINDOW + 1));
    }

    proptest! {
        /// Against a set of every counter taken: the window refuses
        /// exactly the counters taken before and those too old.
        #[test]
        fn agrees_with_a_plain_record(counters in proptest::collection::vec(0u64..3 * WINDOW, 1..400)) {
            let mut window = ReplayWindow::default();
            let mut taken = std::collections::BTreeSet::new();
            let mut highest: Option<u64> = None;
            for counter in counters {
                let too_old = highest.is_some_and(|h| h >= counter + WINDOW);
                let expected = !too_old && !taken.contains(&counter);
                prop_assert_eq!(window.admits(counter), expected, "counter {}", counter);
                if expected {
                    window.take(counter);
                    taken.insert(counter);
                    highest = highest.max(Some(counter));
                }
            }
        }
    }
}
