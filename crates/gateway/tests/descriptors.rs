//! A gateway short of file descriptors (this test's process alone: it
//! sets its own open-file limit) lowers its connection limit to what they
//! allow at start, and when they run out all the same, a client waiting to
//! be accepted is reset at once and counted, instead of waiting in the
//! kernel's queue until it gives up.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{echo_server, far_gateway, free_port, link_keys, start};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use scps_gateway::descriptors::RESERVED;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const LIMIT: u64 = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_a_connection_is_reset_at_once_and_counted() {
    setrlimit(Resource::RLIMIT_NOFILE, LIMIT, LIMIT).unwrap();
    assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap(), (LIMIT, LIMIT));
    let server = echo_server().await;
    let (far, far_udp) = far_gateway(server).await;
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let client = start(&format!(
        "[link]\n{}udp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:{far_udp}\"\n\
         [[forward]]\nlisten = \"{listen}\"\nto = \"{server}\"\n",
        link_keys(false)
    ))
    .await;
    assert_eq!(
        client.counters().limit(),
        (LIMIT - RESERVED) as usize,
        "the connection limit is what the descriptors allow"
    );

    // Every descriptor taken, then one given back for the client's socket:
    // the gateway has none left to accept it with.
    let mut taken = Vec::new();
    while let Ok(file) = std::fs::File::open("/dev/null") {
        taken.push(file);
    }
    taken.pop();
    // On loopback the reset can beat the connect's return.
    let read = match TcpStream::connect(listen).await {
        Ok(mut stream) => {
            let mut byte = [0u8; 1];
            tokio::time::timeout(Duration::from_secs(2), stream.read(&mut byte))
                .await
                .expect("the client learns at once")
        }
        Err(err) => Err(err),
    };
    drop(taken);
    assert_eq!(
        read.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionReset),
        "reset, never an end of stream"
    );
    let counters = client.stop().await.unwrap();
    far.stop().await.unwrap();
    assert_eq!(counters.snapshot().no_descriptors, 1, "{}", counters.summary());
}
