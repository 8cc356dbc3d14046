//! The emulator as `scps emulate --config FILE` runs it: the line it
//! starts with, and the signals that stop it (SIGINT, Ctrl-C, or SIGTERM),
//! read from a signalfd.

use std::net::SocketAddr;
use std::os::fd::AsFd;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use crate::{Emulator, EmulatorConfig, Error};

/// What the emulator joins, its channels, and where it is reached
/// (`metrics`: where [`Emulator::metrics_address`] says).
pub fn banner(config: &EmulatorConfig, metrics: Option<SocketAddr>) -> String {
    format!(
        "{} <-> {}, {} channel(s); control {}; metrics {}; Ctrl-C stops",
        config.emulate.side_a,
        config.emulate.side_b,
        config.circuits.len(),
        config
            .emulate
            .control
            .as_ref()
            .map_or("off".into(), |p| p.display().to_string()),
        metrics.map_or("off".into(), |a| format!("http://{a}/metrics")),
    )
}

/// SIGINT and SIGTERM, held for the emulator's user to read.
#[derive(Debug)]
pub struct StopSignals {
    fd: SignalFd,
}

impl StopSignals {
    /// Blocks SIGINT and SIGTERM in the calling thread. Done before any
    /// other thread starts, so that every thread inherits the mask and the
    /// signals wait for [`StopSignals::wait`].
    pub fn block() -> Result<StopSignals, Error> {
        let mut signals = SigSet::empty();
        signals.add(Signal::SIGINT);
        signals.add(Signal::SIGTERM);
        signals
            .thread_block()
            .map_err(|e| Error::Setup(format!("block SIGINT and SIGTERM: {e}")))?;
        // Not blocking: reading when nothing is pending must not hang.
        let fd = SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK)
            .map_err(|e| Error::Setup(format!("create a signalfd: {e}")))?;
        Ok(StopSignals { fd })
    }

    /// Sleeps until a signal comes (true) or the packet loop of `emulator`
    /// ends on its own (false).
    pub fn wait(&self, emulator: &Emulator) -> Result<bool, Error> {
        emulator.wait_for(self.fd.as_fd())
    }

    /// What stopped it: `stopped by SIGTERM`, or `stopped by a signal`
    /// when none can be read.
    pub fn stopped_by(&self) -> String {
        let signal = self
            .fd
            .read_signal()
            .ok()
            .flatten()
            .and_then(|s| Signal::try_from(i32::try_from(s.ssi_signo).ok()?).ok());
        format!("stopped by {}", signal.map_or("a signal", Signal::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_names_the_sides_the_channels_and_where_it_is_reached() {
        let text = |control: &str| {
            format!(
                "[emulate]\nside_a = \"a0\"\nside_b = \"b0\"\n{control}[link]\nrate = \"1Mbit\"\nchannels = 2\n"
            )
        };
        let config = EmulatorConfig::from_text(&text(""), "test").unwrap();
        assert_eq!(
            banner(&config, None),
            "a0 <-> b0, 2 channel(s); control off; metrics off; Ctrl-C stops"
        );
        let config = EmulatorConfig::from_text(&text("control = \"/run/e.sock\"\n"), "test").unwrap();
        assert_eq!(
            banner(&config, Some("127.0.0.1:9464".parse().unwrap())),
            "a0 <-> b0, 2 channel(s); control /run/e.sock; metrics http://127.0.0.1:9464/metrics; Ctrl-C stops"
        );
    }

    #[test]
    fn the_signal_that_came_is_named_and_none_is_a_signal() {
        // The mask is this test's thread's own: other tests are not
        // affected, and the signal `raise` sends this thread waits here.
        let signals = StopSignals::block().unwrap();
        assert_eq!(signals.stopped_by(), "stopped by a signal");
        nix::sys::signal::raise(Signal::SIGTERM).unwrap();
        assert_eq!(signals.stopped_by(), "stopped by SIGTERM");
    }
}
