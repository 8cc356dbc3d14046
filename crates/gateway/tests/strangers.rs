//! No relay for strangers, on loopback (two gateways from their
//! configuration text, the secure link between them): a SOCKS5 server
//! with users takes a client only with a name and password it knows (RFC
//! 1929), one that offers no such method or gives a wrong password is
//! refused as the RFCs say; a port forward and the metrics endpoint whose
//! allow-lists leave loopback out turn loopback clients away; each
//! refusal counted by cause, while the legitimate exchange beside them
//! completes with its content checked.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{echo_server, free_port, free_udp_port, link_keys, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A users file (mode 0600) in a directory of this test process.
fn users_file(text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("scps-gateway-strangers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("socks.users");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    file
}

/// RFC 1929 by hand: the greeting offering `methods`, the method chosen;
/// then, if it is 2, `name` and `password`, and the status.
async fn authenticate(
    server: SocketAddr,
    methods: &[u8],
    name: &str,
    password: &str,
) -> (TcpStream, u8, Option<u8>) {
    let mut stream = TcpStream::connect(server).await.unwrap();
    let mut greeting = vec![5, methods.len() as u8];
    greeting.extend_from_slice(methods);
    stream.write_all(&greeting).await.unwrap();
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await.unwrap();
    assert_eq!(chosen[0], 5);
    if chosen[1] != 2 {
        return (stream, chosen[1], None);
    }
    let mut sub = vec![1, name.len() as u8];
    sub.extend_from_slice(name.as_bytes());
    sub.push(password.len() as u8);
    sub.extend_from_slice(password.as_bytes());
    stream.write_all(&sub).await.unwrap();
    let mut status = [0u8; 2];
    stream.read_exact(&mut status).await.unwrap();
    assert_eq!(status[0], 1);
    (stream, 2, Some(status[1]))
}

/// Whether the server closed `stream` (or reset it) without a byte.
async fn closed_unanswered(mut stream: TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_are_refused_and_counted_and_the_known_are_served() {
    let (keys_far, keys_client) = (link_keys(true), link_keys(false));
    let echo = echo_server().await;
    let far_udp = free_udp_port();
    let far = start(&format!(
        "[link]\n{keys_far}udp = \"127.0.0.1:{far_udp}\"\n[[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"{}\"\n",
        echo.port()
    ))
    .await;
    let users = users_file("# who may use the SOCKS server\nops:correct horse battery\n");
    let socks: SocketAddr = format!("0.0.0.0:{}", free_port()).parse().unwrap();
    let forward: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{keys_client}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
         [[socks]]\nlisten = \"{socks}\"\nusers_file = \"{}\"\n\
         [[forward]]\nlisten = \"{forward}\"\nto = \"{echo}\"\nclients = [\"10.0.0.0/8\"]\n\
         [metrics]\nlisten = \"{metrics}\"\nclients = [\"192.0.2.0/24\"]\n",
        users.display()
    ))
    .await;
    let socks = SocketAddr::new("127.0.0.1".parse().unwrap(), socks.port());

    // No username/password offered: RFC 1928's "no acceptable methods".
    let (stream, chosen, _) = authenticate(socks, &[0], "", "").await;
    assert_eq!(chosen, 0xff);
    assert!(closed_unanswered(stream).await);
    // A wrong password, an unknown user: RFC 1929's failure, and closed.
    for (name, password) in [("ops", "correct horse"), ("root", "correct horse battery")] {
        let (stream, _, status) = authenticate(socks, &[0, 2], name, password).await;
        assert_eq!(status, Some(1), "{name}:{password}");
        assert!(closed_unanswered(stream).await);
    }
    // The user, then an echo through the pair, content checked.
    let (mut stream, _, status) = authenticate(socks, &[0, 2], "ops", "correct horse battery").await;
    assert_eq!(status, Some(0));
    let SocketAddr::V4(echo_v4) = echo else {
        unreachable!()
    };
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&echo_v4.ip().octets());
    request.extend_from_slice(&echo_v4.port().to_be_bytes());
    stream.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[1], 0, "succeeded");
    let message: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    stream.write_all(&message).await.unwrap();
    let mut echoed = vec![0u8; message.len()];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(echoed, message, "the echo through the pair");
    drop(stream);

    // Loopback is not in the forward's allow-list nor the metrics'.
    // The refusal is a reset, which on loopback can beat the connect's own
    // completion: a connect that fails with a reset was refused too.
    for listener in [forward, metrics] {
        match TcpStream::connect(listener).await {
            Ok(stream) => assert!(closed_unanswered(stream).await, "{listener} served a stranger"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{listener}: {e}"),
        }
    }

    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    let summary = counters.summary();
    assert_eq!(
        counters.client_not_authenticated.load(Ordering::Relaxed),
        3,
        "{summary}"
    );
    assert_eq!(
        counters.client_not_allowed.load(Ordering::Relaxed),
        2,
        "{summary}"
    );
    assert_eq!(counters.socks_refused.load(Ordering::Relaxed), 0, "{summary}");
}

#[test]
fn a_listener_that_would_serve_anyone_is_refused_naming_it() {
    let keys = link_keys(false);
    let refused = |listeners: &str| {
        scps_gateway::config::GatewayConfig::parse(
            &format!("[link]\n{keys}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:7100\"\n{listeners}"),
            "gw.toml",
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    let err = refused("[[socks]]\nlisten = \"0.0.0.0:1080\"\n").unwrap_err();
    assert!(
        err.contains("socks[0].listen = 0.0.0.0:1080") && err.contains("users_file"),
        "{err}"
    );
    let err = refused("[[forward]]\nlisten = \"0.0.0.0:2222\"\nto = \"10.1.0.5:22\"\n").unwrap_err();
    assert!(err.contains("forward[0].listen = 0.0.0.0:2222"), "{err}");
    let err = refused("[[socks]]\n[metrics]\nlisten = \"0.0.0.0:9464\"\n").unwrap_err();
    assert!(err.contains("metrics.listen = 0.0.0.0:9464"), "{err}");
    // Said in as many words, or on loopback (the default), it starts.
    assert_eq!(
        refused("[[socks]]\nlisten = \"0.0.0.0:1080\"\nallow_any_client = true\n"),
        Ok(())
    );
    assert_eq!(refused("[[socks]]\n"), Ok(()));
    assert_eq!(
        refused(
            "[[forward]]\nlisten = \"0.0.0.0:2222\"\nto = \"10.1.0.5:22\"\nclients = [\"10.1.0.0/16\"]\n"
        ),
        Ok(())
    );
}
