//! Shared by the gateway's tests that run whole gateways from their
//! configuration text.

#![allow(dead_code)] // each test file uses its own part

use std::net::TcpListener;

use scps_gateway::config::GatewayConfig;
use scps_gateway::gateway::Gateway;

/// A TCP port free on loopback, as the kernel hands them out (the
/// gateway binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A UDP port free on loopback.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An echo server on loopback, serving until the test ends: its address.
pub async fn echo_server() -> std::net::SocketAddr {
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = server.accept().await {
            tokio::spawn(async move {
                let (mut reader, mut writer) = stream.split();
                let _ = tokio::io::copy(&mut reader, &mut writer).await;
            });
        }
    });
    address
}

/// A gateway started from `text`, serving once this returns.
pub async fn start(text: &str) -> Gateway {
    Gateway::start(GatewayConfig::parse(text, "test").unwrap())
        .await
        .unwrap()
}
