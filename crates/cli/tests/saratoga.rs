//! `scps saratoga` as a user runs it on loopback: a server of a
//! directory, and put, get, ls and rm against it; the files compared by
//! SHA-256, the refusals of paths outside the served directory, the JSON
//! reports, IPv6, a capture tshark reads, pacing, an unreachable peer.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, wait};
use rand::{Rng, SeedableRng};
use sha2::Digest;

fn scps() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scps"))
}

/// Client commands, which take a local port.
const CLIENTS: [&str; 4] = ["put", "get", "ls", "rm"];

/// `ARGS`, with `--local-port 0` if they are a client's without one: a
/// client takes UDP port 7542 when it is free, and one test needs it
/// free while the others run beside it.
fn ephemeral(args: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let client = args.first().is_some_and(|a| CLIENTS.contains(&a.as_str()));
    if client && !args.iter().any(|a| a == "--local-port") {
        args.extend(["--local-port".into(), "0".into()]);
    }
    args
}

/// `scps saratoga ARGS...` run to its end (at most a minute), a client
/// on a port the system picks unless ARGS say: status, stdout, stderr.
fn saratoga(args: &[&str]) -> (ExitStatus, String, String) {
    saratoga_as_given(&ephemeral(args).iter().map(String::as_str).collect::<Vec<_>>())
}

