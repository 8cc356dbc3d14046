//! The `[workload]` schema: what the applications do during a run.

use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;
use crate::units::{Bytes, Rate, Time};

/// Bytes at the head of every message (a timestamp and a length).
const MESSAGE_HEADER: u64 = scps_workload_format::message::HEADER as u64;

/// Most messages one flow may offer in a run (each one's latency is kept).
pub const MAX_MESSAGES: f64 = 10_000_000.0;
/// Most files a bulk workload may be split into.
pub const MAX_FILES: u32 = 1000;
/// Most file fetches a run may plan, on average.
pub const MAX_FETCHES: f64 = 100_000.0;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// One connection carries `bytes` (and as many back with `both_ways`);
    /// timed from the first SYN to the last byte read. Under `saratoga`,
    /// a put of `files` files (1 unless given) of `bytes / files` each,
    /// all at once, timed from the start to the last file stored.
    Bulk {
        bytes: Bytes,
        #[serde(default)]
        both_ways: bool,
        files: Option<u32>,
    },
    /// Timestamped messages of `size` bytes offered at `rate` for
    /// `duration`; with `two_way` the other end sends too
    /// (`reverse_size` and `reverse_rate` default to the same).
    Messages {
        size: Bytes,
        rate: Rate,
        duration: Time,
        #[serde(default)]
        two_way: bool,
        reverse_size: Option<Bytes>,
        reverse_rate: Option<Rate>,
    },
    /// Interactive echo: timestamped messages of `size` bytes offered at
    /// `rate` for `duration`, which the server sends back as they arrive;
    /// each one's latency is its round trip.
    Echo { size: Bytes, rate: Rate, duration: Time },
    /// `clients` each request a file every `interval` on average
    /// (exponential), of exponentially distributed size with mean `size`,
    /// kept within `size_min`..`size_max`; requests start during
    /// `duration` and the run ends when all are answered. Each fetch is a
    /// connection: a request, then the file, then close.
    Fetches {
        clients: u32,
        interval: Time,
        size: Bytes,
        size_min: Bytes,
        size_max: Bytes,
        duration: Time,
    },
}

/// The file fetches of many clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetches {
    pub clients: u32,
    pub mean_interval: Duration,
    pub mean_size: u64,
    pub size_min: u64,
    pub size_max: u64,
    pub duration: Duration,
}

/// One direction of a message stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageFlow {
    pub size: usize,
    pub rate_bps: u64,
}

impl MessageFlow {
    /// Time between two messages at the offered rate.
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.size as f64 * 8.0 / self.rate_bps as f64)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Bulk {
        bytes: u64,
        both_ways: bool,
        /// Files the bytes are split into (only `saratoga` sends more
        /// than one).
        files: u32,
    },
    Messages {
        forward: MessageFlow,
        reverse: Option<MessageFlow>,
        duration: Duration,
    },
    /// Messages of `flow` that the server sends back as they arrive.
    Echo {
        flow: MessageFlow,
        duration: Duration,
    },
    Fetches(Fetches),
}

impl WorkloadSpec {
    pub fn resolve(&self) -> Result<Workload, Error> {
        match *self {
            WorkloadSpec::Bulk {
                bytes,
                both_ways,
                files,
            } => {
                if bytes.0 == 0 {
                    return Err(Error::invalid("workload.bytes", bytes, "at least 1 byte"));
                }
                let files = files.unwrap_or(1);
                if !(1..=MAX_FILES).contains(&files) || u64::from(files) > bytes.0 {
                    return Err(Error::invalid(
                        "workload.files",
                        files,
                        format!("1 to {MAX_FILES}, and at most workload.bytes ({bytes})"),
                    ));
                }
                Ok(Workload::Bulk {
                    bytes: bytes.0,
                    both_ways,
                    files,
                })
            }
            WorkloadSpec::Messages {
                size,
                rate,
                duration,
                two_way,
                reverse_size,
                reverse_rate,
            } => {
                if duration.0.is_zero() {
                    return Err(Error::invalid("workload.duration", duration, "longer than zero"));
                }
                if !two_way && (reverse_size.is_some() || reverse_rate.is_some()) {
                    return Err(Error::invalid(
                        "workload.reverse_size",
                        "set",
                        "only with two_way = true",
                    ));
                }
                let forward = message_flow(["size", "rate"], size, rate, duration)?;
                let reverse = match two_way {
                    false => None,
                    true => Some(message_flow(
                        ["reverse_size", "reverse_rate"],
                        reverse_size.unwrap_or(size),
                        reverse_rate.unwrap_or(rate),
                        duration,
                    )?),
                };
                Ok(Workload::Messages {
                    forward,
                    reverse,
                    duration: duration.0,
                })
            }
            WorkloadSpec::Echo { size, rate, duration } => {
                if duration.0.is_zero() {
                    return Err(Error::invalid("workload.duration", duration, "longer than zero"));
                }
                Ok(Workload::Echo {
                    flow: message_flow(["size", "rate"], size, rate, duration)?,
                    duration: duration.0,
                })
            }
            WorkloadSpec::Fetches {
                clients,
                interval,
                size,
                size_min,
                size_max,
                duration,
            } => {
                if !(1..=1000).contains(&clients) {
                    return Err(Error::invalid("workload.clients", clients, "1 to 1000"));
                }
                if interval.0.is_zero() || duration.0.is_zero() {
                    return Err(Error::invalid(
                        "workload.interval",
                        interval,
                        "interval and duration longer than zero",
                    ));
                }
                let expected = f64::from(clients) * duration.0.as_secs_f64() / interval.0.as_secs_f64();
                if expected > MAX_FETCHES {
                    return Err(Error::invalid(
                        "workload.interval",
                        interval,
                        format!(
                            "at least {} with {clients} clients for {duration} (at most {MAX_FETCHES} fetches on average; this asks for {expected:.0})",
                            Time(duration.0.mul_f64(f64::from(clients) / MAX_FETCHES))
                        ),
                    ));
                }
                if !(size_min.0 >= 1 && size_min.0 <= size.0 && size.0 <= size_max.0) {
                    return Err(Error::invalid(
                        "workload.size",
                        size,
                        format!(
                            "between size_min ({size_min}) and size_max ({size_max}), size_min at least 1 byte"
                        ),
                    ));
                }
                Ok(Workload::Fetches(Fetches {
                    clients,
                    mean_interval: interval.0,
                    mean_size: size.0,
                    size_min: size_min.0,
                    size_max: size_max.0,
                    duration: duration.0,
                }))
            }
        }
    }
}

