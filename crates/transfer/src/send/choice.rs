//! A sender's workload from its user's choices (`scps send`'s options),
//! with the refusals of choices that do not make one workload.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail};
use scps_config::units::{Bytes, Rate};
use scps_workload::bulk::Source;
use scps_workload::files;
use scps_workload::hello::{Flow, Hello};

use super::Workload;

/// What a user asked a sender to send, option by option (each field is
/// the `scps send` option of its name).
#[derive(Debug, Clone, Default)]
pub struct WorkloadChoice {
    pub bytes: Option<Bytes>,
    pub fetch: Option<Bytes>,
    pub file: Option<PathBuf>,
    pub both_ways: bool,
    pub raw: bool,
    pub messages: bool,
    pub echo: bool,
    pub size: Option<Bytes>,
    pub rate: Option<Rate>,
    pub duration: Option<Duration>,
    pub two_way: bool,
    pub reverse_size: Option<Bytes>,
    pub reverse_rate: Option<Rate>,
    pub nagle: bool,
    pub seed: u64,
}

/// A message stream's size and rate, checked; `what` names the options
/// they came from.
fn flow(size: Bytes, rate: Rate, what: &str) -> anyhow::Result<Flow> {
    let flow = Flow {
        size: usize::try_from(size.0).unwrap_or(usize::MAX),
        rate_bps: rate.0,
    };
    flow.check(what).map_err(anyhow::Error::msg)?;
    Ok(flow)
}

impl WorkloadChoice {
    /// The one workload these choices name, or why they name none (an
    /// option given where it means nothing is refused, not ignored).
    pub fn workload(&self) -> anyhow::Result<Workload> {
        if self.both_ways && (self.raw || (self.bytes.is_none() && self.file.is_none())) {
            bail!("--both-ways makes a bulk transfer two-way: give it with --bytes or --file, without --raw");
        }
        if self.nagle && !self.messages && !self.echo {
            bail!("--nagle keeps small messages waiting: give it with --messages or --echo");
        }
        if let Some(bytes) = self.bytes {
            if bytes.0 == 0 {
                bail!("--bytes 0: nothing to send; give at least 1 byte");
            }
            return Ok(self.bulk(Source::Generated {
                bytes: bytes.0,
                seed: self.seed,
            }));
        }
        if !self.messages
            && !self.echo
            && (self.size.is_some() || self.rate.is_some() || self.duration.is_some())
        {
            bail!("--size, --rate and --duration describe messages: give --messages or --echo with them");
        }
        if self.echo {
            let (Some(size), Some(rate), Some(duration)) = (self.size, self.rate, self.duration) else {
                bail!("--echo needs --size, --rate and --duration");
            };
            return named(Hello::Echo {
                flow: flow(size, rate, "--size/--rate:")?,
                duration_s: duration.as_secs_f64(),
                seed: self.seed,
                nagle: self.nagle,
            });
        }
        if let Some(bytes) = self.fetch {
            let hello = Hello::Fetch {
                bytes: bytes.0,
                seed: self.seed,
            };
            hello.check().map_err(|e| anyhow!("--fetch {bytes}: {e}"))?;
            return Ok(Workload::Named(hello));
        }
        if let Some(file) = &self.file {
            files::check_source(file)?;
            return Ok(self.bulk(Source::File(file.clone())));
        }
        if self.messages {
            let (Some(size), Some(rate), Some(duration)) = (self.size, self.rate, self.duration) else {
                bail!("--messages needs --size, --rate and --duration");
            };
            let forward = flow(size, rate, "--size/--rate:")?;
            let reverse = self
                .two_way
                .then(|| {
                    flow(
                        self.reverse_size.unwrap_or(size),
                        self.reverse_rate.unwrap_or(rate),
                        "--reverse-size/--reverse-rate:",
                    )
                })
                .transpose()?;
            return named(Hello::Messages {
                forward,
                reverse,
                duration_s: duration.as_secs_f64(),
                seed: self.seed,
                nagle: self.nagle,
            });
        }
        bail!("nothing to send: give --bytes SIZE, --file FILE, --fetch SIZE or --messages")
    }

    /// Bulk bytes from `source`: plain with `--raw`, else under a hello.
    fn bulk(&self, source: Source) -> Workload {
        match self.raw {
            true => Workload::Raw(source),
            false => Workload::Bulk {
                source,
                both_ways: self.both_ways,
            },
        }
    }
}