/// `scps saratoga ARGS...` exactly as given, run to its end (at most a
/// minute): status, stdout, stderr.
fn saratoga_as_given(args: &[&str]) -> (ExitStatus, String, String) {
    let mut child = scps()
        .arg("saratoga")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scps saratoga starts");
    let status = wait(&mut child, Duration::from_secs(60));
    let output = child.wait_with_output().unwrap();
    (
        status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A running `scps saratoga serve`, killed if the test fails first.
struct Server {
    child: Option<Child>,
    /// Where it listens, as a client names it (`127.0.0.1:PORT`), and
    /// the second address if it listens on two.
    addr: String,
    second_addr: Option<String>,
    /// Its event lines (stdout), as it prints them.
    lines: std::sync::mpsc::Receiver<String>,
    /// Those read so far.
    seen: Vec<String>,
}

impl Server {
    fn start(dir: &Path, args: &[&str]) -> Server {
        let mut command = scps();
        command.args(["saratoga", "serve"]).arg(dir).args(args);
        Server::run(command)
    }

    /// The server `command` starts.
    fn run(mut command: Command) -> Server {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scps saratoga serve starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut listening = String::new();
        stderr.read_line(&mut listening).unwrap();
        assert!(
            listening.contains("listening"),
            "scps saratoga serve said: {listening:?}"
        );
        let mut addrs = listening
            .split("UDP ")
            .skip(1)
            .map(|rest| rest.split([',', ' ']).next().unwrap().to_owned());
        let addr = addrs.next().expect("a UDP address");
        let second_addr = addrs.next();
        // Its later lines are not read: keep the pipe from filling.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child: Some(child),
            addr,
            second_addr,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (up to `limit`) for an event line containing `needle`.
    fn wait_for_line(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?} within {limit:?}: {:?}", self.seen),
            }
        }
    }

    /// Stops it as Ctrl-C would; its status and stdout (the event lines).
    fn stop(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let status = wait(&mut child, Duration::from_secs(10));
        // The reader ends with its output.
        self.seen.extend(self.lines.iter());
        let stdout = self.seen.iter().map(|line| format!("{line}\n")).collect();
        (status, stdout)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `len` random bytes in `path`, from a seed printed (SCPS_TEST_SEED
/// replays one).
/// `scps saratoga put FILE TO --rate 8Mbit EXTRA...`, its output piped:
/// 1 MB takes about 1 s, time to act while it is under way.
fn paced_put(file: &Path, to: &str, extra: &[&str]) -> Child {
    let mut args = vec!["put", file.to_str().unwrap(), to, "--rate", "8Mbit"];
    args.extend_from_slice(extra);
    scps()
        .arg("saratoga")
        .args(ephemeral(&args))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to 10 s) until the range log `log` of a partial file shows
/// data arriving: ten ranges written.
fn wait_for_data(log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(log).map_or(0, |l| l.lines().count()) < 10 {
        assert!(Instant::now() < deadline, "no data arrived within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn random_file(path: &Path, len: usize) {
    let seed = std::env::var("SCPS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!(
        "seed {seed} (SCPS_TEST_SEED={seed} replays it) for {}",
        path.display()
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut bytes = vec![0; len];
    rng.fill_bytes(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {text}"))
}

/// A served directory and a client's directory under one temporary one.
fn dirs(name: &str) -> (TempDir, PathBuf, PathBuf) {
    let tmp = TempDir::new(name);
    let (served, here) = (tmp.path().join("served"), tmp.path().join("here"));
    std::fs::create_dir_all(&served).unwrap();
    std::fs::create_dir_all(&here).unwrap();
    (tmp, served, here)
}

#[test]
fn a_put_of_5_mb_arrives_whole_and_verified_with_its_json_report() {
    let (_tmp, served, here) = dirs("saratoga-put");
    let file = here.join("random.bin");
    random_file(&file, 5_000_000);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0", "--json"]);
    let to = format!("{}:inbox/random.bin", server.addr);
    let (status, stdout, stderr) =
        saratoga(&["put", file.to_str().unwrap(), &to, "--rate", "1Gbit", "--json"]);
    assert!(status.success(), "put: {stdout}{stderr}");
    let report = json(&stdout);
    let arrived = served.join("inbox/random.bin");
    assert_eq!(sha256(&arrived), sha256(&file));
    assert_eq!(report["sha256"], sha256(&file));
    assert_eq!(report["verified"], true);
    assert_eq!(report["bytes"], 5_000_000);
    for field in ["duration_s", "goodput_bps", "retransmitted_bytes", "cpu_user_s"] {
        assert!(report[field].is_number(), "{field} in {report}");
    }
    assert!(report["drops"]["unknown_session"].is_number(), "{report}");

    let (status, events) = server.stop();
    assert!(status.success(), "serve ends with status 0 on Ctrl-C: {status}");
    let events: Vec<serde_json::Value> = events.lines().map(json).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["started", "completed"], "{events:?}");
    assert_eq!(events[1]["name"], "inbox/random.bin");
    assert_eq!(events[1]["bytes"], 5_000_000);
}

#[test]
fn a_get_fetches_a_file_and_overwrites_only_with_force() {
    let (_tmp, served, here) = dirs("saratoga-get");
    random_file(&served.join("data.bin"), 300_000);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let from = format!("{}:data.bin", server.addr);
    let into = here.join("copy.bin");
    let (status, stdout, stderr) = saratoga(&["get", &from, into.to_str().unwrap()]);
    assert!(status.success(), "get: {stdout}{stderr}");
    assert_eq!(sha256(&into), sha256(&served.join("data.bin")));
    assert!(stdout.contains("verified"), "{stdout}");
    assert!(
        !here.join(".saratoga").exists(),
        "no partial directory left behind"
    );

    let (status, _, stderr) = saratoga(&["get", &from, into.to_str().unwrap()]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("exists: give --force"), "{stderr}");
    std::fs::write(&into, b"old").unwrap();
    let (status, stdout, stderr) = saratoga(&["get", &from, into.to_str().unwrap(), "--force"]);
    assert!(status.success(), "get --force: {stdout}{stderr}");
    assert_eq!(sha256(&into), sha256(&served.join("data.bin")));
    // Into a directory: under the remote name.
    let (status, stdout, stderr) = saratoga(&["get", &from, here.to_str().unwrap()]);
    assert!(status.success(), "get into a directory: {stdout}{stderr}");
    assert_eq!(sha256(&here.join("data.bin")), sha256(&into));
    // The client's last STATUS reached the server: its end completed too.
    let (_, events) = server.stop();
    let completed = events.lines().filter(|l| l.starts_with("completed send")).count();
    assert_eq!(completed, 3, "{events}");
}

#[test]
fn ls_lists_and_rm_deletes() {
    let (_tmp, served, _here) = dirs("saratoga-ls");
    std::fs::create_dir_all(served.join("logs")).unwrap();
    std::fs::write(served.join("logs/a.log"), b"12345").unwrap();
    std::fs::write(served.join("top.txt"), b"x").unwrap();
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);

    let (status, stdout, stderr) = saratoga(&["ls", &server.addr]);
    assert!(status.success(), "ls: {stdout}{stderr}");
    assert!(stdout.contains("logs/") && stdout.contains("top.txt"), "{stdout}");
    assert!(!stdout.contains(".saratoga"), "{stdout}");
    let (status, stdout, stderr) = saratoga(&["ls", &format!("{}:logs", server.addr), "--json"]);
    assert!(status.success(), "ls --json: {stdout}{stderr}");
    let entries = &json(&stdout)["entries"];
    assert_eq!(entries[0]["name"], "a.log", "{entries}");
    assert_eq!(entries[0]["size"], 5, "{entries}");

    // A file is not a directory, and the error says so.
    let (status, _, stderr) = saratoga(&["ls", &format!("{}:top.txt", server.addr)]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("\"top.txt\" is not a directory"), "{stderr}");

    let (status, stdout, stderr) = saratoga(&["rm", &format!("{}:logs/a.log", server.addr)]);
    assert!(status.success(), "rm: {stdout}{stderr}");
    assert!(!served.join("logs/a.log").exists());
    let (status, _, stderr) = saratoga(&["rm", &format!("{}:logs/a.log", server.addr)]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("file not found (4)"), "{stderr}");
}

#[test]
fn paths_outside_the_served_directory_are_refused_with_their_error_code() {
    let (tmp, served, here) = dirs("saratoga-outside");
    std::fs::write(tmp.path().join("secret"), b"outside").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret"), served.join("escape")).unwrap();
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    for (path, error) in [
        ("missing", "file not found (4)"),
        ("../secret", "access denied (5)"),
        ("../../../../etc/passwd", "access denied (5)"),
        ("escape", "access denied (5)"),
        // Absolute names count from the served directory.
        ("/etc/passwd", "file not found (4)"),
    ] {
        let into = here.join("fetched");
        let (status, stdout, stderr) =
            saratoga(&["get", &format!("{}:{path}", server.addr), into.to_str().unwrap()]);
        assert_eq!(status.code(), Some(1), "get {path}: {stdout}{stderr}");
        assert!(stderr.contains(error), "get {path}: {stderr}");
        assert!(stderr.contains(&server.addr), "the peer is named: {stderr}");
        assert!(!into.exists(), "get {path}");
    }
    let (status, _, stderr) = saratoga(&["rm", &format!("{}:escape", server.addr)]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("access denied (5)"), "{stderr}");
    assert!(tmp.path().join("secret").exists());

    let file = here.join("upload");
    std::fs::write(&file, b"climbing").unwrap();
    let (status, _, stderr) = saratoga(&[
        "put",
        file.to_str().unwrap(),
        &format!("{}:../planted", server.addr),
    ]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("access denied (5)"), "{stderr}");
    assert!(!tmp.path().join("planted").exists());
}

#[test]
fn a_server_on_ipv6_and_ipv4_loopback_takes_a_put_on_each() {
    if let Err(e) = std::net::UdpSocket::bind("[::1]:0") {
        panic!(
            "this test needs the IPv6 loopback [::1], which this host lacks ({e}): \
             enable it with `sysctl -w net.ipv6.conf.lo.disable_ipv6=0`"
        );
    }
    let (_tmp, served, here) = dirs("saratoga-ipv6");
    let file = here.join("v6.bin");
    random_file(&file, 200_000);
    let server = Server::start(&served, &["--listen", "[::1]:0", "--listen", "127.0.0.1:0"]);
    assert!(server.addr.starts_with("[::1]:"), "{}", server.addr);
    let (status, stdout, stderr) = saratoga(&["put", file.to_str().unwrap(), &server.addr]);
    assert!(status.success(), "put: {stdout}{stderr}");
    assert_eq!(sha256(&served.join("v6.bin")), sha256(&file));
    let v4 = server.second_addr.clone().expect("a second address");
    let (status, stdout, stderr) = saratoga(&["put", file.to_str().unwrap(), &format!("{v4}:again.bin")]);
    assert!(status.success(), "put over IPv4: {stdout}{stderr}");
    assert_eq!(sha256(&served.join("again.bin")), sha256(&file));
}

#[test]
fn a_capture_is_read_by_tshark_as_udp_to_the_server_port() {
    let (_tmp, served, here) = dirs("saratoga-pcap");
    let file = here.join("small.bin");
    random_file(&file, 30_000);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let port = server.addr.rsplit(':').next().unwrap().to_owned();
    let capture = here.join("put.pcap");
    let (status, stdout, stderr) = saratoga(&[
        "put",
        file.to_str().unwrap(),
        &server.addr,
        "--pcap",
        capture.to_str().unwrap(),
        "--json",
    ]);
    assert!(status.success(), "put: {stdout}{stderr}");
    let report = json(&stdout);
    let output = Command::new("tshark")
        .args([
            "-r",
            capture.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "udp.dstport",
            "-e",
            "udp.srcport",
        ])
        .output()
        .expect("tshark runs: scripts/test-deps.sh installs it");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let to_server = text
        .lines()
        .filter(|l| l.split('\t').next() == Some(port.as_str()))
        .count();
    let from_server = text
        .lines()
        .filter(|l| l.split('\t').nth(1) == Some(port.as_str()))
        .count();
    assert_eq!(
        to_server as u64,
        report["datagrams_sent"].as_u64().unwrap(),
        "{text}"
    );
    assert_eq!(
        from_server as u64,
        report["datagrams_received"].as_u64().unwrap(),
        "{text}"
    );
    assert!(to_server > 20, "{text}");
}

#[test]
fn a_paced_put_keeps_to_its_rate() {
    let (_tmp, served, here) = dirs("saratoga-rate");
    let file = here.join("paced.bin");
    random_file(&file, 2_000_000);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let (status, stdout, stderr) = saratoga(&[
        "put",
        file.to_str().unwrap(),
        &server.addr,
        "--rate",
        "8Mbit",
        "--json",
    ]);
    assert!(status.success(), "put: {stdout}{stderr}");
    let report = json(&stdout);
    let goodput = report["goodput_bps"].as_f64().unwrap();
    assert!(goodput < 1.1 * 8e6, "{goodput} bit/s for --rate 8Mbit");
    assert!(report["duration_s"].as_f64().unwrap() > 1.8, "{report}");
}

#[test]
fn an_unreachable_peer_times_out_with_a_message_naming_it() {
    let (_tmp, _served, here) = dirs("saratoga-unreachable");
    let file = here.join("lost.bin");
    std::fs::write(&file, b"nobody listens").unwrap();
    let port = common::free_udp_port();
    let peer = format!("127.0.0.1:{port}");
    let (status, stdout, stderr) =
        saratoga(&["put", file.to_str().unwrap(), &peer, "--timeout", "2s", "--json"]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains(&format!("no answer from {peer}")), "{stderr}");
    assert!(
        json(&stdout)["error"].as_str().unwrap().contains("--timeout"),
        "{stdout}"
    );
    let (status, _, stderr) = saratoga(&["get", &format!("{peer}:x"), "--timeout", "2s"]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("no answer from {peer}")), "{stderr}");
}

#[test]
fn bad_peers_and_missing_files_are_refused_before_anything_is_sent() {
    common::assert_refused(&["saratoga", "get", "[::1"], "closing ']'");
    common::assert_refused(&["saratoga", "get", "127.0.0.1:7542"], "get needs PEER:PATH");
    common::assert_refused(
        &["saratoga", "put", "/nonexistent/file", "127.0.0.1"],
        "cannot read /nonexistent/file",
    );
    let dir = std::env::temp_dir();
    common::assert_refused(
        &["saratoga", "put", dir.to_str().unwrap(), "127.0.0.1"],
        "is a directory",
    );
    common::assert_refused(
        &["saratoga", "put", "/etc/hostname", "127.0.0.1", "--rate", "fast"],
        "rate",
    );
    common::assert_refused(
        &["saratoga", "serve", "/etc/hostname", "--listen", "127.0.0.1:0"],
        "not a directory: /etc/hostname",
    );
}

#[test]
fn a_put_of_a_device_or_a_fifo_is_refused_before_anything_is_sent() {
    let (_tmp, served, here) = dirs("saratoga-special");
    let fifo = here.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    for file in [Path::new("/dev/zero"), &fifo] {
        // Neither has an end: the put must not hang reading one (nor
        // wait, opening the FIFO, for a writer).
        let (status, stdout, stderr) = saratoga(&[
            "put",
            file.to_str().unwrap(),
            &format!("{}:special", server.addr),
            "--timeout",
            "2s",
        ]);
        assert_eq!(status.code(), Some(2), "{}: {stdout}{stderr}", file.display());
        assert!(stderr.contains("is not a regular file"), "{stderr}");
    }
    let (_, events) = server.stop();
    assert_eq!(events, "", "nothing reached the server");
    assert!(!served.join("special").exists());
}

#[test]
fn the_sha256_of_a_put_covers_the_bytes_sent_even_if_the_file_grows() {
    let (_tmp, served, here) = dirs("saratoga-grows");
    let file = here.join("growing.bin");
    random_file(&file, 1_000_000);
    let sent = sha256(&file);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let mut child = paced_put(&file, &server.addr, &["--json"]);
    // Appended to once data is arriving (1 MB at 8 Mbit/s takes 1 s).
    let log = served.join(".saratoga/partial/growing.bin.ranges");
    wait_for_data(&log);
    let mut appending = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut appending, b"appended after the size was sent").unwrap();
    let status = wait(&mut child, Duration::from_secs(30));
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.success(),
        "put: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = json(&stdout);
    assert_eq!(report["bytes"], 1_000_000, "{report}");
    assert_eq!(report["sha256"], sent, "the bytes sent, not the file now");
    assert_eq!(sha256(&served.join("growing.bin")), sent);
}

#[test]
fn a_put_into_the_servers_partial_files_is_refused_and_logs_nothing() {
    let (_tmp, served, here) = dirs("saratoga-partials");
    let file = here.join("f1");
    std::fs::write(&file, b"planted").unwrap();
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    for name in [".saratoga/partial/q", ".saratoga/zz"] {
        let (status, _, stderr) = saratoga(&[
            "put",
            file.to_str().unwrap(),
            &format!("{}:{name}", server.addr),
            "--timeout",
            "2s",
        ]);
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("access denied (5)"), "{name}: {stderr}");
    }
    let (_, events) = server.stop();
    assert_eq!(events, "", "refused requests print nothing");
    let partials = served.join(".saratoga");
    let left: Vec<_> = walk(&partials);
    assert!(left.is_empty(), "{left:?}");
}

/// The files below `dir` (none if it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.unwrap().path())
        .flat_map(|path| match path.is_dir() {
            true => walk(&path),
            false => vec![path],
        })
        .collect()
}

#[test]
fn an_interrupted_get_leaves_no_file_and_the_next_one_completes() {
    let (_tmp, served, here) = dirs("saratoga-interrupt");
    random_file(&served.join("slow.bin"), 1_000_000);
    let server = Server::start(
        &served,
        &["--listen", "127.0.0.1:0", "--rate", "8Mbit", "--timeout", "3s"],
    );
    let from = format!("{}:slow.bin", server.addr);
    let into = here.join("slow.bin");
    let mut child = scps()
        .arg("saratoga")
        .args(ephemeral(&["get", &from, into.to_str().unwrap()]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once data is arriving: its partial file's range log.
    let log = here.join(".saratoga/partial/slow.bin.ranges");
    wait_for_data(&log);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = wait(&mut child, Duration::from_secs(10));
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(!into.exists(), "an unfinished file must not appear");

    let (status, stdout, stderr) = saratoga(&["get", &from, into.to_str().unwrap()]);
    assert!(status.success(), "get again: {stdout}{stderr}");
    assert_eq!(sha256(&into), sha256(&served.join("slow.bin")));
}

#[test]
fn a_put_appears_under_its_name_only_once_complete() {
    let (_tmp, served, here) = dirs("saratoga-appears");
    let file = here.join("paced.bin");
    random_file(&file, 1_000_000);
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let mut child = paced_put(&file, &server.addr, &[]);
    let log = served.join(".saratoga/partial/paced.bin.ranges");
    wait_for_data(&log);
    assert!(
        !served.join("paced.bin").exists(),
        "a partial file is not under its name"
    );
    let status = wait(&mut child, Duration::from_secs(30));
    assert!(status.success());
    assert_eq!(sha256(&served.join("paced.bin")), sha256(&file));
    assert!(!log.exists(), "the range log is gone once committed");
}

/// A METADATA starting a put of `name` (`size` bytes) in session 1.
fn metadata_frame(name: &str, size: u64) -> Vec<u8> {
    use scps_saratoga::wire::{Checksum, DirEntry, Frame, Metadata, TransferType};
    Frame::Metadata(Metadata {
        descriptor: scps_saratoga::engine::descriptor_for(size),
        transfer_type: TransferType::File,
        terminated: false,
        udp_lite: false,
        session: 1,
        checksum: Checksum::None,
        entry: DirEntry::file(name, size, 0),
    })
    .to_bytes()
    .unwrap()
}

/// The first STATUS error code `socket` receives within 5 s, if any.
fn status_error(socket: &std::net::UdpSocket) -> Option<u8> {
    use scps_saratoga::wire::Frame;
    socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        if let Ok(len) = socket.recv(&mut buf)
            && let Ok(Frame::Status(status)) = Frame::parse(&buf[..len])
            && !status.error.is_success()
        {
            return Some(status.error.0);
        }
    }
    None
}

#[test]
fn a_flood_of_puts_from_strangers_does_not_keep_out_a_peer_that_completed_one() {
    let (_tmp, served, here) = dirs("saratoga-flood");
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let file = here.join("first.bin");
    random_file(&file, 10_000);
    let (status, _, stderr) = saratoga(&["put", file.to_str().unwrap(), &server.addr]);
    assert!(status.success(), "{stderr}");
    // 64 strangers (as spoofed addresses would) each start a put, the
    // server's whole table, and never answer.
    let strangers: Vec<std::net::UdpSocket> = (1..=64u8)
        .map(|i| {
            let socket = std::net::UdpSocket::bind(("127.0.1.".to_owned() + &i.to_string(), 0)).unwrap();
            socket.connect(&server.addr).unwrap();
            socket
                .send(&metadata_frame(&format!("junk{i}"), 1 << 20))
                .unwrap();
            socket
        })
        .collect();
    // A 65th stranger is refused: every place is taken
    // ("receiver not interested", 14).
    let late = std::net::UdpSocket::bind("127.0.1.65:0").unwrap();
    late.connect(&server.addr).unwrap();
    late.send(&metadata_frame("late", 1 << 20)).unwrap();
    assert_eq!(status_error(&late), Some(14));
    // The peer that completed a put gets its next one in.
    let second = here.join("second.bin");
    random_file(&second, 100_000);
    let (status, _, stderr) = saratoga(&["put", second.to_str().unwrap(), &server.addr]);
    assert!(status.success(), "{stderr}");
    assert_eq!(sha256(&served.join("second.bin")), sha256(&second));
    // In the place of the first stranger, who is told so.
    assert_eq!(status_error(&strangers[0]), Some(14));
    drop(strangers);
    server.stop();
}

#[test]
fn the_partial_file_of_an_abandoned_put_is_removed_after_keep_partials() {
    let (_tmp, served, _here) = dirs("saratoga-abandoned");
    let server = Server::start(
        &served,
        &[
            "--listen",
            "127.0.0.1:0",
            "--timeout",
            "2s",
            "--keep-partials",
            "0s",
        ],
    );
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.connect(&server.addr).unwrap();
    sender.send(&metadata_frame("left.bin", 1 << 20)).unwrap();
    let log = served.join(".saratoga/partial/left.bin.ranges");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !log.exists() {
        assert!(Instant::now() < deadline, "the put started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The sender goes silent: after the 2 s timeout the put fails, and
    // its partial file, kept 0 s, is removed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !walk(&served.join(".saratoga")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{:?} left",
            walk(&served.join(".saratoga"))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, stdout) = server.stop();
    assert!(stdout.contains("failed"), "{stdout}");
}

#[test]
fn a_full_disk_is_answered_file_too_big_and_the_space_is_given_back() {
    // The served directory is a 1 MiB tmpfs, mounted in a mount namespace
    // of the server's own (in a user namespace of its own too, so that
    // no privilege is needed).
    let (_tmp, served, here) = dirs("saratoga-full");
    let mut command = Command::new("unshare");
    command
        .args(["--map-root-user", "--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs -o size=1m scps-test \"$0\" && exec \"$1\" saratoga serve \"$0\" --listen 127.0.0.1:0")
        .arg(&served)
        .arg(env!("CARGO_BIN_EXE_scps"));
    let server = Server::run(command);
    let big = here.join("big.bin");
    random_file(&big, 1_500_000);
    let (status, stdout, stderr) = saratoga(&["put", big.to_str().unwrap(), &server.addr]);
    assert!(!status.success(), "{stdout}");
    assert!(stderr.contains("file too big (8)"), "{stderr}");
    // What the failed put wrote was given back: a file of most of the
    // disk fits.
    let fits = here.join("fits.bin");
    random_file(&fits, 800_000);
    let (status, _, stderr) = saratoga(&["put", fits.to_str().unwrap(), &server.addr]);
    assert!(status.success(), "{stderr}");
    let (status, listing, stderr) = saratoga(&["ls", &server.addr]);
    assert!(status.success(), "{stderr}");
    assert!(
        listing.contains("fits.bin") && !listing.contains("big.bin"),
        "{listing}"
    );
    server.stop();
}

// ------------------------------------------------------------------
// A peer of the drafts' era (draft-wood-tsvwg-saratoga), scripted here
// as an independent implementation of that time behaves: it sends from
// an ephemeral port but sends every reply to one fixed port (7542, the
// Saratoga port; another in the tests that let the put take it with
// --local-port, so that they run beside each other), never to the port a
// request came from; it sends no final STATUS of its own (at most it
// answers a DATA frame asking for one); it never re-sends anything. The
// script adds the rest: whether it answers requests for a STATUS at all,
// whether it remembers finished sessions by id (answering any frame for
// one with that session's last STATUS, storing nothing), whether its
// reports lag.

mod drafts_era {
    use std::collections::BTreeMap;
    use std::net::{SocketAddr, UdpSocket};
    use std::ops::Range;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::Duration;

    use scps_saratoga::wire::{ErrorCode, Frame, Status};

    /// How the peer answers, beyond what every such peer does.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Script {
        /// Answers a DATA frame that asks for a STATUS.
        pub answers_requests: bool,
        /// Answers any frame for a session it finished with that
        /// session's last STATUS, and stores nothing of it.
        pub remembers_finished: bool,
        /// Takes every session id for one it finished with a file of this
        /// many bytes (a peer that ran before this test).
        pub finished_before: Option<u64>,
        /// Answers the METADATA with a STATUS at once, and once half the
        /// file has come reports a quarter of it held and no hole (its
        /// report lags behind what waits in its socket).
        pub lagging_report: bool,
    }

    /// One session as the peer saw it.
    #[derive(Debug, Default, Clone)]
    pub struct Session {
        /// The kind of its first frame: REQUEST, METADATA or DATA.
        pub first: &'static str,
        pub name: Option<String>,
        pub size: Option<u64>,
        /// The file's bytes, which of them came, and how many.
        pub bytes: Vec<u8>,
        have: Vec<bool>,
        held: u64,
        /// DATA that came before the METADATA.
        early: Vec<(u64, Vec<u8>)>,
        lagged: bool,
        /// Every byte came: the session is over, and remembered.
        finished: bool,
    }

    impl Session {
        /// The file, if every byte came.
        pub fn file(&self) -> Option<&[u8]> {
            (self.size == Some(self.held)).then_some(&self.bytes[..])
        }

        fn write(&mut self, offset: u64, payload: &[u8]) -> u64 {
            let mut again = 0;
            for (i, byte) in payload.iter().enumerate() {
                let at = offset as usize + i;
                if at < self.bytes.len() {
                    match self.have[at] {
                        true => again += 1,
                        false => self.held += 1,
                    }
                    self.have[at] = true;
                    self.bytes[at] = *byte;
                }
            }
            again
        }

        /// Bytes held from the start, and the holes below the last byte
        /// held (the tail is never listed, as that peer does).
        fn report(&self) -> (u64, Vec<Range<u64>>) {
            let in_order = self.have.iter().take_while(|b| **b).count() as u64;
            let last = self.have.iter().rposition(|b| *b).map_or(0, |i| i as u64 + 1);
            let mut holes = Vec::new();
            let mut at = in_order;
            while at < last {
                let start = at;
                while at < last && !self.have[at as usize] {
                    at += 1;
                }
                if at > start {
                    holes.push(start..at);
                }
                while at < last && self.have[at as usize] {
                    at += 1;
                }
            }
            (in_order, holes)
        }
    }

    #[derive(Debug, Default)]
    pub struct Seen {
        pub sessions: BTreeMap<u32, Session>,
        /// DATA payload bytes that came for bytes already held.
        pub duplicate_bytes: u64,
    }

    /// The peer, answering until dropped.
    pub struct Peer {
        /// Where it listens: what a put names.
        pub addr: SocketAddr,
        /// Where it sends every reply.
        pub reply_to: SocketAddr,
        seen: Arc<Mutex<Seen>>,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl Peer {
        /// A peer on loopback that sends its replies to `reply_to`.
        pub fn start(reply_to: SocketAddr, script: Script) -> Peer {
            let listen = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
            // Room for a burst while this thread waits for a core (the
            // kernel may give less).
            let _ = listen.set_recv_buffer_size(4 << 20);
            listen
                .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
                .unwrap();
            let listen: UdpSocket = listen.into();
            let send = UdpSocket::bind("127.0.0.1:0").unwrap();
            assert_ne!(listen.local_addr().unwrap(), send.local_addr().unwrap());
            // Only so that the loop sees `stop`: datagrams wake it at once.
            listen.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let addr = listen.local_addr().unwrap();
            let seen = Arc::new(Mutex::new(Seen::default()));
            let stop = Arc::new(AtomicBool::new(false));
            let thread = {
                let (seen, stop) = (seen.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0; 65536];
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(len) = listen.recv(&mut buf) else { continue };
                        let replies = seen.lock().unwrap().handle(&buf[..len], script);
                        for reply in replies {
                            send.send_to(&reply, reply_to).unwrap();
                        }
                    }
                })
            };
            Peer {
                addr,
                reply_to,
                seen,
                stop,
                thread: Some(thread),
            }
        }

        pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
            self.seen.lock().unwrap()
        }
    }

    impl Drop for Peer {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    fn status(session: u32, in_order: u64, holes: &[Range<u64>], voluntary: bool, answering: u64) -> Vec<u8> {
        Frame::Status(Status::report(session, in_order, holes, voluntary, answering))
            .to_bytes()
            .unwrap()
    }

    impl Seen {
        /// What the peer answers to `datagram`.
        fn handle(&mut self, datagram: &[u8], script: Script) -> Vec<Vec<u8>> {
            let Ok(frame) = Frame::parse(datagram) else {
                return Vec::new();
            };
            let (session, kind) = match &frame {
                Frame::Request(r) => (r.session, "REQUEST"),
                Frame::Metadata(m) => (m.session, "METADATA"),
                Frame::Data(d) => (d.session, "DATA"),
                _ => return Vec::new(),
            };
            let entry = self.sessions.entry(session).or_insert_with(|| Session {
                first: kind,
                ..Session::default()
            });
            let finished = match script.finished_before {
                Some(size) => Some(size),
                None => {
                    (script.remembers_finished && entry.finished).then_some(entry.size.unwrap_or_default())
                }
            };
            if let Some(size) = finished {
                // The last STATUS of the session it takes this one for;
                // what comes is not stored.
                let asked = match &frame {
                    Frame::Data(d) => d.request_status.then_some(d.offset),
                    _ => Some(0),
                };
                return asked
                    .map(|offset| status(session, size, &[], false, offset))
                    .into_iter()
                    .collect();
            }
            let mut replies = Vec::new();
            match frame {
                Frame::Request(request) => {
                    entry.name = Some(request.name);
                    replies.push(
                        Frame::Status(Status::error(session, ErrorCode::SUCCESS))
                            .to_bytes()
                            .unwrap(),
                    );
                }
                Frame::Metadata(metadata) => {
                    if entry.size.is_none() {
                        let size = metadata.entry.size as usize;
                        entry.size = Some(metadata.entry.size);
                        entry.bytes = vec![0; size];
                        entry.have = vec![false; size];
                        for (offset, payload) in std::mem::take(&mut entry.early) {
                            self.duplicate_bytes += entry.write(offset, &payload);
                        }
                        entry.finished = entry.file().is_some();
                    }
                    if script.lagging_report {
                        replies.push(status(session, 0, &[], true, 0));
                    }
                }
                Frame::Data(data) => {
                    if entry.size.is_none() {
                        entry.early.push((data.offset, data.payload.to_vec()));
                        return Vec::new();
                    }
                    self.duplicate_bytes += entry.write(data.offset, data.payload);
                    entry.finished = entry.file().is_some();
                    let size = entry.size.unwrap_or_default();
                    if script.lagging_report && !entry.lagged && entry.held >= size / 2 {
                        entry.lagged = true;
                        replies.push(status(session, size / 4, &[], true, 0));
                    }
                    if script.answers_requests && data.request_status {
                        let (in_order, holes) = entry.report();
                        replies.push(status(session, in_order, &holes, false, data.offset));
                    }
                }
                _ => {}
            }
            replies
        }
    }
}

/// A free UDP port for a put to take (`--local-port`), which the peer
/// answers to, and that address on loopback.
fn reply_port() -> (String, std::net::SocketAddr) {
    let port = common::free_udp_port();
    (
        port.to_string(),
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    )
}

/// A scripted peer of the drafts' era that replies to a free UDP port of
/// this host, for the puts of [`put_to`] to take.
fn peer_on_a_free_port(script: drafts_era::Script) -> drafts_era::Peer {
    drafts_era::Peer::start(reply_port().1, script)
}

/// `scps saratoga put FILE PEER[:NAME] --local-port PORT EXTRA...` to a
/// scripted `peer`, from the port it replies to: status, stdout, stderr.
fn put_to(
    peer: &drafts_era::Peer,
    file: &Path,
    name: Option<&str>,
    extra: &[&str],
) -> (ExitStatus, String, String) {
    let to = match name {
        Some(name) => format!("{}:{name}", peer.addr),
        None => peer.addr.to_string(),
    };
    let port = peer.reply_to.port().to_string();
    let mut args = vec!["put", file.to_str().unwrap(), &to, "--local-port", &port];
    args.extend_from_slice(extra);
    saratoga(&args)
}

/// The options of a put to a peer that may never say it has the file:
/// it gives up after 2 s without a word, and the peer never asks again
/// for what its socket's buffer could not hold, so a rate it keeps up
/// with on a busy machine.
const TO_A_QUIET_PEER: [&str; 5] = ["--timeout", "2s", "--rate", "20Mbit", "--json"];

/// The digest of the file the peer stored in its first session, if it
/// came whole.
fn stored_digest(seen: &drafts_era::Seen) -> Option<String> {
    let session = seen.sessions.values().next().expect("a session");
    session.file().map(sha256_of_bytes)
}

fn sha256_of_bytes(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The tests that need UDP port 7542 of this host take turns.
static PORT_7542: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn two_puts_from_two_processes_use_their_own_session_ids_and_both_are_stored() {
    let (_tmp, _served, here) = dirs("saratoga-two-processes");
    let peer = peer_on_a_free_port(drafts_era::Script {
        answers_requests: true,
        remembers_finished: true,
        ..Default::default()
    });
    // Two files of one length: a peer that took the second put for the
    // first, finished session would say it has it all.
    let files = [here.join("first.bin"), here.join("second.bin")];
    for file in &files {
        random_file(file, 200_000);
        let (status, stdout, stderr) = put_to(&peer, file, Some("same.bin"), &["--json"]);
        assert!(status.success(), "put {}: {stdout}{stderr}", file.display());
        assert_eq!(json(&stdout)["local_port"], peer.reply_to.port(), "{stdout}");
    }
    let seen = peer.seen();
    let sessions: Vec<(&u32, &drafts_era::Session)> = seen.sessions.iter().collect();
    assert_eq!(sessions.len(), 2, "two sessions: {:?}", seen.sessions.keys());
    for file in &files {
        let sent = sha256(file);
        assert!(
            sessions
                .iter()
                .any(|(_, session)| session.file().map(sha256_of_bytes) == Some(sent.clone())),
            "{} was stored by the peer",
            file.display()
        );
    }
    assert_eq!(seen.duplicate_bytes, 0);
}

#[test]
fn a_put_asks_with_a_request_first_and_a_blind_put_does_not() {
    let (_tmp, _served, here) = dirs("saratoga-request-first");
    let peer = peer_on_a_free_port(drafts_era::Script {
        answers_requests: true,
        ..Default::default()
    });
    let file = here.join("plain.bin");
    random_file(&file, 50_000);
    let (status, stdout, stderr) = put_to(&peer, &file, None, &[]);
    assert!(status.success(), "put: {stdout}{stderr}");
    let (status, stdout, stderr) = put_to(&peer, &file, None, &["--blind"]);
    assert!(status.success(), "put --blind: {stdout}{stderr}");
    let seen = peer.seen();
    let firsts: Vec<(&str, Option<&str>)> = seen
        .sessions
        .values()
        .map(|s| (s.first, s.name.as_deref()))
        .collect();
    let mut firsts_sorted = firsts.clone();
    firsts_sorted.sort();
    assert_eq!(
        firsts_sorted,
        [("METADATA", None), ("REQUEST", Some("plain.bin"))],
        "a plain name is asked for first; --blind asks nothing"
    );
    for session in seen.sessions.values() {
        assert_eq!(session.file().map(sha256_of_bytes), Some(sha256(&file)));
    }
    // Both options are in the help.
    let help = scps().args(["saratoga", "put", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--blind") && help.contains("--local-port"),
        "{help}"
    );
}

#[test]
fn a_put_answered_for_another_transfer_or_never_for_the_file_fails_saying_which() {
    let (_tmp, _served, here) = dirs("saratoga-unacknowledged");
    let file = here.join("lost.bin");
    random_file(&file, 100_000);
    // A peer that takes the put for a longer file it finished before.
    let stale = peer_on_a_free_port(drafts_era::Script {
        finished_before: Some(150_000),
        ..Default::default()
    });
    let (status, stdout, stderr) = put_to(&stale, &file, None, &TO_A_QUIET_PEER);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("a status about another transfer"), "{stderr}");
    let report = json(&stdout);
    assert_eq!(
        (report["bytes"].as_u64(), report["verified"].as_bool()),
        (Some(0), Some(false))
    );
    drop(stale);

    // A peer that answers the REQUEST, takes the data and says nothing more.
    let mute = peer_on_a_free_port(drafts_era::Script::default());
    let (status, stdout, stderr) = put_to(&mute, &file, None, &TO_A_QUIET_PEER);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("answered the request but sent no status covering the file: 0 of 100000 bytes"),
        "{stderr}"
    );
    assert!(!stderr.contains("no answer"), "{stderr}");
    let report = json(&stdout);
    assert_eq!(report["retransmitted_bytes"], 0, "{report}");
    // It had it all, once: only a STATUS could have told.
    let seen = mute.seen();
    assert_eq!(stored_digest(&seen), Some(sha256(&file)));
    assert_eq!(seen.duplicate_bytes, 0);
}

#[test]
fn a_put_to_a_peer_whose_report_lags_and_that_sends_no_final_status_resends_nothing() {
    let (_tmp, _served, here) = dirs("saratoga-lagging");
    let file = here.join("big.bin");
    random_file(&file, 1 << 20);
    let peer = peer_on_a_free_port(drafts_era::Script {
        lagging_report: true,
        ..Default::default()
    });
    let (status, stdout, stderr) = put_to(&peer, &file, None, &TO_A_QUIET_PEER);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("sent no status covering the file: 262144 of 1048576 bytes acknowledged"),
        "{stderr}"
    );
    let report = json(&stdout);
    assert_eq!(report["retransmitted_bytes"], 0, "{report}");
    let seen = peer.seen();
    assert_eq!(seen.duplicate_bytes, 0);
    assert_eq!(stored_digest(&seen), Some(sha256(&file)));
}

