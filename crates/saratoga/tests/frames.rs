//! One engine fed frames written by hand: what a Vallona peer sends,
//! malformed frames, frames for no session, a corrupt file.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use scps_node::Instant;
use scps_saratoga::engine::{Config, Engine, Event, FailReason, MemoryStore, Operation};
use scps_saratoga::wire::{
    Checksum, ChecksumKind, Data, Descriptor, DirEntry, EntryKind, ErrorCode, Frame, Hole, Metadata, Request,
    RequestType, Status, TransferType,
};

const PEER: &str = "192.0.2.7:40000";

fn peer() -> SocketAddr {
    PEER.parse().unwrap()
}

fn engine() -> Engine<MemoryStore> {
    Engine::new(
        Config {
            rate_bps: 0,
            ..Config::default()
        },
        MemoryStore::new(),
    )
    .unwrap()
}

fn drain(engine: &mut Engine<MemoryStore>, now: Instant) -> Vec<Vec<u8>> {
    let mut sent = Vec::new();
    while let Some((to, bytes)) = engine.poll_transmit(now) {
        assert_eq!(to, peer());
        sent.push(bytes);
    }
    sent
}

fn statuses(sent: &[Vec<u8>]) -> Vec<Status> {
    sent.iter().filter_map(|b| Status::parse(b).ok()).collect()
}

fn events(engine: &mut Engine<MemoryStore>) -> Vec<Event> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

fn vallona_metadata(session: u32, size: u64, checksum: Checksum) -> Vec<u8> {
    let metadata = Metadata {
        descriptor: Descriptor::D32,
        transfer_type: TransferType::File,
        terminated: false,
        udp_lite: false,
        session,
        checksum,
        entry: DirEntry {
            kind: EntryKind::File,
            descriptor: Descriptor::D32,
            size,
            // Unix seconds plus 946684800, as Vallona writes them.
            mtime: 2_646_684_800,
            ctime: 2_646_684_800,
            name: "/home/sat/outbox/pass-17.raw".into(),
        },
    };
    Frame::Metadata(metadata).to_bytes().unwrap()
}

fn vallona_data(session: u32, offset: u64, payload: &[u8]) -> Vec<u8> {
    // Vallona never sets request-status or end-of-data.
    common::data_frame_in(Descriptor::D32, session, offset, payload)
}

#[test]
fn a_put_as_vallona_sends_it_is_received_under_its_last_path_component() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let file: Vec<u8> = (0..3140u32).map(|i| (i * 7) as u8).collect();
    engine.handle_datagram(now, peer(), &vallona_metadata(99, 3140, Checksum::None));
    // Payloads of 1420, 300 and the rest, one arriving out of order.
    engine.handle_datagram(now, peer(), &vallona_data(99, 0, &file[..1420]));
    engine.handle_datagram(now, peer(), &vallona_data(99, 1720, &file[1720..]));
    // No request-status: the receiver reports its hole on its own timer.
    assert!(statuses(&drain(&mut engine, now)).is_empty());
    let wake = engine.poll_timeout().unwrap();
    assert!(wake <= now + Duration::from_secs(1));
    engine.handle_timeout(wake);
    let status = statuses(&drain(&mut engine, wake))
        .pop()
        .expect("a voluntary STATUS");
    assert!(status.voluntary && status.metadata_received);
    assert_eq!(
        status.progress, 1419,
        "inclusive: the last byte received in order"
    );
    assert_eq!(
        status.holes,
        [Hole {
            start: 1420,
            end: 1719
        }],
        "inclusive hole end"
    );
    engine.handle_datagram(wake, peer(), &vallona_data(99, 1420, &file[1420..1720]));
    let status = statuses(&drain(&mut engine, wake))
        .pop()
        .expect("the final STATUS");
    assert_eq!((status.progress, status.holes.len()), (3139, 0));
    assert_eq!(engine.store().contents("pass-17.raw"), Some(&file[..]));
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Completed { operation: Operation::Receive, name, size: 3140, .. } if name == "pass-17.raw"
    )));
}

