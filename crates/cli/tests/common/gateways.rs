//! Transparent gateways in the testbed's gateway topology, for the tests
//! that run applications through them:
//!
//! ```text
//! client 10.99.1.2 ── lan0 [gwA] sat0 ── emu ── sat0 [gwB] lan0 ── server 10.99.4.2
//! ```

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::ChildStdout;
use std::time::Duration;

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
    config_prefixes(dir, name, &[local], &[remote], extra)
}

/// A transparent gateway's configuration with several prefixes on each
/// side (IPv4 and IPv6, say).
pub fn config_prefixes(
    dir: &TempDir,
    name: &str,
    local: &[&str],
    remote: &[&str],
    extra: &str,
) -> std::path::PathBuf {
    write_config(dir, name, "link = \"sat0\"\n", local, remote, extra)
}

/// A transparent gateway's configuration whose link rides the secure link
/// from `udp` to `peer` (its keys' `[link]` lines `keys`, from
/// `common::link_keys`), with `extra` after `[engine]`.
pub fn config_secured(
    dir: &TempDir,
    name: &str,
    (local, remote): (&str, &str),
    (udp, peer): (&str, &str),
    keys: &str,
    extra: &str,
) -> std::path::PathBuf {
    let file = dir.path().join(name);
    std::fs::write(
        &file,
        format!(
            "[link]\nudp = \"{udp}\"\npeer = \"{peer}\"\n{keys}[transparent]\nlan = \"lan0\"\n\
             local = [\"{local}\"]\nremote = [\"{remote}\"]\n[engine]\nprotocol = \"scps-vj\"\n{extra}"
        ),
    )
    .unwrap();
    file
}

/// A transparent gateway's configuration whose link rides a bundle of
/// channels instead of `sat0`'s routes: `bundle`, its
/// `[[engine.bundle.channel]]` tables (and any more tables), after
/// `[engine]`.
pub fn config_bundled(
    dir: &TempDir,
    name: &str,
    local: &str,
    remote: &str,
    bundle: &str,
) -> std::path::PathBuf {
    write_config(dir, name, "", &[local], &[remote], bundle)
}

