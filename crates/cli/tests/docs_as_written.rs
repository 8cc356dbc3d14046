//! The slower tier (scripts/test-slow.sh): the documents' command blocks,
//! taken from the documents when the test runs and run as written, as far
//! as they can run in network namespaces on one machine.
//!
//! - README.md's quick start (`scps bench` in the testbed, about five
//!   minutes), then docs/usage.md's `export PATH=...` and its first
//!   comparison, in the simulator;
//! - docs/saratoga.md's examples: a server at the addresses they name and
//!   a client on its link, every file they name made first, every
//!   transfer checked by SHA-256;
//! - docs/satellite-gateways.md: its `sysctl`, keygen, `--check` and
//!   `--print-rules` blocks on two gateways built as its picture, the
//!   configurations made from docs/examples/gateway as its "parts to
//!   change" say, and its curl from the ground LAN through them.
//!
//! Every test is ignored by `cargo test --workspace`; they run one at a
//! time (the bench measures wall-clock time). The Saratoga and gateway
//! ones need root: they make namespaces and a mount, and start gateways
//! and nginx.

mod common;
#[path = "common/doc_blocks.rs"]
mod doc_blocks;
#[path = "common/doc_shell.rs"]
mod doc_shell;
#[path = "common/report_check.rs"]
mod report_check;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::TempDir;
use common::gateways::{self, count};
use common::servers::{digest, write_pattern};
use doc_blocks::{DocCommand, block_after, shell_words};
use doc_shell::{Ran, SCPS, Shell, path_with_scps, wait_for};
use scps_testbed::{LinkEnd, Node, Output, Process, Route, Testbed, Topology};

/// One test at a time: the quick start's figures are wall-clock ones.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Fails unless this process runs as root: the Saratoga and gateway
/// tests make namespaces and a mount, and start gateways and nginx
/// (`user root`).
fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the docs-as-written tests run as root (scripts/test-slow.sh under sudo)"
    );
}

fn end(node: &str, interface: &str, addresses: &[&str]) -> LinkEnd {
    LinkEnd {
        node: node.into(),
        interface: interface.into(),
        addresses: addresses.iter().map(|a| a.to_string()).collect(),
    }
}

fn route(node: &str, route: &str) -> Route {
    Route {
        node: node.into(),
        route: route.into(),
    }
}

// ---------------------------------------------------------------- README.md

/// How README.md starts the binary. The test does not run cargo (it would
/// build another binary, under the lock this test runs under): it runs
/// the binary it was built with, the `scps` under test, in its place.
const CARGO_RUN: &str = "cargo run --release -p scps --";

#[test]
#[ignore = "slower tier: scripts/test-slow.sh"]
fn readme_quick_start_runs_the_bench_and_prints_its_table_and_headline() {
    // As root or not: without root the bench makes a user namespace of
    // its own, as the README says.
    let _turn = one_at_a_time();
    let block = block_after("README.md", "Run the main job", "sh", 0);
    let script = block.text();
    assert!(
        script.contains(CARGO_RUN),
        "{}: the quick start no longer runs `{CARGO_RUN}`: {script}",
        block.at()
    );
    // In a temporary working directory, where it writes bench-results/.
    let tmp = TempDir::new("docs-quick-start");
    let shell = Shell::new(&tmp.path().join("work"), &tmp.path().join("logs"));
    let ran = shell.run(
        &format!("{} (the quick start)", block.at()),
        &script.replace(CARGO_RUN, SCPS),
        Duration::from_secs(40 * 60),
    );
    ran.assert_success();
    print!("{}", ran.stdout);

    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(
        lines.iter().any(|line| line.starts_with("stack")),
        "no table (a header line beginning `stack`): {}",
        ran.stdout
    );
    let headline = lines.iter().rev().find(|line| !line.trim().is_empty());
    assert!(
        headline.is_some_and(|line| line.contains("(goodput / physical limit)")),
        "the last line is not the headline: {headline:?}"
    );
    let reports: Vec<PathBuf> = std::fs::read_dir(shell.cwd.join("bench-results"))
        .expect("the bench wrote bench-results/")
        .map(|entry| entry.unwrap().path().join("index.html"))
        .collect();
    assert_eq!(reports.len(), 1, "one report directory: {reports:?}");
    assert!(reports[0].is_file(), "{} is written", reports[0].display());
    // Its plots, in the browser: one round-trip time makes bars, with
    // the limit over each bit-error rate's group, and every stack's
    // transfer at the lossy point has a time-sequence graph.
    let checked = report_check::assert_every_plot_renders(&reports[0], tmp.path());
    let goodput = report_check::plots_titled(&checked, "geo-8mbit: goodput");
    assert_eq!(goodput.len(), 1, "{checked}");
    assert_eq!(goodput[0]["kind"], "bars", "{}", goodput[0]);
    assert_eq!(goodput[0]["x_label"], "bit-error rate", "{}", goodput[0]);
    let sequences = report_check::plots_titled(&checked, "geo-8mbit: time-sequence of ");
    assert_eq!(sequences.len(), 4, "one per stack: {checked}");
}

