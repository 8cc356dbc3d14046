//! A count of things allowed per second of [`Instant`]s: what bounds
//! answers to a flood (the engine's ACKs to unacceptable segments, the
//! secure link's handshakes) so that the flood's size does not set the
//! work done or the packets sent.

use std::time::Duration;

use crate::time::Instant;

/// At most `limit` takes in each second, the second starting at the first
/// take after the previous one ended.
#[derive(Debug, Clone)]
pub struct PerSecond {
    limit: u32,
    second_began: Option<Instant>,
    used: u32,
}

impl PerSecond {
    pub const fn new(limit: u32) -> PerSecond {
        PerSecond {
            limit,
            second_began: None,
            used: 0,
        }
    }

    /// Takes one from this second's allowance; false when it is spent.
    pub fn take(&mut self, now: Instant) -> bool {
        let new_second = self
            .second_began
            .is_none_or(|began| now.saturating_since(began) >= Duration::from_secs(1));
        if new_second {
            self.second_began = Some(now);
            self.used = 0;
        }
        if self.used >= self.limit {
            return false;
        }
        self.used += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_is_renewed_a_second_after_it_began() {
        let mut budget = PerSecond::new(3);
        let t0 = Instant::from_duration(Duration::from_secs(5));
        assert_eq!(
            (0..5).map(|_| budget.take(t0)).collect::<Vec<_>>(),
            [true, true, true, false, false]
        );
        assert!(!budget.take(t0 + Duration::from_millis(999)));
        assert!(budget.take(t0 + Duration::from_secs(1)));
    }
}
