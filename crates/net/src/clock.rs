//! The driver's clocks: the engine's instants are nanoseconds since the
//! moment the driver started (`scps_proto::time::Instant`), taken from
//! tokio's monotonic clock so that timers and packets agree; captures are
//! stamped with the wall clock so that they line up with other captures.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scps_proto::time::Instant;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    epoch: tokio::time::Instant,
    /// The wall-clock time at `epoch`, since the Unix epoch.
    wall_at_epoch: Duration,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        Clock {
            epoch: tokio::time::Instant::now(),
            wall_at_epoch: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default(),
        }
    }

    pub(crate) fn now(&self) -> Instant {
        Instant::from_duration(self.epoch.elapsed())
    }

    /// The tokio instant at which the engine's `at` falls.
    pub(crate) fn deadline(&self, at: Instant) -> tokio::time::Instant {
        // Far-future wake-ups are capped at a day: tokio's timer wheel has
        // a limit of its own, and the loop simply wakes and sleeps again.
        self.epoch
            + at.as_duration()
                .min(self.epoch.elapsed() + Duration::from_secs(86_400))
    }

    /// The wall-clock time at which the clock started, since the Unix
    /// epoch (for captures, stamped from it).
    pub(crate) fn wall_at_start(&self) -> Duration {
        self.wall_at_epoch
    }
}