// ------------------------------------------------------------- docs/usage.md

#[test]
#[ignore = "slower tier: scripts/test-slow.sh"]
fn usage_first_comparison_runs_with_scps_on_path() {
    let _turn = one_at_a_time();
    let path_block = block_after("docs/usage.md", "This page calls the binary", "sh", 0);
    let sim_block = block_after("docs/usage.md", "## A first comparison", "sh", 0);
    assert!(
        path_block.text().contains("export PATH="),
        "{}: {}",
        path_block.at(),
        path_block.text()
    );
    let tmp = TempDir::new("docs-sim-comparison");
    let shell = Shell::new(&tmp.path().join("work"), &tmp.path().join("logs"));
    // The block puts `$PWD/target/release` first; in the temporary working
    // directory there is none, so `scps` is the one under test, which the
    // shells' PATH holds.
    let which = shell.run(
        &path_block.at(),
        &format!("{}command -v scps\n", path_block.text()),
        Duration::from_secs(10),
    );
    assert_eq!(which.assert_success().stdout.trim(), SCPS);
    let commands = sim_block.commands();
    assert!(commands.len() >= 3, "{}: {commands:?}", sim_block.at());
    for command in commands {
        // Each after the PATH block, in a shell of its own, so that each
        // has its own exit status.
        let script = format!("{}{}\n", path_block.text(), command.text);
        let ran = shell.run(&command.at, &script, Duration::from_secs(30 * 60));
        ran.assert_success();
        assert!(
            ran.stdout
                .lines()
                .any(|line| line.contains("goodput") && line.contains("ratio")),
            "{}: no table of results: {}",
            ran.what,
            ran.stdout
        );
    }
}

// ---------------------------------------------------------- docs/saratoga.md

/// The server's addresses in docs/saratoga.md's examples, and its
/// client's on the same link.
const SARATOGA_SERVER: [&str; 2] = ["192.0.2.7/24", "2001:db8::7/64"];
const SARATOGA_CLIENT: [&str; 2] = ["192.0.2.8/24", "2001:db8::8/64"];

/// The port `PEER` means without one (docs/saratoga.md).
const SARATOGA_PORT: u16 = 7542;

/// A saratoga peer as a command names it: `HOST[:PORT][:PATH]`.
#[derive(Debug, Clone)]
struct Peer {
    host: String,
    port: u16,
    path: Option<String>,
}

impl Peer {
    /// As docs/saratoga.md reads it: an IPv6 address in brackets; after
    /// the host, a part made only of digits is the port.
    fn parse(text: &str) -> Peer {
        let (host, rest) = match text.strip_prefix('[') {
            Some(v6) => {
                let (host, rest) = v6.split_once(']').expect("a closing bracket");
                (host, rest.strip_prefix(':').unwrap_or(rest))
            }
            None => text.split_once(':').unwrap_or((text, "")),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (port, path) = match rest.split_once(':') {
            Some((port, path)) if digits(port) => (port.parse().unwrap(), Some(path)),
            _ if digits(rest) => (rest.parse().unwrap(), None),
            _ => (SARATOGA_PORT, Some(rest).filter(|r| !r.is_empty())),
        };
        Peer {
            host: host.to_owned(),
            port,
            path: path.map(str::to_owned),
        }
    }

    /// Whether only a server on the same host answers it.
    fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("")
    }
}

