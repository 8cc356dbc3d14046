//! The live link emulator (`scps emulate`): a userspace router between two
//! interfaces of a network namespace that applies the channel models of
//! `scps-channel` (the simulator's) per direction to every packet crossing
//! it, whatever its protocol.
//!
//! * `steering.rs`: TUN devices and policy routing put the emulator in the
//!   path (the kernel here has no netem).
//! * `bridge.rs`: the packet loop, sleeping until a packet or a due time.
//! * `state.rs`: the models of both directions and the live changes.
//! * `scope.rs`: which packets belong on the link.
//! * `control.rs`, `trace.rs`, `metrics.rs`, `stats.rs`: the control
//!   socket, timeline replay and recording, counters as JSON and for
//!   Prometheus.
//! * `run.rs`: what `scps emulate` says at its start, and the signals
//!   that stop it.
//!
//! Time is the monotonic clock since the emulator's start: the epoch of
//! the channel models, of scheduled outages and of timelines.

mod acceptor;
mod bridge;
pub mod command;
pub mod config;
mod control;
mod metrics;
mod pinning;
pub mod run;
mod scope;
pub mod state;
pub mod stats;
mod stats_text;
mod steering;
pub mod trace;
mod unreachable;
mod wake;

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use command::{Change, Directions, Query, Request};
pub use config::EmulatorConfig;
pub use control::{Response, request};
pub use scope::crosses_link;
pub use state::{ChangeError, Direction, LinkState};
pub use stats::Stats;
pub use steering::TUN_NAMES;
pub use trace::{BadLine, Recorder, Timeline};
pub use unreachable::RouterAddresses;

use bridge::{Shared, lock};
use control::ControlServer;
use metrics::MetricsServer;
use steering::Steering;
use trace::Replay;

/// What can stop the emulator from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] scps_config::Error),
    // Its message is in this one: not a `source` too, or a report of the
    // whole chain would say it twice.
    #[error("invalid channel model: {0}")]
    Model(scps_channel::ConfigError),
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
    #[error("{origin}: the timeline is refused, {} of its {lines} entries are bad:{}", .bad.len(), trace::list(.bad))]
    Timeline {
        origin: String,
        /// Lines holding an entry (not blank, not a comment).
        lines: usize,
        bad: Vec<trace::BadLine>,
    },
    #[error("the packet loop stopped: {0}")]
    Stopped(String),
}

impl From<scps_channel::ConfigError> for Error {
    fn from(error: scps_channel::ConfigError) -> Error {
        Error::Model(error)
    }
}

impl From<state::LinkError> for Error {
    fn from(error: state::LinkError) -> Error {
        match error {
            state::LinkError::Channel(error) => Error::Model(error),
            // The settings were checked with the configuration: only the
            // circuits' rates are new here.
            state::LinkError::Bond(error) => Error::Setup(format!("the bonding scheduler: {error}")),
        }
    }
}

/// A running emulator. Dropping it stops it and removes its routing rules.
#[derive(Debug)]
pub struct Emulator {
    shared: Shared,
    recorder: Option<Arc<Recorder>>,
    stop: UnixStream,
    packet_loop: Option<JoinHandle<Result<(), Error>>>,
    /// Readable (end of file) once the packet loop has ended.
    loop_ended: wake::Waiter,
    // Dropped in this order: the servers and the replay stop before the
    // steering goes.
    replay: Option<Replay>,
    control: Option<ControlServer>,
    metrics: Option<MetricsServer>,
    /// Held so that the rules and devices go when the emulator does.
    _steering: Arc<Steering>,
}

