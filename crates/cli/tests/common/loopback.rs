//! `scps gateway` as a plain process on this host (the explicit modes on
//! loopback need no namespaces): started from a configuration written to
//! a file, waited for until it says it is ready, stopped with SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A running `scps gateway`, once it said it is ready.
pub struct Gateway {
    child: Child,
    /// What it prints after the ready line.
    stdout: BufReader<ChildStdout>,
    /// Its ready line.
    pub ready: String,
}

impl Gateway {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// `scps gateway --config NAME ARGS...` with `config` written to NAME in
/// `dir`, its libraries logging at info, once it says it is ready; fails
/// the test with what it said if it exits instead.
pub fn start(dir: &Path, name: &str, config: &str, args: &[&std::ffi::OsStr]) -> Gateway {
    let file = dir.join(name);
    std::fs::write(&file, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_scps"))
        .args(["gateway", "--config"])
        .arg(&file)
        .args(args)
        .env("RUST_LOG", "scps_gateway=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scps gateway");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    if !ready.starts_with("scps gateway: ready") {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        panic!("scps gateway ({status}) said {ready:?}: {stderr}");
    }
    Gateway { child, stdout, ready }
}

/// Stops a gateway with SIGTERM: whether it exited cleanly, and what it
/// wrote after its ready line (its summary on stdout, its log on stderr).
pub fn stop(mut gateway: Gateway) -> (bool, String) {
    kill(Pid::from_raw(gateway.child.id() as i32), Signal::SIGTERM).unwrap();
    let status = gateway.child.wait().unwrap();
    let mut written = String::new();
    gateway.stdout.read_to_string(&mut written).unwrap();
    gateway
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut written)
        .unwrap();
    (status.success(), written)
}
