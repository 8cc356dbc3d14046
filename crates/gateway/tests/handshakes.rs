//! SOCKS5 handshakes left unfinished cannot lock anyone out: two gateways
//! from their configuration text on loopback, a SOCKS5 server whose
//! handshakes have a short deadline and small places. One host (a source
//! address of its own, 127.0.0.2) opens many more connections than its
//! share and never finishes a handshake; while it holds its share, every
//! connection of another host (127.0.0.3), up to the connection limit, is
//! carried end to end. The greedy host's connections beyond its share are
//! reset at once and counted; those within it are closed at the deadline
//! and counted.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use common::{echo_server, far_gateway, free_port, link_keys, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const SHARE: usize = 8;
const GREEDY: usize = 200;
const CONNECTIONS: usize = 6;
const DEADLINE: Duration = Duration::from_secs(2);

/// A TCP connection to `server` from the loopback address `from`.
async fn connect_from(from: &str, server: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))?;
    socket.connect(server).await
}

/// A SOCKS5 CONNECT to `to` through `server` from `from`, carried end to
/// end: a message echoed back through it.
async fn carried(from: &str, server: SocketAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let mut stream = connect_from(from, server).await?;
    stream.write_all(&[5, 1, 0]).await?;
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await?;
    assert_eq!(chosen, [5, 0]);
    let SocketAddr::V4(to) = to else { unreachable!() };
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&to.ip().octets());
    request.extend_from_slice(&to.port().to_be_bytes());
    stream.write_all(&request).await?;
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await?;
    if reply[1] != 0 {
        return Err(std::io::Error::other(format!("SOCKS5 reply {}", reply[1])));
    }
    stream.write_all(b"through").await?;
    let mut echo = [0u8; 7];
    stream.read_exact(&mut echo).await?;
    assert_eq!(&echo, b"through");
    Ok(stream)
}

/// How a connection the gateway holds in its handshake ends: `Ok(())` for
/// a close or reset by the gateway, an error if it stays open past `wait`.
async fn ended_within(stream: &mut TcpStream, wait: Duration) -> Result<(), ()> {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(wait, stream.read(&mut byte)).await {
        Ok(Ok(0)) | Ok(Err(_)) => Ok(()),
        Ok(Ok(_)) => panic!("the gateway sent a byte to a client that sent none"),
        Err(_) => Err(()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_handshakes_of_one_host_neither_lock_others_out_nor_outlive_their_deadline() {
    let server = echo_server().await;
    let (far, far_udp) = far_gateway(server).await;
    let socks: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
         [relay]\nmax_connections = {CONNECTIONS}\nhandshake_timeout = \"{}s\"\n\
         max_handshakes = 64\nmax_handshakes_per_source = {SHARE}\n\
         [[socks]]\nlisten = \"{socks}\"\n",
        link_keys(false),
        DEADLINE.as_secs()
    ))
    .await;

    let opened_at = Instant::now();
    let mut greedy = Vec::new();
    for _ in 0..GREEDY {
        // On loopback the gateway's reset can beat the connect's return.
        match connect_from("127.0.0.2", socks).await {
            Ok(stream) => greedy.push(stream),
            Err(err) => assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}"),
        }
    }
    // Every connection beyond the share is reset at once; those within it
    // are held.
    let mut checks = tokio::task::JoinSet::new();
    for mut stream in greedy {
        checks.spawn(async move {
            let ended = ended_within(&mut stream, Duration::from_millis(300)).await;
            (stream, ended)
        });
    }
    let mut held = Vec::new();
    while let Some(checked) = checks.join_next().await {
        if let (stream, Err(())) = checked.unwrap() {
            held.push(stream);
        }
    }
    assert_eq!(held.len(), SHARE, "the greedy host keeps its share and no more");

    // Another host fills every place among the split connections, while
    // the greedy host's handshakes are under way.
    let mut others = Vec::new();
    for _ in 0..CONNECTIONS {
        others.push(
            carried("127.0.0.3", socks, server)
                .await
                .expect("another host is carried"),
        );
    }
    assert!(
        opened_at.elapsed() < DEADLINE,
        "the other host was carried before the greedy host's deadline ({:?})",
        opened_at.elapsed()
    );
    // One more finishes its handshake and is turned away with SOCKS5's
    // general failure: the limit of split connections still holds.
    let over = carried("127.0.0.3", socks, server).await.map(|_| ());
    assert_eq!(over.map_err(|e| e.to_string()), Err("SOCKS5 reply 1".to_owned()));

    for stream in &mut held {
        let wait = (DEADLINE + Duration::from_secs(3)).saturating_sub(opened_at.elapsed());
        ended_within(stream, wait)
            .await
            .expect("an unfinished handshake ends at its deadline");
    }
    drop(others);
    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    let counts = counters.snapshot();
    assert_eq!(
        (
            counts.handshakes_of_source,
            counts.handshake_timed_out,
            counts.over_limit
        ),
        ((GREEDY - SHARE) as u64, SHARE as u64, 1),
        "{}",
        counters.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_handshake_gives_its_place_back_while_its_connection_is_relayed() {
    let server = echo_server().await;
    let (far, far_udp) = far_gateway(server).await;
    let socks: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
         [relay]\nmax_handshakes = 1\nmax_handshakes_per_source = 1\n\
         [[socks]]\nlisten = \"{socks}\"\n",
        link_keys(false)
    ))
    .await;
    // One place for a handshake, and three connections relayed at once
    // from the same host.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(carried("127.0.0.3", socks, server).await.expect("carried"));
    }
    drop(held);
    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    assert_eq!(
        counters.snapshot().handshakes_of_source,
        0,
        "{}",
        counters.summary()
    );
}
