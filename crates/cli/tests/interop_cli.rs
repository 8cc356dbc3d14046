//! `scps send` and `scps recv` on the routed path, between two network
//! namespaces joined by a veth pair: our stack on TUN devices at both
//! ends, and our stack against the kernel's TCP (`scps recv --tcp`), the
//! interoperation crates/net/tests/interop_kernel.rs checks, as a user
//! runs it, with both ends' captures (`--pcap`) read by tshark. The
//! namespaces are named after this process and removed when the test
//! ends, also on panic.
//!
//! As root (CI) they run as they are; otherwise each runs itself again in
//! a user namespace of its own, with a private /run for `ip netns`.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A capture file of this test, removed when dropped.
struct Capture(PathBuf);

impl Capture {
    fn new(name: &str) -> Capture {
        Capture(std::env::temp_dir().join(format!("scps-interop-{name}-{}.pcap", std::process::id())))
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary directory")
    }

    /// Asserts that tshark reads it cleanly and returns its SYN and
    /// SYN-ACK: (is a SYN-ACK, carries the SCPS capabilities option).
    fn checked_syns(&self) -> Vec<(bool, bool)> {
        common::assert_capture_clean(&self.0, 10);
        common::syns(&self.0)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Without root, runs test `name` again inside a user and mount namespace
/// of its own (root there; a fresh /run so that `ip netns` may create its
/// mounts) and returns true once it has passed; as root, returns false.
fn in_user_namespace(name: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let status = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--net",
            "--mount",
            "--propagation",
            "private",
            "--",
        ])
        .args(["sh", "-c", "mount -t tmpfs scps-run /run && exec \"$0\" \"$@\""])
        .arg(exe)
        .args([name, "--exact", "--nocapture"])
        .status()
        .expect("unshare (util-linux) runs");
    assert!(
        status.success(),
        "{name} failed in a user namespace (it needs unprivileged user namespaces \
         and a /dev/net/tun open to all, as Debian has it)"
    );
    true
}

/// Two namespaces, `a` (10.88.0.1, our prefix 10.89.1.0/24) and `b`
/// (10.88.0.2, our prefix 10.89.2.0/24), each forwarding to the other's.
struct Pair {
    a: String,
    b: String,
}

fn ip(args: &str) {
    let output = Command::new("ip")
        .args(args.split_whitespace())
        .output()
        .expect("iproute2 is installed");
    assert!(
        output.status.success(),
        "ip {args}: {} (these tests need root; CI runs as root)",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let pair = Pair {
            a: format!("scps{}{tag}a", std::process::id()),
            b: format!("scps{}{tag}b", std::process::id()),
        };
        let (a, b) = (&pair.a, &pair.b);
        ip(&format!("netns add {a}"));
        ip(&format!("netns add {b}"));
        ip(&format!(
            "link add veth-a netns {a} type veth peer name veth-b netns {b}"
        ));
        for (ns, dev, addr, other, via) in [
            (a, "veth-a", "10.88.0.1/24", "10.89.2.0/24", "10.88.0.2"),
            (b, "veth-b", "10.88.0.2/24", "10.89.1.0/24", "10.88.0.1"),
        ] {
            ip(&format!("-n {ns} link set lo up"));
            ip(&format!("-n {ns} addr add {addr} dev {dev}"));
            ip(&format!("-n {ns} link set {dev} up"));
            ip(&format!("-n {ns} route add {other} via {via}"));
            let status = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "sh",
                    "-c",
                    "echo 1 > /proc/sys/net/ipv4/ip_forward",
                ])
                .status()
                .unwrap();
            assert!(status.success());
        }
        pair
    }

    /// `scps ARGS` in namespace `ns`.
    fn scps(&self, ns: &str, args: &[&str]) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_scps")])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Runs `scps recv ... --once --json` in `a` and `scps send ... --json` in
