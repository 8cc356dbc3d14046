//! Our stack against Linux's TCP, across network namespaces: as the client
//! of a kernel server and as the server of a kernel client, over IPv4 and
//! IPv6, with every byte checked both ways (SHA-256) and the capture of our
//! TUN path checked with tshark: window scaling, timestamps and SACK are
//! negotiated with the kernel, and nothing is malformed. Our stack offers
//! SCPS-TP, as an SCPS host would: the kernel ignores the capabilities
//! option (kind 20) of our SYN, and without it on both SYNs the
//! connection is plain TCP (docs/spec/scps-tp-options.md, "SCPS
//! capabilities, kind 20").
//!
//! As root (CI) they run as they are; otherwise each runs itself again in
//! a user namespace of its own.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use scps_net::NetOptions;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const UPLOAD_BYTES: usize = 4 << 20;
const DOWNLOAD_BYTES: usize = 1 << 20;

fn capture_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("scps-{name}-{}.pcap", std::process::id()))
}

/// Our stack as an SCPS host, which offers SCPS-TP to every peer, its
/// packets captured to `capture`.
fn scps_host(capture: PathBuf) -> NetOptions {
    let mut options = NetOptions {
        capture: Some(capture),
        ..NetOptions::default()
    };
    options.endpoint.connection.scps = true;
    options
}

/// Whether our connection negotiated every TCP option with the kernel,
/// and fell back to plain TCP (no SCPS-TP).
fn assert_negotiated(stats: &scps_proto::ConnectionStats) {
    assert!(!stats.scps, "the kernel speaks plain TCP: {stats:?}");
    assert!(stats.sack, "SACK negotiated: {stats:?}");
    assert!(stats.timestamps, "timestamps negotiated: {stats:?}");
    assert!(
        stats.send_window_shift > 0,
        "the kernel's window scale applied: {stats:?}"
    );
    assert!(
        stats.receive_window_shift > 0,
        "our window scale offered: {stats:?}"
    );
}

/// tshark finds nothing wrong in the capture; both SYNs of the handshake
/// (ours and the kernel's, in whichever order) carry window scaling,
/// SACK-permitted and timestamps; tshark decodes the SCPS capabilities
/// option in our SYN when we open, and it is absent from every SYN-ACK
/// (the kernel ignores it; we do not offer it to a SYN without it).
fn check_capture(capture: &std::path::Path, ipv6: bool) {
    let (ours, kernel) = Topology::addresses(ipv6);
    assert_capture_clean(capture);
    let syns = syn_options(capture);
    for src in [ours, kernel] {
        let syn = syns
            .iter()
            .find(|syn| syn.src == src)
            .unwrap_or_else(|| panic!("no SYN from {src} in {syns:?}"));
        assert!(
            syn.options.iter().all(|o| !o.is_empty()),
            "SYN options from {src} (wscale, SACK-permitted, TSval): {syn:?}"
        );
    }
    for syn in &syns {
        let expect_scps = syn.src == ours && !syn.ack;
        assert_eq!(!syn.scps.is_empty(), expect_scps, "SCPS capabilities: {syns:?}");
    }
    assert!(
        syns.iter().any(|syn| !syn.ack) && syns.iter().any(|syn| syn.ack),
        "a SYN and a SYN-ACK: {syns:?}"
    );
    std::fs::remove_file(capture).ok();
}

