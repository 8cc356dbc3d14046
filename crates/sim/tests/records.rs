//! Records (docs/spec/scps-tp-options.md, "Record boundary, kind 22")
//! over a lossy, reordering link: the reader sees exactly the records the
//! writer ended, with their content, whatever was lost, resent or
//! reordered on the way.

mod common;

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_channel::{Bundle, ChannelConfig, Jitter};
use scps_proto::endpoint::INTERFACE;
use scps_proto::time::Instant;
use scps_proto::{Config, ConnectionHandle, Endpoint, EndpointConfig, StreamError};
use scps_sim::{App, NodeInterface, Outcome, World};
use scps_workload_format::payload::Pattern;

const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 5001);

/// Writes the records, each as one `send_record` call per piece taken.
struct Writer {
    sizes: Vec<usize>,
    pattern: Pattern,
    handle: Option<ConnectionHandle>,
    /// Next record, and how much of it the connection has taken.
    record: usize,
    taken: usize,
    offset: u64,
    buf: Vec<u8>,
}

impl App for Writer {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        let handle = *self
            .handle
            .get_or_insert_with(|| endpoint.connect(now, SERVER, None, None).expect("connects"));
        while let Some(&size) = self.sizes.get(self.record) {
            self.buf.resize(size - self.taken, 0);
            self.pattern.fill(self.offset, &mut self.buf);
            match endpoint.send_record(handle, &self.buf) {
                Ok(n) => {
                    self.taken += n;
                    self.offset += n as u64;
                    if self.taken < size {
                        return;
                    }
                    self.record += 1;
                    self.taken = 0;
                }
                Err(StreamError::WouldBlock) => return,
                Err(err) => panic!("writing record {}: {err}", self.record),
            }
        }
        endpoint.shutdown(handle).expect("shuts down");
    }
}

/// What the reader saw.
#[derive(Debug, Default)]
struct Seen {
    sizes: Vec<usize>,
    bytes: u64,
    end_of_stream: bool,
    /// Segments that arrived with compressed headers.
    compressed_segments: u64,
}

struct Reader {
    pattern: Pattern,
    handle: Option<ConnectionHandle>,
    current: usize,
    seen: Rc<RefCell<Seen>>,
    /// Smaller than many records, so that they are read in pieces.
    buf: [u8; 1000],
}

impl App for Reader {
    fn poll(&mut self, _now: Instant, endpoint: &mut Endpoint) {
        let Some(handle) = self.handle.or_else(|| endpoint.accept(SERVER)) else {
            return;
        };
        self.handle = Some(handle);
        let mut seen = self.seen.borrow_mut();
        loop {
            match endpoint.recv_record(handle, &mut self.buf) {
                Ok((0, _)) => {
                    assert_eq!(self.current, 0, "the stream ended inside a record");
                    seen.end_of_stream = true;
                    seen.compressed_segments = endpoint
                        .stats_of(handle)
                        .map_or(0, |s| s.compressed_segments_received);
                    return;
                }
                Ok((n, end_of_record)) => {
                    let at = self.pattern.first_mismatch(seen.bytes, &self.buf[..n]);
                    assert_eq!(at, None, "content differs");
                    seen.bytes += n as u64;
                    self.current += n;
                    if end_of_record {
                        seen.sizes.push(self.current);
                        self.current = 0;
                    }
                }
                Err(StreamError::WouldBlock) => return,
                Err(err) => panic!("reading: {err}"),
            }
        }
    }
}

#[test]
fn records_of_random_sizes_keep_their_boundaries_over_a_lossy_reordering_link() {
    let seed = common::seed();
    println!("seed {seed} (replay with SCPS_SEED={seed})");
    transfer_records(seed, false);
}

#[test]
fn record_boundaries_survive_header_compression() {
    // The boundary travels as the RB bit of the compressed header.
    let seed = common::seed();
    println!("seed {seed} (replay with SCPS_SEED={seed})");
    transfer_records(seed, true);
}

fn transfer_records(seed: u64, header_compression: bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Small records (many per window), ones around the segment size, and
    // long ones spanning several segments.
    let sizes: Vec<usize> = (0..400)
        .map(|_| match rng.random_range(0..3) {
            0 => rng.random_range(1..=100),
            1 => rng.random_range(1300..=1600),
            _ => rng.random_range(1..=8000),
        })
        .collect();
    let total: usize = sizes.iter().sum();

    let config = Config {
        scps: true,
        header_compression,
        rto_min: Duration::from_millis(200),
        rto_initial: Duration::from_millis(500),
        ..Config::default()
    };
    let endpoint = |ip: Ipv4Addr| {
        let config = EndpointConfig {
            connection: config.clone(),
            ..EndpointConfig::default()
        };
        Endpoint::new(config, [IpAddr::V4(ip)]).expect("valid endpoint")
    };
    let mut world = World::new();
    let client = world.add_host(endpoint(Ipv4Addr::new(10, 0, 0, 1)));
    let server = world.add_host(endpoint(Ipv4Addr::new(10, 0, 0, 2)));
    let mut channel = ChannelConfig::new(2_000_000);
    channel.delay = Duration::from_millis(40);
    channel.jitter = Jitter::Uniform(Duration::from_millis(15));
    channel.allow_reordering = true;
    channel.ber = 2e-5;
    let eth0 = |node| NodeInterface {
        node,
        interface: INTERFACE,
    };
    let link = world
        .connect(
            eth0(client),
            eth0(server),
            Bundle::new(vec![channel.clone()], seed).unwrap(),
            Bundle::new(vec![channel], seed + 1).unwrap(),
        )
        .unwrap();
    world.endpoint_mut(server).listen(SERVER, None).unwrap();
    let pattern = Pattern::new(seed);
    world.add_app(
        client,
        Box::new(Writer {
            sizes: sizes.clone(),
            pattern,
            handle: None,
            record: 0,
            taken: 0,
            offset: 0,
            buf: Vec::new(),
        }),
    );
    let seen = Rc::new(RefCell::new(Seen::default()));
    world.add_app(
        server,
        Box::new(Reader {
            pattern,
            handle: None,
            current: 0,
            seen: seen.clone(),
            buf: [0; 1000],
        }),
    );
    let outcome = world.run(Instant::from_duration(Duration::from_secs(600)), |_| {
        seen.borrow().end_of_stream
    });
    assert_eq!(outcome, Outcome::Done, "seed {seed}: the transfer did not finish");
    let seen = seen.borrow();
    assert_eq!(seen.bytes, total as u64, "seed {seed}");
    assert_eq!(seen.sizes, sizes, "seed {seed}: record sizes as written");
    let lost = world.channel_stats(link, 0)[0].dropped_bit_errors;
    assert!(
        lost > 5,
        "seed {seed}: the link lost only {lost} packets: loss not exercised"
    );
    if header_compression {
        assert!(
            seen.compressed_segments > 500,
            "seed {seed}: compression not in force"
        );
    }
}
