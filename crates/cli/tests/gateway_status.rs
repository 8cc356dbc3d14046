//! Operating `scps gateway` (docs/gateway.md "Operations"), with two
//! gateway processes in the explicit port-forward mode on loopback: while
//! a kernel connection through the forward is held open, `scps status`
//! lists it at both gateways with its client, destination, route and the
//! bytes relayed each way, and the metrics endpoint counts the same bytes;
//! once it ends, it is counted as closed. `scps status` with no gateway,
//! a bad `metrics.listen` and a control socket another gateway answers on
//! are refused with an error naming them; a stale socket file is replaced.
//! `scps status` names the gateway that answered (process, configuration
//! file, modes, network namespace) and what sets its connection limit;
//! two gateways in two network namespaces, each on its default socket,
//! are each found by `scps status` run in its own namespace.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::gateways::{SCPS, start_with, stop as stop_in, wait_ready};
use common::loopback::{self, Gateway};
use common::metrics::{sample, scrape};
use common::{TempDir, free_tcp_port, free_udp_port};
use scps_gateway::netns::NetNamespace;
use scps_testbed::{Node, Testbed, Topology};
use serde_json::Value;

/// Bytes the client sends, and the server sends back.
const UPLOAD: usize = 300_000;
const DOWNLOAD: usize = 200_000;

/// How long a condition may take to come true.
const WITHIN: Duration = Duration::from_secs(30);

fn scps() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scps"))
}

/// `scps gateway --config NAME --control CONTROL` with `config` written
/// to NAME in `dir`, once it says it is ready.
fn start_gateway(dir: &Path, name: &str, config: &str, control: &Path) -> Gateway {
    loopback::start(dir, name, config, &["--control".as_ref(), control.as_os_str()])
}

/// Stops a gateway with SIGTERM, which it must exit cleanly on; what it
/// wrote after its ready line.
fn stop(gateway: Gateway) -> String {
    let (clean, written) = loopback::stop(gateway);
    assert!(clean, "the gateway exits cleanly on SIGTERM: {written}");
    written
}

/// `scps status ARGS... --control CONTROL`.
fn status(control: &Path, args: &[&str]) -> Output {
    scps()
        .arg("status")
        .args(args)
        .arg("--control")
        .arg(control)
        .output()
        .unwrap()
}

