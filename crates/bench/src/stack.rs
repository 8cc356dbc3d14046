//! The stacks a bench compares, and which world can run each: Linux's
//! own TCP (`linux-cubic`, `linux-bbr`, `linux-reno`), our stack end to
//! end (`scps-*`, and its plain TCP `tcp-vj`, `tcp-cubic`), and our stack
//! in two gateways (`gw-scps-*`). In the simulator a Linux stack runs the
//! engine's model of it; BBR has none.

use std::fmt;
use std::str::FromStr;

use scps_config::Protocol;
use serde::{Deserialize, Serialize};

/// Where a run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum World {
    /// Virtual time, deterministic.
    Sim,
    /// Network namespaces and the live emulator, real time.
    Testbed,
}

impl World {
    pub fn name(self) -> &'static str {
        match self {
            World::Sim => "sim",
            World::Testbed => "testbed",
        }
    }
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Linux congestion control the testbed's kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinuxTcp {
    Cubic,
    Bbr,
    Reno,
}

impl LinuxTcp {
    const ALL: [LinuxTcp; 3] = [LinuxTcp::Cubic, LinuxTcp::Bbr, LinuxTcp::Reno];

    /// The kernel's name for it (`net.ipv4.tcp_congestion_control`).
    pub fn kernel_name(self) -> &'static str {
        match self {
            LinuxTcp::Cubic => "cubic",
            LinuxTcp::Bbr => "bbr",
            LinuxTcp::Reno => "reno",
        }
    }
}

/// A stack of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stack {
    Linux(LinuxTcp),
    /// A protocol label of the scenarios: our stack end to end, or in
    /// the gateways for a `gw-` label.
    Ours(Protocol),
}

/// A stack the chosen world cannot run, or a name that is no stack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StackError {
    #[error("stack {0:?}: not a stack; the stacks are {list}", list = Stack::names())]
    Unknown(String),
    #[error("stack {stack}: the {world} cannot run it ({why})")]
    NotIn {
        stack: Stack,
        world: World,
        why: &'static str,
    },
}

impl Stack {
    pub fn name(self) -> String {
        match self {
            Stack::Linux(tcp) => format!("linux-{}", tcp.kernel_name()),
            Stack::Ours(protocol) => protocol.label().to_owned(),
        }
    }

    /// Every stack's name, for errors and help.
    pub fn names() -> String {
        LinuxTcp::ALL
            .map(|tcp| Stack::Linux(tcp).name())
            .into_iter()
            .chain(Protocol::ALL.map(|p| p.label().to_owned()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The protocol label that runs this stack in `world`.
    pub fn label_in(self, world: World) -> Result<Protocol, StackError> {
        match (self, world) {
            (Stack::Ours(Protocol::Saratoga), World::Testbed) => Err(StackError::NotIn {
                stack: self,
                world,
                why: "the testbed's hosts run TCP; saratoga runs in the simulator (--world sim)",
            }),
            (Stack::Ours(protocol), _) => Ok(protocol),
            (Stack::Linux(LinuxTcp::Cubic), World::Sim) => Ok(Protocol::TcpCubic),
            // Linux's Reno is NewReno with SACK: the engine's Van Jacobson
            // stack.
            (Stack::Linux(LinuxTcp::Reno), World::Sim) => Ok(Protocol::TcpVj),
            (Stack::Linux(LinuxTcp::Bbr), World::Sim) => Err(StackError::NotIn {
                stack: self,
                world,
                why: "the simulator has no model of BBR; run it with --world testbed",
            }),
            // The kernel's own: the label only names the figures' limit.
            (Stack::Linux(_), World::Testbed) => Ok(Protocol::TcpCubic),
        }
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Stack {
    type Err = StackError;
    fn from_str(s: &str) -> Result<Stack, StackError> {
        if let Some(tcp) = LinuxTcp::ALL.into_iter().find(|t| Stack::Linux(*t).name() == s) {
            return Ok(Stack::Linux(tcp));
        }
        s.parse::<Protocol>()
            .map(Stack::Ours)
            .map_err(|_| StackError::Unknown(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for name in Stack::names().split(", ") {
            assert_eq!(name.parse::<Stack>().unwrap().name(), name);
        }
        let err = "linux-vegas".parse::<Stack>().unwrap_err().to_string();
        assert!(
            err.starts_with("stack \"linux-vegas\": not a stack; the stacks are linux-cubic, linux-bbr"),
            "{err}"
        );
    }

    #[test]
    fn the_simulator_runs_models_of_linux_but_not_bbr() {
        let stack = |name: &str| name.parse::<Stack>().unwrap();
        assert_eq!(stack("linux-cubic").label_in(World::Sim), Ok(Protocol::TcpCubic));
        assert_eq!(stack("linux-reno").label_in(World::Sim), Ok(Protocol::TcpVj));
        assert_eq!(
            stack("gw-scps-rate").label_in(World::Sim),
            Ok(Protocol::GwScpsRate)
        );
        assert_eq!(stack("saratoga").label_in(World::Sim), Ok(Protocol::Saratoga));
        assert!(stack("saratoga").label_in(World::Testbed).is_err());
        let err = stack("linux-bbr").label_in(World::Sim).unwrap_err().to_string();
        assert_eq!(
            err,
            "stack linux-bbr: the sim cannot run it (the simulator has no model of BBR; run it with --world testbed)"
        );
    }
}