/// A workload its hello names, once the hello passes the check a
/// receiver would make of it.
fn named(hello: Hello) -> anyhow::Result<Workload> {
    hello.check().map_err(anyhow::Error::msg)?;
    Ok(Workload::Named(hello))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(choice: WorkloadChoice) -> String {
        format!("{:#}", choice.workload().unwrap_err())
    }

    fn messages(size: u64, rate: u64, seconds: u64) -> WorkloadChoice {
        WorkloadChoice {
            messages: true,
            size: Some(Bytes(size)),
            rate: Some(Rate(rate)),
            duration: Some(Duration::from_secs(seconds)),
            seed: 7,
            ..WorkloadChoice::default()
        }
    }

    fn echo(size: u64, rate: u64, seconds: u64) -> WorkloadChoice {
        WorkloadChoice {
            messages: false,
            echo: true,
            ..messages(size, rate, seconds)
        }
    }

    #[test]
    fn generated_bytes_are_bulk_raw_or_both_ways() {
        let bytes = WorkloadChoice {
            bytes: Some(Bytes(1000)),
            seed: 3,
            ..WorkloadChoice::default()
        };
        let generated = |s: &Source| matches!(s, Source::Generated { bytes: 1000, seed: 3 });
        assert!(
            matches!(bytes.workload().unwrap(), Workload::Bulk { source, both_ways: false } if generated(&source))
        );
        let both = WorkloadChoice {
            both_ways: true,
            ..bytes.clone()
        };
        assert!(
            matches!(both.workload().unwrap(), Workload::Bulk { source, both_ways: true } if generated(&source))
        );
        let raw = WorkloadChoice { raw: true, ..bytes };
        assert!(matches!(raw.workload().unwrap(), Workload::Raw(source) if generated(&source)));
    }

    #[test]
    fn a_file_is_sent_as_it_is_and_must_be_a_readable_regular_file() {
        let file = std::env::temp_dir().join(format!("scps-transfer-choice-{}", std::process::id()));
        std::fs::write(&file, b"contents").unwrap();
        let choice = WorkloadChoice {
            file: Some(file.clone()),
            ..WorkloadChoice::default()
        };
        let is_file = |s: &Source| matches!(s, Source::File(f) if *f == file);
        assert!(
            matches!(choice.workload().unwrap(), Workload::Bulk { source, both_ways: false } if is_file(&source))
        );
        let raw = WorkloadChoice {
            raw: true,
            ..choice.clone()
        };
        assert!(matches!(raw.workload().unwrap(), Workload::Raw(source) if is_file(&source)));
        std::fs::remove_file(&file).unwrap();
        assert!(refusal(choice).starts_with(&format!("--file {}", file.display())));
        let directory = WorkloadChoice {
            file: Some(std::env::temp_dir()),
            ..WorkloadChoice::default()
        };
        assert!(refusal(directory).contains("a directory"));
    }

    #[test]
    fn a_fetch_names_its_size_and_seed() {
        let fetch = WorkloadChoice {
            fetch: Some(Bytes(5000)),
            seed: 9,
            ..WorkloadChoice::default()
        };
        assert!(matches!(
            fetch.workload().unwrap(),
            Workload::Named(Hello::Fetch { bytes: 5000, seed: 9 })
        ));
        let nothing = WorkloadChoice {
            fetch: Some(Bytes(0)),
            ..WorkloadChoice::default()
        };
        assert_eq!(
            refusal(nothing),
            "--fetch 0B: fetch of 0 bytes: expected 1 byte to 1e15 bytes"
        );
    }

    #[test]
    fn messages_run_one_way_or_two_with_the_reverse_defaulting_to_the_forward() {
        let forward = Flow {
            size: 64,
            rate_bps: 2048,
        };
        let Workload::Named(Hello::Messages {
            forward: f,
            reverse: None,
            duration_s,
            seed: 7,
            nagle: false,
        }) = messages(64, 2048, 60).workload().unwrap()
        else {
            panic!("not a one-way message stream");
        };
        assert_eq!((f, duration_s), (forward, 60.0));
        let two_way = WorkloadChoice {
            two_way: true,
            nagle: true,
            ..messages(64, 2048, 60)
        };
        assert!(matches!(
            two_way.workload().unwrap(),
            Workload::Named(Hello::Messages { reverse: Some(r), nagle: true, .. }) if r == forward
        ));
        let own_reverse = WorkloadChoice {
            reverse_size: Some(Bytes(100)),
            reverse_rate: Some(Rate(9600)),
            ..two_way
        };
        let reverse = Flow {
            size: 100,
            rate_bps: 9600,
        };
        assert!(matches!(
            own_reverse.workload().unwrap(),
            Workload::Named(Hello::Messages { reverse: Some(r), .. }) if r == reverse
        ));
    }

    #[test]
    fn echo_names_its_flow_window_and_nagle() {
        let with_nagle = WorkloadChoice {
            nagle: true,
            ..echo(32, 4096, 5)
        };
        let Workload::Named(Hello::Echo {
            flow,
            duration_s,
            seed: 7,
            nagle: true,
        }) = with_nagle.workload().unwrap()
        else {
            panic!("not an echo");
        };
        assert_eq!((flow.size, flow.rate_bps, duration_s), (32, 4096, 5.0));
    }

    #[test]
    fn options_that_mean_nothing_with_the_workload_are_refused() {
        let both_ways =
            "--both-ways makes a bulk transfer two-way: give it with --bytes or --file, without --raw";
        let alone = WorkloadChoice {
            both_ways: true,
            fetch: Some(Bytes(10)),
            ..WorkloadChoice::default()
        };
        assert_eq!(refusal(alone), both_ways);
        let raw = WorkloadChoice {
            both_ways: true,
            raw: true,
            bytes: Some(Bytes(10)),
            ..WorkloadChoice::default()
        };
        assert_eq!(refusal(raw), both_ways);
        let nagle = WorkloadChoice {
            nagle: true,
            bytes: Some(Bytes(10)),
            ..WorkloadChoice::default()
        };
        assert_eq!(
            refusal(nagle),
            "--nagle keeps small messages waiting: give it with --messages or --echo"
        );
        let describing =
            "--size, --rate and --duration describe messages: give --messages or --echo with them";
        for given in [
            WorkloadChoice {
                size: Some(Bytes(64)),
                ..WorkloadChoice::default()
            },
            WorkloadChoice {
                rate: Some(Rate(64)),
                ..WorkloadChoice::default()
            },
            WorkloadChoice {
                duration: Some(Duration::from_secs(1)),
                fetch: Some(Bytes(10)),
                ..WorkloadChoice::default()
            },
        ] {
            assert_eq!(refusal(given), describing);
        }
    }

    #[test]
    fn empty_or_incomplete_workloads_are_refused() {
        assert_eq!(
            refusal(WorkloadChoice::default()),
            "nothing to send: give --bytes SIZE, --file FILE, --fetch SIZE or --messages"
        );
        let zero = WorkloadChoice {
            bytes: Some(Bytes(0)),
            ..WorkloadChoice::default()
        };
        assert_eq!(refusal(zero), "--bytes 0: nothing to send; give at least 1 byte");
        let no_rate = WorkloadChoice {
            rate: None,
            ..messages(64, 2048, 60)
        };
        assert_eq!(refusal(no_rate), "--messages needs --size, --rate and --duration");
        let no_duration = WorkloadChoice {
            duration: None,
            ..echo(64, 2048, 60)
        };
        assert_eq!(refusal(no_duration), "--echo needs --size, --rate and --duration");
    }

    #[test]
    fn flows_and_windows_out_of_range_are_refused_naming_their_options() {
        assert_eq!(
            refusal(messages(8, 2048, 60)),
            "--size/--rate: message size 8: a message is 12 bytes (its header) to 1MiB"
        );
        assert_eq!(
            refusal(echo(64, 0, 60)),
            "--size/--rate: rate 0: the offered rate must be above 0 bit/s"
        );
        let reverse = WorkloadChoice {
            two_way: true,
            reverse_rate: Some(Rate(0)),
            ..messages(64, 2048, 60)
        };
        assert_eq!(
            refusal(reverse),
            "--reverse-size/--reverse-rate: rate 0: the offered rate must be above 0 bit/s"
        );
        let window = "test window 0 s: expected above 0 and below 1e9 s";
        assert_eq!(refusal(messages(64, 2048, 0)), window);
        assert_eq!(refusal(echo(64, 2048, 0)), window);
    }
}
