//! Two endpoints of ours over UDP paths sealed by the secure link, on
//! loopback, with an on-path relay that records every datagram and a
//! third party beside them: the transfer arrives whole (SHA-256 both
//! ways) from the first packet on, while garbage, replays of the
//! recording and another key's gateway are refused and counted.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{PORT, content, seed};
use scps_net::{LinkSecurity, Net, NetOptions, SecureMonitor, UdpPath};
use scps_secure::{PrivateKey, SecureConfig};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;

/// A UDP path on loopback towards `peer` (or any, without one) sealed by
/// the secure link between `ours` and `theirs`, and its monitor.
fn secured_path(
    ours: &PrivateKey,
    theirs: &PrivateKey,
    peer: Option<SocketAddr>,
) -> (UdpPath, SecureMonitor) {
    let monitor = SecureMonitor::default();
    let security = LinkSecurity {
        config: SecureConfig::new(ours.clone(), theirs.public_key()),
        monitor: monitor.clone(),
    };
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), peer)
        .unwrap()
        .secured(security)
        .unwrap();
    (path, monitor)
}

/// A relay between the client and the server that keeps a copy of every
/// datagram from the client: an observer on the link.
async fn relay(server: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let address = socket.local_addr().unwrap();
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let (socket2, recorded2) = (socket.clone(), recorded.clone());
    tokio::spawn(async move {
        let mut client = None;
        let mut buf = vec![0u8; 65_536];
        loop {
            let Ok((len, from)) = socket2.recv_from(&mut buf).await else {
                return;
            };
            let to = if from == server {
                match client {
                    Some(client) => client,
                    None => continue,
                }
            } else {
                client = Some(from);
                recorded2.lock().unwrap().push(buf[..len].to_vec());
                server
            };
            let _ = socket2.send_to(&buf[..len], to).await;
        }
    });
    (address, recorded)
}