#[test]
fn a_sender_completes_on_a_vallona_status_with_stray_bytes() {
    // Whatever width the peer answers in: at 16 bits the stray bytes
    // make a whole (impossible) hole pair.
    for width in [Descriptor::D32, Descriptor::D16] {
        a_sender_completes_on_a_vallona_status_of(width);
    }
}

fn a_sender_completes_on_a_vallona_status_of(width: Descriptor) {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![5; 3000], 0);
    let id = engine.put(now, peer(), "f", "f").unwrap();
    let sent = drain(&mut engine, now);
    assert!(Metadata::parse(&sent[0]).is_ok());
    assert!(
        Metadata::parse(sent.last().unwrap()).is_ok(),
        "until confirmed, the METADATA follows each request for a STATUS"
    );
    let data: Vec<Data<'_>> = sent[1..sent.len() - 1]
        .iter()
        .map(|b| Data::parse(b).unwrap())
        .collect();
    assert_eq!(data.iter().map(|d| d.payload.len()).sum::<usize>(), 3000);
    assert!(
        data.iter().all(|d| d.descriptor == Descriptor::D32),
        "never 16-bit, though 3000 fits"
    );
    let last = data.last().unwrap();
    assert!(
        last.request_status && last.end_of_data,
        "the last DATA asks for a STATUS"
    );
    // Vallona's STATUS: a hole, then 4 stray bytes.
    let hole = Status {
        descriptor: width,
        session: id.session,
        timestamp: None,
        metadata_received: true,
        all_holes: true,
        voluntary: false,
        error: ErrorCode::SUCCESS,
        progress: 1459,
        in_response_to: last.offset,
        holes: vec![Hole::from_range(1460..2920).unwrap()],
    };
    let mut bytes = Frame::Status(hole.clone()).to_bytes().unwrap();
    bytes.extend([0, 0, 0, 0]);
    engine.handle_datagram(now, peer(), &bytes);
    // That STATUS confirmed the METADATA: it is not sent again.
    let resent: Vec<(u64, usize, bool)> = drain(&mut engine, now)
        .iter()
        .map(|b| Data::parse(b).unwrap())
        .map(|d| (d.offset, d.payload.len(), d.end_of_data))
        .collect();
    assert_eq!(
        resent,
        [(1460, 1460, false)],
        "exactly the hole, once, and not the end of the data"
    );
    // With nothing left to send, the sender probes: no end of data either.
    let wake = engine.poll_timeout().unwrap();
    engine.handle_timeout(wake);
    let probe = drain(&mut engine, wake).iter().find_map(|b| {
        Data::parse(b)
            .ok()
            .map(|d| (d.payload.len(), d.request_status, d.end_of_data))
    });
    assert_eq!(probe, Some((0, true, false)));
    let done = Status {
        progress: 2999,
        in_response_to: 1460,
        holes: Vec::new(),
        ..hole
    };
    let mut bytes = Frame::Status(done).to_bytes().unwrap();
    bytes.extend([0, 0, 0, 0]);
    engine.handle_datagram(now, peer(), &bytes);
    assert!(
        events(&mut engine)
            .iter()
            .any(|e| matches!(e, Event::Completed { id: i, .. } if *i == id))
    );
    assert_eq!(engine.active(), 0);
    assert_eq!(engine.stats().data_bytes_resent, 1460);
}

