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

/// The keys of the two ends of a test's secure link, made once per test
/// process: `link.private_key_file` and `link.peer_public_key` for the far
/// gateway (`far` true) or the client one, to write under `[link]`.
pub fn link_keys(far: bool) -> String {
    static FILES: std::sync::OnceLock<[(String, String); 2]> = std::sync::OnceLock::new();
    let files = FILES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("scps-gateway-tests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let publics: Vec<String> = ["far.key", "client.key"]
            .iter()
            .map(|name| scps_gateway::keys::keygen(&dir.join(name)).unwrap().to_string())
            .collect();
        let file = |name: &str| dir.join(name).display().to_string();
        [
            (file("far.key"), publics[1].clone()),
            (file("client.key"), publics[0].clone()),
        ]
    });
    let (file, peer) = &files[usize::from(!far)];
    format!("private_key_file = \"{file}\"\npeer_public_key = \"{peer}\"\n")
}

/// A gateway started from `text`, serving once this returns.
pub async fn start(text: &str) -> Gateway {
    Gateway::start(GatewayConfig::parse(text, "test").unwrap())
        .await
        .unwrap()
}

/// A far gateway on loopback that lets link connections reach `server`,
/// and the UDP port of its link.
pub async fn far_gateway(server: std::net::SocketAddr) -> (Gateway, u16) {
    let far_udp = free_udp_port();
    let far = start(&format!(
        "[link]\n{}udp = \"127.0.0.1:{far_udp}\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n",
        link_keys(true),
        server.port()
    ))
    .await;
    (far, far_udp)
}
