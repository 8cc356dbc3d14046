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

/// `scps saratoga ARGS...` run to its end (at most a minute): status,
/// stdout, stderr.
fn saratoga(args: &[&str]) -> (ExitStatus, String, String) {
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
        Server {
            child: Some(child),
            addr,
            second_addr,
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
        let mut stdout = String::new();
        child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
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
    scps()
        .args(["saratoga", "put", file.to_str().unwrap(), to, "--rate", "8Mbit"])
        .args(extra)
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
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        println!("skipped: no IPv6 loopback here");
        return;
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
    if Command::new("which")
        .arg("tshark")
        .output()
        .is_ok_and(|o| !o.status.success())
    {
        println!("skipped the decoding: tshark is not installed (.ci/run installs it)");
        return;
    }
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
        .expect("tshark runs");
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
        .args(["saratoga", "get", &from, into.to_str().unwrap()])
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
