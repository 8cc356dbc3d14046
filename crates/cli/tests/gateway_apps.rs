//! Real applications from Debian through two transparent gateways, with
//! nothing configured on them (the testbed's gateway topology, see
//! `common/gateways.rs`): curl fetching a 20 MB file from nginx, checked
//! by SHA-256, and iperf3 both ways. Each gateway must have carried the
//! connections (its summary counts them).
//!
//! As root (CI) it runs as it is; otherwise the testbed enters a user
//! namespace of its own. The programs come from the README's test command
//! (scripts/test-deps.sh).

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::TempDir;
use common::gateways::{start_pair, stop};
use scps_testbed::{Node, Output, Testbed, Topology};
use sha2::{Digest, Sha256};

/// Waits until something in `node` listens on TCP `port`.
fn wait_listening(node: &Node, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listening = node
            .output("ss", &["-Hltn", &format!("sport = :{port}")])
            .unwrap();
        if !listening.trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} in {}",
            node.name()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The number of connections a gateway's summary counts as `what`
/// ("closed", "reset").
fn count(summary: &str, what: &str) -> u64 {
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

#[test]
fn curl_fetches_a_file_from_nginx_through_the_gateways() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-nginx");
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let file: Vec<u8> = (0..20_000_000u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(www.join("file.bin"), &file).unwrap();
    let prefix = dir.path().display().to_string();
    let conf = dir.path().join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes 1;\nuser root;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {prefix}/tmp;\n  proxy_temp_path {prefix}/tmp;\n\
               fastcgi_temp_path {prefix}/tmp;\n  uwsgi_temp_path {prefix}/tmp;\n  scgi_temp_path {prefix}/tmp;\n\
               server {{ listen 10.99.4.2:8080; root {prefix}/www; }}\n}}\n"
        ),
    )
    .unwrap();
    let (a, b) = start_pair(&testbed, &dir);
    let server = testbed.node("server").unwrap();
    server
        .spawn(
            "nginx",
            &[
                "-p",
                &prefix,
                "-e",
                &format!("{prefix}/error.log"),
                "-c",
                &conf.display().to_string(),
                "-g",
                "daemon off;",
            ],
            Output::Null,
        )
        .unwrap();
    wait_listening(server, 8080);

    let fetched = dir.path().join("fetched.bin");
    testbed
        .node("client")
        .unwrap()
        .output(
            "curl",
            &[
                "-sS",
                "--fail",
                "--max-time",
                "60",
                "-o",
                &fetched.display().to_string(),
                "http://10.99.4.2:8080/file.bin",
            ],
        )
        .expect("curl through the gateways");
    let got = std::fs::read(&fetched).unwrap();
    assert_eq!(got.len(), file.len(), "bytes curl wrote");
    assert_eq!(
        Sha256::digest(&got),
        Sha256::digest(&file),
        "the file curl fetched"
    );
    let (said_a, said_b) = (stop(&a), stop(&b));
    assert!(
        count(&said_a, "closed") >= 1,
        "gwA carried curl's connection: {said_a}"
    );
    assert!(
        count(&said_b, "closed") >= 1,
        "gwB carried curl's connection: {said_b}"
    );
}

#[test]
fn iperf3_runs_both_ways_through_the_gateways() {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new("gateway-iperf3");
    let (a, b) = start_pair(&testbed, &dir);
    let server = testbed.node("server").unwrap();
    let iperf3 = server
        .spawn(
            "iperf3",
            &["-s", "-B", "10.99.4.2", "--forceflush"],
            Output::Piped,
        )
        .unwrap();
    // It says when it listens (its few lines a second fit the pipe).
    let mut said = BufReader::new(iperf3.take_stdout().unwrap()).lines();
    assert!(
        said.any(|line| line.unwrap().contains("Server listening")),
        "iperf3 never listened"
    );
    let client = testbed.node("client").unwrap();
    for reverse in [false, true] {
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
    // that on.
    for said in [stop(&a), stop(&b)] {
        assert!(
            count(&said, "closed") + count(&said, "reset") >= 4,
            "both tests' connections: {said}"
        );
    }
}
