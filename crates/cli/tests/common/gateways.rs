//! Transparent gateways in the testbed's gateway topology, for the tests
//! that run applications through them:
//!
//! ```text
//! client 10.99.1.2 ── lan0 [gwA] sat0 ── emu ── sat0 [gwB] lan0 ── server 10.99.4.2
//! ```

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use scps_testbed::{Node, Output, Process, Testbed};

use super::TempDir;

pub const SCPS: &str = env!("CARGO_BIN_EXE_scps");

pub fn config(dir: &TempDir, name: &str, local: &str, remote: &str) -> std::path::PathBuf {
    config_with(dir, name, local, remote, "")
}

/// A transparent gateway's configuration with `extra` (more tables) after
/// its own.
pub fn config_with(dir: &TempDir, name: &str, local: &str, remote: &str, extra: &str) -> std::path::PathBuf {
    let file = dir.path().join(name);
    std::fs::write(
        &file,
        format!(
            "[transparent]\nlan = \"lan0\"\nlink = \"sat0\"\nlocal = [\"{local}\"]\nremote = [\"{remote}\"]\n\
             [engine]\nprotocol = \"scps-vj\"\n{extra}"
        ),
    )
    .unwrap();
    file
}

pub fn start(node: &Node, config: &Path) -> Process {
    start_with(node, config, &[])
}

/// `scps gateway --config CONFIG ARGS...` in `node`.
pub fn start_with(node: &Node, config: &Path, args: &[&std::ffi::OsStr]) -> Process {
    let mut all = vec!["gateway".as_ref(), "--config".as_ref(), config.as_os_str()];
    all.extend_from_slice(args);
    node.spawn(SCPS, &all, Output::Piped).unwrap()
}

/// Whether the gateway's nftables table is in `node`'s namespace.
pub fn intercepting(node: &Node) -> bool {
    node.output("nft", &["list", "table", "ip", "scps_gateway_7301"])
        .is_ok()
}

/// Waits until both gateways intercept (they install their rules last,
/// once everything else runs).
pub fn wait_ready(gateways: &[(&Node, &Process)]) {
    let deadline = Instant::now() + Duration::from_secs(15);
    for (node, process) in gateways {
        while !intercepting(node) {
            if let Some(status) = process.try_wait().unwrap() {
                panic!(
                    "the gateway in {} exited ({status}): {}",
                    node.name(),
                    process.read_stdout().unwrap()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the gateway in {} never intercepted",
                node.name()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Stops a gateway with SIGTERM; what it printed.
pub fn stop(process: &Process) -> String {
    process.signal(Signal::SIGTERM).unwrap();
    let status = process.wait_timeout(Duration::from_secs(15)).unwrap();
    let printed = process.read_stdout().unwrap();
    assert!(status.is_some_and(|s| s.success()), "exit {status:?}: {printed}");
    printed
}

/// Nothing of the transparent mode is left in `node`.
pub fn assert_nothing_installed(node: &Node) {
    assert!(
        !intercepting(node),
        "the nftables table is gone in {}",
        node.name()
    );
    let rules = node.ip(&["-4", "rule"]).unwrap();
    assert!(
        !rules.contains("lookup 153") && !rules.contains("lookup 154"),
        "{rules}"
    );
    assert!(
        node.ip(&["link", "show", "scps-gw"]).is_err(),
        "the TUN device is gone"
    );
    let early_demux = node
        .output("cat", &["/proc/sys/net/ipv4/tcp_early_demux"])
        .unwrap();
    assert_eq!(
        early_demux.trim(),
        "1",
        "TCP early demux is restored in {}",
        node.name()
    );
}

/// Both gateways of the topology running, mirrored, and intercepting.
pub fn start_pair(testbed: &Testbed, dir: &TempDir) -> (Process, Process) {
    let gw_a = testbed.node("gwA").unwrap();
    let gw_b = testbed.node("gwB").unwrap();
    let a = start(gw_a, &config(dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24"));
    let b = start(gw_b, &config(dir, "b.toml", "10.99.4.0/24", "10.99.1.0/24"));
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    (a, b)
}
