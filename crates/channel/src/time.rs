//! Integer time: every model works in whole nanoseconds (`u64`) since the
//! caller's epoch, so that results are exact and platform independent.
//!
//! `u64` nanoseconds cover about 584 years; a `Duration` beyond that is
//! clamped rather than rejected, so no input can make the models panic.

use std::time::Duration;

pub(crate) const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Nanoseconds in `d`, saturating at `u64::MAX`.
pub(crate) fn to_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The `Duration` of `ns` nanoseconds (always representable).
pub(crate) fn from_ns(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_saturation() {
        assert_eq!(to_ns(Duration::from_millis(1500)), 1_500_000_000);
        assert_eq!(from_ns(1_500_000_000), Duration::from_millis(1500));
        assert_eq!(to_ns(Duration::MAX), u64::MAX);
    }
}