#[test]
fn malformed_frames_are_counted_by_cause() {
    let mut engine = engine();
    let now = Instant::ZERO;
    for bytes in [
        &[][..],
        &[0x24, 0x40],
        &[0x44, 0x40, 0, 0],
        &[0x3f, 0x40, 0, 0],
        &[0x24, 0xc0, 0, 0, 0, 0, 0, 1],
        &[0x21, 0x40, 0, 1, 0, 0, 0, 1, b'f'],
    ] {
        engine.handle_datagram(now, peer(), bytes);
    }
    let malformed = &engine.stats().malformed;
    let counts: Vec<(&str, u64)> = malformed.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(
        counts,
        [
            ("descriptor_128", 1),
            ("frame_type", 1),
            ("name_unterminated", 1),
            ("too_short", 2),
            ("version", 1)
        ]
    );
    assert!(
        drain(&mut engine, now).is_empty(),
        "malformed frames get no answer"
    );
    assert_eq!(engine.active(), 0);
}

#[test]
fn frames_for_no_session_get_the_spec_answers() {
    let mut engine = engine();
    let now = Instant::ZERO;
    // A STATUS for a session we do not have: "unknown session id".
    let status = Status::error(77, ErrorCode::SUCCESS);
    engine.handle_datagram(now, peer(), &Frame::Status(status).to_bytes().unwrap());
    let answer = statuses(&drain(&mut engine, now));
    assert_eq!(answer.len(), 1);
    assert_eq!((answer[0].session, answer[0].error), (77, ErrorCode::UNKNOWN_ID));
    // An error STATUS is never answered (no ping-pong).
    let error = Status::error(78, ErrorCode::UNKNOWN_ID);
    engine.handle_datagram(now, peer(), &Frame::Status(error).to_bytes().unwrap());
    assert!(drain(&mut engine, now).is_empty());
    // DATA for no session: "no METADATA here", so the sender sends it.
    engine.handle_datagram(now, peer(), &vallona_data(79, 2840, &[1; 10]));
    let answer = statuses(&drain(&mut engine, now));
    assert_eq!(answer.len(), 1);
    assert!(!answer[0].metadata_received);
    assert_eq!((answer[0].session, answer[0].in_response_to), (79, 2840));
    // Repeats within the status interval are not answered again.
    engine.handle_datagram(now, peer(), &vallona_data(79, 2850, &[1; 10]));
    assert!(drain(&mut engine, now).is_empty());
    assert_eq!(engine.stats().unknown_session, 4, "every one counted");
}

#[test]
fn a_file_whose_checksum_does_not_match_is_not_committed() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let wrong = Checksum::of(ChecksumKind::Sha1, b"something else");
    engine.handle_datagram(now, peer(), &vallona_metadata(5, 4, wrong));
    engine.handle_datagram(now, peer(), &vallona_data(5, 0, b"data"));
    let answer = statuses(&drain(&mut engine, now));
    assert_eq!(answer.last().map(|s| s.error), Some(ErrorCode::UNSPECIFIED));
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Failed {
            reason: FailReason::ChecksumMismatch,
            ..
        }
    )));
    assert_eq!(engine.store().contents("pass-17.raw"), None);
    assert_eq!(
        engine.store().partial_ranges("pass-17.raw"),
        None,
        "the bad partial is dropped"
    );
}

#[test]
fn data_beyond_the_announced_size_is_dropped() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.handle_datagram(now, peer(), &vallona_metadata(6, 10, Checksum::None));
    engine.handle_datagram(now, peer(), &vallona_data(6, 8, b"xyz"));
    assert_eq!(engine.stats().malformed.get("beyond_end"), Some(&1));
    assert_eq!(engine.store().partial_ranges("pass-17.raw"), Some(vec![]));
}

#[test]
fn unsafe_or_unwanted_puts_are_refused() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let mut metadata = Metadata::parse(&vallona_metadata(8, 1, Checksum::None)).unwrap();
    // Only the last component counts (see below): `..` is refused.
    metadata.entry.name = "etc/..".into();
    engine.handle_datagram(
        now,
        peer(),
        &Frame::Metadata(metadata.clone()).to_bytes().unwrap(),
    );
    metadata.session = 9;
    metadata.entry.name = "ok".into();
    metadata.transfer_type = TransferType::Bundle;
    engine.handle_datagram(now, peer(), &Frame::Metadata(metadata).to_bytes().unwrap());
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(
        codes,
        [(8, ErrorCode::ACCESS_DENIED), (9, ErrorCode::RX_NOT_INTERESTED)]
    );
    assert_eq!(engine.active(), 0);
}