/// The gateway's status document.
fn status_json(control: &Path) -> Value {
    let output = status(control, &["--json"]);
    assert!(
        output.status.success(),
        "scps status --json: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("scps status --json prints one JSON document")
}

/// How `scps status` names this process's network namespace.
fn here() -> String {
    NetNamespace::current()
        .expect("/proc tells the namespace")
        .describe()
}

/// Waits until `check` gives a value, failing after [`WITHIN`] with
/// `what`.
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WITHIN;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "still waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The one connection of a status document, once its bytes each way are
/// `relayed`.
fn connection_having_relayed(control: &Path, relayed: (usize, usize)) -> Value {
    wait_for(
        &format!("{} to show {relayed:?} bytes relayed", control.display()),
        || {
            let document = status_json(control);
            let connection = document["connections"].get(0)?.clone();
            let bytes = (
                connection["lan_to_link_bytes"].as_u64()? as usize,
                connection["link_to_lan_bytes"].as_u64()? as usize,
            );
            (bytes == relayed).then_some(connection)
        },
    )
}

#[test]
fn status_and_metrics_show_a_forwarded_connection_while_it_is_held() {
    let dir = TempDir::new("gateway-status");
    // The server reads the upload, says so, sends the download, then
    // waits for the client's end before closing.
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_addr = server.local_addr().unwrap();
    let (uploaded, upload_read) = mpsc::channel();
    let server_thread = std::thread::spawn(move || {
        let (mut stream, _) = server.accept().unwrap();
        let mut upload = vec![0u8; UPLOAD];
        stream.read_exact(&mut upload).unwrap();
        uploaded.send(()).unwrap();
        stream.write_all(&vec![7u8; DOWNLOAD]).unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "nothing after the upload");
    });

    let (keys_far, keys_client) = common::link_keys(dir.path());
    let far_udp = free_udp_port();
    let far_control = dir.path().join("far.sock");
    let far = start_gateway(
        dir.path(),
        "far.toml",
        &format!(
            "[link]\n{keys_far}udp = \"127.0.0.1:{far_udp}\"\n\
             [[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n",
            server_addr.port()
        ),
        &far_control,
    );
    let listen: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let client_control = dir.path().join("client.sock");
    let client = start_gateway(
        dir.path(),
        "client.toml",
        &format!(
            "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
             [metrics]\nlisten = \"{metrics}\"\n\
             [[forward]]\nlisten = \"{listen}\"\nto = \"{server_addr}\"\n"
        ),
        &client_control,
    );
    assert!(
        client
            .ready
            .contains(&format!("control socket {}", client_control.display()))
            && client
                .ready
                .contains(&format!("metrics http://{metrics}/metrics")),
        "{}",
        client.ready
    );
    let mode = std::fs::metadata(&client_control).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the control socket is private");

    // The connection, held open: the upload read by the server, the
    // download read by the client, neither side closed.
    let mut stream = TcpStream::connect(listen).unwrap();
    stream.set_read_timeout(Some(WITHIN)).unwrap();
    let client_addr = stream.local_addr().unwrap();
    stream.write_all(&vec![3u8; UPLOAD]).unwrap();
    upload_read
        .recv_timeout(WITHIN)
        .expect("the server read the upload");
    let mut download = vec![0u8; DOWNLOAD];
    stream.read_exact(&mut download).unwrap();

    let route = format!("forward:{listen}");
    let held = connection_having_relayed(&client_control, (UPLOAD, DOWNLOAD));
    assert_eq!(held["client"], client_addr.to_string());
    assert_eq!(held["destination"], server_addr.to_string());
    assert_eq!(held["route"], route);
    assert_eq!(held["state"], "relaying");
    assert!(
        held["link"]["srtt_s"].as_f64().is_some_and(|s| s > 0.0),
        "the link connection's figures: {held}"
    );
    assert!(held["link"]["send_rate_bps"].is_u64(), "{held}");
    let document = status_json(&client_control);
    assert_eq!(document["counters"]["held"], 1, "{document}");
    assert_eq!(document["counters"]["closed"], 0, "{document}");

    // The far gateway lists it too, its LAN side being the server's.
    let far_held = connection_having_relayed(&far_control, (DOWNLOAD, UPLOAD));
    assert_eq!(far_held["destination"], server_addr.to_string());
    assert_eq!(far_held["route"], "far");

    // The table: who answered and where, the counters' line, the header,
    // the connection's row.
    let output = status(&client_control, &[]);
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "gateway pid {}, config {}, forward, namespace {}",
            client.pid(),
            dir.path().join("client.toml").display(),
            here()
        ),
        "{table}"
    );
    assert_eq!(
        lines[1],
        format!(
            "control socket {} (given with --control)",
            client_control.display()
        ),
        "{table}"
    );
    assert!(
        lines[2].starts_with("scps gateway: 1 of ") && lines[2].contains("connections closed 0,"),
        "{table}"
    );
    assert!(lines[3].starts_with("client"), "{table}");
    let row: Vec<&str> = lines[4].split_whitespace().collect();
    let upload_text = UPLOAD.to_string();
    let download_text = DOWNLOAD.to_string();
    assert_eq!(
        row[..4],
        [
            client_addr.to_string().as_str(),
            server_addr.to_string().as_str(),
            route.as_str(),
            "relaying"
        ],
        "{table}"
    );
    assert_eq!(
        row[5..7],
        [upload_text.as_str(), download_text.as_str()],
        "{table}"
    );
    assert!(row[8].ends_with("ms"), "the link's smoothed RTT: {table}");

    // The metrics count the same bytes.
    let relayed = |direction: &str| {
        format!("scps_gateway_relayed_bytes_total{{route=\"{route}\",direction=\"{direction}\"}}")
    };
    let relaying = format!("scps_gateway_connections{{route=\"{route}\",state=\"relaying\"}}");
    let text = scrape(metrics);
    assert_eq!(
        sample(&text, &relayed("lan_to_link")),
        Some(UPLOAD as f64),
        "{text}"
    );
    assert_eq!(
        sample(&text, &relayed("link_to_lan")),
        Some(DOWNLOAD as f64),
        "{text}"
    );
    assert_eq!(sample(&text, &relaying), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            &format!("scps_gateway_link_connections{{route=\"{route}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            &format!("scps_gateway_link_srtt_seconds{{route=\"{route}\"}}")
        )
        .is_some_and(|s| s > 0.0),
        "{text}"
    );

    // The end: the client closes, the server reads it and closes.
    stream.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    server_thread.join().unwrap();
    let closed = "scps_gateway_connections_ended_total{outcome=\"closed\"}";
    let text = wait_for("the connection to be counted as closed", || {
        let text = scrape(metrics);
        (sample(&text, closed) == Some(1.0)).then_some(text)
    });
    assert_eq!(
        sample(&text, &relayed("lan_to_link")),
        Some(UPLOAD as f64),
        "the bytes stay counted: {text}"
    );
    assert_eq!(
        sample(&text, &relayed("link_to_lan")),
        Some(DOWNLOAD as f64),
        "{text}"
    );
    assert_eq!(sample(&text, &relaying), Some(0.0), "{text}");
    // Forty connections that send nothing do not keep a scraper out.
    let idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(metrics).unwrap()).collect();
    assert_eq!(sample(&scrape(metrics), closed), Some(1.0));
    drop(idle);
    let document = status_json(&client_control);
    assert_eq!(document["connections"], Value::Array(Vec::new()), "{document}");
    assert_eq!(document["counters"]["closed"], 1, "{document}");

    let client_log = stop(client);
    stop(far);
    assert!(
        client_log.contains("stopped; connections closed 1,"),
        "{client_log}"
    );
    assert!(!client_control.exists(), "the control socket is removed on exit");
    assert!(!far_control.exists(), "the control socket is removed on exit");
}

