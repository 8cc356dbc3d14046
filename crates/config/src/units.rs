//! Quantities with units, as people write them: rates in bit/s (`2400bps`,
//! `115.2kbit`, `8Mbit`), sizes in bytes (`1500`, `25KB`, `64KiB`), times
//! (`600ms`, `1.5s`, `10min`), and bit-error rates (`1e-5`).
//!
//! Decimal prefixes are powers of 1000 and binary ones (`KiB`, `MiB`)
//! powers of 1024, as SI and IEC define them. Units are never guessed: a
//! time without a unit, or a rate in bytes per second, is an error that
//! says what would be accepted.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A quantity that could not be read, or was read but lies outside what
/// the quantity allows (told apart, so that `0bps` is not reported as a
/// spelling mistake).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("invalid {kind} {text:?}: expected {expected}")]
    Syntax {
        kind: &'static str,
        text: String,
        expected: &'static str,
    },
    #[error("{kind} {text:?} is out of range: {allowed}")]
    OutOfRange {
        kind: &'static str,
        text: String,
        allowed: &'static str,
    },
    /// A zero duration where only more will do (a period, a timeout).
    #[error("{text:?}: expected a duration above 0")]
    ZeroDuration { text: String },
}

impl UnitError {
    fn syntax(kind: &'static str, text: &str, expected: &'static str) -> UnitError {
        UnitError::Syntax {
            kind,
            text: text.to_owned(),
            expected,
        }
    }

    fn out_of_range(kind: &'static str, text: &str, allowed: &'static str) -> UnitError {
        UnitError::OutOfRange {
            kind,
            text: text.to_owned(),
            allowed,
        }
    }
}

const RATE_EXPECTED: &str = "a number with a unit of bit/s, such as 2400bps, 115.2kbit, 8Mbit or 1.544Mbit/s";
const SIZE_EXPECTED: &str = "a number of bytes with an optional unit, such as 1500, 25KB, 64KiB or 1.5MB";
const TIME_EXPECTED: &str = "a number with a unit, such as 250us, 600ms, 1.5s, 10min or 2h";
const RATE_RANGE: &str = "from 1 bit/s to 1000 Gbit/s";
const SIZE_RANGE: &str = "a whole number of bytes, at most 1e15";
/// Far beyond any run or timer, yet well inside what `Duration` holds.
const MAX_SECONDS: f64 = 1e9;
const TIME_RANGE: &str = "at most 1e9 s (about 31 years)";
const BER_EXPECTED: &str = "a probability per bit from 0 up to (not including) 1, such as 0, 1e-7 or 1e-5";

/// Splits "115.2kbit" into (115.2, "kbit"), spaces allowed between: the
/// longest prefix of number characters that reads as a non-negative finite
/// number, and the rest trimmed.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let numeric = text
        .find(|c: char| !(c.is_ascii_digit() || ".eE+-".contains(c)))
        .unwrap_or(text.len());
    (1..=numeric).rev().find_map(|end| {
        let value: f64 = text[..end].parse().ok()?;
        (value.is_finite() && value >= 0.0).then(|| (value, text[end..].trim()))
    })
}