/// What a `scps saratoga` line of the examples does, as far as the test
/// must know to make its files and check its effect.
#[derive(Debug)]
enum Saratoga {
    Serve { dir: String },
    Put { file: String, peer: Peer },
    Get { peer: Peer, file: Option<String> },
    Ls { peer: Peer, json: bool },
    Rm { peer: Peer },
}

impl Saratoga {
    /// The `scps saratoga` command at the start of `command` (up to a
    /// `|`, `&&` or `;`).
    fn parse(command: &DocCommand) -> Saratoga {
        let words = shell_words(&command.text);
        let words: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .take_while(|w| !["|", "&&", "||", ";"].contains(w))
            .collect();
        assert!(
            words.starts_with(&["scps", "saratoga"]),
            "{}: not a `scps saratoga` command: {}",
            command.at,
            command.text
        );
        // Operands: the words that are neither an option nor its value.
        let flags = ["--json", "--force"];
        let mut operands = Vec::new();
        let mut words_left = words[2..].iter();
        while let Some(word) = words_left.next() {
            if word.starts_with("--") {
                if !flags.contains(word) {
                    words_left.next();
                }
            } else {
                operands.push(word.to_string());
            }
        }
        let json = words.contains(&"--json");
        let operand = |n: usize| {
            operands
                .get(n)
                .cloned()
                .unwrap_or_else(|| panic!("{}: too few operands: {}", command.at, command.text))
        };
        match operand(0).as_str() {
            "serve" => Saratoga::Serve { dir: operand(1) },
            "put" => Saratoga::Put {
                file: operand(1),
                peer: Peer::parse(&operand(2)),
            },
            "get" => Saratoga::Get {
                peer: Peer::parse(&operand(1)),
                file: operands.get(2).cloned(),
            },
            "ls" => Saratoga::Ls {
                peer: Peer::parse(&operand(1)),
                json,
            },
            "rm" => Saratoga::Rm {
                peer: Peer::parse(&operand(1)),
            },
            other => panic!("{}: no such saratoga command {other:?}", command.at),
        }
    }

    fn peer(&self) -> Option<&Peer> {
        match self {
            Saratoga::Serve { .. } => None,
            Saratoga::Put { peer, .. }
            | Saratoga::Get { peer, .. }
            | Saratoga::Ls { peer, .. }
            | Saratoga::Rm { peer } => Some(peer),
        }
    }

    /// The path on the server it names (a put's default: its file's name).
    fn remote_path(&self) -> String {
        match self {
            Saratoga::Put { file, peer } => peer.path.clone().unwrap_or_else(|| base_name(file)),
            other => other.peer().map(|p| p.path().to_owned()).unwrap_or_default(),
        }
    }
}

fn base_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Where the examples run: the server's directory as the test sees it,
/// and the working directories of the client and of the server's host.
struct SaratogaWorld {
    served: PathBuf,
    client: Shell,
    server_host: Shell,
}

impl SaratogaWorld {
    /// The shell a command of `peer` runs from: the client's, unless it
    /// names the loopback address, which only the server's host answers.
    fn shell_for(&self, peer: &Peer) -> &Shell {
        if peer.is_loopback() {
            &self.server_host
        } else {
            &self.client
        }
    }
}

/// A client and a server on one link, with the examples' addresses.
fn saratoga_topology() -> Topology {
    Topology {
        nodes: vec!["client".into(), "server".into()],
        links: vec![(
            end("client", "eth0", &SARATOGA_CLIENT),
            end("server", "eth0", &SARATOGA_SERVER),
        )],
        routes: Vec::new(),
        forwarding: Vec::new(),
    }
}

