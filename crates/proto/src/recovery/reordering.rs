//! What a connection learns of its path's reordering, so that reordering
//! is not taken for loss: a bundle striped round-robin
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

/// How long the receiver remembers a hole filled by a late original once
/// [`NEWER_SAMPLES`] holes have been filled since: a path that keeps
/// reordering (round-robin striping) is followed within a minute.
const MEMORY: Duration = Duration::from_secs(60);

/// How many holes filled since a remembered one let it be forgotten after
/// [`MEMORY`]; with fewer, it is remembered [`RARE_MEMORY`]. Reordering
/// by jitter comes minutes apart: on iridium-3ch's circuits striped by
/// the bond (which times each packet to arrive in order, but cannot know
/// a circuit's jitter to come) a hole filled late every few minutes, and
/// a delay that forgot each after a minute named the next (17 spurious
/// retransmissions in a 47-minute run at saturation, each 5 s of a 2400
/// bit/s circuit): remembered three minutes, iridium-3ch's circuits carry
/// 0.954 of the limit at saturation over six seeds rather than 0.947.
/// The price is on paths whose long holes are rare and real losses many:
/// striped round-robin with a marginal circuit (iridium-3ch-marginal),
/// `scps-rate` carries 2.80 kbit/s at 4096 offered rather than 3.08 (at
/// 2048, 2.01 rather than 1.97); remembered five minutes, 2.68.
const NEWER_SAMPLES: u64 = 8;
const RARE_MEMORY: Duration = Duration::from_secs(180);

/// The most holes remembered at once (only ever-shorter ones are kept
/// behind the longest; holes that shrink steadily reach it).
const REMEMBERED: usize = 64;

/// The receiver's side: how long reordering keeps a hole open.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReceiverReordering {
    /// The holes filled by originals and remembered (see [`MEMORY`]), when
    /// and how long each lasted and the sample it was, each shorter than
    /// all before it (a longer one makes the shorter ones before it
    /// irrelevant): the extent is the first. Not a smoothed figure: a
    /// bundle of small packets opens many short holes and now and then a
    /// long one, and a delay that followed the many would name each long
    /// one (a spurious retransmission, and a fast recovery at the
    /// sender). A path whose reordering shrinks is followed once its long
    /// holes are forgotten.
    longest: VecDeque<Remembered>,
    pub(crate) samples: u64,
}

#[derive(Debug, Clone, Copy)]
struct Remembered {
    at: Instant,
    lasted: Duration,
    sample: u64,
}

impl ReceiverReordering {
    /// A hole seen `lasted` ago was filled by an original at `now`.
    pub(crate) fn on_sample(&mut self, now: Instant, lasted: Duration) {
        self.samples += 1;
        self.expire(now);
        while self.longest.back().is_some_and(|r| r.lasted <= lasted) {
            self.longest.pop_back();
        }
        let full = self.longest.len() == REMEMBERED;
        let sample = self.samples;
        match self.longest.back_mut() {
            // Full: the shortest remembered, longer than this one, stands
            // for it too (erring long) rather than the longest being
            // forgotten early.
            Some(last) if full => {
                last.at = now;
                last.sample = sample;
            }
            _ => self.longest.push_back(Remembered {
                at: now,
                lasted,
                sample,
            }),
        }
    }

    /// Forgets the holes older than [`MEMORY`] with [`NEWER_SAMPLES`]
    /// since, and those older than [`RARE_MEMORY`]; called with every
    /// segment that changes the holes, so a path that stops reordering is
    /// followed without new samples.
    pub(crate) fn expire(&mut self, now: Instant) {
        let samples = self.samples;
        while self.longest.front().is_some_and(|r| {
            let age = now.saturating_since(r.at);
            age > RARE_MEMORY || (age > MEMORY && samples - r.sample >= NEWER_SAMPLES)
        }) {
            self.longest.pop_front();
        }
    }

    /// How long to wait before naming a hole: the configured delay, or
    /// the reordering's extent and a quarter more (and a clock tick), up
    /// to [`MAX_REORDER_WAIT`].
    pub(crate) fn snack_delay(&self, configured: Duration, granularity: Duration) -> Duration {
        let Some(extent) = self.longest.front().map(|r| r.lasted) else {
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
    fn the_snack_delay_follows_the_longest_hole_of_the_last_minute_or_of_rare_ones_three() {
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
            "with many holes since, the long one is forgotten after a minute: the longest since"
        );
        // A rare long hole, and few after it: remembered three minutes.
        receiver.on_sample(at(100), ms(800));
        for second in [130, 200, 250] {
            receiver.on_sample(at(second), ms(100));
        }
        receiver.expire(at(280));
        assert_eq!(
            receiver.snack_delay(ms(0), ms(1)),
            ms(1001),
            "remembered three minutes"
        );
        receiver.expire(at(281));
        assert_eq!(
            receiver.snack_delay(ms(0), ms(1)),
            ms(126),
            "forgotten after three minutes, sample or not"
        );
        // Eight holes after it: a minute.
        receiver.on_sample(at(500), ms(800));
        for k in 0..8 {
            receiver.on_sample(at(510 + k), ms(120));
        }
        receiver.expire(at(560));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(1001));
        receiver.expire(at(561));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(151));
        // Holes that shrink steadily fill the memory: the shortest kept
        // stands for the ones after it, and the longest is not lost.
        for k in 0..200 {
            receiver.on_sample(at(561), ms(110) - Duration::from_micros(k * 500));
        }
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(151));
        receiver.on_sample(at(562), ms(600));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), ms(751));
        receiver.on_sample(at(563), Duration::from_secs(10));
        assert_eq!(receiver.snack_delay(ms(0), ms(1)), MAX_REORDER_WAIT);
        assert_eq!(
            receiver.snack_delay(Duration::from_secs(5), ms(1)),
            Duration::from_secs(5)
        );
    }
}
