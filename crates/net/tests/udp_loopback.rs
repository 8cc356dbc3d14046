//! Two endpoints of ours talking SCPS-TP over UDP encapsulation on
//! loopback: every byte arrives, in order, both ways (checked by SHA-256 of
//! seeded random content), over IPv4 and IPv6, SCPS is negotiated, and the
//! capture of the path is clean for tshark, the capabilities option decoded
//! in both SYNs; an unanswered connect fails with a clear timeout error, a
//! refused one with a refusal; `set_nodelay` sends what Nagle held;
//! records written with `write_record` are read whole by `read_record`.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::{PORT, assert_capture_clean, content, seed, syn_options};
use scps_net::{Net, NetError, NetOptions, UdpPath};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server and a client endpoint on `ip`, the client's path pointed at
/// the server's and captured to `capture`.
fn pair(ip: &str, capture: Option<PathBuf>) -> (Net, Net, SocketAddr) {
    let server_path = UdpPath::bind(format!("{ip}:0").parse().unwrap(), None).unwrap();
    let server_udp = server_path.local_addr().unwrap();
    let client_path = UdpPath::bind(format!("{ip}:0").parse().unwrap(), Some(server_udp)).unwrap();
    let mut options = NetOptions::default();
    options.endpoint.connection.scps = true;
    let server = Net::start(server_path, options.clone()).unwrap();
    let options = NetOptions { capture, ..options };
    let client = Net::start(client_path, options).unwrap();
    (server, client, SocketAddr::new(server_udp.ip(), PORT))
}