/// Makes what the commands need before they run, in order: each put's
/// file, each get's file on the server (unless a put before it sends
/// it), each listed directory, each removed file (likewise).
fn make_saratoga_files(world: &SaratogaWorld, commands: &[(DocCommand, Saratoga)]) {
    let mut on_server = BTreeSet::new();
    for (seed, (_, command)) in commands.iter().enumerate() {
        let remote = world.served.join(command.remote_path());
        match command {
            Saratoga::Serve { .. } => {}
            Saratoga::Put { file, peer } => {
                let local = world.shell_for(peer).cwd.join(file);
                if !local.exists() {
                    write_pattern(&local, 4_000_000, seed as u64);
                }
                on_server.insert(remote);
            }
            Saratoga::Get { .. } | Saratoga::Rm { .. } => {
                if !on_server.contains(&remote) && !remote.exists() {
                    std::fs::create_dir_all(remote.parent().unwrap()).unwrap();
                    let text: String = (0..5000).map(|n| format!("line {n} of a day's log\n")).collect();
                    std::fs::write(&remote, text).unwrap();
                }
                on_server.insert(remote);
            }
            Saratoga::Ls { .. } => std::fs::create_dir_all(&remote).unwrap(),
        }
    }
}

/// Checks what `command` did, which `ran` reports.
fn check_saratoga(world: &SaratogaWorld, command: &Saratoga, ran: &Ran) {
    let remote = world.served.join(command.remote_path());
    match command {
        Saratoga::Serve { .. } => {}
        Saratoga::Put { file, peer } => {
            let local = world.shell_for(peer).cwd.join(file);
            assert_eq!(
                digest(&remote),
                digest(&local),
                "{}: the put arrived whole",
                ran.what
            );
        }
        Saratoga::Get { peer, file } => {
            let name = file.clone().unwrap_or_else(|| base_name(peer.path()));
            let local = world.shell_for(peer).cwd.join(name);
            assert_eq!(
                digest(&local),
                digest(&remote),
                "{}: the get arrived whole",
                ran.what
            );
        }
        Saratoga::Ls { json, .. } => {
            let mut names: Vec<String> = std::fs::read_dir(&remote)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert!(
                !names.is_empty(),
                "{}: the test lists a directory with files",
                ran.what
            );
            if *json {
                let report: serde_json::Value = serde_json::from_str(ran.stdout.trim())
                    .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", ran.what, ran.stdout));
                let mut listed: Vec<String> = report["entries"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{}: no entries: {report}", ran.what))
                    .iter()
                    .map(|entry| entry["name"].as_str().unwrap_or_default().to_owned())
                    .collect();
                listed.sort();
                assert_eq!(listed, names, "{}", ran.what);
            } else {
                for name in names {
                    assert!(
                        ran.stdout.contains(&name),
                        "{}: {name} not listed: {}",
                        ran.what,
                        ran.stdout
                    );
                }
            }
        }
        Saratoga::Rm { .. } => assert!(!remote.exists(), "{}: {} is gone", ran.what, remote.display()),
    }
}

/// `uniq -c`'s count of `port` in a pipeline's output, if it printed one.
fn uniq_count_of(output: &str, port: u16) -> Option<u64> {
    output.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let count = words.next()?.parse().ok()?;
        (words.next()? == port.to_string()).then_some(count)
    })
}

