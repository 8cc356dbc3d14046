//! Network namespaces for tests, owned by the test process: each is made
//! by a thread that unshares its network namespace, and kept alive only by
//! an open file of that namespace. When the test ends (passing, panicking
//! or killed) the file closes and the kernel removes the namespace with
//! everything in it (veth pairs, TUN devices, routes): nothing to clean up,
//! nothing left behind.
//!
//! Work runs in a namespace on threads that join it with `setns`
//! (namespaces are per thread); commands started from such a thread, like
//! `ip`, run in it too.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::thread::JoinHandle;

use nix::sched::{CloneFlags, setns, unshare};

/// Without root, runs test `name` of this test binary again inside a user
/// namespace of its own (where we are root: network namespaces, veth pairs
/// and TUN devices are ours to make) and returns true once it has passed;
/// as root, returns false and the caller goes on. CI runs as root; a
/// developer's `cargo test interop` takes this path.
pub fn in_user_namespace(name: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let status = Command::new("unshare")
        .args(["--user", "--map-root-user", "--"])
        .arg(exe)
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .status()
        .expect("unshare (util-linux) runs");
    assert!(
        status.success(),
        "{name} failed in a user namespace (it needs unprivileged user namespaces \
         and a /dev/net/tun open to all, as Debian has it)"
    );
    true
}

#[derive(Debug)]
pub struct Namespace {
    name: &'static str,
    file: File,
}

impl Namespace {
    /// A new, empty namespace with its loopback up.
    pub fn new(name: &'static str) -> Namespace {
        let file = std::thread::spawn(|| {
            unshare(CloneFlags::CLONE_NEWNET).expect(
                "unshare(CLONE_NEWNET) failed: namespace tests need root (CI runs as root) \
                 or a user namespace (`unshare -r cargo test`)",
            );
            File::open("/proc/thread-self/ns/net").expect("open the new namespace")
        })
        .join()
        .expect("namespace thread");
        let ns = Namespace { name, file };
        ns.ip("link set lo up");
        ns
    }

    /// A path other processes can open to join the namespace.
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.file.as_raw_fd())
    }

    /// Runs `f` on a new thread inside the namespace.
    pub fn spawn<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> JoinHandle<R> {
        let file = self.file.try_clone().expect("duplicate the namespace file");
        std::thread::spawn(move || {
            setns(&file, CloneFlags::CLONE_NEWNET).expect("setns into the test namespace");
            drop(file);
            f()
        })
    }

    /// Runs `program ARGS` inside the namespace; panics with its output if
    /// it fails.
    pub fn run(&self, program: &'static str, args: &str) -> String {
        let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        let name = self.name;
        self.spawn(move || {
            let output = Command::new(program)
                .args(&args)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {program} (is it installed?): {e}"));
            assert!(
                output.status.success(),
                "[{name}] {program} {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .join()
        .expect("command thread")
    }

    pub fn ip(&self, args: &str) -> String {
        self.run("ip", args)
    }

    /// Sets a network sysctl of this namespace, e.g.
    /// `net.ipv4.ip_forward=1` (written from inside it: /proc/sys/net
    /// shows the namespace of the thread that opens it).
    pub fn sysctl(&self, setting: &str) {
        let (key, value) = setting.split_once('=').expect("KEY=VALUE");
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let value = value.to_owned();
        self.spawn(move || std::fs::write(&path, value).unwrap_or_else(|e| panic!("{path}: {e}")))
            .join()
            .expect("sysctl thread");
    }
}

/// Joins `a` and `b` with a veth pair named `a_if` (in `a`) and `b_if`
/// (in `b`), both up.
pub fn veth(a: &Namespace, a_if: &str, b: &Namespace, b_if: &str) {
    a.ip(&format!(
        "link add {a_if} type veth peer name {b_if} netns {}",
        b.path()
    ));
    a.ip(&format!("link set {a_if} up"));
    b.ip(&format!("link set {b_if} up"));
}