#[test]
fn a_put_of_what_cannot_be_sent_is_refused_at_once() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.store_mut().insert("d/f", vec![1], 0);
    assert!(engine.put(now, peer(), "missing", "x").is_err());
    assert!(engine.put(now, peer(), "d", "x").is_err(), "a directory");
    assert!(engine.put(now, peer(), "d/f", "a\0b").is_err());
    assert!(engine.put(now, peer(), "d/f", "").is_err());
    assert_eq!(engine.active(), 0);
    assert!(drain(&mut engine, now).is_empty());
}

#[test]
fn a_put_too_big_for_the_store_is_refused() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.handle_datagram(
        now,
        peer(),
        &vallona_metadata(10, u64::from(u32::MAX), Checksum::None),
    );
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| s.error)
        .collect();
    assert_eq!(codes, [ErrorCode::FILE_TOO_BIG]);
    assert_eq!(engine.active(), 0);
}

#[test]
fn two_transfers_never_write_one_name() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.handle_datagram(now, peer(), &vallona_metadata(20, 10, Checksum::None));
    // Another session for the same name is refused while the first runs.
    engine.handle_datagram(now, peer(), &vallona_metadata(21, 10, Checksum::None));
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(codes, [(21, ErrorCode::FILE_IN_USE)]);
    let id = engine.get(now, peer(), "elsewhere", "pass-17.raw");
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Failed { id: i, reason: FailReason::Store(_) } if *i == id
    )));
    // Once the first is done, the name is free again.
    engine.handle_datagram(now, peer(), &vallona_data(20, 0, &[9; 10]));
    drain(&mut engine, now);
    engine.handle_datagram(now, peer(), &vallona_metadata(22, 10, Checksum::None));
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| s.error)
        .collect();
    assert!(!codes.contains(&ErrorCode::FILE_IN_USE), "{codes:?}");
}

#[test]
fn a_listing_that_does_not_parse_fails_the_request() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let id = engine.list(now, peer(), "d");
    let request = drain(&mut engine, now);
    assert_eq!(request.len(), 1, "the REQUEST");
    let mut metadata = Metadata::parse(&vallona_metadata(id.session, 3, Checksum::None)).unwrap();
    metadata.transfer_type = TransferType::Directory;
    engine.handle_datagram(now, peer(), &Frame::Metadata(metadata).to_bytes().unwrap());
    let bytes = vallona_data(id.session, 0, &[1, 2, 3]);
    let mut data = Data::parse(&bytes).unwrap();
    data.transfer_type = TransferType::Directory;
    engine.handle_datagram(now, peer(), &Frame::Data(data).to_bytes().unwrap());
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| s.error)
        .collect();
    assert_eq!(codes, [ErrorCode::BAD_PACKET]);
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Failed { id: i, reason: FailReason::BadListing(_) } if *i == id
    )));
    assert_eq!(engine.active(), 0);
}

