//! The crates' arrows point one way: the simulator and the sans-IO
//! crates under it build without tokio, TUN devices or netlink, and
//! without the crates that bring them (scps-net, scps-gateway). Each
//! sans-IO crate's normal dependencies are read from `cargo tree`; a
//! forbidden one fails the test with the chain of crates that pulls it in.
//!
//! Every workspace crate is named here as sans-IO or as real I/O, so a
//! new crate cannot slip past the check.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The simulator and the crates that hold no sockets, no runtime and no
/// kernel interfaces.
const SANS_IO: &[&str] = &[
    "scps-node",
    "scps-proto",
    "scps-channel",
    "scps-bond",
    "scps-saratoga",
    "scps-secure",
    "scps-pcap",
    "scps-config",
    "scps-workload-format",
    "scps-relay",
    "scps-sim",
];

/// The crates that do real I/O, each for its own reason.
const REAL_IO: &[&str] = &[
    // The engine's driver on tokio, TUN devices, UDP sockets, netlink.
    "scps-net",
    // Saratoga's node hosted on kernel UDP sockets through scps-net.
    "scps-saratoga-net",
    // The gateway around the relay: tokio, kernel sockets, nftables.
    "scps-gateway",
    // The live link emulator: tokio and TUN devices.
    "scps-emulator",
    // The test applications on real byte streams: tokio.
    "scps-workload",
    // `scps send` and `scps recv`: either stack on kernel sockets or TUN.
    "scps-transfer",
    // Network namespaces and processes (nix), no runtime.
    "scps-testbed",
    // Runs sweeps in the testbed as well as in the simulator.
    "scps-bench",
    // The command, which wires all of them up.
    "scps",
];

/// Whether a package brings tokio, TUN or netlink into a crate.
fn forbidden(package: &str) -> bool {
    package == "tokio"
        || package.starts_with("tokio-")
        || package == "tun"
        || package.starts_with("tun-")
        || package.starts_with("netlink")
        || package == "scps-net"
        || package == "scps-gateway"
}

fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml")
}

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(&cargo)
        .args(args)
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .output()
        .unwrap_or_else(|e| panic!("{cargo} {}: {e}", args.join(" ")));
    assert!(
        output.status.success(),
        "{cargo} {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo prints UTF-8")
}

/// The chains of crates, from `krate` down, that end in a forbidden
/// package, one per forbidden package found.
fn forbidden_chains(krate: &str) -> Vec<String> {
    // `--prefix depth` puts each package's depth before its name, so the
    // chain to any line is the last package seen at each smaller depth.
    let tree = cargo(&["tree", "-p", krate, "-e", "normal", "--prefix", "depth"]);
    let mut chain: Vec<&str> = Vec::new();
    let mut chains = Vec::new();
    for line in tree.lines() {
        let digits = line.find(|c: char| !c.is_ascii_digit()).unwrap_or(line.len());
        let (Ok(depth), Some(package)) = (line[..digits].parse::<usize>(), line[digits..].split(' ').next())
        else {
            continue;
        };
        chain.truncate(depth);
        // What a forbidden package brings in turn is its own business.
        let below_forbidden = chain.iter().skip(1).any(|p| forbidden(p));
        chain.push(package);
        let new = !chains
            .iter()
            .any(|c: &String| c.ends_with(&format!(" -> {package}")));
        if depth > 0 && forbidden(package) && !below_forbidden && new {
            chains.push(chain.join(" -> "));
        }
    }
    chains
}

#[test]
fn the_sans_io_crates_and_the_simulator_build_without_tokio_tun_or_netlink() {
    let failures: Vec<String> = SANS_IO.iter().flat_map(|krate| forbidden_chains(krate)).collect();
    assert!(
        failures.is_empty(),
        "sans-IO crates that depend on real I/O:\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn the_check_finds_what_a_real_io_crate_brings() {
    // scps-gateway reaches tokio directly and through scps-net.
    let chains = forbidden_chains("scps-gateway");
    assert!(
        chains.iter().any(|c| c.starts_with("scps-gateway -> scps-net")),
        "{chains:?}"
    );
    assert!(chains.iter().any(|c| c.ends_with(" -> tokio")), "{chains:?}");
}

#[test]
fn every_workspace_crate_is_sans_io_or_real_io() {
    let metadata: serde_json::Value =
        serde_json::from_str(&cargo(&["metadata", "--no-deps", "--format-version", "1"]))
            .expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("a list of packages");
    let unplaced: Vec<&str> = packages
        .iter()
        .filter_map(|p| p["name"].as_str())
        .filter(|name| !SANS_IO.contains(name) && !REAL_IO.contains(name))
        .collect();
    assert!(
        unplaced.is_empty(),
        "crates named neither sans-IO nor real I/O in tests/layering.rs: {unplaced:?}"
    );
}
