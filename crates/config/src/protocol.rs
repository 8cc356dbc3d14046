//! Protocol labels of runs: which stack, with which congestion control.
//! Labels are names, never numbers.

use std::fmt;
use std::str::FromStr;

use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Standard TCP with Van Jacobson congestion control and NewReno.
    TcpVj,
    /// Standard TCP with CUBIC, the model of modern Linux.
    TcpCubic,
}

impl Protocol {
    pub const ALL: [Protocol; 2] = [Protocol::TcpVj, Protocol::TcpCubic];

    pub fn label(self) -> &'static str {
        match self {
            Protocol::TcpVj => "tcp-vj",
            Protocol::TcpCubic => "tcp-cubic",
        }
    }

    /// Sets what the label decides in an engine configuration.
    pub fn apply(self, config: &mut Config) {
        config.congestion = match self {
            Protocol::TcpVj => CongestionAlgorithm::NewReno,
            Protocol::TcpCubic => CongestionAlgorithm::Cubic,
        };
    }

    pub fn labels() -> String {
        Protocol::ALL.map(Protocol::label).join(", ")
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Protocol {
    type Err = Error;
    fn from_str(s: &str) -> Result<Protocol, Error> {
        Protocol::ALL.into_iter().find(|p| p.label() == s).ok_or_else(|| {
            Error::invalid(
                "protocol",
                format!("{s:?}"),
                format!("one of {}", Protocol::labels()),
            )
        })
    }
}
