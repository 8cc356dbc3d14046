//! The example gateway configurations under docs/examples/gateway run as
//! shipped. Each is accepted by `scps gateway --check`, and the transparent
//! pair (gwA.toml, gwB.toml) carries real applications in a testbed laid
//! out as their comments describe:
//!
//! ```text
//! client 10.1.0.10 ── eth1 [gwA] eth0 192.0.2.1 ── 192.0.2.2 eth0 [gwB] eth1 ── server 10.2.0.20
//! ```
//!
//! The only change made to a shipped file is the one its comments ask
//! for: the peer's public key becomes the one `scps gateway keygen`
//! printed for the key file the configuration names.

mod common;

use std::path::{Path, PathBuf};

use common::TempDir;
use common::gateways::{count, start, stop, wait_ready};
use common::servers::{self, Sshd, digest, wait_connections_ended, write_pattern};
use scps_testbed::{LinkEnd, Node, Route, Testbed, Topology};

const CLIENT: &str = "10.1.0.10";
/// The archive's web server of the examples' `archive` route.
const SERVER: &str = "10.2.0.20";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/gateway")
}

/// The value of `key = "VALUE"` in a configuration's text.
fn value_of<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| {
            line.trim_start()
                .strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')
        })
        .and_then(|rest| rest.trim_start().strip_prefix('"')?.split('"').next())
}

/// The shipped example `name` copied into `dir` with keys made for it: its
/// own key file (the name it gives) and `peer_key`'s public key in place
/// of the one it ships with.
fn shipped(dir: &Path, name: &str, peer_key: &str) -> PathBuf {
    let text = std::fs::read_to_string(examples().join(name)).unwrap();
    let own = value_of(&text, "private_key_file").expect("the example names its key file");
    common::public_key(dir, own);
    let shipped_peer = value_of(&text, "peer_public_key").expect("the example names its peer's key");
    let file = dir.join(name);
    std::fs::write(
        &file,
        text.replace(shipped_peer, &common::public_key(dir, peer_key)),
    )
    .unwrap();
    file
}

/// Each example configuration's key file and its peer's.
const PAIRS: [(&str, &str); 4] = [
    ("gwA.toml", "gwB.key"),
    ("gwB.toml", "gwA.key"),
    ("client.toml", "far.key"),
    ("far.toml", "client.key"),
];

#[test]
fn every_example_gateway_configuration_is_accepted_as_shipped() {
    let mut shipped_files: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    shipped_files.sort();
    let mut known: Vec<String> = PAIRS.iter().map(|(name, _)| name.to_string()).collect();
    known.sort();
    assert_eq!(shipped_files, known, "a new example needs its keys here");
    let dir = TempDir::new("gateway-examples-check");
    for (name, peer_key) in PAIRS {
        let file = shipped(dir.path(), name, peer_key);
        let output = common::scps(&["gateway", "--check", "--config", file.to_str().unwrap()]);
        assert!(
            output.status.success(),
            "{name}: {}{}",
            common::text(&output.stdout),
            common::text(&output.stderr)
        );
    }
}

fn end(node: &str, interface: &str, address: &str) -> LinkEnd {
    LinkEnd {
        node: node.into(),
        interface: interface.into(),
        addresses: vec![address.into()],
    }
}

fn route(node: &str, route: &str) -> Route {
    Route {
        node: node.into(),
        route: route.into(),
    }
}

/// The world of gwA.toml's and gwB.toml's comments: a ground LAN
/// 10.1.0.0/16 behind gwA's eth1, a remote one 10.2.0.0/16 behind gwB's,
/// and the modems' 192.0.2.0/24 between the gateways' eth0.
fn the_examples_world() -> Topology {
    Topology {
        nodes: ["client", "gwA", "gwB", "server"].map(String::from).to_vec(),
        links: vec![
            (
                end("client", "eth0", "10.1.0.10/16"),
                end("gwA", "eth1", "10.1.0.1/16"),
            ),
            (
                end("gwA", "eth0", "192.0.2.1/24"),
                end("gwB", "eth0", "192.0.2.2/24"),
            ),
            (
                end("gwB", "eth1", "10.2.0.1/16"),
                end("server", "eth0", "10.2.0.20/16"),
            ),
        ],
        routes: vec![
            route("client", "default via 10.1.0.1"),
            route("gwA", "10.2.0.0/16 via 192.0.2.2"),
            route("gwB", "10.1.0.0/16 via 192.0.2.1"),
            route("server", "default via 10.2.0.1"),
        ],
        forwarding: vec!["gwA".into(), "gwB".into()],
    }
}