/// A rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub fn bps(self) -> u64 {
        self.0
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Rate, UnitError> {
        let error = || UnitError::syntax("rate", text, RATE_EXPECTED);
        let (value, unit) = split_number(text).ok_or_else(error)?;
        let (prefix, base) = match unit.find(['b', 'B']) {
            Some(i) => unit.split_at(i),
            None if unit.is_empty() => ("", "bps"),
            None => return Err(error()),
        };
        if !matches!(base, "bps" | "bit" | "bits" | "bit/s" | "bits/s" | "b/s") {
            return Err(error());
        }
        let scale = match prefix {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            _ => return Err(error()),
        };
        let bps = (value * scale).round();
        if !(1.0..=1e12).contains(&bps) {
            return Err(UnitError::out_of_range("rate", text, RATE_RANGE));
        }
        Ok(Rate(bps as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (scale, prefix) in [(1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")] {
            if self.0 >= scale {
                return write!(f, "{}{prefix}bit/s", self.0 as f64 / scale as f64);
            }
        }
        write!(f, "{}bit/s", self.0)
    }
}

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Bytes, UnitError> {
        let error = || UnitError::syntax("size", text, SIZE_EXPECTED);
        let (value, unit) = split_number(text).ok_or_else(error)?;
        let scale: u64 = match unit {
            "" | "B" | "byte" | "bytes" => 1,
            "kB" | "KB" => 1_000,
            "KiB" => 1 << 10,
            "MB" => 1_000_000,
            "MiB" => 1 << 20,
            "GB" => 1_000_000_000,
            "GiB" => 1 << 30,
            _ => return Err(error()),
        };
        let bytes = value * scale as f64;
        if bytes.fract() != 0.0 || bytes > 1e15 {
            return Err(UnitError::out_of_range("size", text, SIZE_RANGE));
        }
        Ok(Bytes(bytes as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (scale, unit) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
            if self.0 >= scale && self.0.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.0 / scale);
            }
        }
        write!(f, "{}B", self.0)
    }
}

/// Parses a duration such as `600ms` or `1.5s`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let error = || UnitError::syntax("duration", text, TIME_EXPECTED);
    let (value, unit) = split_number(text).ok_or_else(error)?;
    let seconds = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return Err(error()),
    };
    let total = value * seconds;
    if total > MAX_SECONDS {
        return Err(UnitError::out_of_range("duration", text, TIME_RANGE));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Parses a duration as [`parse_duration`] does, refusing zero.
pub fn parse_positive_duration(text: &str) -> Result<Duration, UnitError> {
    match parse_duration(text)? {
        zero if zero.is_zero() => Err(UnitError::ZeroDuration { text: text.into() }),
        time => Ok(time),
    }
}

/// Writes a duration the way [`parse_duration`] reads it.
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (scale, unit) in [
        (3_600_000_000_000u128, "h"),
        (60_000_000_000, "min"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if nanos >= scale && nanos.is_multiple_of(scale) {
            return format!("{}{unit}", nanos / scale);
        }
    }
    if nanos >= 1_000_000_000 {
        return format!("{}s", d.as_secs_f64());
    }
    if nanos >= 1_000_000 {
        return format!("{}ms", nanos as f64 / 1e6);
    }
    format!("{nanos}ns")
}

/// Parses a bit-error rate.
pub fn parse_ber(text: &str) -> Result<f64, UnitError> {
    let ber = text.trim().parse::<f64>().ok().filter(|b| (0.0..1.0).contains(b));
    ber.ok_or_else(|| UnitError::syntax("bit-error rate", text, BER_EXPECTED))
}

/// Serde visitor for a quantity written as text or as a bare number. A
/// number is read as its text would be: the default unit where one is
/// clear (bit/s, bytes, a probability), an error naming the missing unit
/// where none is (a duration).
struct UnitVisitor<T> {
    what: &'static str,
    from_str: fn(&str) -> Result<T, UnitError>,
}

impl<T> Visitor<'_> for UnitVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.from_str)(v).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: RATE_EXPECTED,
            from_str: str::parse,
        })
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: SIZE_EXPECTED,
            from_str: str::parse,
        })
    }
}

/// A duration that must carry its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub Duration);

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: TIME_EXPECTED,
            from_str: |s| parse_duration(s).map(Time),
        })
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

/// A bit-error rate.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Ber(pub f64);