#[test]
fn status_without_a_gateway_names_the_socket_and_fails() {
    let dir = TempDir::new("gateway-status-none");
    let control = dir.path().join("nobody.sock");
    let output = status(&control, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "control socket {}: no gateway answers",
            control.display()
        )),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_bad_metrics_listen_is_refused_naming_the_key() {
    let dir = TempDir::new("gateway-status-metrics");
    let file = dir.path().join("bad.toml");
    let (keys, _) = common::link_keys(dir.path());
    std::fs::write(
        &file,
        format!(
            "[link]\n{keys}udp = \"127.0.0.1:0\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\n\
             [metrics]\nlisten = \"127.0.0.1\"\n"
        ),
    )
    .unwrap();
    for check in [false, true] {
        let mut command = scps();
        command.arg("gateway").arg("--config").arg(&file);
        if check {
            command.arg("--check");
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("metrics.listen = 127.0.0.1: an address and port"),
            "{stderr}"
        );
        assert!(stderr.contains("bad.toml"), "names the file: {stderr}");
    }
}

#[test]
fn a_control_socket_in_use_is_refused_and_a_stale_one_replaced() {
    let dir = TempDir::new("gateway-status-control");
    let control = dir.path().join("gw.sock");
    // A socket file left by a gateway that was killed.
    drop(std::os::unix::net::UnixListener::bind(&control).unwrap());
    let (keys, _) = common::link_keys(dir.path());
    let config = format!("[link]\n{keys}udp = \"127.0.0.1:0\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\n");
    let config = config.as_str();
    let first = start_gateway(dir.path(), "first.toml", config, &control);
    assert_eq!(
        status_json(&control)["counters"]["held"],
        0,
        "the stale file was replaced"
    );

    let file = dir.path().join("second.toml");
    std::fs::write(&file, config).unwrap();
    let second = scps()
        .arg("gateway")
        .arg("--config")
        .arg(&file)
        .arg("--control")
        .arg(&control)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "control socket {}: another gateway answers on it",
            control.display()
        )),
        "{stderr}"
    );
    assert!(status(&control, &[]).status.success(), "the first still answers");
    stop(first);
    assert!(!control.exists(), "removed on exit");
}