#[test]
fn a_sender_that_sends_data_before_its_metadata_and_never_again_has_its_file_stored() {
    use scps_saratoga::wire::{Data, Frame, Request, RequestType, TransferType};
    let (_tmp, served, here) = dirs("saratoga-early-data");
    let mut server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let file = here.join("early.bin");
    random_file(&file, 300_000);
    let contents = std::fs::read(&file).unwrap();
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.connect(&server.addr).unwrap();
    let session = 0x5eed;
    let request = Request::new(RequestType::Put, session, "in/early.bin");
    sender.send(&Frame::Request(request).to_bytes().unwrap()).unwrap();
    // Every DATA frame once, in 1420-byte payloads as that peer sends,
    // then the METADATA; nothing again.
    for (i, chunk) in contents.chunks(1420).enumerate() {
        let data = Data {
            descriptor: scps_saratoga::engine::descriptor_for(contents.len() as u64),
            transfer_type: TransferType::File,
            request_status: false,
            end_of_data: false,
            session,
            timestamp: None,
            offset: (i * 1420) as u64,
            payload: chunk,
        };
        sender.send(&Frame::Data(data).to_bytes().unwrap()).unwrap();
    }
    let metadata = metadata_frame("/home/sat/outbox/early.bin", contents.len() as u64);
    let mut metadata = scps_saratoga::wire::Metadata::parse(&metadata).unwrap();
    metadata.session = session;
    sender
        .send(&Frame::Metadata(metadata).to_bytes().unwrap())
        .unwrap();
    let line = server.wait_for_line("completed", Duration::from_secs(20));
    assert!(line.contains("in/early.bin"), "{line}");
    assert_eq!(sha256(&served.join("in/early.bin")), sha256(&file));
    let (_, events) = server.stop();
    assert!(!events.contains("failed"), "{events}");
}

