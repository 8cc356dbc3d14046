//! Real applications from Debian through two transparent gateways, with
//! nothing configured on them (the testbed's gateway topology, see
//! `common/gateways.rs`): curl and wget fetching a 20 MB file from nginx;
//! scp, sftp and rsync over ssh to OpenSSH's sshd, and an interactive ssh
//! session; FTP in passive and active mode against vsftpd; a telnet
//! session; iperf3 both ways. Every file is checked by SHA-256 and each
//! gateway must have carried the connections (its summary counts them).
//! ssh also goes through the explicit port forward.
//!
//! As root (CI) it runs as it is; otherwise the testbed enters a user
//! namespace of its own. The programs come from the README's test command
//! (scripts/test-deps.sh).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::TempDir;
use common::gateways::{GatewayProcess, count, start, start_pair, stop, wait_ready};
use common::servers::{self, Sshd, digest, wait_connections_ended, write_pattern};
use common::typing;
use scps_testbed::{Node, Output, Testbed, Topology};

const SERVER: &str = "10.99.4.2";

/// Stops both gateways once the connections they carried have ended at
/// both (the ends' closes cross the link after the applications have
/// gone: a stop sooner found one still open, seen in CI); each must have
/// closed at least `connections`.
fn stop_carried(testbed: &Testbed, a: &GatewayProcess, b: &GatewayProcess, connections: u64) {
    for gateway in ["gwA", "gwB"] {
        wait_connections_ended(testbed.node(gateway).unwrap());
    }
    let (said_a, said_b) = (stop(a), stop(b));
    for (gateway, said) in [("gwA", said_a), ("gwB", said_b)] {
        assert!(
            count(&said, "closed") >= connections,
            "{gateway} carried the {connections} connections: {said}"
        );
    }
}

/// Runs `program` in `node`; its standard output, or the failure with
/// what it said.
fn run(node: &Node, program: &str, args: &[String]) -> String {
    node.output(program, args)
        .unwrap_or_else(|e| panic!("{program} {}: {e}", args.join(" ")))
}

/// The gateway topology with both gateways running, and a temporary
/// directory named after the test.
fn topology_with_gateways(name: &str) -> (Testbed, TempDir, GatewayProcess, GatewayProcess) {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new(name);
    let (a, b) = start_pair(&testbed, &dir);
    (testbed, dir, a, b)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn curl_and_wget_fetch_a_file_from_nginx_through_the_gateways() {
    let (testbed, dir, a, b) = topology_with_gateways("gateway-nginx");
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    let want = write_pattern(&www.join("file.bin"), 20_000_000, 1);
    let server = testbed.node("server").unwrap();
    let _nginx = servers::nginx(server, dir.path(), &www, SERVER, 8080);
    let client = testbed.node("client").unwrap();
    let url = format!("http://{SERVER}:8080/file.bin");
    let by_curl = dir.path().join("curl.bin");
    let by_wget = dir.path().join("wget.bin");
    run(
        client,
        "curl",
        &strings(&[
            "-sS",
            "--fail",
            "--max-time",
            "60",
            "-o",
            &by_curl.display().to_string(),
            &url,
        ]),
    );
    run(
        client,
        "wget",
        &strings(&["-q", "--timeout=60", "-O", &by_wget.display().to_string(), &url]),
    );
    assert_eq!(digest(&by_curl), want, "the file curl fetched");
    assert_eq!(digest(&by_wget), want, "the file wget fetched");
    stop_carried(&testbed, &a, &b, 2);
}

#[test]
fn scp_sftp_rsync_and_an_ssh_session_through_the_gateways() {
    let (testbed, dir, a, b) = topology_with_gateways("gateway-ssh");
    let sshd = servers::sshd(testbed.node("server").unwrap(), dir.path(), SERVER);
    let client = testbed.node("client").unwrap();
    let echoes = ssh_session(client, &sshd, SERVER, "22");
    let files = transfer_over_ssh(client, &sshd, dir.path(), SERVER, "22");
    println!("{files} transfers; keystroke echo {echoes:?}");
    // scp both ways, sftp, rsync, the session: five connections.
    stop_carried(&testbed, &a, &b, 5);
}

#[test]
fn ssh_through_the_explicit_port_forward() {
    // gwA forwards 10.99.1.1:2222 to the server's sshd across SCPS-TP on
    // UDP; gwB allows only that destination. No routing, no interception.
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-ssh-forward");
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let write = |name: &str, text: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        file
    };
    let (keys_far, keys_client) = common::link_keys(dir.path());
    let a = start(
        gw_a,
        &write(
            "a.toml",
            &format!(
                "[link]\n{keys_client}udp = \"10.99.2.2:7100\"\npeer = \"10.99.3.2:7100\"\n\
                 [[forward]]\nlisten = \"10.99.1.1:2222\"\nto = \"10.99.4.2:22\"\nclients = [\"10.99.1.0/24\"]\n"
            ),
        ),
    );
    let b = start(
        gw_b,
        &write(
            "b.toml",
            &format!(
                "[link]\n{keys_far}udp = \"10.99.3.2:7100\"\n[[allow]]\nprefix = \"10.99.4.2/32\"\nports = \"22\"\n"
            ),
        ),
    );
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    let sshd = servers::sshd(testbed.node("server").unwrap(), dir.path(), SERVER);
    let client = testbed.node("client").unwrap();
    ssh_session(client, &sshd, "10.99.1.1", "2222");
    transfer_over_ssh(client, &sshd, dir.path(), "10.99.1.1", "2222");
    stop_carried(&testbed, &a, &b, 5);
}

