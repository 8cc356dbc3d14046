//! Nothing outlives a testbed: not its namespaces, not their interfaces,
//! not the processes started in its nodes, whether the program that built
//! it returns an error, panics, is interrupted (Ctrl-C) or killed.
//!
//! Each case runs this test binary again as a child in "holder" mode
//! (`SCPS_TESTBED_HOLDER`): it builds a topology, starts `sleep` in a
//! node, prints what it made, and ends the way the case says; the parent
//! then checks that none of it is left.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scps_testbed::{EMU, Output, Testbed, Topology};

const MODE: &str = "SCPS_TESTBED_HOLDER";

/// The cases run one at a time. A namespace's id is its inode number,
/// which the kernel hands out again once the namespace is gone: a sibling
/// case creating namespaces while another checks that its own are gone
/// could be given one of those numbers, and look like a leak.
fn one_case_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static CASES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A failed case leaves nothing running: the poison means nothing.
    CASES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How the holder ends.
fn hold(mode: &str) -> Result<(), scps_testbed::Error> {
    if mode == "unprivileged" {
        return carry_a_datagram();
    }
    let testbed = Testbed::build(Topology::with_gateways())?;
    let mut namespaces = Vec::new();
    for node in &testbed.topology().nodes {
        namespaces.push(testbed.node(node)?.namespace_id()?);
    }
    let sleeper = testbed.node("server")?.spawn("sleep", &["120"], Output::Null)?;
    println!(
        "HOLDING pid={} namespaces={}",
        sleeper.pid(),
        namespaces.join(",")
    );
    if mode == "killed-at-once" {
        // Killed the moment the process is started: its death signal
        // must already be armed.
        kill(Pid::this(), Signal::SIGKILL).expect("kill itself");
    }
    if mode == "error" || mode == "panic" {
        // Fail only once the test has seen what was made (a line on
        // stdin), or it could be gone before the test looks.
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).ok();
    }
    match mode {
        "error" => {
            // An error on the way out: `?` drops the testbed.
            testbed.node(EMU)?.ip(&["link", "set", "nonexistent", "up"])?;
            Ok(())
        }
        "panic" => panic!("holder panics as asked"),
        _ => {
            // Wait to be interrupted or killed.
            std::thread::sleep(Duration::from_secs(120));
            Ok(())
        }
    }
}

/// Builds the direct topology and sends a datagram from client to server.
fn carry_a_datagram() -> Result<(), scps_testbed::Error> {
    let testbed = Testbed::build(Topology::direct())?;
    let server = testbed
        .node("server")?
        .run(|| UdpSocket::bind("10.99.2.2:5000"))
        .unwrap();
    server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let client = testbed
        .node("client")?
        .run(|| UdpSocket::bind("10.99.1.2:0"))
        .unwrap();
    client.send_to(b"unprivileged", "10.99.2.2:5000").unwrap();
    let mut buf = [0u8; 32];
    let (n, _) = server.recv_from(&mut buf).unwrap();
    println!("CARRIED {}", String::from_utf8_lossy(&buf[..n]));
    Ok(())
}

#[test]
fn holder() {
    if let Ok(mode) = std::env::var(MODE) {
        let outcome = hold(&mode);
        println!("HOLDER ENDED {outcome:?}");
        outcome.expect("holder");
    }
}

/// What a holder made, from its first line.
struct Made {
    sleeper: i32,
    namespaces: Vec<String>,
}