/// `scps saratoga serve DIR ...` as written, in `node`'s network namespace
/// and a mount namespace of its own in which DIR's top directory (`/srv`)
/// is a directory of the test: the test makes and checks what it serves
/// and leaves the machine's own untouched. Returns the server and where
/// the test sees DIR.
fn start_serve(node: &Node, tmp: &Path, command: &DocCommand, dir: &str) -> (Process, PathBuf, PathBuf) {
    let home = tmp.join("server-home");
    std::fs::create_dir_all(&home).unwrap();
    let (mount_point, source, served) = match Path::new(dir).strip_prefix("/") {
        Ok(below_root) => {
            let top = below_root.components().next().expect("DIR is not /");
            let mount_point = Path::new("/").join(top);
            assert!(
                mount_point.is_dir(),
                "{}: {} is not a directory on this machine: nothing to mount the test's over",
                command.at,
                mount_point.display()
            );
            let source = tmp.join("root").join(top);
            (
                mount_point,
                source.clone(),
                source.join(below_root.strip_prefix(top).unwrap()),
            )
        }
        // A relative DIR is below the server's working directory.
        Err(_) => (home.clone(), home.clone(), home.join(dir)),
    };
    std::fs::create_dir_all(&served).unwrap();
    let stderr = tmp.join("serve.stderr");
    // `exec` in front of the line, so that the Ctrl-C (SIGINT) the test
    // sends at the end reaches the server alone and its exit status is
    // its own, as in a terminal.
    let wrapper = r#"mount --bind "$1" "$2" && cd "$3" && export PATH="$4" && exec 2>"$5" && eval "exec $6""#;
    let path = path_with_scps();
    let args: Vec<&std::ffi::OsStr> = vec![
        "--mount".as_ref(),
        "--propagation".as_ref(),
        "private".as_ref(),
        "sh".as_ref(),
        "-c".as_ref(),
        wrapper.as_ref(),
        "serve".as_ref(),
        source.as_os_str(),
        mount_point.as_os_str(),
        home.as_os_str(),
        path.as_os_str(),
        stderr.as_os_str(),
        command.text.as_ref(),
    ];
    println!("starting {} in {}: `{}`", command.at, node.name(), command.text);
    let server = node.spawn("unshare", &args, Output::Piped).unwrap();
    let said = wait_for(
        &format!("{}: the server says where it listens", command.at),
        Duration::from_secs(20),
        || {
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            if let Ok(Some(status)) = server.try_wait() {
                panic!("{}: the server exited ({status}): {said}", command.at);
            }
            if said.contains("listening") {
                Ok(said)
            } else {
                Err(said)
            }
        },
    );
    println!("{}", said.trim());
    (server, served, stderr)
}

#[test]
#[ignore = "slower tier: scripts/test-slow.sh"]
fn saratoga_examples_run_as_written_between_two_namespaces() {
    let _turn = one_at_a_time();
    require_root();
    // The client's block, then the server host's own (over the loopback).
    let block = block_after("docs/saratoga.md", "## Examples", "sh", 0);
    let on_the_server = block_after("docs/saratoga.md", "## Examples", "sh", 1);
    let commands: Vec<(DocCommand, Saratoga)> = block
        .commands()
        .into_iter()
        .chain(on_the_server.commands())
        .map(|command| {
            let parsed = Saratoga::parse(&command);
            (command, parsed)
        })
        .collect();
    let serves: Vec<&(DocCommand, Saratoga)> = commands
        .iter()
        .filter(|(_, c)| matches!(c, Saratoga::Serve { .. }))
        .collect();
    assert_eq!(serves.len(), 1, "{}: one serve line", block.at());
    let (serve_line, Saratoga::Serve { dir }) = serves[0] else {
        unreachable!()
    };
    let server_addresses: Vec<&str> = SARATOGA_SERVER
        .iter()
        .map(|a| a.split('/').next().unwrap())
        .collect();
    for (command, parsed) in &commands {
        if let Some(peer) = parsed.peer() {
            assert!(
                peer.is_loopback() || server_addresses.contains(&peer.host.as_str()),
                "{}: {} is none of the server's addresses in this test ({server_addresses:?})",
                command.at,
                peer.host
            );
        }
    }

    let testbed = Testbed::build(saratoga_topology()).unwrap();
    let (client, server_node) = (testbed.node("client").unwrap(), testbed.node("server").unwrap());
    let tmp = TempDir::new("docs-saratoga");
    let logs = tmp.path().join("logs");
    let (server, served, server_stderr) = start_serve(server_node, tmp.path(), serve_line, dir);
    let world = SaratogaWorld {
        served,
        client: Shell::new(&tmp.path().join("client-home"), &logs),
        server_host: Shell::new(&tmp.path().join("server-home"), &logs),
    };
    make_saratoga_files(&world, &commands);

    for (command, parsed) in &commands {
        let Some(peer) = parsed.peer() else { continue };
        let node = if peer.is_loopback() { server_node } else { client };
        let ran =
            world
                .shell_for(peer)
                .run_in(Some(node), &command.at, &command.text, Duration::from_secs(120));
        ran.assert_success();
        check_saratoga(&world, parsed, &ran);
        if command.text.contains("| uniq -c") {
            let sent = uniq_count_of(&ran.stdout, peer.port);
            assert!(
                sent.is_some_and(|n| n > 0),
                "{}: the capture decoded shows no datagram to port {}: {}",
                ran.what,
                peer.port,
                ran.stdout
            );
        }
    }

    // Ctrl-C, as the document stops it: exit status 0.
    server.signal(nix::sys::signal::Signal::SIGINT).unwrap();
    let status = server.wait_timeout(Duration::from_secs(20)).unwrap();
    let events = server.read_stdout().unwrap();
    let said = std::fs::read_to_string(&server_stderr).unwrap_or_default();
    println!("the server printed:\n{events}{said}");
    assert!(
        status.is_some_and(|s| s.success()),
        "{}: serve ended with {status:?} on Ctrl-C: {said}",
        serve_line.at
    );
    assert!(events.contains("completed"), "the server's events: {events}");
}