#[test]
fn a_put_from_port_7542_hears_a_peer_that_answers_only_to_port_7542() {
    let _turn = PORT_7542.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = std::net::UdpSocket::bind("0.0.0.0:7542") {
        panic!(
            "this test needs UDP port 7542 free on this host ({e}): \
             `ss -ulpn 'sport = :7542'` shows what holds it"
        );
    }
    let (_tmp, _served, here) = dirs("saratoga-port-7542");
    let peer = drafts_era::Peer::start(
        "127.0.0.1:7542".parse().unwrap(),
        drafts_era::Script {
            answers_requests: true,
            ..Default::default()
        },
    );
    let file = here.join("to-7542.bin");
    random_file(&file, 300_000);
    // No --local-port: the default.
    let (status, stdout, stderr) =
        saratoga_as_given(&["put", file.to_str().unwrap(), &peer.addr.to_string(), "--json"]);
    assert!(status.success(), "{stdout}{stderr}");
    let report = json(&stdout);
    assert_eq!(report["local_port"], 7542, "{report}");
    assert_eq!(report["sha256"], sha256(&file));
    assert_eq!(stored_digest(&peer.seen()), Some(sha256(&file)));
}

#[test]
fn a_client_falls_back_from_port_7542_when_it_is_taken_and_says_so() {
    let _turn = PORT_7542.lock().unwrap_or_else(|e| e.into_inner());
    // Held here if it was free; anyone else holding it will do as well.
    let _holder = std::net::UdpSocket::bind("0.0.0.0:7542");
    let (_tmp, served, here) = dirs("saratoga-port-taken");
    let server = Server::start(&served, &["--listen", "127.0.0.1:0"]);
    let file = here.join("fallback.bin");
    random_file(&file, 100_000);
    let (status, stdout, stderr) =
        saratoga_as_given(&["put", file.to_str().unwrap(), &server.addr, "--json"]);
    assert!(status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("UDP port 7542 is in use here"), "{stderr}");
    let port = json(&stdout)["local_port"].as_u64().unwrap();
    assert!(
        port != 7542 && stderr.contains(&format!("using port {port}")),
        "{stderr}"
    );
    assert_eq!(sha256(&served.join("fallback.bin")), sha256(&file));
    // Asked for, it is not replaced: the put could not start.
    let (status, _, stderr) = saratoga_as_given(&[
        "put",
        file.to_str().unwrap(),
        &server.addr,
        "--local-port",
        "7542",
    ]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot listen on UDP 0.0.0.0:7542"), "{stderr}");
}

/// The next datagram `socket` receives within `limit`, and its sender.
fn next_datagram(socket: &std::net::UdpSocket, limit: Duration) -> Option<(Vec<u8>, std::net::SocketAddr)> {
    let deadline = Instant::now() + limit;
    let mut buf = vec![0; 65536];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        socket
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => return Some((buf[..len].to_vec(), from)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("recv: {e}"),
        }
    }
}

