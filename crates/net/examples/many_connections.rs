//! How many connections one receiving endpoint holds at once, and what
//! each costs (docs/BENCHMARKS.md, "Connections at once"): a sender opens
//! COUNT connections over UDP on loopback, each writes 1 KiB and stays
//! open; the receiver accepts and reads them all. The resident size of
//! this process (which runs both endpoints) before and with every
//! connection open gives the memory per connection, counting both ends.
//!
//!     cargo run --release -p scps-net --example many_connections [COUNT]

#[path = "../tests/common/resident.rs"]
mod resident;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use scps_net::{Net, NetOptions, UdpPath};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5001;
const HELLO: usize = 1024;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("COUNT is a number"))
        .unwrap_or(1000);
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let receiver_udp = path.local_addr().unwrap();
    let mut options = NetOptions::default();
    // Every connection waits to be accepted at once.
    options.endpoint.backlog = count;
    let receiver = Net::start(path, options).unwrap();
    let to = SocketAddr::new(receiver_udp.ip(), PORT);
    let listener = receiver.listen(to).unwrap();
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(receiver_udp)).unwrap();
    let sender = Net::start(path, NetOptions::default()).unwrap();
    let before = resident::status_mb("VmRSS:");
    let started = Instant::now();
    let accepting = tokio::spawn(async move {
        let mut served = Vec::with_capacity(count);
        for _ in 0..count {
            let mut stream = listener.accept().await.unwrap();
            let mut hello = [0u8; HELLO];
            stream.read_exact(&mut hello).await.unwrap();
            served.push(stream);
        }
        served
    });
    let mut opened = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = sender.connect(to).await.unwrap();
        stream.write_all(&[7u8; HELLO]).await.unwrap();
        opened.push(stream);
    }
    let served = accepting.await.unwrap();
    let took = started.elapsed();
    let with = resident::status_mb("VmRSS:");
    println!(
        "{count} connections opened, 1 KiB written on each and read, in {:.2} s ({:.0} per second)",
        took.as_secs_f64(),
        count as f64 / took.as_secs_f64()
    );
    println!(
        "resident: {before:.1} MB before, {with:.1} MB with all open: {:.1} KB per connection, both ends together",
        (with - before) * 1000.0 / count as f64
    );
    drop((served, opened));
    sender.close(Duration::from_secs(5)).await.unwrap();
    receiver.close(Duration::from_secs(5)).await.unwrap();
}