// ---------------------------------------------- docs/satellite-gateways.md

const GATEWAYS_DOC: &str = "docs/satellite-gateways.md";

/// The doc's picture: a host on the ground LAN, gwA (eth1 on the LAN,
/// eth0 towards the link), gwB likewise, the remote LAN's server, and
/// the two gateways' eth0 on one link (the modems' addresses the example
/// files' `peer`s give). Forwarding is left off: the doc's `sysctl`
/// block turns it on.
fn gateways_topology(modem_a: &str, modem_b: &str, server: &str) -> Topology {
    Topology {
        nodes: ["client", "gwA", "gwB", "server"].map(String::from).to_vec(),
        links: vec![
            (
                end("client", "eth0", &["10.1.0.10/16"]),
                end("gwA", "eth1", &["10.1.0.1/16"]),
            ),
            (
                end("gwA", "eth0", &[&format!("{modem_a}/24")]),
                end("gwB", "eth0", &[&format!("{modem_b}/24")]),
            ),
            (
                end("gwB", "eth1", &["10.2.0.1/16"]),
                end("server", "eth0", &[&format!("{server}/16")]),
            ),
        ],
        routes: vec![
            route("client", "default via 10.1.0.1"),
            route("gwA", &format!("10.2.0.0/16 via {modem_b}")),
            route("gwB", &format!("10.1.0.0/16 via {modem_a}")),
            route("server", "default via 10.2.0.1"),
        ],
        forwarding: Vec::new(),
    }
}

/// The value of `key = "VALUE"` in a configuration's text.
fn toml_value<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|line| {
            let rest = line
                .trim_start()
                .strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')?;
            rest.trim_start().strip_prefix('"')?.split('"').next()
        })
        .unwrap_or_else(|| panic!("no {key} = \"...\" in {text}"))
}

fn example(name: &str) -> String {
    doc_blocks::read(&format!("docs/examples/gateway/{name}.toml"))
}

/// The address of `peer = "ADDRESS:PORT"` in example `name`.
fn example_peer(name: &str) -> String {
    let peer = toml_value(&example(name), "peer").to_owned();
    peer.rsplit_once(':').unwrap().0.to_owned()
}

/// `command` with `/etc/scps/` made the test's directory: the test writes
/// nothing to /etc.
fn in_dir(command: &DocCommand, dir: &Path) -> String {
    assert!(
        command.text.contains("/etc/scps/"),
        "{}: the test expects /etc/scps/ here: {}",
        command.at,
        command.text
    );
    command.text.replace("/etc/scps/", &format!("{}/", dir.display()))
}

/// The gateway a command is for: the `gwX` its comment ("# on gwA") or
/// its file names.
fn gateway_named_in(command: &DocCommand) -> &'static str {
    let on = command.text.split("# on ").nth(1).unwrap_or(&command.text);
    let a = on.find("gwA");
    let b = on.find("gwB");
    match (a, b) {
        (Some(a), Some(b)) if b < a => "gwB",
        (Some(_), _) => "gwA",
        (None, Some(_)) => "gwB",
        (None, None) => panic!("{}: names no gateway: {}", command.at, command.text),
    }
}

