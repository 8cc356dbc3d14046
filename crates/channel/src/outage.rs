//! The outage process: when the link is down.
//!
//! Two independent sources, combined (down if either is down):
//!
//! * scheduled windows, merged at construction into sorted, disjoint,
//!   half-open spans `[start, end)` of nanoseconds, so that overlapping or
//!   touching windows never produce a spurious state change;
//! * random call drops: an alternating renewal process, up ~
//!   Exponential(mean_interval) then down ~ Uniform[redial_min, redial_max],
//!   up from time 0. It is generated lazily, forward in time, from its own
//!   ChaCha stream, so the drops do not depend on how the link is used.
//!
//! Only the most recent [`RETAINED_DOWN_PERIODS`] generated down periods
//! are kept, so memory stays bounded on runs of days with frequent drops.
//! A query earlier than what is kept regenerates the process from time 0
//! with the same seed: answers are identical for any query order, and the
//! usual almost-monotone queries stay O(1) amortised. A query at time `T`
//! costs generating the drops up to `T` (about `T / mean_interval` draws)
//! the first time; times are clamped at `u64::MAX` ns (~584 years).

use std::collections::VecDeque;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{CallDrops, ConfigError, OutageConfig, OutageWindow};
use crate::time::{from_ns, to_ns};

/// ChaCha stream of the call-drop process (see `channel.rs`).
pub(crate) const OUTAGE_STREAM: u64 = 2;

/// How many generated down periods are kept for queries into the past.
pub const RETAINED_DOWN_PERIODS: usize = 4096;