/// `b`; returns both outputs.
fn transfer(pair: &Pair, recv: &[&str], send: &[&str]) -> (Output, Output) {
    let mut args = vec!["recv", "--once", "--json"];
    args.extend(recv);
    let mut receiver = pair.scps(&pair.a, &args).spawn().unwrap();
    // The receiver says where it listens once it does.
    let mut stderr = std::io::BufReader::new(receiver.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(line.contains("listening"), "scps recv said {line:?}");
    let mut args = vec!["send", "--json", "--connect-timeout", "10s"];
    args.extend(send);
    let sender = pair.scps(&pair.b, &args).output().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while receiver.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "scps recv did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut received = receiver.wait_with_output().unwrap();
    std::io::Read::read_to_end(&mut stderr, &mut received.stderr).unwrap();
    (received, sender)
}

fn json(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

#[test]
fn interop_cli_bulk_between_our_stacks_over_tun_devices() {
    if in_user_namespace("interop_cli_bulk_between_our_stacks_over_tun_devices") {
        return;
    }
    let pair = Pair::new("t");
    let (recv_capture, send_capture) = (Capture::new("recv-t"), Capture::new("send-t"));
    let (received, sent) = transfer(
        &pair,
        &[
            "--tun",
            "scps0",
            "--addr",
            "10.89.1.1/24",
            "--pcap",
            recv_capture.arg(),
        ],
        &[
            "10.89.1.1:5001",
            "--tun",
            "scps0",
            "--addr",
            "10.89.2.1/24",
            "--bytes",
            "20MB",
            "--pcap",
            send_capture.arg(),
        ],
    );
    let (received, sent) = (json(&received), json(&sent));
    assert_eq!(sent["protocol"], "scps-tun");
    assert_eq!(sent["scps"], true, "two of ours negotiate SCPS-TP");
    assert_eq!(sent["verified"], true);
    assert_eq!(received["bytes"], 20_000_000);
    assert_eq!(received["sha256"], sent["sha256"]);
    for capture in [&recv_capture, &send_capture] {
        assert_eq!(
            capture.checked_syns(),
            [(false, true), (true, true)],
            "SYN and SYN-ACK offer SCPS-TP"
        );
    }
}

#[test]
fn interop_cli_our_stack_sends_messages_to_kernel_tcp() {
    if in_user_namespace("interop_cli_our_stack_sends_messages_to_kernel_tcp") {
        return;
    }
    let pair = Pair::new("k");
    let capture = Capture::new("send-k");
    let (received, sent) = transfer(
        &pair,
        &["--tcp"],
        &[
            "10.88.0.1:5001",
            "--pcap",
            capture.arg(),
            "--tun",
            "scps0",
            "--addr",
            "10.89.2.1/24",
            "--messages",
            "--size",
            "64",
            "--rate",
            "51.2kbit",
            "--duration",
            "1s",
            "--two-way",
        ],
    );
    let (received, sent) = (json(&received), json(&sent));
    // 64-byte messages at 51.2 kbit/s for 1 s: 100 each way.
    assert_eq!(received["protocol"], "tcp");
    assert!(
        received["retransmitted_bytes"].is_u64(),
        "the kernel's count (tcp_info): {received}"
    );
    assert_eq!(sent["scps"], false, "the kernel ignores our offer: plain TCP");
    assert_eq!(received["messages"], 100, "{received}");
    assert_eq!(sent["messages"], 100, "{sent}");
    assert_eq!(sent["reverse"]["messages"], 100, "{sent}");
    assert_eq!(
        capture.checked_syns(),
        [(false, true), (true, false)],
        "our SYN offers SCPS-TP, the kernel's SYN-ACK ignores it"
    );
}

#[test]
fn interop_cli_kernel_tcp_sends_a_file_to_our_stack() {
    if in_user_namespace("interop_cli_kernel_tcp_sends_a_file_to_our_stack") {
        return;
    }
    let pair = Pair::new("f");
    let capture = Capture::new("recv-f");
    let (received, sent) = transfer(
        &pair,
        &[
            "--tun",
            "scps0",
            "--addr",
            "10.89.1.1/24",
            "--pcap",
            capture.arg(),
        ],
        &["10.89.1.1:5001", "--tcp", "--bytes", "5MB"],
    );
    let (received, sent) = (json(&received), json(&sent));
    assert_eq!(received["protocol"], "scps-tun");
    assert_eq!(sent["protocol"], "tcp");
    assert!(
        sent["retransmitted_bytes"].is_u64(),
        "the kernel's count (tcp_info): {sent}"
    );
    assert_eq!(received["scps"], false, "a kernel SYN offers no SCPS: plain TCP");
    assert_eq!(received["verified"], true);
    assert_eq!(received["sha256"], sent["sha256"]);
    assert_eq!(
        capture.checked_syns(),
        [(false, false), (true, false)],
        "we answer a plain SYN with a plain SYN-ACK"
    );
}

#[test]
fn interop_cli_raw_bytes_from_our_stack_to_a_kernel_listener() {
    if in_user_namespace("interop_cli_raw_bytes_from_our_stack_to_a_kernel_listener") {
        return;
    }
    let pair = Pair::new("r");
    // Plain bytes from our stack on a TUN device to the kernel's TCP: the
    // receiver only reads a socket, as any application would.
    let (received, sent) = transfer(
        &pair,
        &["--tcp", "--raw"],
        &[
            "10.88.0.1:5001",
            "--tun",
            "scps0",
            "--addr",
            "10.89.2.1/24",
            "--raw",
            "--bytes",
            "3MB",
        ],
    );
    let (received, sent) = (json(&received), json(&sent));
    assert_eq!(received["protocol"], "tcp");
    assert_eq!(sent["protocol"], "scps-tun");
    assert_eq!(sent["scps"], false, "the kernel answers plain TCP");
    assert_eq!(received["bytes"], 3_000_000);
    assert_eq!(received["sha256"], sent["sha256"]);
}