impl Emulator {
    /// Starts emulating in the network namespace of the calling thread:
    /// steering, packet loop, and the control socket, metrics, replay and
    /// recording that `config` asks for. Nothing starts if any part fails.
    pub fn start(config: &EmulatorConfig) -> Result<Emulator, Error> {
        let mut state = LinkState::new(config)?;
        let timeline = match &config.emulate.replay {
            Some(path) => Some(Timeline::load(path, &state)?),
            None => None,
        };
        let recorder = match &config.emulate.record {
            Some(path) => Some(Arc::new(Recorder::create(path)?)),
            None => None,
        };
        let sides = [config.emulate.side_a.as_str(), config.emulate.side_b.as_str()];
        let steering = Arc::new(Steering::new(sides, config.table(), config.mtu)?);
        state.set_routers(steering.routers);
        let shared = Shared {
            state: Arc::new(Mutex::new(state)),
            epoch: Instant::now(),
        };
        let (stop, stop_rx) = UnixStream::pair().map_err(|source| Error::Io {
            what: "create the stop signal".into(),
            source,
        })?;
        let (ending, loop_ended) = wake::pair().map_err(|source| Error::Io {
            what: "create the end signal".into(),
            source,
        })?;
        let packet_loop = {
            let shared = shared.clone();
            let steering = steering.clone();
            let buffer = usize::from(config.mtu).max(1500) + 64;
            std::thread::Builder::new()
                .name("emulator-packets".into())
                .spawn(move || {
                    let _ending = ending;
                    bridge::run(&shared.state, &steering.tuns, shared.epoch, stop_rx, buffer)
                })
                .map_err(|source| Error::Io {
                    what: "start the packet loop".into(),
                    source,
                })?
        };
        let mut emulator = Emulator {
            shared: shared.clone(),
            recorder: recorder.clone(),
            stop,
            packet_loop: Some(packet_loop),
            loop_ended,
            replay: None,
            control: None,
            metrics: None,
            _steering: steering,
        };
        if let Some(path) = &config.emulate.control {
            emulator.control = Some(ControlServer::start(path, shared.clone(), recorder.clone())?);
        }
        if let Some(address) = config.emulate.metrics {
            emulator.metrics = Some(MetricsServer::start(address, shared.clone())?);
        }
        if let Some(timeline) = timeline {
            emulator.replay = Some(Replay::start(timeline, shared, recorder));
        }
        Ok(emulator)
    }

    /// The instant the models' time counts from (outage windows, trace
    /// times).
    pub fn epoch(&self) -> Instant {
        self.shared.epoch
    }

    /// Time since the start.
    pub fn now(&self) -> Duration {
        self.shared.now()
    }

    /// Applies a change now, as the control socket would (and records it).
    pub fn apply(&self, change: &Change) -> Result<(), ChangeError> {
        let now = self.shared.apply(change)?;
        if let Some(recorder) = &self.recorder {
            recorder.record(now, change);
        }
        Ok(())
    }

    /// Counters and settings of every channel now.
    pub fn stats(&self) -> Stats {
        lock(&self.shared.state).stats(self.shared.now())
    }

    /// Where the metrics are served, if they are.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsServer::address)
    }

    /// Whether the packet loop still runs (it stops only on an I/O error
    /// or when told to).
    pub fn is_running(&self) -> bool {
        self.packet_loop.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Sleeps until `other` becomes readable (true) or the packet loop
    /// ends on its own, which only an I/O error makes it do (false). The
    /// command waits so on a signalfd.
    pub fn wait_for(&self, other: std::os::fd::BorrowedFd<'_>) -> Result<bool, Error> {
        self.loop_ended.readable(other).map_err(|source| Error::Io {
            what: "wait for a signal".into(),
            source,
        })
    }

    /// Stops and reports how the packet loop ended.
    pub fn stop(mut self) -> Result<(), Error> {
        self.halt()
    }

    fn halt(&mut self) -> Result<(), Error> {
        let _ = self.stop.write_all(&[1]);
        match self.packet_loop.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(Error::Stopped("it panicked".into())),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.replay.take();
        self.control.take();
        self.metrics.take();
        let _ = self.halt();
    }
}
