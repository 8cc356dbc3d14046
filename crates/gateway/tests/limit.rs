//! The connection limit of a running gateway (`relay.max_connections`),
//! end to end in the explicit port-forward mode: two gateways from their
//! configuration text, kernel TCP at both ends. With a limit of two, a
//! third connection held open at the same time is reset at once and
//! counted; once one of the two ends, a new one is carried again.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{echo_server, free_port, free_udp_port, link_keys, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Connects through `via`, sends a byte and reads the echo: the
/// connection is carried end to end and held open.
async fn held(via: SocketAddr) -> std::io::Result<TcpStream> {
    let mut stream = TcpStream::connect(via).await?;
    stream.write_all(b"x").await?;
    let mut echo = [0u8; 1];
    stream.read_exact(&mut echo).await?;
    Ok(stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_the_limit_is_reset_and_counted() {
    let keys_far = link_keys(true);
    let keys_client = link_keys(false);
    let server_addr = echo_server().await;
    let far_udp = free_udp_port();
    let far = start(&format!(
        "[link]\n{keys_far}udp = \"127.0.0.1:{far_udp}\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n",
        server_addr.port()
    ))
    .await;
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
         [relay]\nmax_connections = 2\n\
         [[forward]]\nlisten = \"{listen}\"\nto = \"{server_addr}\"\n"
    ))
    .await;
    let first = held(listen).await.expect("the first connection is carried");
    let _second = held(listen)
        .await
        .expect("the second connection is within the limit");
    let third = held(listen).await;
    assert!(
        matches!(&third, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
        "the third is turned away: {third:?}"
    );
    drop(first);
    // The place is given back once the first connection's relay ends.
    tokio::time::timeout(Duration::from_secs(10), client.counters().wait_active_below(2))
        .await
        .expect("the first connection's relay ends");
    drop(held(listen).await.expect("a new connection is carried again"));
    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    let over = counters.over_limit.load(Ordering::Relaxed);
    assert!(over >= 1, "turned away and counted: {}", counters.summary());
}