#[test]
fn the_connections_held_say_what_sets_the_limit() {
    let dir = TempDir::new("gateway-status-limit");
    let (keys, _) = common::link_keys(dir.path());
    let config = |relay: &str| {
        format!("[link]\n{keys}udp = \"127.0.0.1:0\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\n[relay]\n{relay}")
    };
    // relay.memory holds 64 MiB / (2 × 256 KiB) = 128 connections, fewer
    // than relay.max_connections' default.
    let control = dir.path().join("memory.sock");
    let memory = start_gateway(
        dir.path(),
        "memory.toml",
        &config("buffer = \"256KiB\"\nmemory = \"64MiB\"\n"),
        &control,
    );
    let text = common::text(&status(&control, &[]).stdout);
    assert!(
        text.contains(
            "\nscps gateway: 0 of 128 connections held (the most relay.memory = 64 MiB allows at 2 × 256 KiB \
             per connection; relay.max_connections = 4096); connections closed 0,"
        ),
        "{text}"
    );
    let document = status_json(&control);
    assert_eq!(document["counters"]["limit"], 128, "{document}");
    assert_eq!(document["limit"]["memory_allows"], 128, "{document}");
    assert_eq!(document["limit"]["max_connections"], 4096, "{document}");
    assert_eq!(document["limit"]["memory_bytes"], 64 << 20, "{document}");
    assert_eq!(document["limit"]["buffer_bytes"], 256 << 10, "{document}");
    stop(memory);

    // relay.max_connections, below what the memory holds.
    let max = start_gateway(
        dir.path(),
        "max.toml",
        &config("buffer = \"256KiB\"\nmemory = \"64MiB\"\nmax_connections = 100\n"),
        &control,
    );
    let text = common::text(&status(&control, &[]).stdout);
    assert!(
        text.contains(
            "\nscps gateway: 0 of 100 connections held (relay.max_connections = 100; relay.memory = 64 MiB \
             allows 128 at 2 × 256 KiB per connection); connections closed 0,"
        ),
        "{text}"
    );
    stop(max);
}

/// A name for a network namespace (a file under /run/netns bound to
/// it, as `ip netns attach` makes), removed when dropped.
struct NamespaceName(String);

impl NamespaceName {
    /// Names `node`'s namespace `name` (through a shell started in it,
    /// whose process is in it).
    fn attach(node: &Node, name: &str) -> NamespaceName {
        node.output("sh", &["-c", &format!("exec ip netns attach {name} $$")])
            .unwrap();
        NamespaceName(name.to_owned())
    }
}

impl Drop for NamespaceName {
    fn drop(&mut self) {
        // The name only: the namespace lives on while the testbed holds it.
        let _ = Command::new("ip").args(["netns", "delete", &self.0]).status();
    }
}

/// The inode of `node`'s namespace, from its `net:[INODE]`.
fn inode(node: &Node) -> u64 {
    let id = node.namespace_id().unwrap();
    id.trim_start_matches("net:[")
        .trim_end_matches(']')
        .parse()
        .unwrap_or_else(|_| panic!("{id}"))
}

/// `scps status ARGS...` run in `node`: its output, which must be a
/// success.
fn status_in(node: &Node, args: &[&str]) -> String {
    let mut all = vec!["status"];
    all.extend_from_slice(args);
    node.output(SCPS, &all)
        .unwrap_or_else(|e| panic!("scps status in {}: {e}", node.name()))
}

