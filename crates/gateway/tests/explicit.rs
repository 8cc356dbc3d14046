//! The explicit port forward end to end on loopback, with kernel TCP at
//! both ends and SCPS-TP over UDP encapsulation between the gateways:
//!
//! ```text
//! client --TCP--> [client gateway] ==SCPS-TP/UDP==> [far gateway] --TCP--> server
//! ```
//!
//! Content is checked by SHA-256 both ways with half-close in between;
//! many connections at once; a refusal, a reset mid-transfer and a
//! destination no rule allows reach the client as resets, never as a
//! clean end of stream; a malformed request is answered as one.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_gateway::explicit::{AllowRule, Allowed, FarConfig, FarLink, relay_to_far, serve_link};
use scps_gateway::request::{Destination, Status};
use scps_net::{Net, NetOptions, UdpPath};
use scps_relay::{Outcome, RelayConfig};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const FAR_PORT: u16 = 7200;

fn seed() -> u64 {
    let seed = std::env::var("SCPS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("seed {seed} (replay with SCPS_TEST_SEED={seed})");
    seed
}

fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

fn relay_config() -> RelayConfig {
    RelayConfig {
        buffer: 256 * 1024,
        idle_timeout: Some(Duration::from_secs(60)),
    }
}

/// Two gateways joined by SCPS-TP over UDP on loopback. The far one allows
/// 127.0.0.0/8 on the ports `allowed_ports`; what each of its link
/// connections ended as is sent on `far_results`.
struct Gateways {
    client_net: Arc<Net>,
    far_link: SocketAddr,
    far_results: mpsc::UnboundedReceiver<Result<Outcome, String>>,
}

async fn gateways(allowed_ports: (u16, u16)) -> Gateways {
    let far_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let far_udp = far_path.local_addr().unwrap();
    let far_net = Net::start(far_path, NetOptions::default()).unwrap();
    let far_link = SocketAddr::new(far_udp.ip(), FAR_PORT);
    let listener = far_net.listen(far_link).unwrap();
    let config = Arc::new(FarConfig {
        allowed: Allowed {
            rules: vec![AllowRule {
                prefix: "127.0.0.0/8".parse().unwrap(),
                ports: allowed_ports,
            }],
        },
        connect_timeout: Duration::from_secs(5),
        relay: relay_config(),
    });
    let (results, far_results) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // The far gateway's Net lives as long as its accept loop.
        let _net = far_net;
        while let Ok(link) = listener.accept().await {
            let config = config.clone();
            let results = results.clone();
            tokio::spawn(async move {
                let result = serve_link(link, &config).await.map_err(|e| e.to_string());
                let _ = results.send(result);
            });
        }
    });
    let client_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(far_udp)).unwrap();
    let client_net = Arc::new(Net::start(client_path, NetOptions::default()).unwrap());
    Gateways {
        client_net,
        far_link,
        far_results,
    }
}

/// The client gateway's port forward to `destination`: its local address.
async fn forward(gateways: &Gateways, destination: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    let far = FarLink {
        net: gateways.client_net.clone(),
        far: gateways.far_link,
        connect_timeout: Duration::from_secs(5),
    };
    tokio::spawn(async move {
        while let Ok((lan, _)) = listener.accept().await {
            tokio::spawn(relay_to_far(
                far.clone(),
                lan,
                Destination::Address(destination),
                relay_config(),
            ));
        }
    });
    local
}

/// A kernel server that reads everything, then answers with the SHA-256
/// of what it read followed by `reply`, and closes.
async fn digest_server(reply: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut received = Vec::new();
                stream.read_to_end(&mut received).await.unwrap();
                stream.write_all(&Sha256::digest(&received)).await.unwrap();
                stream.write_all(&reply).await.unwrap();
                stream.shutdown().await.unwrap();
            });
        }
    });
    addr
}

