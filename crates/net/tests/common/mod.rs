//! Shared by the namespace tests: the topology, seeded content, tshark.

#![allow(dead_code)] // each test file uses its own part

pub mod flood;
pub mod netns;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use netns::{Namespace, veth};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_net::{Net, NetOptions, TunPath};
pub use scps_testbed::tshark::Syn;

pub fn seed() -> u64 {
    let seed = std::env::var("SCPS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("seed {seed} (replay with SCPS_TEST_SEED={seed})");
    seed
}

pub fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

/// Two namespaces joined by a veth pair: `ours` routes our stack's
/// addresses (10.78.0.2, fd78::2) into a TUN device, `kernel` holds the
/// Linux TCP peer (10.77.0.2, fd77::2) and routes back through `ours`.
///
/// ```text
///  [our stack]--scps0 (TUN)--[ours ns]--veth--[kernel ns: Linux TCP]
///   10.78.0.2                 10.77.0.1        10.77.0.2
///   fd78::2                   fd77::1          fd77::2
/// ```
#[derive(Debug)]
pub struct Topology {
    pub ours: Namespace,
    pub kernel: Namespace,
}

pub const TUN_NAME: &str = "scps0";

impl Topology {
    pub fn new() -> Topology {
        let ours = Namespace::new("ours");
        let kernel = Namespace::new("kernel");
        veth(&ours, "to-kernel", &kernel, "to-ours");
        ours.ip("addr add 10.77.0.1/24 dev to-kernel");
        ours.ip("-6 addr add fd77::1/64 dev to-kernel nodad");
        kernel.ip("addr add 10.77.0.2/24 dev to-ours");
        kernel.ip("-6 addr add fd77::2/64 dev to-ours nodad");
        kernel.ip("route add 10.78.0.0/24 via 10.77.0.1");
        kernel.ip("-6 route add fd78::/64 via fd77::1");
        ours.sysctl("net.ipv4.ip_forward=1");
        ours.sysctl("net.ipv6.conf.all.forwarding=1");
        Topology { ours, kernel }
    }

    /// Our stack's address and the kernel peer's, of one IP version.
    pub fn addresses(ipv6: bool) -> (IpAddr, IpAddr) {
        if ipv6 {
            ("fd78::2".parse().unwrap(), "fd77::2".parse().unwrap())
        } else {
            ("10.78.0.2".parse().unwrap(), "10.77.0.2".parse().unwrap())
        }
    }

    /// Our stack's addresses with the prefixes routed to the TUN device.
    pub fn our_prefixes() -> Vec<(IpAddr, u8)> {
        vec![
            ("10.78.0.2".parse().unwrap(), 24),
            ("fd78::2".parse().unwrap(), 64),
        ]
    }
}

/// Bytes and packets device `dev` of `ns` has sent. A packet is what the
/// kernel handles as one: a segmentation-offload (TSO) packet counts once.
pub fn tx_counts(ns: &netns::Namespace, dev: &str) -> (u64, u64) {
    // One line, its parts separated by backslashes: "... TX: bytes packets
    // errors ... \ BYTES PACKETS ERRORS ...".
    let line = ns.ip(&format!("-s -o link show dev {dev}"));
    let parts: Vec<&str> = line.split('\\').map(str::trim).collect();
    let counts = parts
        .iter()
        .position(|p| p.starts_with("TX:"))
        .and_then(|i| parts.get(i + 1))
        .unwrap_or_else(|| panic!("no TX counts in {line:?}"));
    let mut numbers = counts.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

pub fn socket(ip: IpAddr, port: u16) -> SocketAddr {
    SocketAddr::new(ip, port)
}

/// The port the tests' servers listen on.
pub const PORT: u16 = 5001;

/// tshark on `capture`, the tests' port decoded as plain data
/// (`scps_testbed::tshark::tshark`).
pub fn tshark(capture: &Path, args: &[&str]) -> String {
    scps_testbed::tshark::tshark(capture, Some(PORT), args)
}

/// Asserts that tshark finds nothing malformed and no bad checksum.
pub fn assert_capture_clean(capture: &Path) {
    scps_testbed::tshark::assert_clean(capture, Some(PORT), 10);
}

/// The SYNs and SYN-ACKs of the capture (`scps_testbed::tshark::syns`).
pub fn syn_options(capture: &Path) -> Vec<Syn> {
    scps_testbed::tshark::syns(capture, Some(PORT))
}

/// Starts our stack on a TUN device in `ours` that the namespace routes
/// `prefixes` into, running `app` on a runtime in that namespace; the
/// thread returns what `app` returns once the endpoint has closed its
/// connections. Nothing may be dropped but what is not TCP.
pub fn start_our_stack<R: Send + 'static, F>(
    topology: &Topology,
    prefixes: Vec<(IpAddr, u8)>,
    options: NetOptions,
    app: impl FnOnce(Arc<Net>) -> F + Send + 'static,
) -> std::thread::JoinHandle<R>
where
    F: std::future::Future<Output = R>,
{
    topology.ours.spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let path = TunPath::create(TUN_NAME, &prefixes, 1500).unwrap();
            let net = Arc::new(Net::start(path, options).unwrap());
            let result = app(net.clone()).await;
            let net = Arc::into_inner(net).expect("the app let the endpoint go");
            let stats = net.close(Duration::from_secs(5)).await.unwrap();
            // The kernel's own IPv6 housekeeping on the new device
            // (router solicitations, MLD reports) reaches us too and
            // is counted as not TCP; nothing else may be dropped.
            let others = stats.endpoint.total_dropped() - stats.endpoint.dropped("not_tcp");
            assert_eq!(others, 0, "{stats:?}");
            result
        })
    })
}
