//! Whether the congestion window is what limits sending, asked over a
//! round trip rather than at one moment (RFC 7661 4.3, RFC 5681 3.1: a
//! window the sender does not use must not grow).
//!
//! Looking only at why output last stopped fails a paced sender: in slow
//! start it wants to send twice what its ACKs clock out, so the route's
//! token bucket, not the window, is what stops it after every ACK, and the
//! window never grew past what one bucket's burst let through (geo-8mbit at
//! 600 ms: `scps-vj` grew by 8 segments a round trip instead of doubling).
//! So the window counts as used if it held data back at any time in the
//! round; and, in slow start, when the pacer held data back and the flight
//! reached half the window, so that the window can double to cover what
//! pacing spreads over the round trip (Linux grows a slow-start window up
//! to twice the largest flight whatever held it back; we keep that
//! allowance to pacing, so that an application or a peer's window that
//! holds the flight down still stops the growth).

/// What stopped output when it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeldBy {
    /// Data was waiting and the congestion window had no room.
    Window,
    /// Data was waiting and the window had room: the route's token bucket
    /// held it back.
    Pacer,
    /// The application, the peer's window, Nagle or silly window
    /// avoidance; or nothing was waiting.
    Other,
}

/// How the window was used in the current round trip.
#[derive(Debug, Clone, Default)]
pub(crate) struct WindowUse {
    /// The window held data back at some time in this round.
    window: bool,
    /// The pacer held data back at some time in this round.
    pacer: bool,
    /// The largest flight (pipe) when output stopped in this round.
    flight_max: u64,
    /// The round ends once this sequence offset (SND.NXT when it began)
    /// is acknowledged.
    round_end: u64,
}

impl WindowUse {
    /// Output stopped with `flight` in the pipe, held back by `held_by`.
    pub(crate) fn on_output_stopped(&mut self, snd_una: u64, snd_nxt: u64, flight: u64, held_by: HeldBy) {
        if snd_una >= self.round_end {
            *self = WindowUse {
                round_end: snd_nxt,
                ..WindowUse::default()
            };
        }
        self.window |= held_by == HeldBy::Window;
        self.pacer |= held_by == HeldBy::Pacer;
        self.flight_max = self.flight_max.max(flight);
    }

    /// Whether ACKs may grow a window of `cwnd` bytes, in slow start while
    /// it is below `ssthresh`.
    pub(crate) fn window_limited(&self, cwnd: u64, ssthresh: u64) -> bool {
        self.window || (self.pacer && cwnd < ssthresh && cwnd < self.flight_max.saturating_mul(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_that_held_data_back_once_in_the_round_counts_as_used() {
        let mut usage = WindowUse::default();
        usage.on_output_stopped(0, 10_000, 10_000, HeldBy::Window);
        // Later in the round something else stopped output.
        usage.on_output_stopped(3_000, 13_000, 10_000, HeldBy::Other);
        assert!(usage.window_limited(20_000, 15_000));
        // The next round, never held back by the window: not used.
        usage.on_output_stopped(13_000, 20_000, 7_000, HeldBy::Other);
        assert!(!usage.window_limited(20_000, 15_000));
    }

    #[test]
    fn in_slow_start_a_paced_flight_of_half_the_window_lets_it_grow() {
        let mut paced = WindowUse::default();
        paced.on_output_stopped(0, 8_000, 8_000, HeldBy::Pacer);
        assert!(paced.window_limited(14_000, u64::MAX), "8 kB of 14 kB in flight");
        assert!(!paced.window_limited(16_000, u64::MAX), "only half used");
        assert!(!paced.window_limited(14_000, 10_000), "not in slow start");
        let mut application_limited = WindowUse::default();
        application_limited.on_output_stopped(0, 8_000, 8_000, HeldBy::Other);
        assert!(!application_limited.window_limited(14_000, u64::MAX));
    }
}