/// Runs the `sysctl -w` block on each gateway and checks the settings took.
fn run_sysctl_block(testbed: &Testbed, shell: &Shell) {
    let block = block_after(GATEWAYS_DOC, "## What each gateway host needs", "sh", 0);
    for name in ["gwA", "gwB"] {
        let node = testbed.node(name).unwrap();
        for command in block.commands() {
            shell
                .run_in(Some(node), &command.at, &command.text, Duration::from_secs(10))
                .assert_success();
        }
        for (key, value) in [
            ("ipv4/ip_forward", "1"),
            ("ipv4/conf/all/rp_filter", "0"),
            ("ipv4/conf/eth0/rp_filter", "0"),
        ] {
            let now = node.output("cat", &[format!("/proc/sys/net/{key}")]).unwrap();
            assert_eq!(now.trim(), value, "net/{key} in {name} after {}", block.at());
        }
    }
}

/// Runs the keygen block, each line on the gateway its comment names, the
/// key files in `dir`; each gateway's public key as its keygen printed it.
fn run_keygen_block(testbed: &Testbed, shell: &Shell, dir: &Path) -> BTreeMap<&'static str, String> {
    let block = block_after(GATEWAYS_DOC, "## The configuration", "sh", 0);
    let mut keys = BTreeMap::new();
    for command in block.commands() {
        let name = gateway_named_in(&command);
        let ran = shell.run_in(
            Some(testbed.node(name).unwrap()),
            &command.at,
            &in_dir(&command, dir),
            Duration::from_secs(10),
        );
        let key = ran.assert_success().stdout.trim().to_owned();
        assert_eq!(key.len(), 44, "{}: a base64 key: {key:?}", ran.what);
        assert!(dir.join(format!("{name}.key")).is_file(), "{}", ran.what);
        keys.insert(name, key);
    }
    assert_eq!(keys.len(), 2, "{}: a key for each gateway", block.at());
    keys
}

/// The example `name` (docs/examples/gateway) as an operator fills it in,
/// written to `dir`: its key file is the one keygen wrote beside it, and
/// the peer's public key the one the peer's keygen printed. Its
/// addresses, interfaces and prefixes are the picture's already; its
/// rate and round trip are kept (the test's link is faster than both).
fn configure(dir: &Path, name: &str, peer_key: &str) -> PathBuf {
    let text = example(name);
    assert_eq!(toml_value(&text, "private_key_file"), format!("{name}.key"));
    assert_eq!(toml_value(&text, "lan"), "eth1", "the picture's LAN interface");
    let shipped = toml_value(&text, "peer_public_key");
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text.replace(shipped, peer_key)).unwrap();
    file
}

/// Runs the `--check` and `--print-rules` block on the gateway whose file
/// it names; the rules must intercept on the LAN interface.
fn run_check_block(testbed: &Testbed, shell: &Shell, dir: &Path) {
    let block = block_after(GATEWAYS_DOC, "Check it, and see what it will install", "sh", 0);
    for command in block.commands() {
        let node = testbed.node(gateway_named_in(&command)).unwrap();
        let ran = shell.run_in(
            Some(node),
            &command.at,
            &in_dir(&command, dir),
            Duration::from_secs(20),
        );
        ran.assert_success();
        if command.text.contains("--print-rules") {
            assert!(
                ran.stdout.contains("iifname \"eth1\""),
                "{}: {}",
                ran.what,
                ran.stdout
            );
        }
    }
}

/// The host and path of the `http://` URL in `command`.
fn url_of(command: &DocCommand) -> (String, String) {
    let words = shell_words(&command.text);
    let url = words
        .iter()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("{}: no http:// URL: {}", command.at, command.text));
    let (host, path) = url.split_once('/').unwrap_or((url, ""));
    (host.to_owned(), path.to_owned())
}

