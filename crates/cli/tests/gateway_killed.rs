//! A gateway killed (SIGKILL: a crash, the OOM killer) in the middle of a
//! relayed transfer, on the secure link, in the testbed's gateway
//! topology:
//!
//! ```text
//! client 10.99.1.2 ── lan0 [gwA] sat0 ── emu ── sat0 [gwB] lan0 ── server 10.99.4.2
//! ```
//!
//! Neither application may take the cut for a clean end of stream: the
//! one whose gateway died is reset at once (the relay's LAN sockets
//! linger zero until the relay closes them itself, so the kernel's close
//! of a dead process's sockets is a reset), the other learns it from its
//! gateway, whose link connection the dead one's host refuses (ICMP port
//! unreachable on the secure link's UDP).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::TempDir;
use common::gateways::{GatewayProcess, config_secured, kill, start, stop, wait_ready};
use scps_testbed::{Testbed, Topology};

const SERVER: &str = "10.99.4.2:5001";
/// Bytes through the pair before the kill.
const BEFORE_KILL: usize = 4 << 20;
/// The gateways' `relay.link_dead_after`.
const LINK_DEAD_AFTER: &str = "[relay]\nlink_dead_after = \"20s\"\n";
/// How long the far application may take to learn of it: the link dead
/// after 20 s, and the far gateway's reset.
const FAR_SIDE_LEARNS: Duration = Duration::from_secs(30);

/// The secure transparent pair, each gateway's process.
fn pair(testbed: &Testbed, dir: &TempDir) -> (GatewayProcess, GatewayProcess) {
    let (keys_b, keys_a) = common::link_keys(dir.path());
    let a = config_secured(
        dir,
        "a.toml",
        ("10.99.1.0/24", "10.99.4.0/24"),
        ("10.99.2.2:7100", "10.99.3.2:7100"),
        &keys_a,
        LINK_DEAD_AFTER,
    );
    let b = config_secured(
        dir,
        "b.toml",
        ("10.99.4.0/24", "10.99.1.0/24"),
        ("10.99.3.2:7100", "10.99.2.2:7100"),
        &keys_b,
        LINK_DEAD_AFTER,
    );
    let (gw_a, gw_b) = (testbed.node("gwA").unwrap(), testbed.node("gwB").unwrap());
    let (a, b) = (start(gw_a, &a), start(gw_b, &b));
    wait_ready(&[(gw_a, &a), (gw_b, &b)]);
    (a, b)
}

/// How one application's side of the transfer ended: the bytes it moved,
/// the error it met (`None`: a clean end of stream), and when.
#[derive(Debug)]
struct Ended {
    bytes: usize,
    error: Option<ErrorKind>,
    at: Instant,
}

/// Reads until the stream ends; says on `midway` once `BEFORE_KILL` bytes
/// have come.
fn read_all(mut stream: TcpStream, midway: Option<mpsc::Sender<()>>) -> Ended {
    stream.set_read_timeout(Some(FAR_SIDE_LEARNS * 2)).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0;
    let mut midway = midway;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return ended(bytes, None),
            Ok(n) => bytes += n,
            Err(err) => return ended(bytes, Some(err.kind())),
        }
        if bytes >= BEFORE_KILL
            && let Some(tell) = midway.take()
        {
            tell.send(()).unwrap();
        }
    }
}

