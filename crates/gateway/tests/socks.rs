//! The SOCKS5 server of the explicit modes end to end on loopback: two
//! gateways from their configuration text, SCPS-TP over UDP between them.
//!
//! - curl through it, with the name resolved at the far side
//!   (`--socks5-hostname`) and with an address (`--socks5`): the body it
//!   fetched from a small HTTP server is checked by SHA-256;
//! - by hand, the replies of RFC 1928: "not allowed" (2) for a destination
//!   no allow rule covers, "connection refused" (5) for a port with nothing
//!   behind it, "command not supported" (7) for BIND, and a client of
//!   another SOCKS version closed without a reply; each counted.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::Ordering;

use common::{free_port, free_udp_port, link_keys, start};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An HTTP/1.0 server answering every request with `body`.
async fn http_server(body: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                    request.push(byte[0]);
                }
                let head = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    addr
}

/// A SOCKS5 exchange by hand: the greeting, then `request`; the reply
/// code, or `None` if the server closed without one.
async fn socks_reply(server: SocketAddr, request: &[u8]) -> Option<u8> {
    let mut stream = TcpStream::connect(server).await.unwrap();
    stream.write_all(&[5, 1, 0]).await.unwrap();
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await.ok()?;
    assert_eq!(chosen, [5, 0], "no authentication chosen");
    stream.write_all(request).await.unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.ok()?;
    assert_eq!(reply[0], 5);
    Some(reply[1])
}

fn connect_request(addr: SocketAddr) -> Vec<u8> {
    let SocketAddr::V4(addr) = addr else {
        unreachable!()
    };
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&addr.ip().octets());
    request.extend_from_slice(&addr.port().to_be_bytes());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_and_hand_made_clients_through_the_socks5_server() {
    let keys_far = link_keys(true);
    let keys_client = link_keys(false);
    let body: Vec<u8> = (0..2_000_000u32).map(|i| (i * 17 % 241) as u8).collect();
    let http = http_server(body.clone()).await;
    let far_udp = free_udp_port();
    let far = start(&format!(
        "[link]\n{keys_far}udp = \"127.0.0.1:{far_udp}\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"2-65535\"\n"
    ))
    .await;
    let socks: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n[[socks]]\nlisten = \"{socks}\"\n"
    ))
    .await;

    for (option, url) in [
        (
            "--socks5-hostname",
            format!("http://localhost:{}/file", http.port()),
        ),
        ("--socks5", format!("http://127.0.0.1:{}/file", http.port())),
    ] {
        let output = tokio::task::spawn_blocking(move || {
            Command::new("curl")
                .args([
                    "-sS",
                    "--fail",
                    "--max-time",
                    "30",
                    option,
                    &socks.to_string(),
                    &url,
                ])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            output.status.success(),
            "curl {option}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.stdout.len(), body.len(), "bytes curl read ({option})");
        assert_eq!(
            Sha256::digest(&output.stdout),
            Sha256::digest(&body),
            "body ({option})"
        );
    }

    // Port 1 is below every allow rule; the free port has nothing behind it.
    let not_allowed: SocketAddr = "127.0.0.1:1".parse().unwrap();
    assert_eq!(socks_reply(socks, &connect_request(not_allowed)).await, Some(2));
    let nothing: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    assert_eq!(socks_reply(socks, &connect_request(nothing)).await, Some(5));
    let mut bind = connect_request(http);
    bind[1] = 2;
    assert_eq!(socks_reply(socks, &bind).await, Some(7));
    let mut socks4 = TcpStream::connect(socks).await.unwrap();
    socks4.write_all(&[4, 1, 0, 80, 127, 0, 0, 1, 0]).await.unwrap();
    let mut rest = Vec::new();
    let read = socks4.read_to_end(&mut rest).await;
    assert!(
        read.is_err() || rest.is_empty(),
        "a SOCKS4 client gets no reply: {rest:?}"
    );

    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    assert_eq!(
        counters.socks_refused.load(Ordering::Relaxed),
        4,
        "{}",
        counters.summary()
    );
    assert!(
        counters.closed.load(Ordering::Relaxed) >= 2,
        "{}",
        counters.summary()
    );
}