fn run(node: &Node, program: &str, args: &[&str]) -> String {
    node.output(program, args)
        .unwrap_or_else(|e| panic!("{program} {}: {e}", args.join(" ")))
}

/// curl in `from` fetches `file` from nginx at `host`; the digest of what
/// it stored.
fn fetch(from: &Node, dir: &Path, host: &str, file: &str) -> Vec<u8> {
    let stored = dir.join(format!("fetched-{host}"));
    let url = format!("http://{host}/{file}");
    run(
        from,
        "curl",
        &[
            "-sS",
            "--fail",
            "--max-time",
            "60",
            "-o",
            stored.to_str().unwrap(),
            &url,
        ],
    );
    digest(&stored)
}

/// ssh from `from` to `sshd` at `host`: `upload` is written to a command
/// there that answers with its SHA-256, and `download` read back by
/// `cat`; (the digest the far side printed, the digest of what came back).
fn over_ssh(
    from: &Node,
    sshd: &Sshd,
    dir: &Path,
    host: &str,
    upload: &Path,
    download: &Path,
) -> (String, Vec<u8>) {
    let mut options = sshd.client_options();
    let login = format!("root@{host}");
    options.extend([login, "sha256sum".into()]);
    let args: Vec<&str> = options.iter().map(String::as_str).collect();
    let script = format!("ssh {} < {}", shell_quote(&args), upload.display());
    let said = run(from, "sh", &["-c", &script]);
    let back = dir.join(format!("ssh-back-{host}"));
    let last = args.len() - 1;
    let script = format!(
        "ssh {} cat {} > {}",
        shell_quote(&args[..last]),
        download.display(),
        back.display()
    );
    run(from, "sh", &["-c", &script]);
    (
        said.split_whitespace().next().unwrap_or("").to_owned(),
        digest(&back),
    )
}

fn shell_quote(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
#[ignore = "slower tier: ssh and HTTP both ways through the shipped pair in namespaces, real time, ~20 s"]
fn the_shipped_transparent_pair_passes_ssh_and_carries_http_opened_from_either_side() {
    let testbed = Testbed::build(the_examples_world()).unwrap();
    let dir = TempDir::new("gateway-examples-pair");
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let (client, server) = (testbed.node("client").unwrap(), testbed.node("server").unwrap());
    let a = start(gw_a, &shipped(dir.path(), "gwA.toml", "gwB.key"));
    let b = start(gw_b, &shipped(dir.path(), "gwB.toml", "gwA.key"));
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);

    // A web server and an sshd on each side, each in a directory of its own.
    let side = |name: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.join("www")).unwrap();
        path
    };
    let (near, far) = (side("near"), side("far"));
    let near_file = write_pattern(&near.join("www/file.bin"), 3_000_000, 1);
    let far_file = write_pattern(&far.join("www/file.bin"), 3_000_000, 2);
    let _near_web = servers::nginx(client, &near, &near.join("www"), CLIENT, 80);
    let _far_web = servers::nginx(server, &far, &far.join("www"), SERVER, 80);
    let near_ssh = servers::sshd(client, &near, CLIENT);
    let far_ssh = servers::sshd(server, &far, SERVER);

    // HTTP, carried: to the archive's server (its own route) and, opened
    // from the far side, to the ground's (the catch-all route).
    assert_eq!(
        fetch(client, dir.path(), SERVER, "file.bin"),
        far_file,
        "ground fetches from the archive"
    );
    assert_eq!(
        fetch(server, dir.path(), CLIENT, "file.bin"),
        near_file,
        "the far side fetches from the ground"
    );
    // ssh, passed: both ways on a connection opened from each side.
    for (from, sshd, host, upload, download) in [
        (
            client,
            &far_ssh,
            SERVER,
            near.join("www/file.bin"),
            far.join("www/file.bin"),
        ),
        (
            server,
            &near_ssh,
            CLIENT,
            far.join("www/file.bin"),
            near.join("www/file.bin"),
        ),
    ] {
        let (digest_there, back) = over_ssh(from, sshd, dir.path(), host, &upload, &download);
        assert_eq!(
            digest_there,
            hex(&digest(&upload)),
            "ssh to {host}: the upload arrived whole"
        );
        assert_eq!(
            back,
            digest(&download),
            "ssh to {host}: the download arrived whole"
        );
    }

    for gateway in [gw_a, gw_b] {
        wait_connections_ended(gateway);
    }
    let (said_a, said_b) = (stop(&a), stop(&b));
    for (name, said) in [("gwA", &said_a), ("gwB", &said_b)] {
        assert_eq!(
            count(said, "closed"),
            2,
            "{name} carried the two HTTP connections and passed the four of ssh: {said}"
        );
    }
}