impl<'de> Deserialize<'de> for Ber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: BER_EXPECTED,
            from_str: |s| parse_ber(s).map(Ber),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_every_usual_spelling() {
        for (text, bps) in [
            ("2400bps", 2400),
            ("2400", 2400),
            ("115.2kbit", 115_200),
            ("115200 bit/s", 115_200),
            ("8Mbit", 8_000_000),
            ("8Mbps", 8_000_000),
            ("1.544Mbit/s", 1_544_000),
            ("10Gbit", 10_000_000_000),
        ] {
            assert_eq!(text.parse::<Rate>(), Ok(Rate(bps)), "{text}");
        }
    }

    #[test]
    fn rates_in_bytes_or_without_meaning_are_refused_with_the_reason() {
        for text in ["8MB/s", "8Mbitz", "fast", "-5bps", "8 Xbit"] {
            let err = text.parse::<Rate>().unwrap_err();
            assert!(
                err.to_string().contains("expected a number with a unit of bit/s"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn quantities_read_but_out_of_range_say_what_is_allowed() {
        for (error, expected) in [
            (
                "0bps".parse::<Rate>().unwrap_err(),
                "rate \"0bps\" is out of range: from 1 bit/s to 1000 Gbit/s",
            ),
            (
                "2000Gbit".parse::<Rate>().unwrap_err(),
                "rate \"2000Gbit\" is out of range: from 1 bit/s to 1000 Gbit/s",
            ),
            (
                "1.5B".parse::<Bytes>().unwrap_err(),
                "size \"1.5B\" is out of range: a whole number of bytes, at most 1e15",
            ),
            (
                parse_duration("36500d").unwrap_err(),
                "duration \"36500d\" is out of range: at most 1e9 s (about 31 years)",
            ),
        ] {
            assert_eq!(error.to_string(), expected);
        }
        assert_eq!(parse_duration("11574d"), Ok(Duration::from_secs(11574 * 86400)));
    }

    #[test]
    fn sizes_use_si_and_iec_prefixes() {
        for (text, bytes) in [
            ("1500", 1500),
            ("25KB", 25_000),
            ("64KiB", 65_536),
            ("1.5MB", 1_500_000),
            ("1MiB", 1 << 20),
            ("3 MB", 3_000_000),
        ] {
            assert_eq!(text.parse::<Bytes>(), Ok(Bytes(bytes)), "{text}");
        }
        assert!("1.5B".parse::<Bytes>().is_err(), "a fraction of a byte");
        assert!("64Kb".parse::<Bytes>().is_err(), "bits are not a size");
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("600ms"), Ok(Duration::from_millis(600)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10min"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("600").is_err());
        assert!(parse_duration("1e-3s").is_ok());
        let err = parse_duration("5 fortnights").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid duration \"5 fortnights\": expected a number with a unit, such as 250us, 600ms, 1.5s, 10min or 2h"
        );
    }

    #[test]
    fn positive_durations_refuse_zero_in_any_unit() {
        assert_eq!(parse_positive_duration("1ms"), Ok(Duration::from_millis(1)));
        for zero in ["0s", "0ms", "0.0min"] {
            assert_eq!(
                parse_positive_duration(zero).unwrap_err().to_string(),
                format!("{zero:?}: expected a duration above 0")
            );
        }
        assert_eq!(
            parse_positive_duration("0"),
            parse_duration("0").map(|_| Duration::ZERO),
            "a spelling mistake is said as one"
        );
    }

    #[test]
    fn formatting_round_trips() {
        for d in [
            Duration::from_millis(600),
            Duration::from_secs(600),
            Duration::from_micros(3),
            Duration::from_millis(1500),
        ] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
        for text in ["8Mbit/s", "115.2kbit/s", "2.4kbit/s", "300bit/s"] {
            let rate: Rate = text.parse().unwrap();
            assert_eq!(rate.to_string(), text);
        }
        assert_eq!(Bytes(65536).to_string(), "64KiB");
        assert_eq!(Bytes(1500).to_string(), "1500B");
    }

    #[test]
    fn bit_error_rates() {
        assert_eq!(parse_ber("1e-5"), Ok(1e-5));
        assert_eq!(parse_ber("0"), Ok(0.0));
        assert!(parse_ber("1").is_err());
        assert!(parse_ber("-1e-5").is_err());
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,24}") {
            let _ = text.parse::<Rate>();
            let _ = text.parse::<Bytes>();
            let _ = parse_duration(&text);
            let _ = parse_ber(&text);
        }
    }
}
