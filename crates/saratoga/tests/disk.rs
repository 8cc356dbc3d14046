//! Engines over real directories: a put, a get, a listing, and a
//! receiver that restarts mid-transfer and resumes from its disk.

use std::fs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use scps_node::Instant;
use scps_saratoga::engine::{Config, DiskStore, Engine, Event, PARTIAL_DIR};
use scps_saratoga::wire::{
    Checksum, Data, Descriptor, DirEntry, ErrorCode, Frame, Metadata, Request, RequestType, TransferType,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("scps-saratoga-it-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(path.join("a")).unwrap();
        fs::create_dir_all(path.join("b")).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const DELAY: Duration = Duration::from_millis(20);

/// Two engines and the datagrams between them (in order, `DELAY` apart).
struct World {
    a: Engine<DiskStore>,
    b: Engine<DiskStore>,
    now: Instant,
    wire: Vec<(Instant, bool, Vec<u8>)>,
    events: Vec<Event>,
}

fn a_addr() -> SocketAddr {
    "10.1.0.1:7542".parse().unwrap()
}

fn b_addr() -> SocketAddr {
    "10.1.0.2:7542".parse().unwrap()
}

impl World {
    fn new(dir: &TempDir) -> World {
        let config = Config {
            rate_bps: 20_000_000,
            ..Config::default()
        };
        World {
            a: Engine::new(config.clone(), DiskStore::new(dir.0.join("a")).unwrap()).unwrap(),
            b: Engine::new(
                Config {
                    first_session: 500,
                    ..config
                },
                DiskStore::new(dir.0.join("b")).unwrap(),
            )
            .unwrap(),
            now: Instant::ZERO,
            wire: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Runs until `limit`, or until `done` holds.
    fn run(&mut self, limit: Duration, done: impl Fn(&[Event]) -> bool) -> bool {
        let limit = Instant::ZERO + limit;
        loop {
            for (engine, to_b) in [(&mut self.a, true), (&mut self.b, false)] {
                if engine.poll_timeout().is_some_and(|t| t <= self.now) {
                    engine.handle_timeout(self.now);
                }
                while let Some((_, bytes)) = engine.poll_transmit(self.now) {
                    self.wire.push((self.now + DELAY, to_b, bytes));
                }
                self.events.extend(std::iter::from_fn(|| engine.poll_event()));
            }
            if done(&self.events) {
                return true;
            }
            let next = self
                .wire
                .iter()
                .map(|(t, _, _)| *t)
                .chain(self.a.poll_timeout())
                .chain(self.b.poll_timeout())
                .min();
            match next {
                Some(next) if next <= limit => self.now = self.now.max(next),
                _ => return false,
            }
            let now = self.now;
            let due: Vec<_> = self.wire.iter().filter(|(t, _, _)| *t <= now).cloned().collect();
            self.wire.retain(|(t, _, _)| *t > now);
            for (_, to_b, bytes) in due {
                if to_b {
                    self.b.handle_datagram(now, a_addr(), &bytes);
                } else {
                    self.a.handle_datagram(now, b_addr(), &bytes);
                }
            }
        }
    }
}

fn completed(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Completed { .. }))
        .count()
}

fn contents(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn put_get_and_list_between_two_directories() {
    let dir = TempDir::new("roundtrip");
    let file = contents(300_000);
    fs::write(dir.0.join("a/report.bin"), &file).unwrap();
    let mut world = World::new(&dir);
    world
        .a
        .put_requested(world.now, b_addr(), "report.bin", "inbox/report.bin")
        .unwrap();
    assert!(
        world.run(Duration::from_secs(60), |e| completed(e) == 2),
        "{:?}",
        world.events
    );
    assert_eq!(fs::read(dir.0.join("b/inbox/report.bin")).unwrap(), file);

    world.a.get(world.now, b_addr(), "inbox/report.bin", "copy.bin");
    assert!(world.run(Duration::from_secs(120), |e| completed(e) == 4));
    assert_eq!(fs::read(dir.0.join("a/copy.bin")).unwrap(), file);

    world.a.list(world.now, b_addr(), "inbox");
    assert!(world.run(Duration::from_secs(180), |e| e.iter().any(
        |e| matches!(e, Event::Listing { entries, .. } if entries.len() == 1 && entries[0].size == 300_000)
    )));
}

#[test]
fn a_receiver_restarted_mid_transfer_resumes_from_disk() {
    let dir = TempDir::new("restart");
    let file = contents(2_000_000);
    fs::write(dir.0.join("a/big.bin"), &file).unwrap();
    let mut world = World::new(&dir);
    world.a.put(world.now, b_addr(), "big.bin", "big.bin").unwrap();
    // 2 MB at 20 Mbit/s takes 0.8 s: restart b after 0.4 s.
    world.run(Duration::from_millis(400), |_| false);
    world.b = Engine::new(
        Config {
            first_session: 900,
            ..world.b.config().clone()
        },
        DiskStore::new(dir.0.join("b")).unwrap(),
    )
    .unwrap();
    assert!(
        world.run(Duration::from_secs(60), |e| completed(e) == 2),
        "{:?}",
        world.events
    );
    assert_eq!(fs::read(dir.0.join("b/big.bin")).unwrap(), file);
    let resumed = world.events.iter().find_map(|e| match e {
        Event::Resumed { bytes, .. } => Some(*bytes),
        _ => None,
    });
    assert!(resumed.is_some_and(|r| r > 500_000), "{resumed:?}");
    assert!(world.a.stats().data_bytes_resent <= 2_000_000 - resumed.unwrap());
}

#[test]
fn a_put_into_the_partial_files_directory_is_refused_and_stores_nothing() {
    let dir = TempDir::new("partials");
    let mut world = World::new(&dir);
    let (b, now) = (&mut world.b, world.now);
    // A hostile peer: its PUT REQUEST, and its METADATA and DATA all the same.
    let mut send = |frame: Frame<'_>| {
        b.handle_datagram(now, a_addr(), &frame.to_bytes().unwrap());
        std::iter::from_fn(|| b.poll_transmit(now))
            .map(|(_, bytes)| match Frame::parse(&bytes) {
                Ok(Frame::Status(status)) => status.error,
                other => panic!("answered with {other:?}"),
            })
            .collect::<Vec<_>>()
    };
    for (session, name) in [(1, ".saratoga/partial/q"), (2, ".saratoga/zz")] {
        let put = Request::new(RequestType::Put, session, name);
        assert_eq!(send(Frame::Request(put)), [ErrorCode::ACCESS_DENIED], "{name}");
        let last = name.rsplit('/').next().unwrap();
        let metadata = Metadata {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            terminated: false,
            udp_lite: false,
            session,
            checksum: Checksum::None,
            entry: DirEntry::file(last, 5, 0),
        };
        assert_eq!(
            send(Frame::Metadata(metadata)),
            [ErrorCode::ACCESS_DENIED],
            "{name}"
        );
        let data = Data {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            request_status: true,
            end_of_data: false,
            session,
            timestamp: None,
            offset: 0,
            payload: b"hello",
        };
        assert_eq!(send(Frame::Data(data)), [ErrorCode::ACCESS_DENIED], "{name}");
    }
    let events: Vec<Event> = std::iter::from_fn(|| world.b.poll_event()).collect();
    assert!(events.is_empty(), "refusals are not transfers: {events:?}");
    let partials = dir.0.join("b").join(PARTIAL_DIR);
    let stored: Vec<_> = fs::read_dir(partials.join("partial"))
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(stored.is_empty(), "{stored:?}");
    assert!(!partials.join("zz").exists());
    assert_eq!(world.b.active(), 0);
    assert_eq!(world.b.stats().refused_data_bytes, 10);
}