/// A flow of messages of `size` offered at `rate` for `duration`, checked:
/// `keys` name the size's and the rate's keys in errors.
fn message_flow(keys: [&str; 2], size: Bytes, rate: Rate, duration: Time) -> Result<MessageFlow, Error> {
    if !(MESSAGE_HEADER..=1 << 20).contains(&size.0) {
        return Err(Error::invalid(
            format!("workload.{}", keys[0]),
            size,
            "12 bytes (timestamp and length) to 1MiB",
        ));
    }
    let count = rate.bps() as f64 * duration.0.as_secs_f64() / (8.0 * size.0 as f64);
    if count > MAX_MESSAGES {
        return Err(Error::invalid(
            format!("workload.{}", keys[1]),
            rate,
            format!(
                "a rate that offers at most {MAX_MESSAGES} messages of {size} in {duration} (this one offers {count:.0})"
            ),
        ));
    }
    Ok(MessageFlow {
        size: size.0 as usize,
        rate_bps: rate.bps(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_resolve() {
        let bulk: WorkloadSpec = toml::from_str("kind = \"bulk\"\nbytes = \"1MiB\"").unwrap();
        assert_eq!(
            bulk.resolve().unwrap(),
            Workload::Bulk {
                bytes: 1 << 20,
                both_ways: false,
                files: 1
            }
        );
        let messages: WorkloadSpec = toml::from_str(
            "kind = \"messages\"\nsize = 96\nrate = \"3072bps\"\nduration = \"47min\"\ntwo_way = true\nreverse_size = 32",
        )
        .unwrap();
        let Workload::Messages {
            forward,
            reverse,
            duration,
        } = messages.resolve().unwrap()
        else {
            panic!("a message workload");
        };
        assert_eq!(
            forward,
            MessageFlow {
                size: 96,
                rate_bps: 3072
            }
        );
        assert_eq!(
            reverse,
            Some(MessageFlow {
                size: 32,
                rate_bps: 3072
            })
        );
        assert_eq!(duration, Duration::from_secs(47 * 60));
        assert_eq!(forward.interval(), Duration::from_millis(250));
    }

    #[test]
    fn echo_resolves_to_one_flow_sent_back() {
        let echo: WorkloadSpec =
            toml::from_str("kind = \"echo\"\nsize = 50\nrate = \"8kbps\"\nduration = \"1min\"").unwrap();
        assert_eq!(
            echo.resolve().unwrap(),
            Workload::Echo {
                flow: MessageFlow {
                    size: 50,
                    rate_bps: 8000
                },
                duration: Duration::from_secs(60)
            }
        );
    }

    #[test]
    fn bad_workloads_are_refused_with_the_key() {
        let tiny: WorkloadSpec =
            toml::from_str("kind = \"messages\"\nsize = 8\nrate = \"1kbit\"\nduration = \"1s\"").unwrap();
        assert_eq!(
            tiny.resolve().unwrap_err().to_string(),
            "workload.size = 8B: 12 bytes (timestamp and length) to 1MiB"
        );
        let unknown = toml::from_str::<WorkloadSpec>("kind = \"bulk\"\nbytes = 5\nfile = \"x\"").unwrap_err();
        assert!(unknown.to_string().contains("unknown field `file`"), "{unknown}");
        let flood: WorkloadSpec =
            toml::from_str("kind = \"messages\"\nsize = 12\nrate = \"1Gbit\"\nduration = \"47min\"").unwrap();
        let err = flood.resolve().unwrap_err().to_string();
        assert!(
            err.starts_with("workload.rate = 1Gbit/s: a rate that offers at most 10000000 messages"),
            "{err}"
        );
        let fetches: WorkloadSpec = toml::from_str(
            "kind = \"fetches\"\nclients = 1000\ninterval = \"1us\"\nsize = \"1KB\"\nsize_min = 1\nsize_max = \"2KB\"\nduration = \"1h\"",
        )
        .unwrap();
        let err = fetches.resolve().unwrap_err().to_string();
        assert!(
            err.starts_with("workload.interval = 1us: at least 36s with 1000 clients for 1h"),
            "{err}"
        );
        let echo: WorkloadSpec =
            toml::from_str("kind = \"echo\"\nsize = 2000000\nrate = \"1kbit\"\nduration = \"1s\"").unwrap();
        assert_eq!(
            echo.resolve().unwrap_err().to_string(),
            "workload.size = 2000000B: 12 bytes (timestamp and length) to 1MiB"
        );
        let still: WorkloadSpec =
            toml::from_str("kind = \"echo\"\nsize = 50\nrate = \"1kbit\"\nduration = \"0s\"").unwrap();
        assert!(
            still
                .resolve()
                .unwrap_err()
                .to_string()
                .starts_with("workload.duration = ")
        );
        let kind = toml::from_str::<WorkloadSpec>("kind = \"video\"").unwrap_err();
        assert!(kind.to_string().contains("unknown variant `video`"), "{kind}");
    }
}
