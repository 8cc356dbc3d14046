//! `scps emulate` in the emulator's namespace of a direct testbed (client
//! 10.99.1.2, server 10.99.2.2), for the tests that run it or run
//! transfers across it: its configuration, its control socket, its
//! figures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use scps_testbed::{EMU, Output as Io, Process, Testbed, Topology};

use super::{TempDir, text};

const SCPS: &str = env!("CARGO_BIN_EXE_scps");

/// `scps emulate ctl --socket SOCKET ARGS...` run to its end.
pub fn ctl(socket: &Path, args: &[&str]) -> Output {
    Command::new(SCPS)
        .args(["emulate", "ctl", "--socket"])
        .arg(socket)
        .args(args)
        .output()
        .expect("scps runs")
}

/// Writes `emulate.toml` into `dir`: the top-level keys `top_keys` (its
/// seed, say), the sides a0 and b0 (those of `Topology::direct()`), the
/// other `[emulate]` keys `emulate_keys` and the `[link]` table `link`,
/// one key a line.
pub fn write_config(dir: &TempDir, top_keys: &str, emulate_keys: &str, link: &str) -> PathBuf {
    let config = dir.path().join("emulate.toml");
    std::fs::write(
        &config,
        format!("{top_keys}[emulate]\nside_a = \"a0\"\nside_b = \"b0\"\n{emulate_keys}[link]\n{link}"),
    )
    .unwrap();
    config
}

/// Waits (up to 10 s) until the emulator answers on its control socket:
/// then it is in the path.
pub fn wait_until_answering(socket: &Path, emulator: &Process) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ctl(socket, &["stats"]).status.success() {
        assert!(
            Instant::now() < deadline,
            "the emulator never answered on its control socket"
        );
        assert!(emulator.try_wait().unwrap().is_none(), "the emulator exited");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `scps emulate` with a control socket, started in the emulator's
/// namespace of a direct testbed. Dropping the testbed ends every process
/// started in it; then (fields drop in order) the directory goes.
pub struct Emulation {
    pub emulator: Process,
    pub testbed: Testbed,
    pub socket: PathBuf,
    /// The temporary directory `name` of [`Emulation::start`]: its
    /// configuration and control socket, and room for more.
    pub dir: TempDir,
}

impl Emulation {
    /// Starts it with `top_keys` ahead of its tables (its seed, say),
    /// `link` as its `[link]` table and its stdout to `stdout`; returns
    /// once it answers on its control socket.
    pub fn start(name: &str, top_keys: &str, link: &str, stdout: Io) -> Emulation {
        let dir = TempDir::new(name);
        let socket = dir.path().join("control.sock");
        let control = format!("control = \"{}\"\n", socket.display());
        let config = write_config(&dir, top_keys, &control, link);
        let testbed = Testbed::build(Topology::direct()).unwrap();
        let emulator = testbed
            .node(EMU)
            .unwrap()
            .spawn(
                SCPS,
                &["emulate".as_ref(), "--config".as_ref(), config.as_os_str()],
                stdout,
            )
            .unwrap();
        wait_until_answering(&socket, &emulator);
        Emulation {
            emulator,
            testbed,
            socket,
            dir,
        }
    }

    /// The emulator's figures, `scps emulate ctl stats --json`.
    pub fn stats(&self) -> serde_json::Value {
        let stats = ctl(&self.socket, &["stats", "--json"]);
        assert!(stats.status.success(), "{}", text(&stats.stderr));
        serde_json::from_slice(&stats.stdout).unwrap()
    }

    /// Asserts that the emulator still runs (`what` says so).
    pub fn assert_running(&self, what: &str) {
        assert!(self.emulator.try_wait().unwrap().is_none(), "{what}");
    }
}

/// The figures of the first channel in `direction` (`"forward"` or
/// `"return"`) among the emulator's `stats`.
pub fn channel<'a>(stats: &'a serde_json::Value, direction: &str) -> Option<&'a serde_json::Value> {
    stats["channels"]
        .as_array()?
        .iter()
        .find(|c| c["direction"] == direction)
}
