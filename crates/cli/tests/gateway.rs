//! `scps gateway` as a user runs it: two processes, a client gateway with
//! a port forward and a far gateway with an allow rule, joined by SCPS-TP
//! over UDP on loopback; a kernel client reaches a kernel server through
//! them, content checked both ways; SIGTERM stops both cleanly, with what
//! they carried in their last words. The example configurations of
//! docs/examples pass `--check`; a bad configuration is refused before
//! anything starts, naming the key.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::loopback::{self, stop};
use common::{free_tcp_port, free_udp_port};
use sha2::{Digest, Sha256};

fn scps() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scps"))
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn two_gateway_processes_carry_a_kernel_connection_and_stop_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("scps-gateway-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_addr = server.local_addr().unwrap();
    let download: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let server_thread = common::digest_server(server, download.clone());

    let (keys_far, keys_client) = common::link_keys(&dir);
    let far_udp = free_udp_port();
    let far = loopback::start(
        &dir,
        "far.toml",
        &format!(
            "[link]\n{keys_far}udp = \"127.0.0.1:{far_udp}\"\n[engine]\nprotocol = \"scps-vj\"\n\
             [[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n",
            server_addr.port()
        ),
        &[],
    );
    // The far gateway holds its UDP port once it is up.
    let listen: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let client = loopback::start(
        &dir,
        "client.toml",
        &format!(
            "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
             [[forward]]\nlisten = \"{listen}\"\nto = \"{server_addr}\"\n"
        ),
        &[],
    );
    let upload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    let mut stream = TcpStream::connect(listen).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(&upload).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    server_thread.join().unwrap();
    assert_eq!(answer.len(), 32 + download.len(), "bytes through the gateways");
    assert_eq!(
        &answer[..32],
        &Sha256::digest(&upload)[..],
        "the server read the upload whole"
    );
    assert_eq!(&answer[32..], &download[..], "the client read the download whole");

    let (client_ok, client_log) = stop(client);
    let (far_ok, far_log) = stop(far);
    assert!(
        client_ok,
        "the client gateway exits cleanly on SIGTERM:\n{client_log}"
    );
    assert!(far_ok, "the far gateway exits cleanly on SIGTERM:\n{far_log}");
    assert!(client_log.contains("forwarding"), "{client_log}");
    assert!(
        client_log.contains("stopped; connections closed 1,"),
        "{client_log}"
    );
    assert!(far_log.contains("taking link connections"), "{far_log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every example configuration, as shipped, with keys of the tester's
/// own made as its comments say (`scps gateway keygen`, each pair's
/// public keys in place of the examples'), passes `--check`.
#[test]
fn the_example_configurations_are_valid() {
    let source = repository().join("docs/examples/gateway");
    let mut examples: Vec<String> = std::fs::read_dir(&source)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    examples.sort();
    let pairs = [("client.toml", "far.toml"), ("gwA.toml", "gwB.toml")];
    let paired: Vec<&str> = pairs.iter().flat_map(|(a, b)| [*a, *b]).collect();
    assert_eq!(
        examples.len(),
        paired.len(),
        "every example is one of a pair here: {examples:?}"
    );
    let dir = std::env::temp_dir().join(format!("scps-gateway-examples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let value = |text: &str, key: &str| -> String {
        let line = text
            .lines()
            .find(|line| line.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"));
        line.split('"').nth(1).unwrap().to_owned()
    };
    for (a, b) in pairs {
        let texts = [a, b].map(|name| std::fs::read_to_string(source.join(name)).unwrap());
        let publics = texts.clone().map(|text| {
            let key = dir.join(value(&text, "private_key_file"));
            let output = scps().args(["gateway", "keygen"]).arg(&key).output().unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        });
        for (i, name) in [a, b].into_iter().enumerate() {
            let text = texts[i].replace(&value(&texts[i], "peer_public_key"), &publics[1 - i]);
            let example = dir.join(name);
            std::fs::write(&example, text).unwrap();
            let output = scps()
                .args(["gateway", "--check", "--config"])
                .arg(&example)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_configuration_is_refused_before_anything_starts() {
    let dir = std::env::temp_dir().join(format!("scps-gateway-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    let (keys, _) = common::link_keys(&dir);
    std::fs::write(
        &file,
        format!(
            "[link]\n{keys}udp = \"127.0.0.1:0\"\n[[allow]]\nprefix = \"10.0.0.0/8\"\nports = \"80-70\"\n"
        ),
    )
    .unwrap();
    let output = scps().args(["gateway", "--config"]).arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("allow[0].ports = 80-70"), "{stderr}");
    let output = scps()
        .args(["gateway", "--config"])
        .arg(dir.join("missing.toml"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read --config"));
    std::fs::remove_dir_all(&dir).unwrap();
}