fn our_client_to_kernel_server(ipv6: bool) {
    let seed = seed();
    let upload = content(seed, UPLOAD_BYTES);
    let download = content(seed ^ 1, DOWNLOAD_BYTES);
    let topology = Topology::new();
    let (_, kernel_ip) = Topology::addresses(ipv6);
    let server_addr = socket(kernel_ip, PORT);

    let listener = topology
        .kernel
        .spawn(move || TcpListener::bind(server_addr))
        .join()
        .unwrap()
        .expect("kernel listener");
    let reply = download.clone();
    let kernel_server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        stream.write_all(&reply).unwrap();
        stream.shutdown(Shutdown::Write).unwrap();
        // Wait for our side to close too, so the exchange ends cleanly.
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        (received.len(), Sha256::digest(&received))
    });

    let capture = capture_path(if ipv6 { "client6" } else { "client4" });
    let upload_copy = upload.clone();
    let ours = start_our_stack(
        &topology,
        Topology::our_prefixes(),
        scps_host(capture.clone()),
        move |net| async move {
            let mut stream = net.connect(server_addr).await.unwrap();
            stream.write_all(&upload_copy).await.unwrap();
            stream.shutdown().await.unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            let stats = stream.stats().unwrap();
            (received, stats)
        },
    );
    let (received, stats) = ours.join().expect("our client");
    let (uploaded, upload_digest) = kernel_server.join().unwrap();
    assert_eq!(uploaded, upload.len(), "bytes the kernel received");
    assert_eq!(
        upload_digest,
        Sha256::digest(&upload),
        "content the kernel received"
    );
    assert_eq!(received.len(), download.len(), "bytes we received");
    assert_eq!(
        Sha256::digest(&received),
        Sha256::digest(&download),
        "content we received"
    );
    assert_negotiated(&stats);
    check_capture(&capture, ipv6);
    // Our segments reach the kernel coalesced, a few dozen per TUN write
    // (TSO): the veth towards the kernel carries the upload in far fewer
    // packets than segments, though our ACKs of the download are there too.
    let (bytes, packets) = tx_counts(&topology.ours, "to-kernel");
    assert!(
        bytes / packets > 4 * 1500,
        "{bytes} bytes in {packets} packets: the TUN path's writes are not coalesced"
    );
}

fn kernel_client_to_our_server(ipv6: bool) {
    let seed = seed();
    let upload = content(seed, UPLOAD_BYTES);
    let download = content(seed ^ 1, DOWNLOAD_BYTES);
    let topology = Topology::new();
    let (our_ip, _) = Topology::addresses(ipv6);
    let server_addr = socket(our_ip, PORT);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();

    let capture = capture_path(if ipv6 { "server6" } else { "server4" });
    let reply = download.clone();
    let ours = start_our_stack(
        &topology,
        Topology::our_prefixes(),
        scps_host(capture.clone()),
        move |net| async move {
            let listener = net.listen(server_addr).unwrap();
            ready_tx.send(()).unwrap();
            let mut stream = listener.accept().await.unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            stream.write_all(&reply).await.unwrap();
            stream.shutdown().await.unwrap();
            let stats = stream.stats().unwrap();
            (received, stats)
        },
    );
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("our server listens");
    let mut client = topology
        .kernel
        .spawn(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .join()
        .unwrap()
        .expect("the kernel connects to our stack");
    client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let writer = {
        let mut client = client.try_clone().unwrap();
        let upload = upload.clone();
        std::thread::spawn(move || {
            client.write_all(&upload).unwrap();
            client.shutdown(Shutdown::Write).unwrap();
        })
    };
    let mut received = Vec::new();
    client.read_to_end(&mut received).unwrap();
    writer.join().unwrap();
    drop(client);
    let (uploaded, stats) = ours.join().expect("our server");
    assert_eq!(uploaded.len(), upload.len(), "bytes we received");
    assert_eq!(
        Sha256::digest(&uploaded),
        Sha256::digest(&upload),
        "content we received"
    );
    assert_eq!(received.len(), download.len(), "bytes the kernel received");
    assert_eq!(
        Sha256::digest(&received),
        Sha256::digest(&download),
        "content the kernel received"
    );
    assert_negotiated(&stats);
    check_capture(&capture, ipv6);
}

#[test]
fn interop_our_client_kernel_server_ipv4() {
    if common::netns::in_user_namespace("interop_our_client_kernel_server_ipv4") {
        return;
    }
    our_client_to_kernel_server(false);
}

#[test]
fn interop_our_client_kernel_server_ipv6() {
    if common::netns::in_user_namespace("interop_our_client_kernel_server_ipv6") {
        return;
    }
    our_client_to_kernel_server(true);
}

#[test]
fn interop_kernel_client_our_server_ipv4() {
    if common::netns::in_user_namespace("interop_kernel_client_our_server_ipv4") {
        return;
    }
    kernel_client_to_our_server(false);
}

#[test]
fn interop_kernel_client_our_server_ipv6() {
    if common::netns::in_user_namespace("interop_kernel_client_our_server_ipv6") {
        return;
    }
    kernel_client_to_our_server(true);
}
