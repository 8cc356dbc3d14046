//! The connection's timers: a small table indexed by kind (the quinn-proto
//! style), so that the next wake-up is a minimum over a fixed array.

use crate::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// RFC 6298 retransmission timer; also retransmits SYN and SYN-ACK.
    Retransmit,
    /// RFC 1122 4.2.3.2 delayed acknowledgment.
    DelayedAck,
    /// RFC 9293 3.8.6.1 zero-window probing.
    Persist,
    /// RFC 9293 3.8.4 keepalive.
    Keepalive,
    /// RFC 9293 3.6 TIME-WAIT (2 MSL).
    TimeWait,
    /// The route's token bucket holds enough for the next segment.
    Pacing,
    /// A hole is due to be named in a SNACK.
    Snack,
}

impl Timer {
    const ALL: [Timer; COUNT] = [
        Timer::Retransmit,
        Timer::DelayedAck,
        Timer::Persist,
        Timer::Keepalive,
        Timer::TimeWait,
        Timer::Pacing,
        Timer::Snack,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

const COUNT: usize = 7;

#[derive(Debug, Clone, Default)]
pub(crate) struct Timers {
    deadlines: [Option<Instant>; COUNT],
}

impl Timers {
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[timer.index()] = Some(at);
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer.index()] = None;
    }

    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [None; COUNT];
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer.index()]
    }

    pub(crate) fn is_armed(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }

    /// Disarms and returns the first timer due at `now`, in table order.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Option<Timer> {
        let timer = Timer::ALL
            .into_iter()
            .find(|t| self.get(*t).is_some_and(|at| at <= now))?;
        self.stop(timer);
        Some(timer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_the_earliest_and_expiry_disarms() {
        let mut timers = Timers::default();
        assert_eq!(timers.next(), None);
        timers.set(Timer::Keepalive, Instant::from_nanos(50));
        timers.set(Timer::Retransmit, Instant::from_nanos(70));
        assert_eq!(timers.next(), Some(Instant::from_nanos(50)));
        assert_eq!(
            timers.take_expired(Instant::from_nanos(60)),
            Some(Timer::Keepalive)
        );
        assert_eq!(timers.take_expired(Instant::from_nanos(60)), None);
        assert!(timers.is_armed(Timer::Retransmit));
    }
}