#[test]
fn a_paced_engine_wakes_when_the_next_sender_may_send() {
    // 80 kbit/s: 10 kB a second. Two puts share the pacer; one has small
    // re-sends queued while the other has full frames.
    let mut engine = Engine::new(
        Config {
            rate_bps: 80_000,
            burst_bytes: 1500,
            ..Config::default()
        },
        MemoryStore::new(),
    )
    .unwrap();
    let mut now = Instant::ZERO;
    engine.store_mut().insert("x", vec![1; 20 * 1460], 0);
    engine.store_mut().insert("y", vec![2; 1460], 0);
    let y = engine.put(now, peer(), "y", "y").unwrap();
    let mut sent_y = Vec::new();
    while sent_y.len() < 2 {
        while let Some((_, bytes)) = engine.poll_transmit(now) {
            if Data::parse(&bytes).is_ok_and(|d| d.session == y.session) {
                sent_y.push(bytes);
            }
        }
        now = engine.poll_timeout().unwrap().max(now);
        engine.handle_timeout(now);
    }
    let last = Data::parse(&sent_y[0]).unwrap();
    assert!(last.request_status);
    // y's receiver lacks five 10-byte pieces: five small re-sends.
    let holes = (0..5)
        .map(|i| Hole::from_range(i * 100..i * 100 + 10).unwrap())
        .collect();
    let status = Status {
        descriptor: Descriptor::D16,
        session: y.session,
        timestamp: None,
        metadata_received: true,
        all_holes: true,
        voluntary: false,
        error: ErrorCode::SUCCESS,
        progress: 0,
        in_response_to: last.offset,
        holes,
    };
    engine.put(now, peer(), "x", "x").unwrap();
    engine.handle_datagram(now, peer(), &Frame::Status(status).to_bytes().unwrap());
    let start = now;
    let mut data_bytes = 0;
    while data_bytes < 20 * 1460 + 50 {
        while let Some((_, bytes)) = engine.poll_transmit(now) {
            data_bytes += Data::parse(&bytes).map_or(0, |d| d.payload.len());
        }
        let next = engine.poll_timeout().unwrap();
        assert!(
            next > now || data_bytes >= 20 * 1460 + 50,
            "woken at {now:?} for nothing"
        );
        now = next.max(now);
        engine.handle_timeout(now);
    }
    // 29 kB and headers at 10 kB/s: about 3 s, not a wait for a timer.
    assert!(
        now.saturating_since(start) < Duration::from_secs(4),
        "{:?}",
        now.saturating_since(start)
    );
}

#[test]
fn a_partial_of_another_file_with_the_same_name_and_size_is_not_resumed() {
    let old: Vec<u8> = (0..10).collect();
    let new: Vec<u8> = (100..110).collect();
    let announce = |session, file: &[u8], mtime| {
        let mut metadata = Metadata::parse(&vallona_metadata(
            session,
            10,
            Checksum::of(ChecksumKind::Md5, file),
        ))
        .unwrap();
        metadata.entry.mtime = mtime;
        Frame::Metadata(metadata).to_bytes().unwrap()
    };
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.handle_datagram(now, peer(), &announce(40, &old, 1));
    engine.handle_datagram(now, peer(), &vallona_data(40, 0, &old[..5]));
    // This end restarts; the peer now sends another file of that name.
    let store = std::mem::take(engine.store_mut());
    let mut engine = Engine::new(engine.config().clone(), store).unwrap();
    engine.handle_datagram(now, peer(), &announce(41, &new, 2));
    engine.handle_datagram(now, peer(), &vallona_data(41, 5, &new[5..]));
    let happened = events(&mut engine);
    assert!(
        !happened
            .iter()
            .any(|e| matches!(e, Event::Resumed { .. } | Event::Failed { .. })),
        "{happened:?}"
    );
    engine.handle_datagram(now, peer(), &vallona_data(41, 0, &new[..5]));
    assert_eq!(engine.store().contents("pass-17.raw"), Some(&new[..]));
}