/// scp up and down, an sftp download and an rsync of a directory, each
/// checked by SHA-256; how many transfers.
fn transfer_over_ssh(client: &Node, sshd: &Sshd, dir: &std::path::Path, host: &str, port: &str) -> usize {
    let ssh = sshd.client_options();
    let local = dir.join("local");
    let remote = dir.join("remote");
    std::fs::create_dir_all(local.join("tree/sub")).unwrap();
    std::fs::create_dir_all(&remote).unwrap();
    let up = write_pattern(&local.join("up.bin"), 5_000_000, 2);
    let down = write_pattern(&remote.join("down.bin"), 5_000_000, 3);
    let target = |path: &std::path::Path| format!("root@{host}:{}", path.display());
    let with = |extra: &[String]| [ssh.clone(), extra.to_vec()].concat();

    run(
        client,
        "scp",
        &with(&strings(&[
            "-P",
            port,
            &local.join("up.bin").display().to_string(),
            &target(&remote.join("up.bin")),
        ])),
    );
    assert_eq!(digest(&remote.join("up.bin")), up, "scp's upload");
    run(
        client,
        "scp",
        &with(&strings(&[
            "-P",
            port,
            &target(&remote.join("down.bin")),
            &local.join("scp.bin").display().to_string(),
        ])),
    );
    assert_eq!(digest(&local.join("scp.bin")), down, "scp's download");

    let batch = dir.join("sftp-batch");
    std::fs::write(
        &batch,
        format!(
            "get {} {}\n",
            remote.join("down.bin").display(),
            local.join("sftp.bin").display()
        ),
    )
    .unwrap();
    run(
        client,
        "sftp",
        &with(&strings(&[
            "-P",
            port,
            "-b",
            &batch.display().to_string(),
            &format!("root@{host}"),
        ])),
    );
    assert_eq!(digest(&local.join("sftp.bin")), down, "sftp's download");

    let digests: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            let sub = if i % 2 == 0 { "tree" } else { "tree/sub" };
            write_pattern(&local.join(format!("{sub}/f{i}.bin")), 300_000 + i * 7, 10 + i)
        })
        .collect();
    run(
        client,
        "rsync",
        &strings(&[
            "-a",
            "-e",
            &format!("{} -p {port}", sshd.rsync_shell()),
            &format!("{}/", local.join("tree").display()),
            &target(&remote.join("tree")),
        ]),
    );
    for (i, want) in digests.iter().enumerate() {
        let sub = if i % 2 == 0 { "tree" } else { "tree/sub" };
        assert_eq!(
            &digest(&remote.join(format!("{sub}/f{i}.bin"))),
            want,
            "rsync's file {i}"
        );
    }
    4
}

