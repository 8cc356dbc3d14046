//! What `scps send` and `scps recv` say of a transfer as it runs and as it
//! ends, and the exit status it ends with.

use scps_workload::report::Report;

use crate::News;
use crate::recv::Served;
use crate::send::Sent;

/// How a transfer ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything arrived and checked.
    Complete,
    /// The transfer failed or did not verify (reported).
    Failed,
    /// Ctrl-C.
    Interrupted,
}

impl Outcome {
    /// The exit status: 0 complete, 1 failed (reported), 130 interrupted
    /// (128 and SIGINT's number, as shells report it).
    pub fn status(self) -> u8 {
        match self {
            Outcome::Complete => 0,
            Outcome::Failed => 1,
            Outcome::Interrupted => 130,
        }
    }
}

/// What to tell the user: a line on standard error, a report on standard
/// output, or nothing.
#[derive(Debug)]
pub enum Said {
    Nothing,
    Line(String),
    Report(Box<Report>),
}

impl News {
    /// What is said of this news. Only a receiver listens, removes stale
    /// partial files and refuses connections, hence its name on those
    /// lines.
    pub fn said(self) -> Said {
        Said::Line(match self {
            // Scripts (and the tests) read this line to learn the ports.
            News::Listening {
                path,
                port,
                udp,
                channels,
            } => match (udp, channels) {
                (Some(udp), _) => format!("scps recv: {path} listening on port {port} (UDP {udp})"),
                (None, Some(channels)) => format!(
                    "scps recv: {path} listening on port {port} (channels {})",
                    channels
                        .iter()
                        .map(|c| format!("{} -> {}", c.local, c.peer))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                (None, None) => format!("scps recv: {path} listening on port {port}"),
            },
            News::StaleRemoved(stale) => format!(
                "scps recv: removed {}, left by a receiver that is gone",
                stale.display()
            ),
            News::Refused { peer, serving } => format!(
                "scps recv: reset a connection from {peer}: {serving} are being served already \
                 (--max-connections)"
            ),
            News::Report(report) => return Said::Report(report),
            News::Unknown(why) => format!("scps: {why}"),
        })
    }
}

impl Sent {
    pub fn outcome(&self) -> Outcome {
        match self {
            Sent::Report(report) if report.failed() => Outcome::Failed,
            Sent::Report(_) => Outcome::Complete,
            Sent::InterruptedConnecting | Sent::Interrupted => Outcome::Interrupted,
        }
    }

    /// The report, or what an interruption left.
    pub fn said(self) -> Said {
        match self {
            Sent::Report(report) => Said::Report(report),
            Sent::InterruptedConnecting => Said::Line("scps send: interrupted while connecting".into()),
            Sent::Interrupted => {
                Said::Line("scps send: interrupted; the connection was reset so the receiver knows".into())
            }
        }
    }
}

impl Served {
    pub fn outcome(self) -> Outcome {
        match self {
            Served::Complete => Outcome::Complete,
            Served::Failed => Outcome::Failed,
            Served::Interrupted { .. } => Outcome::Interrupted,
        }
    }

    /// What an interruption left (each connection's report was said as it
    /// ended).
    pub fn said(self) -> Said {
        match self {
            Served::Interrupted { reset } if reset > 0 => Said::Line(format!(
                "scps recv: interrupted; {reset} connection(s) reset and no partial file kept"
            )),
            _ => Said::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use scps_workload::report::BundleChannelFigures;

    use super::*;

    fn line(said: Said) -> String {
        match said {
            Said::Line(line) => line,
            other => panic!("{other:?}"),
        }
    }

    fn report(error: Option<&str>) -> Box<Report> {
        let mut report = Report::start("send", "tcp", "tcp".into(), "192.0.2.7:5001".into());
        report.error = error.map(str::to_owned);
        Box::new(report)
    }

    fn channel(local: &str, peer: &str) -> BundleChannelFigures {
        BundleChannelFigures {
            local: local.into(),
            peer: peer.into(),
            ..BundleChannelFigures::default()
        }
    }

    #[test]
    fn a_receiver_says_where_it_listens() {
        let listening = |udp: Option<&str>, channels| News::Listening {
            path: "scps-udp",
            port: 5001,
            udp: udp.map(|u| u.parse().unwrap()),
            channels,
        };
        assert_eq!(
            line(listening(Some("0.0.0.0:7168"), None).said()),
            "scps recv: scps-udp listening on port 5001 (UDP 0.0.0.0:7168)"
        );
        let channels = vec![
            channel("10.0.0.1:7000", "10.0.0.2:7000"),
            channel("10.0.1.1:7000", "10.0.1.2:7000"),
        ];
        assert_eq!(
            line(listening(None, Some(channels)).said()),
            "scps recv: scps-udp listening on port 5001 (channels 10.0.0.1:7000 -> 10.0.0.2:7000, 10.0.1.1:7000 -> 10.0.1.2:7000)"
        );
        assert_eq!(
            line(listening(None, None).said()),
            "scps recv: scps-udp listening on port 5001"
        );
    }

    #[test]
    fn a_receiver_says_what_it_did_on_its_own_and_reports_go_to_the_output() {
        assert_eq!(
            line(News::StaleRemoved(PathBuf::from("/tmp/out.part")).said()),
            "scps recv: removed /tmp/out.part, left by a receiver that is gone"
        );
        let refused = News::Refused {
            peer: "192.0.2.7:40000".into(),
            serving: 16,
        };
        assert_eq!(
            line(refused.said()),
            "scps recv: reset a connection from 192.0.2.7:40000: 16 are being served already (--max-connections)"
        );
        assert_eq!(line(News::Unknown("no figure".into()).said()), "scps: no figure");
        assert!(matches!(News::Report(report(None)).said(), Said::Report(_)));
    }

    #[test]
    fn a_sender_ends_with_its_report_or_the_interruption() {
        assert_eq!(Sent::Report(report(None)).outcome(), Outcome::Complete);
        assert_eq!(Sent::Report(report(Some("reset"))).outcome(), Outcome::Failed);
        assert!(matches!(Sent::Report(report(None)).said(), Said::Report(_)));
        assert_eq!(Sent::InterruptedConnecting.outcome(), Outcome::Interrupted);
        assert_eq!(
            line(Sent::InterruptedConnecting.said()),
            "scps send: interrupted while connecting"
        );
        assert_eq!(Sent::Interrupted.outcome(), Outcome::Interrupted);
        assert_eq!(
            line(Sent::Interrupted.said()),
            "scps send: interrupted; the connection was reset so the receiver knows"
        );
    }

    #[test]
    fn a_receiver_ends_as_its_connection_did_and_says_what_an_interruption_reset() {
        assert_eq!(Served::Complete.outcome(), Outcome::Complete);
        assert_eq!(Served::Failed.outcome(), Outcome::Failed);
        assert_eq!(Served::Interrupted { reset: 0 }.outcome(), Outcome::Interrupted);
        assert!(matches!(Served::Complete.said(), Said::Nothing));
        assert!(matches!(Served::Interrupted { reset: 0 }.said(), Said::Nothing));
        assert_eq!(
            line(Served::Interrupted { reset: 2 }.said()),
            "scps recv: interrupted; 2 connection(s) reset and no partial file kept"
        );
    }

    #[test]
    fn exit_statuses_tell_the_ends_apart() {
        let statuses = [Outcome::Complete, Outcome::Failed, Outcome::Interrupted].map(Outcome::status);
        assert_eq!(statuses, [0, 1, 130]);
    }
}
