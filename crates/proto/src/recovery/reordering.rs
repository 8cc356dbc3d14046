//! What a connection learns of its path's reordering, so that reordering
//! is not taken for loss (issue 15 point 3): a bundle striped round-robin
//! over circuits of 0.8 and 2 s round trips delivers packets 0.6 s out of
//! order, which a fixed duplicate-ACK threshold of 3 and a fixed SNACK
//! delay both take for loss.
//!
//! Both ends measure it with timestamps (RFC 7323), each what it can see:
//!
//! - **The sender** finds a retransmission spurious when the cumulative
//!   ACK that covers it echoes a timestamp older than the copy (Eifel
//!   detection, RFC 3522): the original arrived, late. How far it was
//!   overtaken, in segments SACKed above it, becomes the duplicate-ACK
//!   threshold (as Linux raises its `reordering`): RFC 6675's loss rule
//!   then waits for that many.
//! - **The receiver** finds a hole filled by a segment whose timestamp is
//!   no newer than the newest it had when the hole appeared: an original
//!   sent before what overtook it, not a repair. How long the hole lasted
//!   is a sample of the reordering's extent in time; the SNACK delay
//!   follows the largest recent one, so a hole is named only once
//!   reordering cannot explain it.
//!
//! Without timestamps neither end can tell reordering from repair, and
//! the configured threshold and delay stand.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

/// The most the duplicate-ACK threshold is raised to (Linux's default
/// `tcp_max_reordering` is 300): beyond, a window rarely holds enough
/// segments for a loss to be found before the retransmission timer.
pub(crate) const MAX_DUP_THRESHOLD: u32 = 256;

/// The longest the SNACK delay is stretched to: a hole that lasts longer
/// is repaired by the retransmission timer just as soon.
pub(crate) const MAX_REORDER_WAIT: Duration = Duration::from_secs(3);

/// The sender's side: the duplicate-ACK threshold the path's reordering
/// calls for.
#[derive(Debug, Clone, Default)]
pub(crate) struct SenderReordering {
    /// Raised by spurious retransmissions; never below the configured one
    /// where it is read.
    dup_threshold: u32,
}

impl SenderReordering {
    /// A retransmission was spurious: its original had `overtaken_by`
    /// segments SACKed above it when it arrived.
    pub(crate) fn on_spurious(&mut self, overtaken_by: u64) {
        let wanted = u32::try_from(overtaken_by.saturating_add(1)).unwrap_or(u32::MAX);
        self.dup_threshold = self.dup_threshold.max(wanted.min(MAX_DUP_THRESHOLD));
    }

    /// The threshold to use: the configured one, or more if reordering
    /// was seen.
    pub(crate) fn dup_threshold(&self, configured: u32) -> u32 {
        configured.max(self.dup_threshold)
    }
}

/// How long the receiver remembers a hole filled by a late original.
const MEMORY: Duration = Duration::from_secs(60);

/// The most holes remembered at once (only ever-shorter ones are kept
/// behind the longest; holes that shrink steadily reach it).
const REMEMBERED: usize = 64;

/// The receiver's side: how long reordering keeps a hole open.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReceiverReordering {
    /// The holes filled by originals in the last [`MEMORY`], when and how
    /// long each lasted, each shorter than all before it (a longer one
    /// makes the shorter ones before it irrelevant): the extent is the
    /// first. Not a smoothed figure: a bundle of small packets opens many
    /// short holes and now and then a long one, and a delay that followed
    /// the many would name each long one (a spurious retransmission, and
    /// a fast recovery at the sender). A path whose reordering shrinks is
    /// followed once its long holes are [`MEMORY`] old.
    longest: VecDeque<(Instant, Duration)>,
    pub(crate) samples: u64,
}

impl ReceiverReordering {
    /// A hole seen `lasted` ago was filled by an original at `now`.
    pub(crate) fn on_sample(&mut self, now: Instant, lasted: Duration) {
        self.samples += 1;
        self.expire(now);
        while self.longest.back().is_some_and(|&(_, l)| l <= lasted) {
            self.longest.pop_back();
        }
        let full = self.longest.len() == REMEMBERED;
        match self.longest.back_mut() {
            // Full: the shortest remembered, longer than this one, stands
            // for it too (erring long) rather than the longest being
            // forgotten early.
            Some(last) if full => last.0 = now,
            _ => self.longest.push_back((now, lasted)),
        }
    }

    /// Forgets the holes older than [`MEMORY`]; called with every segment
    /// that changes the holes, so a path that stops reordering is
    /// followed without new samples.
    pub(crate) fn expire(&mut self, now: Instant) {
        while self
            .longest
            .front()
            .is_some_and(|&(at, _)| now.saturating_since(at) > MEMORY)
        {
            self.longest.pop_front();
        }
    }

    /// How long to wait before naming a hole: the configured delay, or
    /// the reordering's extent and a quarter more (and a clock tick), up
    /// to [`MAX_REORDER_WAIT`].
    pub(crate) fn snack_delay(&self, configured: Duration, granularity: Duration) -> Duration {
        let Some(&(_, extent)) = self.longest.front() else {
            return configured;
        };
        let wait = (extent + extent / 4 + granularity).min(MAX_REORDER_WAIT);
        configured.max(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_rises_to_what_overtook_a_spurious_retransmission() {
        let mut sender = SenderReordering::default();
        assert_eq!(sender.dup_threshold(3), 3);
        sender.on_spurious(1);
        assert_eq!(sender.dup_threshold(3), 3, "no lower than configured");
        sender.on_spurious(9);
        assert_eq!(sender.dup_threshold(3), 10);
        sender.on_spurious(4);
        assert_eq!(sender.dup_threshold(3), 10, "it does not come down");
        sender.on_spurious(100_000);
        assert_eq!(sender.dup_threshold(3), MAX_DUP_THRESHOLD);
    }

    #[test]
    fn the_snack_delay_follows_the_longest_hole_of_the_last_minute() {
        let ms = Duration::from_millis;
        let at = |s: u64| Instant::ZERO + Duration::from_secs(s);
        let mut receiver = ReceiverReordering::default();
        assert_eq!(
            receiver.snack_delay(ms(5), ms(1)),
            ms(5),
            "nothing seen: as configured"
        );
        receiver.on_sample(at(0), ms(400));
        assert_eq!(receiver.snack_delay(ms(5), ms(1)), ms(501));
        // Many shorter holes do not draw it down; a longer one raises it
        // at once.
        for second in 1..=60 {
            receiver.on_sample(at(second), ms(80));
            receiver.on_sample(at(second), ms(120));
        }
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(501));
        receiver.expire(at(61));
        assert_eq!(
            receiver.snack_delay(ms(0), ms(1)),
            ms(151),
            "the long hole is forgotten after a minute, sample or not: the longest since"
        );
        // Holes that shrink steadily fill the memory: the shortest kept
        // stands for the ones after it, and the longest is not lost.
        for k in 0..200 {
            receiver.on_sample(at(61), ms(110) - Duration::from_micros(k * 500));
        }
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(151));
        receiver.on_sample(at(62), ms(600));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(751));
        receiver.on_sample(at(63), Duration::from_secs(10));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), MAX_REORDER_WAIT);
        assert_eq!(
            receiver.snack_delay(Duration::from_secs(5), ms(1)),
            Duration::from_secs(5)
        );
    }
}