/// Writes without end, until a write fails.
fn write_forever(mut stream: TcpStream) -> Ended {
    stream.set_write_timeout(Some(FAR_SIDE_LEARNS * 2)).unwrap();
    let chunk: Vec<u8> = (0..64 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut bytes = 0;
    loop {
        match stream.write(&chunk) {
            Ok(n) => bytes += n,
            Err(err) => return ended(bytes, Some(err.kind())),
        }
    }
}

fn ended(bytes: usize, error: Option<ErrorKind>) -> Ended {
    Ended {
        bytes,
        error,
        at: Instant::now(),
    }
}

/// Runs a transfer that does not end by itself, from the client
/// (`upload`) or from the server, kills `victim` ("gwA" or "gwB") once the
/// receiver has `BEFORE_KILL` bytes, and returns how each side ended and
/// when the kill was.
fn kill_midway(upload: bool, victim: &str, tag: &str) -> (Ended, Ended, Instant) {
    let testbed = Testbed::build(Topology::with_gateways()).unwrap();
    let dir = TempDir::new(tag);
    let (a, b) = pair(&testbed, &dir);
    let listener = testbed
        .node("server")
        .unwrap()
        .run(|| TcpListener::bind(SERVER))
        .unwrap();
    let (midway, reached) = mpsc::channel();
    let receiver_tells = midway.clone();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        if upload {
            read_all(stream, Some(receiver_tells))
        } else {
            write_forever(stream)
        }
    });
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let stream = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10)))
        .unwrap();
    let client = std::thread::spawn(move || {
        if upload {
            write_forever(stream)
        } else {
            read_all(stream, Some(midway))
        }
    });
    reached
        .recv_timeout(Duration::from_secs(30))
        .expect("the transfer got going");
    let (killed, survivor) = if victim == "gwA" { (&a, &b) } else { (&b, &a) };
    kill(killed);
    let killed_at = Instant::now();
    let (client, server) = (client.join().unwrap(), server.join().unwrap());
    stop(survivor);
    (client, server, killed_at)
}

/// The application beside the killed gateway: reset at once.
fn assert_reset_at_once(side: &str, ended: &Ended, killed_at: Instant) {
    println!("{side}: {ended:?}, {:?} after the kill", ended.at - killed_at);
    assert!(
        matches!(ended.error, Some(ErrorKind::ConnectionReset)),
        "{side} ended with {:?} after {} bytes: a cut taken for an end",
        ended.error,
        ended.bytes
    );
    assert!(ended.at - killed_at < Duration::from_secs(5), "{side}: {ended:?}");
}

/// The application beyond the link: an error, within `FAR_SIDE_LEARNS`.
fn assert_error_in_time(side: &str, ended: &Ended, killed_at: Instant) {
    println!("{side}: {ended:?}, {:?} after the kill", ended.at - killed_at);
    assert!(
        ended
            .error
            .is_some_and(|e| e != ErrorKind::WouldBlock && e != ErrorKind::TimedOut),
        "{side} ended with {:?} after {} bytes",
        ended.error,
        ended.bytes
    );
    assert!(ended.at - killed_at < FAR_SIDE_LEARNS, "{side}: {ended:?}");
}

#[test]
fn the_server_gateway_killed_mid_upload_resets_the_server_and_the_client() {
    let (client, server, killed_at) = kill_midway(true, "gwB", "gateway-killed-b-upload");
    assert_reset_at_once("server", &server, killed_at);
    assert_error_in_time("client", &client, killed_at);
}

#[test]
fn the_client_gateway_killed_mid_download_resets_the_client_and_the_server() {
    let (client, server, killed_at) = kill_midway(false, "gwA", "gateway-killed-a-download");
    assert_reset_at_once("client", &client, killed_at);
    assert_error_in_time("server", &server, killed_at);
}

#[test]
fn the_client_gateway_killed_mid_upload_resets_the_client_and_the_server() {
    let (client, server, killed_at) = kill_midway(true, "gwA", "gateway-killed-a-upload");
    assert_reset_at_once("client", &client, killed_at);
    assert_error_in_time("server", &server, killed_at);
}

#[test]
fn the_server_gateway_killed_mid_download_resets_the_server_and_the_client() {
    let (client, server, killed_at) = kill_midway(false, "gwB", "gateway-killed-b-download");
    assert_reset_at_once("server", &server, killed_at);
    assert_error_in_time("client", &client, killed_at);
}
