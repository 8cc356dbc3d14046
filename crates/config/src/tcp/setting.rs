//! How a `[tcp]` value in human units becomes the engine's setting: each
//! pair of (schema type, engine type) once, chosen by the type of the
//! engine's field.

use std::time::Duration;

use scps_proto::config::{Keepalive, LossSource, RateOrder, SnackAnswer};

use super::{KeepaliveSpec, LossSourceSpec, RateOrderSpec, SnackAnswerSpec, Switch};
use crate::error::Error;
use crate::units::{Bytes, Rate, Time};

/// A value of the schema that can become an engine setting of type `T`;
/// `key` names it in a refusal.
pub(super) trait Setting<T> {
    fn convert(self, key: &str) -> Result<T, Error>;
}

/// Flags and counts are the engine's as written.
impl<T> Setting<T> for T {
    fn convert(self, _key: &str) -> Result<T, Error> {
        Ok(self)
    }
}

/// `"off"` (or `false`) is the engine's `None`.
impl<S: Setting<T>, T> Setting<Option<T>> for Switch<S> {
    fn convert(self, key: &str) -> Result<Option<T>, Error> {
        match self {
            Switch::Off => Ok(None),
            Switch::On(value) => value.convert(key).map(Some),
        }
    }
}

impl Setting<Duration> for Time {
    fn convert(self, _key: &str) -> Result<Duration, Error> {
        Ok(self.0)
    }
}

/// A duration where the engine's `None` is "not given" (it then measures).
impl Setting<Option<Duration>> for Time {
    fn convert(self, _key: &str) -> Result<Option<Duration>, Error> {
        Ok(Some(self.0))
    }
}

impl Setting<usize> for Bytes {
    fn convert(self, key: &str) -> Result<usize, Error> {
        usize::try_from(self.0).map_err(|_| Error::invalid(key, self, "at most 1GiB"))
    }
}

impl Setting<u64> for Rate {
    fn convert(self, _key: &str) -> Result<u64, Error> {
        Ok(self.0)
    }
}

/// A rate where the engine's `None` is "not given".
impl Setting<Option<u64>> for Rate {
    fn convert(self, _key: &str) -> Result<Option<u64>, Error> {
        Ok(Some(self.0))
    }
}

impl Setting<Keepalive> for KeepaliveSpec {
    fn convert(self, _key: &str) -> Result<Keepalive, Error> {
        Ok(Keepalive {
            idle: self.idle.0,
            interval: self.interval.0,
            probes: self.probes,
        })
    }
}

impl Setting<SnackAnswer> for SnackAnswerSpec {
    fn convert(self, _key: &str) -> Result<SnackAnswer, Error> {
        Ok(match self {
            SnackAnswerSpec::Resend => SnackAnswer::Resend,
            SnackAnswerSpec::Ignore => SnackAnswer::Ignore,
            SnackAnswerSpec::NextUnit => SnackAnswer::NextUnit,
        })
    }
}

impl Setting<RateOrder> for RateOrderSpec {
    fn convert(self, _key: &str) -> Result<RateOrder, Error> {
        Ok(match self {
            RateOrderSpec::Turns => RateOrder::Turns,
            RateOrderSpec::Shortest => RateOrder::Shortest,
        })
    }
}

impl Setting<LossSource> for LossSourceSpec {
    fn convert(self, _key: &str) -> Result<LossSource, Error> {
        Ok(match self {
            LossSourceSpec::Congestion => LossSource::Congestion,
            LossSourceSpec::Corruption => LossSource::Corruption,
        })
    }
}