#[test]
fn gateways_in_two_namespaces_each_on_its_default_socket_are_each_found_from_their_own() {
    // Two namespaces, each with a gateway of its own on the default
    // control socket (no --control, no control.socket): the far gateway
    // of the explicit modes in one (named, as `ip netns add` would), a
    // forward and a SOCKS5 server in the other.
    let testbed = Testbed::build(Topology::direct()).unwrap();
    let dir = TempDir::new("gateway-status-namespaces");
    let (one, two) = (testbed.node("client").unwrap(), testbed.node("server").unwrap());
    let name = format!("scps-status-{}", std::process::id());
    let _named = NamespaceName::attach(one, &name);
    let (keys_far, keys_client) = common::link_keys(dir.path());
    let far_file = dir.path().join("far.toml");
    std::fs::write(
        &far_file,
        format!("[link]\n{keys_far}udp = \"127.0.0.1:7200\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\n"),
    )
    .unwrap();
    let client_file = dir.path().join("client.toml");
    std::fs::write(
        &client_file,
        format!(
            "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:7200\"\n\
             [[forward]]\nlisten = \"127.0.0.1:2222\"\nto = \"127.0.0.1:22\"\n\
             [[socks]]\nlisten = \"127.0.0.1:1080\"\n"
        ),
    )
    .unwrap();
    let far = start_with(one, &far_file, &[]);
    let client = start_with(two, &client_file, &[]);
    wait_ready(&[(one, &far), (two, &client)]);

    for (node, gateway, file, modes, namespace) in [
        (
            one,
            &far,
            &far_file,
            "far",
            format!("{} (netns {name})", inode(one)),
        ),
        (
            two,
            &client,
            &client_file,
            "forward + socks",
            format!("{} (unnamed)", inode(two)),
        ),
    ] {
        let socket = format!("/run/scps-gateway-net{}.sock", inode(node));
        let text = status_in(node, &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            format!(
                "gateway pid {}, config {}, {modes}, namespace {namespace}",
                gateway.pid(),
                file.display()
            ),
            "{text}"
        );
        assert_eq!(
            lines[1],
            format!("control socket {socket} (this network namespace's default)"),
            "{text}"
        );
        assert!(lines[2].starts_with("scps gateway: 0 of "), "{text}");
        let document: Value = serde_json::from_str(&status_in(node, &["--json"])).unwrap();
        let answered = &document["gateway"];
        assert_eq!(answered["pid"], gateway.pid(), "{document}");
        assert_eq!(answered["config"], file.display().to_string(), "{document}");
        assert_eq!(answered["namespace"]["inode"], inode(node), "{document}");
        assert_eq!(answered["namespace"]["initial"], false, "{document}");
        assert_eq!(answered["control_socket"], socket, "{document}");
    }
    let document: Value = serde_json::from_str(&status_in(one, &["--json"])).unwrap();
    assert_eq!(document["gateway"]["modes"], serde_json::json!(["far"]));
    assert_eq!(document["gateway"]["namespace"]["name"], name.as_str());
    let document: Value = serde_json::from_str(&status_in(two, &["--json"])).unwrap();
    assert_eq!(
        document["gateway"]["modes"],
        serde_json::json!(["forward", "socks"])
    );
    assert_eq!(document["gateway"]["namespace"]["name"], Value::Null);

    // Asked from the other namespace, a gateway is said to run elsewhere.
    let socket = format!("/run/scps-gateway-net{}.sock", inode(one));
    let text = status_in(two, &["--control", &socket]);
    assert!(
        text.contains(&format!(
            "\nthis gateway runs in another network namespace ({} (netns {name})) than this command ({} \
             (unnamed)): the connections and counts below are that namespace's\n",
            inode(one),
            inode(two)
        )),
        "{text}"
    );

    for (node, gateway) in [(one, &far), (two, &client)] {
        stop_in(gateway);
        let socket = format!("/run/scps-gateway-net{}.sock", inode(node));
        assert!(!Path::new(&socket).exists(), "{socket} removed on exit");
    }
}