#[test]
fn sessions_peers_start_are_bounded_in_number_size_and_memory() {
    let mut engine = Engine::new(
        Config {
            rate_bps: 0,
            max_receivers: 2,
            max_file_bytes: 1000,
            max_remembered: 100,
            ..Config::default()
        },
        MemoryStore::new(),
    )
    .unwrap();
    let now = Instant::ZERO;
    let put = |session: u32, size: u64| {
        let mut metadata = Metadata::parse(&vallona_metadata(session, size, Checksum::None)).unwrap();
        metadata.entry.name = format!("f{session}");
        Frame::Metadata(metadata).to_bytes().unwrap()
    };
    for (session, size) in [(1, 10), (2, 10), (3, 10), (4, 1001)] {
        engine.handle_datagram(now, peer(), &put(session, size));
    }
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(
        codes,
        [
            (3, ErrorCode::RX_NOT_INTERESTED),
            (4, ErrorCode::RX_NOT_INTERESTED)
        ],
        "two at once: the rest are not wanted"
    );
    engine.handle_datagram(now, peer(), &vallona_data(1, 0, &[0; 10]));
    engine.handle_datagram(now, peer(), &put(4, 1001));
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| s.error)
        .collect();
    assert_eq!(codes.last(), Some(&ErrorCode::FILE_TOO_BIG));
    let refused: Vec<_> = engine.stats().refused.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(refused, [("file_too_big", 1), ("too_many_receivers", 2)]);
    // A fetch of a file too big fails too.
    let id = engine.get(now, peer(), "big", "big");
    drain(&mut engine, now);
    let mut metadata = Metadata::parse(&vallona_metadata(id.session, 5000, Checksum::None)).unwrap();
    metadata.entry.name = "big".into();
    engine.handle_datagram(now, peer(), &Frame::Metadata(metadata).to_bytes().unwrap());
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Failed { id: i, reason: FailReason::Store(_) } if *i == id
    )));
    // DATA for sessions that never were, from anywhere: remembered within bounds.
    for session in 1000..1500 {
        engine.handle_datagram(now, peer(), &vallona_data(session, 0, &[1]));
    }
    assert_eq!(engine.stats().forgotten, 400);
}

#[test]
fn a_fetch_names_its_file_as_the_store_does() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let first = engine.get(now, peer(), "a", "/in/f");
    // The same file as the store sees it: refused while the first runs.
    let second = engine.get(now, peer(), "b", "in//f");
    let unsafe_name = engine.get(now, peer(), "c", "../f");
    let failed: Vec<_> = events(&mut engine)
        .into_iter()
        .filter_map(|e| match e {
            Event::Failed {
                id,
                reason: FailReason::Store(error),
            } => Some((id, error.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].0, second);
    assert!(failed[0].1.contains("in/f is being received"), "{failed:?}");
    assert_eq!(failed[1].0, unsafe_name);
    assert!(failed[1].1.contains("local name"), "{failed:?}");
    // The first writes under the normalised name.
    let mut metadata = Metadata::parse(&vallona_metadata(first.session, 2, Checksum::None)).unwrap();
    metadata.entry.name = "a".into();
    engine.handle_datagram(now, peer(), &Frame::Metadata(metadata).to_bytes().unwrap());
    engine.handle_datagram(now, peer(), &vallona_data(first.session, 0, b"ok"));
    assert_eq!(engine.store().contents("in/f"), Some(&b"ok"[..]));
}

#[test]
fn a_configuration_that_cannot_work_is_refused_naming_the_field() {
    let refused = |config: Config| Engine::new(config, MemoryStore::new()).err().map(|e| e.field);
    let base = Config::default();
    assert_eq!(refused(base.clone()), None);
    assert_eq!(
        refused(Config {
            burst_bytes: 1000,
            ..base.clone()
        }),
        Some("burst_bytes"),
        "a frame larger than the bucket never goes"
    );
    assert_eq!(
        refused(Config {
            rate_bps: 0,
            burst_bytes: 0,
            ..base.clone()
        }),
        None,
        "unpaced: no bucket"
    );
    assert_eq!(
        refused(Config {
            max_datagram: 10,
            ..base.clone()
        }),
        Some("max_datagram")
    );
    assert_eq!(
        refused(Config {
            status_interval: Duration::ZERO,
            ..base.clone()
        }),
        Some("status_interval")
    );
    assert_eq!(
        refused(Config {
            status_interval_max: Duration::from_millis(10),
            ..base.clone()
        }),
        Some("status_interval_max")
    );
    let error = Engine::new(
        Config {
            status_every_frames: 0,
            ..base.clone()
        },
        MemoryStore::new(),
    )
    .unwrap_err();
    assert_eq!(error.to_string(), "status_every_frames = 0: at least 1");
    // Intervals as long as a Duration holds back off without overflow.
    let mut engine = Engine::new(
        Config {
            rate_bps: 0,
            status_interval: Duration::MAX / 2,
            status_interval_max: Duration::MAX,
            inactivity_timeout: Duration::MAX,
            ..base
        },
        MemoryStore::new(),
    )
    .unwrap();
    engine.store_mut().insert("f", vec![1; 10], 0);
    engine.put(Instant::ZERO, peer(), "f", "f").unwrap();
    engine.get(Instant::ZERO, peer(), "r", "l");
    for _ in 0..3 {
        drain(&mut engine, Instant::ZERO);
        let wake = engine.poll_timeout().unwrap();
        engine.handle_timeout(wake);
    }
}

#[test]
fn a_receiver_reports_on_its_timer_before_any_data() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.handle_datagram(now, peer(), &vallona_metadata(50, 100, Checksum::None));
    let wake = engine.poll_timeout().unwrap();
    assert!(wake <= now + Duration::from_secs(1), "{wake:?}");
    engine.handle_timeout(wake);
    let status = statuses(&drain(&mut engine, wake))
        .pop()
        .expect("a voluntary STATUS");
    assert!(status.voluntary && status.metadata_received);
    assert_eq!(status.holes, [Hole { start: 0, end: 99 }], "all of it missing");
}