fn start_holder(mode: &str) -> (Child, Made) {
    // Through `env --default-signal=INT`, which execs the holder (same
    // process) with Ctrl-C's default action: a test run started in the
    // background by a shell inherits SIGINT ignored, and a holder that
    // ignored it would outlive the Ctrl-C case.
    let mut child = Command::new("env")
        .arg("--default-signal=INT")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "holder", "--nocapture", "--test-threads=1"])
        .env(MODE, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start holder");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .find_map(|l| {
            // The harness prints `test holder ... ` before it.
            let l = l.ok()?;
            l.find("HOLDING").map(|at| l[at..].to_owned())
        })
        .expect("holder reports what it made");
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .to_owned()
    };
    let made = Made {
        sleeper: field("pid=").parse().unwrap(),
        namespaces: field("namespaces=").split(',').map(String::from).collect(),
    };
    assert_eq!(made.namespaces.len(), 5, "{line}");
    // Keep reading so that the holder never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, made)
}

/// Lets a holder in "error" or "panic" mode go on and fail.
fn go(child: &mut Child) {
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("holder's stdin");
    stdin.write_all(b"go\n").expect("holder reads its stdin");
}

/// Whether process `pid` runs (a zombie no longer holds anything).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// Every namespace any process on the machine is in or holds open.
fn namespaces_in_use() -> Vec<String> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let dir = entry.path();
        for sub in ["task", "fd"] {
            let Ok(items) = std::fs::read_dir(dir.join(sub)) else {
                continue;
            };
            for item in items.flatten() {
                let link = if sub == "task" {
                    item.path().join("ns/net")
                } else {
                    item.path()
                };
                if let Ok(target) = std::fs::read_link(link) {
                    found.push(target.to_string_lossy().into_owned());
                }
            }
        }
    }
    found
}

/// Waits (up to a deadline) until nothing the holder made is left.
fn assert_nothing_left(made: &Made, case: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sleeper_runs = running(made.sleeper);
        let in_use = namespaces_in_use();
        let leaked: Vec<&String> = made.namespaces.iter().filter(|n| in_use.contains(n)).collect();
        if !sleeper_runs && leaked.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{case}: left behind: sleeper running {sleeper_runs}, namespaces {leaked:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The interfaces lived only in those namespaces; none reached ours.
    let ours = Command::new("ip").args(["-br", "link"]).output().unwrap();
    let ours = String::from_utf8_lossy(&ours.stdout);
    for name in ["a0", "b0", "lan0", "sat0"] {
        assert!(
            !ours.lines().any(|l| l.starts_with(&format!("{name}@"))),
            "{case}: {name} in {ours}"
        );
    }
}

#[test]
fn nothing_left_after_an_error() {
    let _one = one_case_at_a_time();
    let (mut child, made) = start_holder("error");
    assert!(running(made.sleeper));
    go(&mut child);
    assert!(!child.wait().unwrap().success());
    assert_nothing_left(&made, "error");
}

#[test]
fn nothing_left_after_a_panic() {
    let _one = one_case_at_a_time();
    let (mut child, made) = start_holder("panic");
    go(&mut child);
    assert!(!child.wait().unwrap().success());
    assert_nothing_left(&made, "panic");
}

#[test]
fn nothing_left_after_ctrl_c_or_kill() {
    let _one = one_case_at_a_time();
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let (mut child, made) = start_holder("wait");
        assert!(running(made.sleeper));
        assert!(namespaces_in_use().contains(&made.namespaces[0]));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        assert!(!child.wait().unwrap().success());
        assert_nothing_left(&made, &format!("{signal:?}"));
    }
}

#[test]
fn nothing_left_when_killed_the_moment_a_process_starts() {
    let _one = one_case_at_a_time();
    for _ in 0..5 {
        let (mut child, made) = start_holder("killed-at-once");
        assert!(!child.wait().unwrap().success());
        assert_nothing_left(&made, "killed at once");
    }
}

#[test]
fn works_without_root_inside_a_user_namespace() {
    let _one = one_case_at_a_time();
    // As user `nobody`, in a user namespace of its own (as `scps` runs
    // when not started as root).
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["unshare", "--user", "--map-root-user", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "holder", "--nocapture", "--test-threads=1"])
        .env(MODE, "unprivileged")
        .output()
        .expect("run setpriv");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("CARRIED unprivileged"),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