/// A frame's kind and session, as a stranger notes what it received.
fn kind_and_session(datagram: &[u8]) -> (&'static str, u32) {
    use scps_saratoga::wire::Frame;
    match Frame::parse(datagram) {
        Ok(Frame::Request(r)) => ("REQUEST", r.session),
        Ok(Frame::Metadata(m)) => ("METADATA", m.session),
        Ok(Frame::Data(d)) => ("DATA", d.session),
        Ok(Frame::Status(s)) => ("STATUS", s.session),
        Ok(Frame::Beacon(_)) => ("BEACON", 0),
        Err(_) => ("malformed", 0),
    }
}

/// Sends `frame` on the connected `socket`; the first frame for `session`
/// that it then receives within 5 s (every datagram received noted in
/// `received`), the answer.
fn answer_to(
    socket: &std::net::UdpSocket,
    frame: scps_saratoga::wire::Frame,
    session: u32,
    received: &mut Vec<(&'static str, u32)>,
) -> Vec<u8> {
    socket.send(&frame.to_bytes().unwrap()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (datagram, _) = next_datagram(socket, left)
            .unwrap_or_else(|| panic!("no answer for session {session:#x} within 5 s"));
        let noted = kind_and_session(&datagram);
        received.push(noted);
        if noted.1 == session {
            return datagram;
        }
    }
}

/// The error code of a STATUS for `session`; anything else fails the test.
fn refusal(datagram: &[u8], session: u32, what: &str) -> u8 {
    use scps_saratoga::wire::Frame;
    match Frame::parse(datagram) {
        Ok(Frame::Status(status)) if status.session == session && !status.error.is_success() => {
            status.error.0
        }
        other => panic!("{what}: answered with {other:?}, not a refusal"),
    }
}

/// A child process killed if the test ends before it does.
struct Killed(Option<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_running_client_refuses_a_strangers_get_of_its_file_and_a_strangers_put() {
    use scps_saratoga::engine::descriptor_for;
    use scps_saratoga::wire::{Data, ErrorCode, Frame, Metadata, Request, RequestType, Status, TransferType};
    let (_tmp, _served, here) = dirs("saratoga-client-serves-nothing");
    let file = here.join("outgoing.bin");
    random_file(&file, 50_000);
    let contents = std::fs::read(&file).unwrap();
    // The peer the put goes to, played here: it holds its answer to the
    // PUT REQUEST while a stranger tries the client's port.
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (port, client) = reply_port();
    let child = scps()
        .arg("saratoga")
        .args([
            "put",
            file.to_str().unwrap(),
            &peer.local_addr().unwrap().to_string(),
            "--local-port",
            &port,
            "--timeout",
            "20s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Killed(Some(child));
    let (datagram, from) = next_datagram(&peer, Duration::from_secs(10)).expect("the put's REQUEST");
    assert_eq!(from, client, "the client sends from --local-port");
    let put_session = match Frame::parse(&datagram) {
        Ok(Frame::Request(request)) if request.request_type == RequestType::Put => request.session,
        other => panic!("not a PUT REQUEST: {other:?}"),
    };

    // The stranger, on another port of this host.
    let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.connect(client).unwrap();
    let mut received = Vec::new();
    // (a) A GET of the file the client is sending: "access denied" (5),
    // no METADATA, no DATA.
    let get = 0x6e7;
    let request = Request::new(RequestType::Get, get, "outgoing.bin");
    let answer = answer_to(&stranger, Frame::Request(request), get, &mut received);
    assert_eq!(
        refusal(&answer, get, "a stranger's GET of the client's file"),
        ErrorCode::ACCESS_DENIED.0
    );
    // (b) Puts: METADATA and DATA of a small file, under the one name the
    // client's store would look at (its own file's) and under another,
    // blind and after a PUT REQUEST. The first name is "receiver not
    // interested" (14), taken in by no receiver; the second is refused by
    // the store (access denied, 5). A PUT REQUEST is refused outright
    // (access denied): a client grants no request.
    let junk = vec![0x5a; 1000];
    for (session, name, code, ask_first) in [
        (0xbad1, "outgoing.bin", ErrorCode::RX_NOT_INTERESTED, false),
        (0xbad2, "planted.bin", ErrorCode::ACCESS_DENIED, false),
        (0xbad3, "outgoing.bin", ErrorCode::RX_NOT_INTERESTED, true),
    ] {
        if ask_first {
            let request = Request::new(RequestType::Put, session, name);
            let answer = answer_to(&stranger, Frame::Request(request), session, &mut received);
            assert_eq!(
                refusal(&answer, session, &format!("a stranger's PUT REQUEST for {name}")),
                ErrorCode::ACCESS_DENIED.0
            );
        }
        let metadata = Metadata::parse(&metadata_frame(name, junk.len() as u64)).unwrap();
        let metadata = Metadata { session, ..metadata };
        let answer = answer_to(&stranger, Frame::Metadata(metadata), session, &mut received);
        assert_eq!(
            refusal(&answer, session, &format!("a stranger's put of {name}")),
            code.0,
            "{name}"
        );
        let data = Data {
            descriptor: descriptor_for(junk.len() as u64),
            transfer_type: TransferType::File,
            request_status: true,
            end_of_data: true,
            session,
            timestamp: None,
            offset: 0,
            payload: &junk,
        };
        // Answered (its METADATA asked for again, or its refusal repeated),
        // and nothing stored.
        answer_to(&stranger, Frame::Data(data), session, &mut received);
    }

    // The put goes on: its REQUEST accepted, its file taken whole, and
    // a STATUS covering it sent.
    let accept = Frame::Status(Status::error(put_session, ErrorCode::SUCCESS));
    peer.send_to(&accept.to_bytes().unwrap(), client).unwrap();
    let mut got = vec![0u8; contents.len()];
    let mut have = vec![false; contents.len()];
    let covered = Frame::Status(Status::report(put_session, contents.len() as u64, &[], true, 0))
        .to_bytes()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.0.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the put did not end within 20 s");
        let Some((datagram, _)) = next_datagram(&peer, Duration::from_millis(100)) else {
            continue;
        };
        if let Ok(Frame::Data(data)) = Frame::parse(&datagram)
            && data.session == put_session
        {
            let at = data.offset as usize;
            got[at..at + data.payload.len()].copy_from_slice(data.payload);
            have[at..at + data.payload.len()].fill(true);
        }
        // Everything came: said on every frame that follows, in case a
        // STATUS is lost.
        if have.iter().all(|b| *b) {
            peer.send_to(&covered, client).unwrap();
        }
    };
    let output = child.0.take().unwrap().wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(status.success(), "{stdout}{stderr}");
    assert_eq!(sha256_of_bytes(&got), sha256(&file), "the peer has the file");
    assert_eq!(json(&stdout)["sha256"], sha256(&file), "{stdout}");

    // The client has exited: all it sent the stranger has arrived.
    stranger.set_nonblocking(true).unwrap();
    let mut buf = vec![0; 65536];
    while let Ok(len) = stranger.recv(&mut buf) {
        received.push(kind_and_session(&buf[..len]));
    }
    println!("the stranger received {received:x?}");
    assert!(
        received.iter().all(|(kind, _)| *kind == "STATUS"),
        "the stranger received {received:?}"
    );
    assert_eq!(
        walk(&here),
        [file],
        "nothing of the stranger's is in the client's directory"
    );
}