#[test]
fn a_put_is_named_by_its_request_or_the_last_component_of_its_metadata() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let put = |session: u32, name: &str| {
        let mut metadata = Metadata::parse(&vallona_metadata(session, 2, Checksum::None)).unwrap();
        metadata.entry.name = name.into();
        Frame::Metadata(metadata).to_bytes().unwrap()
    };
    // No REQUEST: no directories from the METADATA name.
    engine.handle_datagram(now, peer(), &put(60, "a/b/c"));
    engine.handle_datagram(now, peer(), &vallona_data(60, 0, b"c!"));
    assert_eq!(engine.store().contents("c"), Some(&b"c!"[..]));
    assert_eq!(engine.store().contents("a/b/c"), None);
    drain(&mut engine, now);
    // A PUT REQUEST names it, directories and all; a repeat is answered.
    let request = Request::new(RequestType::Put, 61, "in/x");
    let request = Frame::Request(request).to_bytes().unwrap();
    engine.handle_datagram(now, peer(), &request);
    engine.handle_datagram(now, peer(), &request);
    let answers: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(answers, [(61, ErrorCode::SUCCESS), (61, ErrorCode::SUCCESS)]);
    engine.handle_datagram(now, peer(), &put(61, "/home/sat/x"));
    engine.handle_datagram(now, peer(), &vallona_data(61, 0, b"x!"));
    assert_eq!(engine.store().contents("in/x"), Some(&b"x!"[..]));
    // Nothing to name a file by: refused.
    engine.handle_datagram(now, peer(), &put(62, "a/"));
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(codes.last(), Some(&(62, ErrorCode::ACCESS_DENIED)));
}

#[test]
fn a_delete_stores_nothing_a_metadata_announces() {
    let mut engine = engine();
    let now = Instant::ZERO;
    let id = engine.delete(now, peer(), "old");
    drain(&mut engine, now);
    engine.handle_datagram(now, peer(), &vallona_metadata(id.session, 4, Checksum::None));
    engine.handle_datagram(now, peer(), &vallona_data(id.session, 0, b"evil"));
    let codes: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| s.error)
        .collect();
    assert_eq!(codes.first(), Some(&ErrorCode::BAD_REQUEST), "{codes:?}");
    assert_eq!(engine.store().contents("old"), None);
    assert_eq!(engine.store().partial_ranges("old"), None);
    assert_eq!(engine.stats().refused.get("unrequested_metadata"), Some(&1));
    // The delete still waits for its answer.
    engine.handle_datagram(
        now,
        peer(),
        &Frame::Status(Status::error(id.session, ErrorCode::SUCCESS))
            .to_bytes()
            .unwrap(),
    );
    assert!(events(&mut engine).iter().any(|e| matches!(
        e,
        Event::Completed { id: i, operation: Operation::Delete, .. } if *i == id
    )));
}