/// A half-open interval `[start, end)` in nanoseconds, `start < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Sorted, disjoint, non-empty spans covering exactly the union of the
/// windows (windows that touch are merged too).
pub(crate) fn merge_windows(windows: &[OutageWindow]) -> Vec<Span> {
    let mut spans: Vec<Span> = windows
        .iter()
        .map(|w| {
            let start = to_ns(w.start);
            Span {
                start,
                end: start.saturating_add(to_ns(w.duration)),
            }
        })
        .filter(|s| s.end > s.start)
        .collect();
    spans.sort_by_key(|s| s.start);
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The span containing `t`, given the last span starting at or before `t`
/// (found by binary search): only that one can contain `t`. A span ending
/// at `u64::MAX` (clamped end of time) contains `u64::MAX` too: it is down
/// for good.
fn containing(last_started: Option<&Span>, t: u64) -> Option<Span> {
    last_started
        .copied()
        .filter(|s| s.start <= t && (t < s.end || s.end == u64::MAX))
}

/// Combined outage process of one channel.
#[derive(Debug, Clone)]
pub struct OutageProcess {
    scheduled: Vec<Span>,
    /// Outages forced by hand (a live "call drop"), sorted and disjoint;
    /// the last may still be open (end `u64::MAX`).
    forced: Vec<Span>,
    call_drops: Option<CallDropProcess>,
    availability: f64,
}

impl OutageProcess {
    /// Builds the process of `config`; the call drops use stream 2 of
    /// `ChaCha8Rng::seed_from_u64(seed)`, so this is the same process as in
    /// a [`crate::Channel`] built with that seed.
    pub fn new(config: &OutageConfig, seed: u64) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(OutageProcess {
            scheduled: merge_windows(&config.scheduled),
            forced: Vec::new(),
            call_drops: config
                .call_drops
                .as_ref()
                .and_then(|d| CallDropProcess::new(d, seed)),
            availability: config.call_drop_availability(),
        })
    }

    /// Whether the link is up at `now`.
    pub fn is_up(&mut self, now: Duration) -> bool {
        !self.is_down_ns(to_ns(now))
    }

    /// The next instant after `now` at which the up/down state flips, or
    /// `None` if it never changes again.
    pub fn next_change(&mut self, now: Duration) -> Option<Duration> {
        self.next_change_ns(to_ns(now)).map(from_ns)
    }

    /// Analytic long-run availability of the random call drops alone:
    /// mean_interval / (mean_interval + mean redial); 1 without call drops.
    /// Scheduled windows depend on the run length and are reported by
    /// [`crate::expected_up_fraction`].
    pub fn up_fraction_expected(&self) -> f64 {
        self.availability
    }

    pub(crate) fn is_down_ns(&mut self, t: u64) -> bool {
        self.scheduled_span(t).is_some() || self.call_drops.as_mut().is_some_and(|d| d.down_span(t).is_some())
    }

    pub(crate) fn next_change_ns(&mut self, t: u64) -> Option<u64> {
        if self.is_down_ns(t) {
            // Jump to the end of whichever source holds the link down until
            // neither does; each jump strictly advances `x`.
            let mut x = t;
            loop {
                let span = match self.scheduled_span(x) {
                    Some(span) => Some(span),
                    None => self.call_drops.as_mut().and_then(|d| d.down_span(x)),
                };
                match span {
                    // A span reaching the end of representable time (e.g. a
                    // window of Duration::MAX) is down for good. Checking
                    // this before asking the call drops about u64::MAX also
                    // avoids generating them up to the end of time.
                    Some(span) if span.end == u64::MAX => return None,
                    Some(span) => x = span.end,
                    None => return Some(x),
                }
            }
        }
        let scheduled = self.scheduled_start_after(t);
        let drops = self.call_drops.as_mut().and_then(|d| d.next_start_after(t));
        match (scheduled, drops) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether any instant of the half-open interval `[start, end)` is down;
    /// for an empty interval, whether `start` is down.
    pub(crate) fn overlaps_down(&mut self, start: u64, end: u64) -> bool {
        if self.is_down_ns(start) {
            return true;
        }
        // Up at `start`, so the next change is the next down instant.
        end > start && self.next_change_ns(start).is_some_and(|c| c < end)
    }

    /// Forces the link down from `from` until [`end_forced`] (a call
    /// dropped by hand). Returns false, changing nothing, if a forced
    /// outage is already open. Starts before the end of the previous
    /// forced outage are moved to its end.
    ///
    /// [`end_forced`]: OutageProcess::end_forced
    pub fn force_down(&mut self, from: Duration) -> bool {
        if self.forced_since().is_some() {
            return false;
        }
        let start = to_ns(from).max(self.forced.last().map_or(0, |s| s.end));
        self.forced.push(Span { start, end: u64::MAX });
        true
    }

    /// Ends the open forced outage at `at` (not before it began). Returns
    /// false if none is open.
    pub fn end_forced(&mut self, at: Duration) -> bool {
        match self.forced.last_mut() {
            Some(span) if span.end == u64::MAX => {
                span.end = to_ns(at).max(span.start);
                if span.end == span.start {
                    self.forced.pop();
                }
                true
            }
            _ => false,
        }
    }

    /// Takes over the forced outages of `other` (same channel, before a
    /// reconfiguration).
    pub(crate) fn keep_forced_from(&mut self, other: &OutageProcess) {
        self.forced.clone_from(&other.forced);
    }

    /// When the open forced outage began, if one is open.
    pub fn forced_since(&self) -> Option<Duration> {
        self.forced
            .last()
            .filter(|s| s.end == u64::MAX)
            .map(|s| from_ns(s.start))
    }

    /// The scheduled or forced span containing `t`.
    fn scheduled_span(&self, t: u64) -> Option<Span> {
        [&self.scheduled, &self.forced].into_iter().find_map(|spans| {
            let idx = spans.partition_point(|s| s.start <= t);
            containing(idx.checked_sub(1).and_then(|i| spans.get(i)), t)
        })
    }

    /// The first scheduled or forced start after `t`.
    fn scheduled_start_after(&self, t: u64) -> Option<u64> {
        [&self.scheduled, &self.forced]
            .into_iter()
            .filter_map(|spans| {
                spans
                    .get(spans.partition_point(|s| s.start <= t))
                    .map(|s| s.start)
            })
            .min()
    }
}

/// Lazily generated call drops.
#[derive(Debug, Clone)]
struct CallDropProcess {
    mean_up_ns: f64,
    redial_min_ns: u64,
    redial_max_ns: u64,
    /// The generator as it was at time 0, for regeneration.
    initial_rng: ChaCha8Rng,
    rng: ChaCha8Rng,
    /// Retained down periods, sorted and disjoint.
    downs: VecDeque<Span>,
    /// End of the last generated down period: everything before it is known.
    horizon: u64,
    /// Every down period that contains or follows an instant >= this is
    /// retained (older ones may have been forgotten).
    complete_from: u64,
}

impl CallDropProcess {
    /// `None` when the process can never be down (redial always zero).
    fn new(config: &CallDrops, seed: u64) -> Option<Self> {
        let redial_max_ns = to_ns(config.redial_max);
        if redial_max_ns == 0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(OUTAGE_STREAM);
        Some(CallDropProcess {
            mean_up_ns: to_ns(config.mean_interval) as f64,
            redial_min_ns: to_ns(config.redial_min),
            redial_max_ns,
            initial_rng: rng.clone(),
            rng,
            downs: VecDeque::new(),
            horizon: 0,
            complete_from: 0,
        })
    }

    /// Generates one up period and the down period that follows it.
    fn step(&mut self) {
        // Inverse transform: -mean * ln(U) with U in (0, 1] is
        // Exponential(mean). `as u64` saturates, so huge draws are safe.
        let u = 1.0 - self.rng.random::<f64>();
        let up = (-u.ln() * self.mean_up_ns).round() as u64;
        let redial = self.rng.random_range(self.redial_min_ns..=self.redial_max_ns);
        let start = self.horizon.saturating_add(up);
        let end = start.saturating_add(redial);
        if end > start {
            self.downs.push_back(Span { start, end });
            if self.downs.len() > RETAINED_DOWN_PERIODS
                && let Some(old) = self.downs.pop_front()
            {
                self.complete_from = old.end;
            }
        }
        self.horizon = end;
    }

    /// Makes sure the state at `t` is known (regenerating from time 0 if
    /// `t` is older than what is retained).
    fn ensure(&mut self, t: u64) {
        if t < self.complete_from {
            self.rng = self.initial_rng.clone();
            self.downs.clear();
            self.horizon = 0;
            self.complete_from = 0;
        }
        while self.horizon <= t && self.horizon != u64::MAX {
            self.step();
        }
    }

    fn down_span(&mut self, t: u64) -> Option<Span> {
        self.ensure(t);
        let idx = self.downs.partition_point(|s| s.start <= t);
        containing(idx.checked_sub(1).and_then(|i| self.downs.get(i)), t)
    }

    fn next_start_after(&mut self, t: u64) -> Option<u64> {
        self.ensure(t);
        loop {
            let idx = self.downs.partition_point(|s| s.start <= t);
            if let Some(span) = self.downs.get(idx) {
                return Some(span.start);
            }
            if self.horizon == u64::MAX {
                return None;
            }
            self.step();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start_ms: u64, dur_ms: u64) -> OutageWindow {
        OutageWindow {
            start: Duration::from_millis(start_ms),
            duration: Duration::from_millis(dur_ms),
        }
    }

    #[test]
    fn merge_handles_overlap_touch_and_empty() {
        let spans = merge_windows(&[
            window(50, 10),
            window(0, 10),
            window(10, 5),
            window(30, 0),
            window(52, 1),
        ]);
        assert_eq!(
            spans,
            vec![
                Span {
                    start: 0,
                    end: 15_000_000
                },
                Span {
                    start: 50_000_000,
                    end: 60_000_000
                }
            ]
        );
    }

    #[test]
    fn scheduled_state_and_changes() {
        let config = OutageConfig {
            scheduled: vec![window(100, 50), window(140, 20), window(300, 1)],
            call_drops: None,
        };
        let mut p = OutageProcess::new(&config, 1).expect("valid");
        let ms = Duration::from_millis;
        assert!(p.is_up(ms(99)));
        assert!(!p.is_up(ms(100)));
        assert!(!p.is_up(ms(159)));
        assert!(p.is_up(ms(160)));
        assert_eq!(p.next_change(ms(0)), Some(ms(100)));
        assert_eq!(p.next_change(ms(100)), Some(ms(160)));
        assert_eq!(p.next_change(ms(160)), Some(ms(300)));
        assert_eq!(p.next_change(ms(300)), Some(ms(301)));
        assert_eq!(p.next_change(ms(301)), None);
        assert!(p.overlaps_down(99_000_000, 100_000_001));
        assert!(!p.overlaps_down(99_000_000, 100_000_000));
        assert!(!p.overlaps_down(160_000_000, 160_000_000));
        assert!(p.overlaps_down(159_999_999, 159_999_999));
    }

    #[test]
    fn endless_window_masks_call_drops_without_generating_them() {
        let config = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Duration::from_secs(10),
                duration: Duration::MAX,
            }],
            call_drops: Some(CallDrops {
                mean_interval: Duration::from_millis(1),
                redial_min: Duration::from_millis(1),
                redial_max: Duration::from_millis(2),
            }),
        };
        let mut p = OutageProcess::new(&config, 5).expect("valid");
        assert!(!p.is_up(Duration::from_secs(20)));
        assert_eq!(p.next_change(Duration::from_secs(20)), None);
        assert!(!p.is_up(Duration::from_secs(1 << 40)));
        assert!(p.overlaps_down(u64::MAX - 10, u64::MAX));
    }

    #[test]
    fn forced_outages_open_and_close() {
        let ms = Duration::from_millis;
        let mut p = OutageProcess::new(&OutageConfig::default(), 1).expect("valid");
        assert!(p.force_down(ms(100)));
        assert!(!p.force_down(ms(150)), "already forced");
        assert_eq!(p.forced_since(), Some(ms(100)));
        assert!(!p.is_up(ms(5000)));
        assert_eq!(p.next_change(ms(200)), None);
        assert!(p.end_forced(ms(300)));
        assert!(!p.end_forced(ms(400)), "none open");
        assert!(p.is_up(ms(99)) && !p.is_up(ms(299)) && p.is_up(ms(300)));
        assert_eq!(p.next_change(ms(0)), Some(ms(100)));
        assert_eq!(p.next_change(ms(100)), Some(ms(300)));
        // A second outage asked to start inside the first starts after it.
        assert!(p.force_down(ms(200)));
        assert_eq!(p.forced_since(), Some(ms(300)));
        assert!(p.end_forced(ms(250)));
        assert_eq!(p.forced_since(), None);
        assert!(p.is_up(ms(300)));
    }

    #[test]
    fn zero_redial_never_goes_down() {
        let config = OutageConfig {
            scheduled: vec![],
            call_drops: Some(CallDrops {
                mean_interval: Duration::from_secs(1),
                redial_min: Duration::ZERO,
                redial_max: Duration::ZERO,
            }),
        };
        let mut p = OutageProcess::new(&config, 3).expect("valid");
        assert!(p.is_up(Duration::from_secs(1000)));
        assert_eq!(p.next_change(Duration::ZERO), None);
    }
}
