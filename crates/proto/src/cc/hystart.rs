//! HyStart++ (RFC 9406): leaving the initial slow start when the RTT
//! starts to grow, before the window has overrun the bottleneck's buffer.
//!
//! Linux runs CUBIC with HyStart, and without it the model of a modern
//! host overshoots a deep buffer by a factor of two on its first slow
//! start and spends seconds repairing the losses (a difference from the
//! real kernel the emulator cross-check shows). Only the initial slow
//! start uses it; after a loss or a timeout slow start is RFC 5681's.

use std::time::Duration;

use super::AckEvent;

/// RFC 9406 section 4.3 constants.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u32 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    SlowStart,
    /// Conservative slow start since the RTT grew to `baseline`.
    Conservative {
        baseline: Duration,
        rounds: u32,
    },
    /// Left, or never to be used again.
    Done,
}

/// What slow start does with an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Grow the window by this many bytes.
    Grow(u64),
    /// Slow start is over: set the threshold to the window.
    Exit,
}

#[derive(Debug, Clone)]
pub(crate) struct HyStart {
    phase: Phase,
    /// The round ends when this offset is acknowledged (SND.NXT at its
    /// start).
    window_end: u64,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    samples: u32,
}

impl HyStart {
    pub(crate) fn new() -> HyStart {
        HyStart {
            phase: Phase::SlowStart,
            window_end: 0,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            samples: 0,
        }
    }

    /// A congestion event or a timeout ends the initial slow start.
    pub(crate) fn stop(&mut self) {
        self.phase = Phase::Done;
    }

    /// An ACK in slow start that would grow the window by `increase`
    /// bytes under RFC 5681.
    pub(crate) fn on_ack(&mut self, ack: &AckEvent, increase: u64) -> Step {
        if self.phase == Phase::Done {
            return Step::Grow(increase);
        }
        if ack.snd_una >= self.window_end {
            // RFC 9406 4.2: a new round.
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.samples = 0;
            self.window_end = ack.snd_nxt;
            if let Phase::Conservative { baseline, rounds } = self.phase {
                if rounds + 1 >= CSS_ROUNDS {
                    self.phase = Phase::Done;
                    return Step::Exit;
                }
                self.phase = Phase::Conservative {
                    baseline,
                    rounds: rounds + 1,
                };
            }
        }
        if let Some(rtt) = ack.rtt_sample {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.samples += 1;
        }
        let enough = self.samples >= N_RTT_SAMPLE;
        match (self.phase, self.current_round_min_rtt, self.last_round_min_rtt) {
            (Phase::SlowStart, Some(current), Some(last)) if enough => {
                let threshold = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if current >= last + threshold {
                    self.phase = Phase::Conservative {
                        baseline: current,
                        rounds: 0,
                    };
                    return Step::Grow(increase / CSS_GROWTH_DIVISOR);
                }
                Step::Grow(increase)
            }
            (Phase::Conservative { baseline, .. }, Some(current), _) if enough && current < baseline => {
                // The RTT came back down: the increase was spurious.
                self.phase = Phase::SlowStart;
                Step::Grow(increase)
            }
            (Phase::Conservative { .. }, _, _) => Step::Grow(increase / CSS_GROWTH_DIVISOR),
            _ => Step::Grow(increase),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    const MSS: u64 = 1000;

    fn ack(una: u64, nxt: u64, rtt_ms: u64) -> AckEvent {
        AckEvent {
            now: Instant::ZERO,
            acked: MSS,
            smss: MSS,
            srtt: None,
            rtt_sample: Some(Duration::from_millis(rtt_ms)),
            delivery_rtt: Some(Duration::from_millis(rtt_ms)),
            paced: false,
            min_rtt: None,
            cwnd_limited: true,
            snd_una: una,
            snd_nxt: nxt,
        }
    }

    /// One round of `n` ACKs at `rtt_ms`, starting at offset `from`;
    /// returns the steps.
    fn round(h: &mut HyStart, from: u64, n: u64, rtt_ms: u64) -> Vec<Step> {
        (0..n)
            .map(|i| h.on_ack(&ack(from + (i + 1) * MSS, from + 2 * n * MSS, rtt_ms), MSS))
            .collect()
    }

    #[test]
    fn a_growing_rtt_slows_then_ends_slow_start() {
        let mut h = HyStart::new();
        assert!(round(&mut h, 0, 10, 100).iter().all(|s| *s == Step::Grow(MSS)));
        assert!(
            round(&mut h, 20_000, 10, 100)
                .iter()
                .all(|s| *s == Step::Grow(MSS))
        );
        // The RTT grows by more than 100/8 = 12.5 ms: after eight samples
        // growth is a quarter.
        let steps = round(&mut h, 40_000, 10, 115);
        assert_eq!(steps[7], Step::Grow(MSS / 4));
        // Five rounds of conservative slow start, then out.
        let mut from = 60_000;
        let mut exited = false;
        for _ in 0..5 {
            exited |= round(&mut h, from, 10, 115).contains(&Step::Exit);
            from += 20_000;
        }
        assert!(exited);
        assert_eq!(
            h.on_ack(&ack(from + MSS, from + 2 * MSS, 115), MSS),
            Step::Grow(MSS)
        );
    }

    #[test]
    fn an_rtt_that_falls_back_resumes_slow_start() {
        let mut h = HyStart::new();
        round(&mut h, 0, 10, 100);
        round(&mut h, 20_000, 10, 120);
        let steps = round(&mut h, 40_000, 10, 90);
        assert_eq!(steps[9], Step::Grow(MSS), "back in slow start");
    }

    #[test]
    fn after_a_loss_it_stays_out_of_the_way() {
        let mut h = HyStart::new();
        h.stop();
        round(&mut h, 0, 10, 100);
        assert!(
            round(&mut h, 20_000, 10, 200)
                .iter()
                .all(|s| *s == Step::Grow(MSS))
        );
    }
}