async fn exchange(ip: &str, len: usize) {
    let seed = seed();
    let upload = content(seed, len);
    let download = content(seed ^ 1, len / 2);
    let capture = std::env::temp_dir().join(format!("scps-udp-{}-{}.pcap", ip.len(), std::process::id()));
    let (server_net, client_net, server_addr) = pair(ip, Some(capture.clone()));
    let listener = server_net.listen(server_addr).unwrap();

    let expected_down = download.clone();
    let server = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let (mut reader, mut writer) = tokio::io::split(&mut stream);
        let send = async {
            writer.write_all(&expected_down).await.unwrap();
            writer.shutdown().await.unwrap();
        };
        let receive = async {
            let mut received = Vec::new();
            reader.read_to_end(&mut received).await.unwrap();
            received
        };
        let ((), received) = tokio::join!(send, receive);
        drop(stream);
        (Sha256::digest(&received), received.len())
    });

    let mut stream = client_net.connect(server_addr).await.unwrap();
    let (mut reader, mut writer) = tokio::io::split(&mut stream);
    let send = async {
        writer.write_all(&upload).await.unwrap();
        writer.shutdown().await.unwrap();
    };
    let receive = async {
        let mut received = Vec::new();
        reader.read_to_end(&mut received).await.unwrap();
        received
    };
    let ((), received) = tokio::join!(send, receive);
    let stats = stream.stats().unwrap();
    assert!(stats.scps && stats.snack, "SCPS and SNACK negotiated: {stats:?}");
    drop(stream);
    assert_eq!(received.len(), download.len(), "bytes downloaded");
    assert_eq!(
        Sha256::digest(&received),
        Sha256::digest(&download),
        "download content"
    );
    let (upload_digest, upload_len) = server.await.unwrap();
    assert_eq!(upload_len, upload.len(), "bytes uploaded");
    assert_eq!(upload_digest, Sha256::digest(&upload), "upload content");

    let client_stats = client_net.close(Duration::from_secs(5)).await.unwrap();
    let server_stats = server_net.close(Duration::from_secs(5)).await.unwrap();
    for stats in [&client_stats, &server_stats] {
        assert_eq!(stats.endpoint.total_dropped(), 0, "{stats:?}");
        assert_eq!(stats.unroutable, 0);
    }
    // The capture (written out by `close`) decodes cleanly, with the
    // options of both SYNs.
    assert_capture_clean(&capture);
    let syns = syn_options(&capture);
    assert_eq!(syns.len(), 2, "{syns:?}");
    for syn in &syns {
        assert!(syn.options.iter().all(|o| !o.is_empty()), "{syns:?}");
        assert!(!syn.scps.is_empty(), "SCPS capabilities in both SYNs: {syns:?}");
    }
    std::fs::remove_file(&capture).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_arrive_intact_both_ways_over_ipv4() {
    exchange("127.0.0.1", 8 << 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_arrive_intact_both_ways_over_ipv6() {
    exchange("[::1]", 2 << 20).await;
}

#[tokio::test]
async fn a_silent_peer_gives_a_timeout_error() {
    // A bound socket that never answers: the SYNs vanish.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer = silent.local_addr().unwrap();
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(peer)).unwrap();
    let options = NetOptions {
        connect_timeout: Duration::from_millis(1500),
        ..NetOptions::default()
    };
    let net = Net::start(path, options).unwrap();
    let started = std::time::Instant::now();
    let err = net.connect(SocketAddr::new(peer.ip(), 5001)).await.unwrap_err();
    assert!(matches!(err, NetError::ConnectTimedOut { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("no answer from 127.0.0.1:5001"), "{message}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    // The abandoned attempt is reset and forgotten: close does not hang.
    let stats = net.close(Duration::from_secs(2)).await.unwrap();
    assert!(stats.packets_out >= 2, "the SYN was retransmitted: {stats:?}");
}

#[tokio::test]
async fn a_refusing_peer_gives_a_refused_error() {
    let (server_net, client_net, server_addr) = pair("127.0.0.1", None);
    // Nothing listens on the server's endpoint: it answers with a reset.
    let err = client_net.connect(server_addr).await.unwrap_err();
    match &err {
        NetError::Connection { source, .. } => {
            assert_eq!(*source, scps_proto::ConnectionError::Refused, "{err}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    client_net.close(Duration::from_secs(1)).await.unwrap();
    server_net.close(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_that_cannot_be_written_does_not_stop_the_connection() {
    // Writes to /dev/full fail with "no space left on device".
    let (server_net, client_net, server_addr) = pair("127.0.0.1", Some("/dev/full".into()));
    let listener = server_net.listen(server_addr).unwrap();
    let data = content(seed(), 1 << 20);
    let expected = Sha256::digest(&data);
    let server = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        Sha256::digest(&received)
    });
    let mut stream = client_net.connect(server_addr).await.unwrap();
    stream.write_all(&data).await.unwrap();
    stream.shutdown().await.unwrap();
    assert_eq!(server.await.unwrap(), expected, "the data arrived all the same");
    drop(stream);
    let err = client_net.close(Duration::from_secs(5)).await.unwrap_err();
    assert!(
        err.to_string().contains("/dev/full"),
        "close names the capture: {err}"
    );
    server_net.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn nodelay_sends_what_nagle_held_at_once() {
    // The receiver delays its ACKs 10 s and the sender waits 10 s before
    // retransmitting: with Nagle on, a second small write is held until
    // then; once Nagle is off it goes at once.
    let server_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let server_udp = server_path.local_addr().unwrap();
    let client_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(server_udp)).unwrap();
    let mut server_options = NetOptions::default();
    server_options.endpoint.connection.delayed_ack = Some(Duration::from_secs(10));
    let mut client_options = NetOptions::default();
    client_options.endpoint.connection.rto_initial = Duration::from_secs(10);
    client_options.endpoint.connection.rto_min = Duration::from_secs(10);
    let server_net = Net::start(server_path, server_options).unwrap();
    let client_net = Net::start(client_path, client_options).unwrap();
    let server_addr = SocketAddr::new(server_udp.ip(), PORT);
    let listener = server_net.listen(server_addr).unwrap();
    let mut client = client_net.connect(server_addr).await.unwrap();
    let mut server = listener.accept().await.unwrap();
    assert!(!client.nodelay(), "Nagle is on by default");

    let mut byte = [0u8; 1];
    // The first read opens the receiver's window beyond what its SYN-ACK
    // offered: that window update acknowledges "a" at once, so "b" goes
    // at once too, and its ACK is delayed.
    for message in [b"a", b"b"] {
        client.write_all(message).await.unwrap();
        server.read_exact(&mut byte).await.unwrap();
        assert_eq!(&byte, message);
    }
    client.write_all(b"c").await.unwrap();
    let held = tokio::time::timeout(Duration::from_secs(1), server.read_exact(&mut byte)).await;
    assert!(
        held.is_err(),
        "Nagle holds a small write while an earlier one is unacknowledged"
    );

    client.set_nodelay(true).unwrap();
    assert!(client.nodelay());
    tokio::time::timeout(Duration::from_secs(5), server.read_exact(&mut byte))
        .await
        .expect("the held byte goes once Nagle is off")
        .unwrap();
    assert_eq!(&byte, b"c");
    client.write_all(b"d").await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.read_exact(&mut byte))
        .await
        .expect("and later writes at once")
        .unwrap();
    assert_eq!(&byte, b"d");
    let stats = client.stats().unwrap();
    assert_eq!(
        stats.bytes_retransmitted, 0,
        "no retransmission helped: {stats:?}"
    );
    client.abort();
    server.abort();
    drop((client, server));
    client_net.close(Duration::from_secs(1)).await.unwrap();
    server_net.close(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_arrive_with_their_boundaries() {
    let seed = seed();
    // Sizes from one byte to several segments, each record's bytes its own.
    let sizes: Vec<usize> = content(seed, 200)
        .iter()
        .map(|&b| 1 + usize::from(b) * 37)
        .collect();
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| content(seed ^ i as u64, n))
        .collect();
    let (server_net, client_net, server_addr) = pair("127.0.0.1", None);
    let listener = server_net.listen(server_addr).unwrap();
    let expected = records.clone();
    let reader = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        let mut record = Vec::new();
        // Smaller than most records: a record comes in several reads, and
        // a read never runs past its end.
        let mut chunk = [0u8; 1000];
        loop {
            let (n, ended) = stream.read_record(&mut chunk).await.unwrap();
            if n == 0 && !ended {
                break;
            }
            record.extend_from_slice(&chunk[..n]);
            if ended {
                received.push(std::mem::take(&mut record));
            }
        }
        assert!(
            record.is_empty(),
            "{} bytes after the last boundary",
            record.len()
        );
        received
    });
    let mut stream = client_net.connect(server_addr).await.unwrap();
    for record in &expected {
        stream.write_record(record).await.unwrap();
    }
    stream.shutdown().await.unwrap();
    let received = reader.await.unwrap();
    assert_eq!(received.len(), records.len(), "records read");
    for (i, (got, sent)) in received.iter().zip(&records).enumerate() {
        assert_eq!(got.len(), sent.len(), "size of record {i}");
        assert!(got == sent, "content of record {i}");
    }
    drop(stream);
    client_net.close(Duration::from_secs(5)).await.unwrap();
    server_net.close(Duration::from_secs(5)).await.unwrap();
}

/// A UDP port nothing listens on (bound, then closed).
fn closed_port() -> SocketAddr {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn quick_timers() -> NetOptions {
    let mut options = NetOptions::default();
    options.endpoint.connection.rto_initial = Duration::from_millis(200);
    options.endpoint.connection.rto_min = Duration::from_millis(200);
    options
}

fn assert_unreachable(err: &NetError) {
    match err {
        NetError::Connection { source, .. } => assert!(
            matches!(source, scps_proto::ConnectionError::Unreachable { .. }),
            "{err}"
        ),
        other => panic!("expected an unreachable peer, got {other:?}"),
    }
}

/// ICMP port-unreachables answer every SYN; the connect gives up after
/// three of them instead of every SYN retransmission the engine allows.
#[tokio::test]
async fn a_connect_to_a_closed_udp_port_fails_as_unreachable() {
    let closed = closed_port();
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(closed)).unwrap();
    let net = Net::start(path, quick_timers()).unwrap();
    let started = std::time::Instant::now();
    let err = net.connect(SocketAddr::new(closed.ip(), PORT)).await.unwrap_err();
    assert_unreachable(&err);
    assert!(err.to_string().contains("unreachable"), "{err}");
    // 200, 400 and 800 ms of SYN timeouts, not the 20 s connect limit.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    net.close(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_vanishes_is_found_unreachable() {
    let server_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let server_udp = server_path.local_addr().unwrap();
    let client_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(server_udp)).unwrap();
    let server_net = Net::start(server_path, NetOptions::default()).unwrap();
    let client_net = Net::start(client_path, quick_timers()).unwrap();
    let server_addr = SocketAddr::new(server_udp.ip(), PORT);
    let listener = server_net.listen(server_addr).unwrap();
    let mut client = client_net.connect(server_addr).await.unwrap();
    let mut server = listener.accept().await.unwrap();
    client.write_all(b"hello").await.unwrap();
    let mut hello = [0u8; 5];
    server.read_exact(&mut hello).await.unwrap();
    // The receiver's process is gone: its socket closes with its driver.
    // A killed process closes nothing first, so the stream is forgotten,
    // not dropped: a close would let the driver, until it stops, answer
    // the writes that follow with a reset.
    std::mem::forget(server);
    drop((listener, server_net));
    let started = std::time::Instant::now();
    let written = async {
        loop {
            client.write_all(&[0u8; 4096]).await?;
        }
        #[allow(unreachable_code)]
        std::io::Result::Ok(())
    };
    let err = tokio::time::timeout(Duration::from_secs(20), written)
        .await
        .expect("the writer learns within 20 s")
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::HostUnreachable, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    drop(client);
    client_net.close(Duration::from_secs(1)).await.unwrap();
}

/// A connection reset by its peer is soon gone from the endpoint once its
/// stream is dropped; its abort handle still gives the figures it ended
/// with (a gateway counts what its link connections resent after they
/// end).
#[tokio::test]
async fn an_abort_handle_keeps_the_figures_of_a_connection_that_is_gone() {
    let (server_net, client_net, server_addr) = pair("127.0.0.1", None);
    let listener = server_net.listen(server_addr).unwrap();
    let server = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut first = [0u8; 1000];
        stream.read_exact(&mut first).await.unwrap();
        stream.abort_handle().abort();
    });
    let mut stream = client_net.connect(server_addr).await.unwrap();
    let handle = stream.abort_handle();
    stream.write_all(&[7u8; 1000]).await.unwrap();
    server.await.unwrap();
    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest).await;
    assert!(read.is_err(), "reset: {read:?}");
    let sent = handle.stats().expect("held while the stream is").bytes_sent;
    drop(stream);
    // Gone from the endpoint: the stream's last figures stand.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while client_net.connection_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the connection is not let go"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let last = handle.stats().expect("the figures it ended with");
    assert_eq!(last.bytes_sent, sent);
    assert!(last.bytes_sent >= 1000, "{last:?}");
}