/// A plain link (`link.security = "none"`: these are the tests of the
/// routed link a standard SCPS gateway speaks, and of bundles as they
/// are), `[transparent]` with `link_keys`, the prefixes, `[engine]`, then
/// `extra`, written to `name` in `dir`.
fn write_config(
    dir: &TempDir,
    name: &str,
    link_keys: &str,
    local: &[&str],
    remote: &[&str],
    extra: &str,
) -> std::path::PathBuf {
    let list = |prefixes: &[&str]| {
        prefixes
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let file = dir.path().join(name);
    std::fs::write(
        &file,
        format!(
            "[link]\nsecurity = \"none\"\n[transparent]\nlan = \"lan0\"\n{link_keys}local = [{}]\nremote = [{}]\n\
             [engine]\nprotocol = \"scps-vj\"\n{extra}",
            list(local),
            list(remote)
        ),
    )
    .unwrap();
    file
}

/// One capture at a time in a test process: two dumpcaps started side by
/// side in two testbeds' namespaces now and then recorded nothing of the
/// traffic they were started for. That was most likely each starting to
/// record some time after it said so (now waited for, see
/// [`wait_capturing`]); one at a time is kept as the cheaper certainty.
static ONE_CAPTURE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running dumpcap, and what it captures.
pub struct Capture {
    dumpcap: Process,
    file: std::path::PathBuf,
    interfaces: Vec<String>,
    /// `ip -s link show INTERFACE` in the node at the start, to compare
    /// with later if the capture misses packets.
    counters_at_start: String,
    _turn: std::sync::MutexGuard<'static, ()>,
}

/// `ip -s link show INTERFACE` in `node`, for each of `interfaces`.
fn interface_counters(node: &Node, interfaces: &[String]) -> String {
    interfaces
        .iter()
        .map(|interface| {
            node.output("ip", &["-s", "link", "show", interface])
                .unwrap_or_else(|e| e.to_string())
        })
        .collect()
}

/// dumpcap capturing `interface` of `node` into `file` (the first 2048
/// bytes of each packet), once it says it does; stopped by [`end_capture`].
pub fn capture(node: &Node, interface: &str, file: &Path) -> Capture {
    capture_on(node, &[interface], 2048, file)
}

/// dumpcap capturing each of `interfaces` of `node` into `file` (the
/// first `snaplen` bytes of each packet; pcapng with more than one
/// interface, where tshark names each packet's in
/// `frame.interface_name`), once it records on every one; stopped by
/// [`end_capture`].
pub fn capture_on(node: &Node, interfaces: &[&str], snaplen: u32, file: &Path) -> Capture {
    let turn = ONE_CAPTURE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let said = file.with_extension("log");
    // pcap holds one interface's packets; several need pcapng.
    let format = if interfaces.len() == 1 { "-P " } else { "" };
    let sources: String = interfaces.iter().map(|i| format!("-i {i} ")).collect();
    let script = format!(
        "exec dumpcap -q {format}{sources}-s {snaplen} -w {} 2>{}",
        file.display(),
        said.display()
    );
    let dumpcap = node.spawn("sh", &["-c", script.as_str()], Output::Piped).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&said)
        .unwrap_or_default()
        .contains("Capturing on")
    {
        assert!(std::time::Instant::now() < deadline, "dumpcap did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let interfaces: Vec<String> = interfaces.iter().map(|i| i.to_string()).collect();
    let capture = Capture {
        dumpcap,
        file: file.to_owned(),
        counters_at_start: interface_counters(node, &interfaces),
        interfaces,
        _turn: turn,
    };
    for interface in &capture.interfaces {
        wait_capturing(node, &capture, interface);
    }
    capture
}

/// Waits until `capture` records what crosses `interface`: dumpcap says
/// "Capturing on" before it does, and a transfer started at once was now
/// and then missed whole. A ping to every IPv6 node on the interface's
/// link (its link-local address needs no plan) goes out until the
/// capture holds one.
fn wait_capturing(node: &Node, capture: &Capture, interface: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let ping = ["-6", "-c", "1", "-W", "1", "-I", interface, "ff02::1"];
    let filter = if capture.interfaces.len() == 1 {
        "icmpv6.type == 128".to_owned()
    } else {
        format!("icmpv6.type == 128 && frame.interface_name == \"{interface}\"")
    };
    loop {
        // The answers do not matter, only that the request crossed.
        let _ = node.output("ping", &ping);
        if captured(capture, &filter) > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "dumpcap on {interface} recorded none of 10 s of pings; the capture holds:\n{}",
            tshark_while_written(&capture.file, &["-c", "20"])
        );
    }
}

/// How many packets of `capture`'s file, which dumpcap may be writing,
/// match the display filter `filter`.
fn captured(capture: &Capture, filter: &str) -> usize {
    tshark_while_written(
        &capture.file,
        &["-Y", filter, "-T", "fields", "-e", "frame.number"],
    )
    .lines()
    .count()
}

/// What tshark prints of `file` with `args`, the file perhaps still being
/// written: its last packet may then be cut short, which tshark reports
/// and fails on; what it printed of the packets before it stands.
fn tshark_while_written(file: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .expect("tshark runs (scripts/test-deps.sh installs it)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits (up to 30 s) until `capture`'s file, which dumpcap is writing in
/// `node`, holds `at_least` packets matching the display filter `filter`.
/// dumpcap writes packets some time after they cross (the kernel hands
/// them over in blocks, on a timer), and a capture stopped before then
/// loses them.
pub fn wait_captured(node: &Node, capture: &Capture, filter: &str, at_least: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = captured(capture, filter);
        if found >= at_least {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{found} packets of {filter} in {} after 30 s; the interface at the start:\n{}\nand now:\n{}\ndumpcap said: {}\nthe capture holds:\n{}",
            capture.file.display(),
            capture.counters_at_start,
            interface_counters(node, &capture.interfaces),
            std::fs::read_to_string(capture.file.with_extension("log")).unwrap_or_default(),
            tshark_while_written(&capture.file, &["-c", "20"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stops a capture of [`capture`], its file written whole.
pub fn end_capture(capture: Capture) {
    capture.dumpcap.signal(Signal::SIGTERM).unwrap();
    capture.dumpcap.wait_timeout(Duration::from_secs(10)).unwrap();
}

/// `scps gateway` running in a node, with what it prints.
pub struct GatewayProcess {
    process: Process,
    stdout: RefCell<BufReader<ChildStdout>>,
}

impl GatewayProcess {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

pub fn start(node: &Node, config: &Path) -> GatewayProcess {
    start_with(node, config, &[])
}

/// `scps gateway --config CONFIG ARGS...` in `node`.
pub fn start_with(node: &Node, config: &Path, args: &[&std::ffi::OsStr]) -> GatewayProcess {
    let mut all = vec!["gateway".as_ref(), "--config".as_ref(), config.as_os_str()];
    all.extend_from_slice(args);
    let process = node.spawn(SCPS, &all, Output::Piped).unwrap();
    let stdout = process.take_stdout().expect("the gateway's output is piped");
    GatewayProcess {
        process,
        stdout: RefCell::new(BufReader::new(stdout)),
    }
}

/// Whether the gateway's nftables table is in `node`'s namespace.
pub fn intercepting(node: &Node) -> bool {
    node.output("nft", &["list", "table", "inet", "scps_gateway_7301"])
        .is_ok()
}

/// Waits until each gateway says it is ready (it installs its rules, and
/// says so, once everything else runs); fails with what one printed if it
/// exits instead.
pub fn wait_ready(gateways: &[(&Node, &GatewayProcess)]) {
    for (node, gateway) in gateways {
        let mut stdout = gateway.stdout.borrow_mut();
        let mut printed = String::new();
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let status = gateway.process.wait_timeout(Duration::from_secs(5)).unwrap();
                panic!("the gateway in {} exited ({status:?}): {printed}", node.name());
            }
            if line.starts_with("scps gateway: ready") {
                break;
            }
            printed.push_str(&line);
        }
    }
}

/// Sends SIGHUP and waits for the gateway's answer: the line that says it
/// reloaded, or why it refused.
pub fn reload(gateway: &GatewayProcess) -> String {
    gateway.process.signal(Signal::SIGHUP).unwrap();
    let mut stdout = gateway.stdout.borrow_mut();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the gateway exited");
        if line.starts_with("scps gateway: reload") {
            return line;
        }
    }
}

/// The number of connections a gateway's stop line counts as `what`
/// ("closed", "reset").
pub fn count(summary: &str, what: &str) -> u64 {
    let pattern = if what == "closed" {
        "connections closed "
    } else {
        ", reset "
    };
    summary
        .split(pattern)
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {what} count in {summary:?}"))
}

/// Stops a gateway with SIGTERM; what it printed since it was ready.
pub fn stop(gateway: &GatewayProcess) -> String {
    gateway.process.signal(Signal::SIGTERM).unwrap();
    let mut printed = String::new();
    gateway.stdout.borrow_mut().read_to_string(&mut printed).unwrap();
    let status = gateway.process.wait_timeout(Duration::from_secs(15)).unwrap();
    assert!(status.is_some_and(|s| s.success()), "exit {status:?}: {printed}");
    printed
}

/// A digest server (`common::digest_server`) listening on `at` in the
/// testbed's server node, answering with `download`.
pub fn serve_digest(
    testbed: &Testbed,
    at: &'static str,
    download: Vec<u8>,
) -> std::thread::JoinHandle<std::net::SocketAddr> {
    let listener = testbed
        .node("server")
        .unwrap()
        .run(move || std::net::TcpListener::bind(at))
        .unwrap();
    super::digest_server(listener, download)
}

/// Kills a gateway with SIGKILL, as a crash or the OOM killer would: it
/// cleans nothing up.
pub fn kill(gateway: &GatewayProcess) {
    gateway.process.kill().unwrap();
}

/// Nothing of the transparent mode is left in `node`.
pub fn assert_nothing_installed(node: &Node) {
    assert!(
        !intercepting(node),
        "the nftables table is gone in {}",
        node.name()
    );
    for family in ["-4", "-6"] {
        let rules = node.ip(&[family, "rule"]).unwrap();
        assert!(
            !rules.contains("lookup 153") && !rules.contains("lookup 154"),
            "{rules}"
        );
    }
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
pub fn start_pair(testbed: &Testbed, dir: &TempDir) -> (GatewayProcess, GatewayProcess) {
    start_pair_with(testbed, dir, "")
}

/// Both gateways of the topology running, mirrored, with `extra` in both
/// configurations (as `config_with`).
pub fn start_pair_with(testbed: &Testbed, dir: &TempDir, extra: &str) -> (GatewayProcess, GatewayProcess) {
    let gw_a = testbed.node("gwA").unwrap();
    let gw_b = testbed.node("gwB").unwrap();
    let a = start(
        gw_a,
        &config_with(dir, "a.toml", "10.99.1.0/24", "10.99.4.0/24", extra),
    );
    let b = start(
        gw_b,
        &config_with(dir, "b.toml", "10.99.4.0/24", "10.99.1.0/24", extra),
    );
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    (a, b)
}