#[test]
fn a_one_byte_file_is_not_done_on_a_status_that_left_before_its_data() {
    let mut engine = engine();
    let now = Instant::ZERO;
    engine.store_mut().insert("one", vec![1], 0);
    let id = engine.put(now, peer(), "one", "one").unwrap();
    let sent = drain(&mut engine, now);
    let data = sent.iter().find_map(|b| Data::parse(b).ok()).unwrap();
    assert!(data.request_status);
    // "Metadata here, progress 0, no holes": sent before the byte came.
    let early = Status {
        descriptor: Descriptor::D32,
        session: id.session,
        timestamp: None,
        metadata_received: true,
        all_holes: true,
        voluntary: true,
        error: ErrorCode::SUCCESS,
        progress: 0,
        in_response_to: 0,
        holes: Vec::new(),
    };
    engine.handle_datagram(now, peer(), &Frame::Status(early.clone()).to_bytes().unwrap());
    assert_eq!(engine.active(), 1, "not complete on a STATUS older than the data");
    assert!(
        !events(&mut engine)
            .iter()
            .any(|e| matches!(e, Event::Completed { .. }))
    );
    // The answer to the DATA's request: the byte is there.
    let answer = Status {
        voluntary: false,
        in_response_to: data.offset,
        ..early
    };
    let later = now + Duration::from_millis(100);
    engine.handle_datagram(later, peer(), &Frame::Status(answer).to_bytes().unwrap());
    assert!(
        events(&mut engine)
            .iter()
            .any(|e| matches!(e, Event::Completed { id: i, .. } if *i == id))
    );
}

#[test]
fn probes_never_ask_at_an_offset_with_a_request_open() {
    let mut engine = Engine::new(
        Config {
            rate_bps: 0,
            status_interval_max: Duration::from_secs(1),
            inactivity_timeout: Duration::from_secs(36_000),
            ..Config::default()
        },
        MemoryStore::new(),
    )
    .unwrap();
    let mut now = Instant::ZERO;
    engine.store_mut().insert("f", vec![3; 3000], 0);
    engine.put(now, peer(), "f", "f").unwrap();
    // Nothing ever answers: the last DATA's request (at 2920) stays open
    // while probes walk down from 3000 past it.
    let mut asked = Vec::new();
    while asked.len() < 120 {
        for bytes in drain(&mut engine, now) {
            if let Ok(data) = Data::parse(&bytes)
                && data.request_status
            {
                asked.push(data.offset);
            }
        }
        now = engine.poll_timeout().unwrap();
        engine.handle_timeout(now);
    }
    let mut distinct = asked.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), asked.len(), "{asked:?}");
}

#[test]
fn requests_served_at_once_are_bounded() {
    let mut engine = Engine::new(
        Config {
            rate_bps: 0,
            max_served: 1,
            ..Config::default()
        },
        MemoryStore::new(),
    )
    .unwrap();
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![1; 100], 0);
    for session in [70, 71] {
        let request = Request::new(RequestType::Get, session, "f");
        engine.handle_datagram(now, peer(), &Frame::Request(request).to_bytes().unwrap());
    }
    let refused: Vec<_> = statuses(&drain(&mut engine, now))
        .iter()
        .map(|s| (s.session, s.error))
        .collect();
    assert_eq!(refused, [(71, ErrorCode::CANNOT_SEND)]);
    assert_eq!(engine.stats().refused.get("too_many_served"), Some(&1));
    assert_eq!(engine.active(), 1);
}