/// `scps status` in gwA's namespace (as the doc's table says to run it)
/// once it counts `closed` connections closed.
fn status_once_closed(gw_a: &Node, shell: &Shell, config: &Path, closed: u64) -> String {
    wait_for(
        "scps status in gwA counts the connections carried",
        Duration::from_secs(30),
        || {
            let ran = shell.run_in(Some(gw_a), "scps status", "scps status", Duration::from_secs(10));
            let ran = ran.assert_success();
            assert!(
                ran.stdout
                    .lines()
                    .next()
                    .is_some_and(|l| l.contains(&config.display().to_string())),
                "gwA's own gateway answers: {}",
                ran.stdout
            );
            let counted = ran.stdout.lines().find(|l| l.contains("connections closed"));
            match counted.map(|line| count(line, "closed")) {
                Some(n) if n >= closed => Ok(ran.stdout.clone()),
                _ => Err(ran.stdout.clone()),
            }
        },
    )
}

// Not run: the systemd block ("Running it as a service"): there is no
// systemd in the test, which starts each gateway as the unit's ExecStart
// line does; and the `text` blocks, which are output, not commands.
#[test]
#[ignore = "slower tier: scripts/test-slow.sh"]
fn satellite_gateways_blocks_run_as_written_and_curl_crosses_the_pair() {
    let _turn = one_at_a_time();
    require_root();
    let curl_block = block_after(GATEWAYS_DOC, "## Checking it works", "sh", 0);
    let curl = curl_block.commands().into_iter().next().expect("a curl line");
    let (web_host, web_path) = url_of(&curl);
    let (modem_a, modem_b) = (example_peer("gwB"), example_peer("gwA"));
    let testbed = Testbed::build(gateways_topology(&modem_a, &modem_b, &web_host)).unwrap();
    let tmp = TempDir::new("docs-satellite-gateways");
    // The configuration directory in place of /etc/scps.
    let etc = tmp.path().join("etc-scps");
    std::fs::create_dir_all(&etc).unwrap();
    let logs = tmp.path().join("logs");
    let admin = Shell::new(&tmp.path().join("admin"), &logs);

    run_sysctl_block(&testbed, &admin);
    let keys = run_keygen_block(&testbed, &admin, &etc);
    let config_a = configure(&etc, "gwA", &keys["gwB"]);
    let config_b = configure(&etc, "gwB", &keys["gwA"]);
    run_check_block(&testbed, &admin, &etc);

    // Started as the unit's ExecStart line starts them.
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let a = gateways::start(gw_a, &config_a);
    let b = gateways::start(gw_b, &config_b);
    gateways::wait_ready(&[(gw_a, &a), (gw_b, &b)]);

    let web = tmp.path().join("web");
    let file = web.join("www").join(&web_path);
    write_pattern(&file, 1_000_000, 7);
    let server = testbed.node("server").unwrap();
    let _nginx = common::servers::nginx(server, &web, &web.join("www"), &web_host, 80);

    // The curl as written, then the same storing what it downloads (the
    // doc's sends it to /dev/null) to compare it with the file.
    let ground = Shell::new(&tmp.path().join("ground-host"), &logs);
    let client = testbed.node("client").unwrap();
    let ran = ground.run_in(Some(client), &curl.at, &curl.text, Duration::from_secs(120));
    let speed: f64 = ran
        .assert_success()
        .stdout
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: prints the speed ({e}): {:?}", ran.what, ran.stdout));
    assert!(speed > 0.0, "{}: {speed}", ran.what);
    assert!(curl.text.contains("-o /dev/null"), "{}: {}", curl.at, curl.text);
    let stored = curl.text.replace("-o /dev/null", "-o fetched");
    let ran = ground.run_in(Some(client), &curl.at, &stored, Duration::from_secs(120));
    ran.assert_success();
    assert_eq!(
        digest(&ground.cwd.join("fetched")),
        digest(&file),
        "{}: the whole file crossed",
        ran.what
    );

    let status = status_once_closed(gw_a, &admin, &config_a, 2);
    println!("scps status in gwA:\n{status}");
    let (said_a, said_b) = (gateways::stop(&a), gateways::stop(&b));
    for (name, said) in [("gwA", &said_a), ("gwB", &said_b)] {
        assert!(count(said, "closed") >= 2, "{name} carried both curls: {said}");
    }
}
