//! Holds many HTTP connections open at once, for the gateway benchmarks
//! (scripts/bench-connections.sh): opens COUNT connections to ADDRESS,
//! fetches PATH once on each with keep-alive (so each is carried end to
//! end), prints `held N` once all are, then holds them until its standard
//! input ends, closes them all and prints `closed`.
//!
//!     hold_connections ADDRESS PATH COUNT

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Connections being opened at once.
const OPENING_AT_ONCE: usize = 256;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(address), Some(path), Some(count)) = (args.next(), args.next(), args.next()) else {
        panic!("usage: hold_connections ADDRESS PATH COUNT");
    };
    let address: SocketAddr = address.parse().expect("ADDRESS is IP:PORT");
    let count: usize = count.parse().expect("COUNT is a number");
    // One descriptor a connection: as many as the hard limit allows.
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    let mut held = Vec::with_capacity(count);
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..count {
        if opening.len() == OPENING_AT_ONCE {
            held.push(opening.join_next().await.unwrap().unwrap());
        }
        let request = request.clone();
        opening.spawn(async move { fetch(address, &request).await });
    }
    while let Some(stream) = opening.join_next().await {
        held.push(stream.unwrap());
    }
    println!("held {}", held.len());
    let until_end =
        tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()));
    let _ = until_end.await;
    drop(held);
    println!("closed");
}

/// A connection to `address` on which `request` has been answered.
async fn fetch(address: SocketAddr, request: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("request");
    // The answer's head, then as many bytes as it says.
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.expect("answer"),
            1,
            "the server closed"
        );
        answer.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a Content-Length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.expect("body");
    stream
}