async fn transfer(client: &Net, server: SocketAddr, upload: &[u8], expected_down: usize) -> Vec<u8> {
    let mut stream = client.connect(server).await.unwrap();
    let (mut reader, mut writer) = tokio::io::split(&mut stream);
    let send = async {
        writer.write_all(upload).await.unwrap();
        writer.shutdown().await.unwrap();
    };
    let receive = async {
        let mut received = Vec::new();
        reader.read_to_end(&mut received).await.unwrap();
        received
    };
    let ((), received) = tokio::join!(send, receive);
    assert_eq!(received.len(), expected_down);
    received
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_link_carries_everything_and_takes_nothing_from_strangers() {
    let seed = seed();
    let (client_key, server_key) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
    let (server_path, server_monitor) = secured_path(&server_key, &client_key, None);
    let server_udp = server_path.local_addr().unwrap();
    let (relay_addr, recorded) = relay(server_udp).await;
    let (client_path, client_monitor) = secured_path(&client_key, &server_key, Some(relay_addr));
    let server_net = Net::start(server_path, NetOptions::default()).unwrap();
    let client_net = Net::start(client_path, NetOptions::default()).unwrap();
    let server_addr = SocketAddr::new(server_udp.ip(), PORT);
    let listener = server_net.listen(server_addr).unwrap();

    let upload = content(seed, 2_000_000);
    let download = content(seed ^ 1, 700_000);
    let to_send = download.clone();
    let server = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        stream.write_all(&to_send).await.unwrap();
        stream.shutdown().await.unwrap();
        received
    });
    // At once: the SYN waits for the first session, not for its timer.
    let started = tokio::time::Instant::now();
    let mut stream = client_net.connect(server_addr).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the first connection waited {:?}",
        started.elapsed()
    );
    stream.write_all(&upload).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut received = Vec::new();
    stream.read_to_end(&mut received).await.unwrap();
    assert_eq!(Sha256::digest(&received), Sha256::digest(&download), "download");
    assert_eq!(
        Sha256::digest(server.await.unwrap()),
        Sha256::digest(&upload),
        "upload"
    );

    // A stranger on the link: garbage, every recorded datagram again, and
    // a gateway of its own with its own key, configured for the server.
    let stranger = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    stranger
        .send_to(b"not a datagram of the link", server_udp)
        .await
        .unwrap();
    let recording = recorded.lock().unwrap().clone();
    assert!(recording.len() > 1000, "{} recorded", recording.len());
    for datagram in &recording {
        stranger.send_to(datagram, server_udp).await.unwrap();
        // Paced a little, so that the loopback socket drops none.
        tokio::task::yield_now().await;
    }
    let stranger_key = PrivateKey::generate().unwrap();
    let (stranger_path, _) = secured_path(&stranger_key, &server_key, Some(server_udp));
    let options = NetOptions {
        connect_timeout: Duration::from_secs(2),
        ..NetOptions::default()
    };
    let stranger_net = Net::start(stranger_path, options).unwrap();
    let refused = stranger_net.connect(server_addr).await;
    assert!(refused.is_err(), "a stranger's gateway connected");

    // The real client still gets through, with the server answering it
    // where it is (the stranger's datagrams taught the server nothing).
    let upload = content(seed ^ 2, 100_000);
    let listener = server_net
        .listen(SocketAddr::new(server_udp.ip(), PORT + 1))
        .unwrap();
    let echo = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        stream.write_all(&received).await.unwrap();
        stream.shutdown().await.unwrap();
    });
    let back = transfer(
        &client_net,
        SocketAddr::new(server_udp.ip(), PORT + 1),
        &upload,
        upload.len(),
    )
    .await;
    assert_eq!(Sha256::digest(&back), Sha256::digest(&upload));
    echo.await.unwrap();

    let stats = server_monitor.stats();
    println!("server {stats:?}\nclient {:?}", client_monitor.stats());
    assert_eq!(stats.auth_failures.get("malformed"), Some(&1));
    let replays = stats.auth_failures.get("replay").copied().unwrap_or(0)
        + stats.auth_failures.get("stale_initiation").copied().unwrap_or(0);
    assert!(
        replays as usize >= recording.len() * 9 / 10,
        "{replays} of {} replays counted",
        recording.len()
    );
    assert!(stats.auth_failures.get("bad_handshake").copied().unwrap_or(0) >= 1);
    assert_eq!(stats.auth_failures.get("bad_tag"), None, "nothing else failed");
    assert_eq!(client_monitor.stats().auth_failures_total(), 0);
    assert_eq!(
        client_monitor.stats().no_session,
        0,
        "nothing dropped for want of a session"
    );
}

/// CPU time this thread has used (utime + stime of
/// /proc/thread-self/stat, in clock ticks of 10 ms).
fn thread_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The fields after the command's closing parenthesis; utime and
    // stime are the 14th and 15th of the whole line.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn the_link_comes_up_before_any_packet_and_idles_without_spinning() {
    let (client_key, server_key) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
    let (server_path, server_monitor) = secured_path(&server_key, &client_key, None);
    let server_udp = server_path.local_addr().unwrap();
    let (client_path, client_monitor) = secured_path(&client_key, &server_key, Some(server_udp));
    let _server = Net::start(server_path, NetOptions::default()).unwrap();
    let _client = Net::start(client_path, NetOptions::default()).unwrap();
    // No connection: the gateway with the peer's address initiates at
    // start, so that the first connection finds the link up.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while client_monitor.stats().handshakes_completed == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no handshake without traffic: client {:?}, server {:?}",
            client_monitor.stats(),
            server_monitor.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Both drivers run on this thread: idle, they sleep until the link's
    // next timer (its rekey, minutes away).
    let before = thread_cpu_ticks();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let used = thread_cpu_ticks() - before;
    assert!(used < 20, "{used} ticks of CPU in an idle second");
}