/// Sends `upload` through `via`, half-closes, reads the answer to its end.
async fn client_exchange(via: SocketAddr, upload: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(via).await?;
    stream.write_all(upload).await?;
    stream.shutdown().await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_forward_carries_both_ways_byte_for_byte_with_half_close() {
    let seed = seed();
    let upload = content(seed, 4 << 20);
    let download = content(seed ^ 1, 3 << 20);
    let mut gateways = gateways((1, 65535)).await;
    let server = digest_server(download.clone()).await;
    let via = forward(&gateways, server).await;
    let answer = client_exchange(via, &upload).await.unwrap();
    assert_eq!(answer.len(), 32 + download.len(), "bytes the client received");
    assert_eq!(
        &answer[..32],
        &Sha256::digest(&upload)[..],
        "the server read the upload whole"
    );
    assert_eq!(
        Sha256::digest(&answer[32..]),
        Sha256::digest(&download),
        "content the client received"
    );
    let far = gateways.far_results.recv().await.unwrap();
    assert_eq!(far, Ok(Outcome::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_at_once_each_get_their_own_bytes() {
    let seed = seed();
    let gateways = gateways((1, 65535)).await;
    let server = digest_server(b"done".to_vec()).await;
    let via = forward(&gateways, server).await;
    let clients: Vec<_> = (0..24u64)
        .map(|i| {
            let upload = content(seed ^ (i + 10), 100_000 + i as usize * 5000);
            tokio::spawn(async move {
                let answer = client_exchange(via, &upload).await.unwrap();
                (answer, Sha256::digest(&upload))
            })
        })
        .collect();
    for client in clients {
        let (answer, digest) = client.await.unwrap();
        assert_eq!(&answer[..32], &digest[..]);
        assert_eq!(&answer[32..], b"done");
    }
}

/// Connects through `via`, writes `request`, reads to the end: the bytes
/// read, or the kind of the first error. On loopback the gateway's reset
/// can come before the connect or the write has returned, so the error
/// may be met at any of the three.
async fn attempt(via: SocketAddr, request: &[u8]) -> Result<usize, ErrorKind> {
    let mut stream = TcpStream::connect(via).await.map_err(|e| e.kind())?;
    stream.write_all(request).await.map_err(|e| e.kind())?;
    let mut received = Vec::new();
    stream.read_to_end(&mut received).await.map_err(|e| e.kind())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_at_the_far_end_reaches_the_client_as_a_reset() {
    let mut gateways = gateways((1, 65535)).await;
    // A port with nothing listening.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let via = forward(&gateways, closed).await;
    assert_eq!(
        attempt(via, b"GET / HTTP/1.0\r\n\r\n").await,
        Err(ErrorKind::ConnectionReset)
    );
    let far = gateways.far_results.recv().await.unwrap().unwrap_err();
    assert!(far.contains("refused"), "{far}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_no_rule_allows_is_not_reached() {
    let mut gateways = gateways((1, 1023)).await;
    let reached = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // A server on a port above what the far gateway allows.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    assert!(server.port() > 1023);
    let flag = reached.clone();
    tokio::spawn(async move {
        if listener.accept().await.is_ok() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let via = forward(&gateways, server).await;
    assert_eq!(attempt(via, b"go").await, Err(ErrorKind::ConnectionReset));
    let far = gateways.far_results.recv().await.unwrap().unwrap_err();
    assert!(far.contains("not allowed"), "{far}");
    assert!(
        !reached.load(std::sync::atomic::Ordering::SeqCst),
        "no connection to a destination not allowed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_reset_mid_transfer_reaches_the_client_as_a_reset() {
    let mut gateways = gateways((1, 65535)).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        // The client's request first: the relay is running before the
        // reset (a reset straight after accept could reach the far
        // gateway's connect, which would report a refusal).
        let mut request = [0u8; 2];
        stream.read_exact(&mut request).await.unwrap();
        stream.write_all(&[5u8; 100_000]).await.unwrap();
        // Abort: a reset, not a FIN.
        socket2::SockRef::from(&stream)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(stream);
    });
    let via = forward(&gateways, server).await;
    assert_eq!(attempt(via, b"go").await, Err(ErrorKind::ConnectionReset));
    let far = gateways.far_results.recv().await.unwrap();
    assert!(
        matches!(far, Ok(Outcome::Reset(scps_relay::Side::Lan))),
        "{far:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_request_is_answered_as_one() {
    let mut gateways = gateways((1, 65535)).await;
    let mut link = gateways.client_net.connect(gateways.far_link).await.unwrap();
    link.write_all(&[1, 9, 0, 0]).await.unwrap();
    let mut reply = [0u8; 2];
    link.read_exact(&mut reply).await.unwrap();
    assert_eq!(Status::parse(&reply), Ok(Some(Status::BadRequest)));
    drop(link);
    let far = gateways.far_results.recv().await.unwrap().unwrap_err();
    assert!(far.contains("address kind 9"), "{far}");
}
