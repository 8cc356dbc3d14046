//! Two gateways whose explicit link rides a bundle of two UDP channels
//! (`[engine.bundle]`, docs/bonding.md), kernel TCP at both ends: the
//! bytes arrive intact both ways, each channel carries a share, and the
//! metrics give each channel's state and figures.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{echo_server, free_port, free_udp_port, link_keys, start};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `[engine.bundle]` with a channel per (local, peer).
fn bundle(channels: &[(String, String)]) -> String {
    let mut text = "[engine.link]\nbond_probe_interval = \"100ms\"\n".to_owned();
    for (local, peer) in channels {
        text += &format!(
            "[[engine.bundle.channel]]\nlocal = \"{local}\"\npeer = \"{peer}\"\nrate = \"20Mbit\"\n"
        );
    }
    text
}

/// The text exposition of the metrics served at `address`.
async fn scrape(address: SocketAddr) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_carry_a_connection_over_a_bundle_and_report_its_channels() {
    let keys_far = link_keys(true);
    let keys_client = link_keys(false);
    let server_addr = echo_server().await;
    let client_ends: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", free_udp_port())).collect();
    let far_ends: Vec<String> = (0..2)
        .map(|_| {
            let port = std::net::UdpSocket::bind("127.0.0.2:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            format!("127.0.0.2:{port}")
        })
        .collect();
    let pairs = |locals: &[String], peers: &[String]| -> Vec<(String, String)> {
        locals.iter().cloned().zip(peers.iter().cloned()).collect()
    };
    let far = start(&format!(
        "[link]\n{keys_far}port = 7300\n[[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n{}",
        server_addr.port(),
        bundle(&pairs(&far_ends, &client_ends))
    ))
    .await;
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{keys_client}port = 7300\n[metrics]\nlisten = \"127.0.0.1:0\"\n\
         [[forward]]\nlisten = \"{listen}\"\nto = \"{server_addr}\"\n{}",
        bundle(&pairs(&client_ends, &far_ends))
    ))
    .await;
    let data: Vec<u8> = (0..2_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let stream = TcpStream::connect(listen).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let sent = data.clone();
    let writing = tokio::spawn(async move {
        writer.write_all(&sent).await.unwrap();
        writer.shutdown().await.unwrap();
    });
    let mut echoed = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), reader.read_to_end(&mut echoed))
        .await
        .expect("the echo ends")
        .unwrap();
    writing.await.unwrap();
    assert_eq!(
        Sha256::digest(&echoed),
        Sha256::digest(&data),
        "what came back is what was sent"
    );
    let metrics = scrape(client.metrics_address().unwrap()).await;
    for channel in ["0", "1"] {
        let up = format!("scps_gateway_bundle_channel_state{{channel=\"{channel}\",state=\"up\"}} 1");
        assert!(metrics.contains(&up), "{up} in:\n{metrics}");
        let sent_line = metrics
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "scps_gateway_bundle_channel_sent_bytes_total{{channel=\"{channel}\"}}"
                ))
            })
            .unwrap_or_else(|| panic!("channel {channel}'s bytes in:\n{metrics}"));
        let bytes: f64 = sent_line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(
            bytes > 500_000.0,
            "channel {channel} carried a share: {sent_line}"
        );
    }
    assert!(
        metrics.contains("scps_gateway_bundle_icmp_ignored_total 0"),
        "no report ignored, and the count shown:\n{metrics}"
    );
    client.stop().await.unwrap();
    far.stop().await.unwrap();
}

#[test]
fn a_bundle_is_refused_where_it_cannot_carry_the_link() {
    let keys_far = link_keys(true);
    let channel = "[[engine.bundle.channel]]\nlocal = \"127.0.0.1:7001\"\npeer = \"127.0.0.2:7001\"\nrate = \"2400bps\"\n";
    let allow = "[[allow]]\nprefix = \"10.0.0.0/8\"\nports = \"22\"\n";
    let refused = |text: String| {
        scps_gateway::config::GatewayConfig::parse(&text, "test")
            .unwrap_err()
            .to_string()
    };
    let both = refused(format!(
        "[link]\n{keys_far}udp = \"127.0.0.1:7000\"\n{allow}{channel}"
    ));
    assert!(
        both.contains("link.udp = 127.0.0.1:7000: not with [engine.bundle]"),
        "{both}"
    );
    let no_link = refused(format!("{allow}{channel}"));
    assert!(no_link.contains("link = (none): a [link]"), "{no_link}");
    let neither = refused(format!("[link]\n{keys_far}port = 7300\n{allow}"));
    assert!(neither.contains("link.udp = (none)"), "{neither}");
}
