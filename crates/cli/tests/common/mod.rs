//! Shared by the tests of the `scps` binary: their temporary directories,
//! and reading the captures of `scps send` and `scps recv` with tshark.

#![allow(dead_code)] // each test file uses its own part

pub mod emulation;
pub mod gateways;
pub mod loopback;
pub mod metrics;
pub mod servers;
pub mod typing;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::Duration;

/// `scps ARGS...` run to its end.
pub fn scps(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scps"))
        .args(args)
        .output()
        .expect("scps runs")
}

/// Keys for a pair of gateways in `dir`, made by `scps gateway keygen` as
/// an operator makes them (once per directory): the `[link]` lines of the
/// far gateway and of the client one, each naming its key file relative
/// to its configuration file (in `dir` too) and the other's public key.
pub fn link_keys(dir: &Path) -> (String, String) {
    let (far, client) = (public_key(dir, "far.key"), public_key(dir, "client.key"));
    let lines =
        |file: &str, peer: &str| format!("private_key_file = \"{file}\"\npeer_public_key = \"{peer}\"\n");
    (lines("far.key", &client), lines("client.key", &far))
}

/// The public key of the key file `name` in `dir`, made by `scps gateway
/// keygen` if it is not there yet.
pub fn public_key(dir: &Path, name: &str) -> String {
    let file = dir.join(name);
    let file = file.to_str().unwrap();
    let output = if Path::new(file).exists() {
        scps(&["gateway", "pubkey", file])
    } else {
        scps(&["gateway", "keygen", file])
    };
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout).trim().to_owned()
}

/// Waits for `child` to exit, killing it (and failing) after `limit`: a
/// thread waits on the exit itself, and this one on that thread's word
/// with the deadline.
pub fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (exited, exit) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| exited.send(child.wait().unwrap()));
        match exit.recv_timeout(limit) {
            Ok(status) => status,
            Err(_) => {
                // The waiting thread then sees it exit, and the scope ends.
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("the process did not exit within {limit:?}");
            }
        }
    })
}

/// A program's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `scps ARGS...`, which must refuse them (exit status 2) saying
/// `expected`.
pub fn assert_refused(args: &[&str], expected: &str) {
    let output = scps(args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
}

/// A temporary directory of this test process, removed when dropped (also
/// when the test panics).
pub struct TempDir(PathBuf);

impl TempDir {
    /// `scps-{name}-{pid}` under the system's temporary directory, empty.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("scps-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The names of its entries, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A UDP port free on loopback, as the kernel hands them out (the program
/// under test binds it a moment later).
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A TCP port free on loopback, likewise.
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server on `listener` for one connection: it reads to the end,
/// answers with the SHA-256 of what it read and then `reply`; the
/// client's address.
pub fn digest_server(
    listener: std::net::TcpListener,
    reply: Vec<u8>,
) -> std::thread::JoinHandle<std::net::SocketAddr> {
    use sha2::Digest;
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        stream.write_all(&sha2::Sha256::digest(&received)).unwrap();
        stream.write_all(&reply).unwrap();
        peer
    })
}

/// The port the tests' receivers listen on.
pub const PORT: u16 = 5001;

/// tshark on `capture`, the tests' port decoded as plain data
/// (`scps_testbed::tshark::tshark`).
pub fn tshark(capture: &Path, args: &[&str]) -> String {
    scps_testbed::tshark::tshark(capture, Some(PORT), args)
}

/// Asserts that the capture holds more than `min_packets` packets and that
/// tshark finds nothing malformed and no bad checksum in it.
pub fn assert_capture_clean(capture: &Path, min_packets: usize) {
    scps_testbed::tshark::assert_clean(capture, Some(PORT), min_packets);
}

/// The SYN and SYN-ACK of the capture, each as (is a SYN-ACK, carries the
/// SCPS capabilities option, kind 20, as tshark decodes it).
pub fn syns(capture: &Path) -> Vec<(bool, bool)> {
    scps_testbed::tshark::syns(capture, Some(PORT))
        .into_iter()
        .map(|syn| (syn.ack, !syn.scps.is_empty()))
        .collect()
}