/// An interactive ssh session with a terminal: 20 keystrokes typed one at
/// a time, each echoed by the far side before the next (by `dd`, a byte
/// at a time), then one more that ends the session; the 20 echo times.
fn ssh_session(client: &Node, sshd: &Sshd, host: &str, port: &str) -> Vec<Duration> {
    let mut args = sshd.client_options();
    args.extend(strings(&[
        "-tt",
        "-p",
        port,
        &format!("root@{host}"),
        "stty raw -echo; printf READY; exec dd bs=1 count=21 status=none",
    ]));
    let mut session = client.run(move || {
        Command::new("ssh")
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    let mut input = session.stdin.take().unwrap();
    let output = typing::Reader::new(session.stdout.take().unwrap());
    output.until(b"READY", 1, Duration::from_secs(30));
    let echoes = typing::keystroke_echoes(&mut input, &output, b"abcdefghijklmnopqrst");
    assert_eq!(echoes.len(), 20);
    std::io::Write::write_all(&mut input, b".").unwrap();
    let status = session.wait().unwrap();
    assert!(status.success(), "the session ended as dd did: {status:?}");
    echoes
}

#[test]
fn ftp_passive_and_active_through_the_gateways() {
    // Active mode is the hard case for a gateway: the server opens the
    // data connection back to the client (from port 20), so gwB
    // intercepts it and gwA takes it over.
    let (testbed, dir, a, b) = topology_with_gateways("gateway-ftp");
    let root = dir.path().join("ftp");
    std::fs::create_dir_all(&root).unwrap();
    let want = write_pattern(&root.join("file.bin"), 10_000_000, 4);
    let _vsftpd = servers::vsftpd(testbed.node("server").unwrap(), dir.path(), &root, SERVER);
    let client = testbed.node("client").unwrap();
    let url = format!("ftp://{SERVER}/file.bin");
    for (mode, extra) in [("passive", vec![]), ("active", vec!["-P", "10.99.1.2"])] {
        let fetched = dir.path().join(format!("{mode}.bin"));
        let mut args = strings(&[
            "-sS",
            "--fail",
            "--max-time",
            "60",
            "-o",
            &fetched.display().to_string(),
        ]);
        args.extend(strings(&extra));
        args.push(url.clone());
        run(client, "curl", &args);
        assert_eq!(digest(&fetched), want, "FTP in {mode} mode");
    }
    // Each transfer: a control and a data connection.
    stop_carried(&testbed, &a, &b, 4);
}

#[test]
fn a_telnet_session_echoes_through_the_gateways() {
    let (testbed, _dir, a, b) = topology_with_gateways("gateway-telnet");
    let server = testbed.node("server").unwrap();
    let telnetd = servers::telnetd(server, SERVER);
    let mut session = testbed.node("client").unwrap().run(|| {
        Command::new("telnet")
            .arg(SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    let mut input = session.stdin.take().unwrap();
    let output = typing::Reader::new(session.stdout.take().unwrap());
    output.until(b"Escape character", 1, Duration::from_secs(30));
    // The far side's terminal echoes the line as it comes, and cat writes
    // it back once whole: twice, both from across the link (the client
    // writes nothing it reads from a pipe).
    std::io::Write::write_all(&mut input, b"typed-through-two-gateways\r\n").unwrap();
    let seen = output.until(b"typed-through-two-gateways", 2, Duration::from_secs(30));
    println!("telnet: {}", String::from_utf8_lossy(&seen));
    drop(input);
    let _ = session.kill();
    let _ = session.wait();
    telnetd.stop(server);
    stop_carried(&testbed, &a, &b, 1);
}

#[test]
fn iperf3_runs_both_ways_through_the_gateways() {
    let (testbed, _dir, a, b) = topology_with_gateways("gateway-iperf3");
    let server = testbed.node("server").unwrap();
    let iperf3 = server
        .spawn(
            "iperf3",
            &["-s", "-B", "10.99.4.2", "--forceflush"],
            Output::Piped,
        )
        .unwrap();
    // It says when it listens, again after each test (a second test
    // that comes sooner finds it busy); its few lines a second fit the
    // pipe.
    let mut said = BufReader::new(iperf3.take_stdout().unwrap()).lines();
    let client = testbed.node("client").unwrap();
    for reverse in [false, true] {
        assert!(
            said.any(|line| line.unwrap().contains("Server listening")),
            "iperf3 never listened"
        );
        let mut args = vec!["-c", "10.99.4.2", "-t", "2", "-J"];
        if reverse {
            args.push("-R");
        }
        let report = client
            .output("iperf3", &args)
            .expect("iperf3 through the gateways");
        let report: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert!(report.get("error").is_none(), "{report}");
        let received = report["end"]["sum_received"]["bytes"].as_u64().unwrap();
        let sent = report["end"]["sum_sent"]["bytes"].as_u64().unwrap();
        println!("iperf3 reverse={reverse}: sent {sent} bytes, received {received}");
        assert!(
            received > 1_000_000,
            "iperf3 moved data (reverse {reverse}): {received}"
        );
        assert!(received <= sent, "no more received than sent");
    }
    // Each iperf3 test is two connections, control and data; iperf3
    // closes a data connection with bytes still unread at its end, which
    // resets it (as it would without the gateways), and the gateways pass
    // that on, once the last of them has ended at both gateways (iperf3
    // returns before its server has closed).
    for gateway in ["gwA", "gwB"] {
        wait_connections_ended(testbed.node(gateway).unwrap());
    }
    for said in [stop(&a), stop(&b)] {
        assert!(
            count(&said, "closed") + count(&said, "reset") >= 4,
            "both tests' connections: {said}"
        );
    }
}
