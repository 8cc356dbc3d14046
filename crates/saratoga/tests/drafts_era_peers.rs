//! One engine against a peer scripted by hand the way an implementation
//! of the drafts' era behaves (draft-wood-tsvwg-saratoga): it sends from
//! an ephemeral port but listens, and is answered, on 7542; it sends no
//! final STATUS of its own and never re-sends anything; it remembers
//! finished sessions by id; its reports may lag behind what it holds.

mod common;

use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_node::Instant;
use scps_saratoga::engine::{Config, Engine, Event, FailReason, MemoryStore, TransferId, descriptor_for};
use scps_saratoga::wire::{
    Checksum, Data, DirEntry, ErrorCode, Frame, Metadata, Request, RequestType, Status, TransferType,
};

/// Where the peer listens (and is sent to), and where it sends from.
const PEER: &str = "192.0.2.7:7542";
const PEER_SENDS_FROM: &str = "192.0.2.7:40001";

fn peer() -> SocketAddr {
    PEER.parse().unwrap()
}

fn sends_from() -> SocketAddr {
    PEER_SENDS_FROM.parse().unwrap()
}

fn engine(config: Config) -> Engine<MemoryStore> {
    Engine::new(config, MemoryStore::new()).unwrap()
}

fn at_line_rate() -> Config {
    Config {
        rate_bps: 0,
        ..Config::default()
    }
}

/// `len` bytes drawn from `seed`, printed (`SARATOGA_SEED` replays one).
fn random_file(default_seed: u64, len: usize) -> Vec<u8> {
    let seed = std::env::var("SARATOGA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    println!("seed {seed} (SARATOGA_SEED={seed} replays)");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random::<u8>()).collect()
}

/// Everything the engine sends at `now`: all of it goes to where the peer
/// listens, never to the port it sends from.
fn drain(engine: &mut Engine<MemoryStore>, now: Instant) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| engine.poll_transmit(now))
        .map(|(to, bytes)| {
            assert_eq!(to, peer(), "sent to where the peer listens");
            bytes
        })
        .collect()
}

/// Everything the engine sends at `now` in sessions the peer started:
/// answered where they came from (whether the peer listens there is its
/// business; a peer of the drafts' own sends from its listening port).
fn replies(engine: &mut Engine<MemoryStore>, now: Instant) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| engine.poll_transmit(now))
        .map(|(to, bytes)| {
            assert_eq!(to, sends_from(), "answered where it came from");
            bytes
        })
        .collect()
}

/// Moves time to the engine's next wake-up (at least `now`) and returns
/// what it then sends; `None` when it has nothing left to do.
fn step(engine: &mut Engine<MemoryStore>, now: &mut Instant) -> Option<Vec<Vec<u8>>> {
    let next = engine.poll_timeout()?;
    *now = next.max(*now);
    engine.handle_timeout(*now);
    Some(drain(engine, *now))
}

fn events(engine: &mut Engine<MemoryStore>) -> Vec<Event> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

fn completed(events: &[Event], id: TransferId) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Completed { id: of, .. } if *of == id))
}

fn failure(events: &[Event]) -> Option<FailReason> {
    events.iter().find_map(|e| match e {
        Event::Failed { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

/// The peer's STATUS: `in_order` bytes held from the start, `holes`
/// (half-open), sent on its own (as that peer does) or in answer to the
/// DATA at `answering`.
fn status(session: u32, in_order: u64, holes: &[Range<u64>], voluntary: bool, answering: u64) -> Vec<u8> {
    Frame::Status(Status::report(session, in_order, holes, voluntary, answering))
        .to_bytes()
        .unwrap()
}

/// The peer's answer to a REQUEST: "go ahead".
fn accepted(session: u32) -> Vec<u8> {
    Frame::Status(Status::error(session, ErrorCode::SUCCESS))
        .to_bytes()
        .unwrap()
}

fn data_frame(session: u32, offset: u64, payload: &[u8]) -> Vec<u8> {
    common::data_frame_in(
        descriptor_for(offset + payload.len() as u64),
        session,
        offset,
        payload,
    )
}

fn metadata_frame(session: u32, name: &str, contents: &[u8]) -> Vec<u8> {
    Frame::Metadata(Metadata {
        descriptor: descriptor_for(contents.len() as u64),
        transfer_type: TransferType::File,
        terminated: false,
        udp_lite: false,
        session,
        checksum: Checksum::of(scps_saratoga::wire::ChecksumKind::Md5, contents),
        entry: DirEntry::file(name, contents.len() as u64, 0),
    })
    .to_bytes()
    .unwrap()
}

/// The DATA frames among `sent`.
fn data_of(sent: &[Vec<u8>]) -> Vec<Data<'_>> {
    sent.iter().filter_map(|b| Data::parse(b).ok()).collect()
}

#[test]
fn our_session_ids_skip_those_in_use_or_remembered_with_the_peer() {
    let mut engine = engine(Config {
        first_session: 5,
        ..at_line_rate()
    });
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![1; 10], 0);
    // The peer finished a put of its own as session 6 (the receiving end
    // lingers), had a PUT REQUEST accepted as 8, and a GET refused as 10.
    let file = [7u8; 4];
    engine.handle_datagram(now, sends_from(), &metadata_frame(6, "theirs", &file));
    engine.handle_datagram(now, sends_from(), &data_frame(6, 0, &file));
    engine.handle_datagram(
        now,
        peer(),
        &Frame::Request(Request::new(RequestType::Put, 8, "x"))
            .to_bytes()
            .unwrap(),
    );
    engine.handle_datagram(
        now,
        peer(),
        &Frame::Request(Request::new(RequestType::Get, 10, "none"))
            .to_bytes()
            .unwrap(),
    );
    while engine.poll_transmit(now).is_some() {}
    assert_eq!(engine.store().contents("theirs"), Some(&file[..]));
    let ids: Vec<u32> = (0..4)
        .map(|_| engine.put_requested(now, peer(), "f", "f").unwrap().session)
        .collect();
    // 6 is of the peer's put from another port: the same host.
    assert_eq!(ids, [5, 7, 9, 11]);
}

#[test]
fn a_put_asks_with_a_request_first_and_a_blind_put_does_not() {
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![3; 5000], 0);
    let asked = engine.put_requested(now, peer(), "f", "plain.bin").unwrap();
    let sent = drain(&mut engine, now);
    let request = Request::parse(&sent[0]).expect("a REQUEST first");
    assert_eq!(
        (request.request_type, request.session, request.name.as_str()),
        (RequestType::Put, asked.session, "plain.bin")
    );
    assert_eq!(sent.len(), 1, "nothing else until it is answered");
    engine.handle_datagram(now, sends_from(), &accepted(asked.session));
    let sent = drain(&mut engine, now);
    assert!(Metadata::parse(&sent[0]).is_ok(), "then the METADATA");
    assert_eq!(
        data_of(&sent).iter().map(|d| d.payload.len()).sum::<usize>(),
        5000
    );

    let blind = engine.put(now, peer(), "f", "blind.bin").unwrap();
    let sent = drain(&mut engine, now);
    let metadata = Metadata::parse(&sent[0]).expect("a blind put starts with its METADATA");
    assert_eq!(
        (metadata.session, metadata.entry.name.as_str()),
        (blind.session, "blind.bin")
    );
    assert!(
        sent.iter().all(|b| Request::parse(b).is_err()),
        "and asks nothing"
    );
}

#[test]
fn a_status_about_a_longer_file_fails_the_put_and_completes_nothing() {
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![3; 3000], 0);
    let id = engine.put_requested(now, peer(), "f", "f").unwrap();
    drain(&mut engine, now);
    engine.handle_datagram(now, sends_from(), &accepted(id.session));
    drain(&mut engine, now);
    // The peer took the id for a session of 5000 bytes it finished.
    engine.handle_datagram(now, sends_from(), &status(id.session, 5000, &[], false, 0));
    let events = events(&mut engine);
    assert!(!completed(&events, id), "{events:?}");
    assert_eq!(
        failure(&events),
        Some(FailReason::ForeignStatus {
            progress: 4999,
            size: 3000
        })
    );
    assert_eq!(engine.active(), 0);
}

#[test]
fn a_status_covering_the_file_before_it_was_all_sent_does_not_complete_it() {
    // 8 Mbit/s: 300 kB takes 0.3 s.
    let mut engine = engine(Config {
        rate_bps: 8_000_000,
        ..Config::default()
    });
    let mut now = Instant::ZERO;
    engine.store_mut().insert("f", vec![4; 300_000], 0);
    let id = engine.put(now, peer(), "f", "f").unwrap();
    let first = drain(&mut engine, now);
    assert!(data_of(&first).len() < 5, "paced");
    // A peer answering for an earlier session of the same length.
    engine.handle_datagram(now, sends_from(), &status(id.session, 300_000, &[], true, 0));
    assert!(!completed(&events(&mut engine), id));
    let mut last_request = None;
    while engine.stats().data_bytes_sent < 300_000 {
        let sent = step(&mut engine, &mut now).expect("still sending");
        for data in data_of(&sent).iter().filter(|d| d.request_status) {
            last_request = Some(data.offset);
        }
        assert!(!completed(&events(&mut engine), id));
    }
    // Its answer to the last frame, after every byte went, completes it.
    let asked = last_request.expect("the last frame asks for a STATUS");
    engine.handle_datagram(now, sends_from(), &status(id.session, 300_000, &[], false, asked));
    assert!(completed(&events(&mut engine), id));
}

#[test]
fn a_put_whose_peer_answers_the_request_but_never_the_data_fails_saying_so() {
    let timeout = Duration::from_secs(30);
    let mut engine = engine(Config {
        inactivity_timeout: timeout,
        ..at_line_rate()
    });
    let mut now = Instant::ZERO;
    engine.store_mut().insert("f", vec![5; 100_000], 0);
    let id = engine.put_requested(now, peer(), "f", "f").unwrap();
    drain(&mut engine, now);
    engine.handle_datagram(now, sends_from(), &accepted(id.session));
    let mut sent = drain(&mut engine, now).len();
    let seen = loop {
        sent += step(&mut engine, &mut now).expect("it fails in time").len();
        let seen = events(&mut engine);
        if failure(&seen).is_some() {
            break seen;
        }
    };
    assert!(
        matches!(
            failure(&seen),
            Some(FailReason::Unacknowledged { acked: 0, size: 100_000, stuck }) if stuck >= timeout
        ),
        "{seen:?}"
    );
    assert!(!completed(&seen, id));
    // One pass and probes backing off: nothing re-sent, no flood.
    assert_eq!(engine.stats().data_bytes_resent, 0);
    assert!(sent < 70 + 2 * 10, "{sent} datagrams");

    // A peer that answers nothing at all is named unreachable instead.
    let mut engine = engine_with_timeout(timeout);
    let mut now = Instant::ZERO;
    engine.store_mut().insert("f", vec![5; 10], 0);
    engine.put_requested(now, peer(), "f", "f").unwrap();
    let seen = loop {
        step(&mut engine, &mut now).expect("it fails in time");
        let seen = events(&mut engine);
        if failure(&seen).is_some() {
            break seen;
        }
    };
    assert!(
        matches!(failure(&seen), Some(FailReason::Timeout(t)) if t >= timeout),
        "{seen:?}"
    );
}

fn engine_with_timeout(timeout: Duration) -> Engine<MemoryStore> {
    engine(Config {
        inactivity_timeout: timeout,
        ..at_line_rate()
    })
}

/// A put of `len` bytes at 100 Mbit/s to a peer that answers its REQUEST
/// and METADATA at once, then, once half the file has gone, reports only
/// a quarter of it held and no hole (its report lags behind its socket's
/// queue, and it never lists the tail). Returns the engine, the session,
/// the time and what it sent, once the whole file has gone.
fn put_to_a_lagging_peer(len: usize, inactivity: Duration) -> (Engine<MemoryStore>, TransferId, Instant) {
    let mut engine = engine(Config {
        rate_bps: 100_000_000,
        burst_bytes: 25_000,
        inactivity_timeout: inactivity,
        ..Config::default()
    });
    let mut now = Instant::ZERO;
    engine.store_mut().insert("f", vec![6; len], 0);
    let id = engine.put_requested(now, peer(), "f", "f").unwrap();
    drain(&mut engine, now);
    now += Duration::from_micros(200);
    engine.handle_datagram(now, sends_from(), &accepted(id.session));
    drain(&mut engine, now);
    now += Duration::from_micros(200);
    engine.handle_datagram(now, sends_from(), &status(id.session, 0, &[], true, 0));
    let mut lagged = false;
    while engine.stats().data_bytes_sent < len as u64 {
        step(&mut engine, &mut now).expect("still sending");
        if !lagged && engine.stats().data_bytes_sent >= len as u64 / 2 {
            let quarter = len as u64 / 4;
            engine.handle_datagram(now, sends_from(), &status(id.session, quarter, &[], true, 0));
            drain(&mut engine, now);
            lagged = true;
        }
    }
    assert!(lagged);
    (engine, id, now)
}

#[test]
fn a_report_lagging_mid_pass_has_nothing_resent_and_no_final_status_fails_the_put() {
    let len = 1 << 20;
    let timeout = Duration::from_secs(30);
    let (mut engine, id, mut now) = put_to_a_lagging_peer(len, timeout);
    assert_eq!(
        engine.stats().data_bytes_resent,
        0,
        "the quarter not reported was on its way, not lost"
    );
    // No final STATUS ever comes.
    let seen = loop {
        step(&mut engine, &mut now).expect("it fails in time");
        let seen = events(&mut engine);
        if failure(&seen).is_some() {
            break seen;
        }
    };
    assert!(!completed(&seen, id));
    assert!(
        matches!(
            failure(&seen),
            Some(FailReason::Unacknowledged { acked, size, .. }) if acked == len as u64 / 4 && size == len as u64
        ),
        "{seen:?}"
    );
    assert_eq!(engine.stats().data_bytes_resent, 0);
}

#[test]
fn a_peer_that_never_reports_the_tail_has_it_resent_a_few_times_not_per_status() {
    let len = 1 << 20;
    let timeout = Duration::from_secs(30);
    let (mut engine, id, mut now) = put_to_a_lagging_peer(len, timeout);
    let tail = (len - len / 4) as u64;
    // It answers every request (never exactly) with the same report.
    let seen = loop {
        let sent = step(&mut engine, &mut now).expect("it fails in time");
        if data_of(&sent).iter().any(|d| d.request_status) {
            engine.handle_datagram(
                now,
                sends_from(),
                &status(id.session, len as u64 / 4, &[], true, 0),
            );
            drain(&mut engine, now);
        }
        let seen = events(&mut engine);
        if failure(&seen).is_some() {
            break seen;
        }
    };
    assert!(
        matches!(failure(&seen), Some(FailReason::Unacknowledged { .. })),
        "{seen:?}"
    );
    // The tail it reports missing is re-sent, waiting twice as long each
    // time (from 1 s) while the peer acknowledges no more: over 30 s, at
    // most 5 times.
    let resent = engine.stats().data_bytes_resent;
    println!("{resent} bytes re-sent: {:.1} tails", resent as f64 / tail as f64);
    assert!(resent >= tail, "the tail reported missing went again: {resent}");
    assert!(
        resent <= 5 * tail,
        "{resent} bytes re-sent for a {tail}-byte tail"
    );
}

#[test]
fn data_before_the_metadata_of_a_session_a_request_opened_is_kept_and_written() {
    let file = random_file(41, 20_000);
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    let put = Request::new(RequestType::Put, 9, "in/f.bin");
    engine.handle_datagram(now, sends_from(), &Frame::Request(put).to_bytes().unwrap());
    replies(&mut engine, now);
    // Every DATA frame, once, then the METADATA: nothing is sent again.
    for (i, chunk) in file.chunks(1400).enumerate() {
        engine.handle_datagram(now, sends_from(), &data_frame(9, (i * 1400) as u64, chunk));
    }
    let answers = replies(&mut engine, now);
    let statuses: Vec<Status> = answers.iter().filter_map(|b| Status::parse(b).ok()).collect();
    assert!(
        statuses.iter().all(|s| !s.metadata_received),
        "it asks for the METADATA"
    );
    assert_eq!(engine.store().contents("in/f.bin"), None);
    engine.handle_datagram(now, sends_from(), &metadata_frame(9, "/home/sat/f.bin", &file));
    let answers = replies(&mut engine, now);
    assert_eq!(engine.store().contents("in/f.bin"), Some(&file[..]));
    let last = answers
        .iter()
        .filter_map(|b| Status::parse(b).ok())
        .next_back()
        .unwrap();
    assert_eq!((last.progress, last.holes.len()), (file.len() as u64 - 1, 0));
    let stats = engine.stats();
    assert_eq!(stats.early_data_bytes, file.len() as u64);
    assert_eq!((stats.early_data_dropped_bytes, stats.orphan_data_bytes), (0, 0));
}

#[test]
fn early_data_beyond_its_bound_is_dropped_counted_and_reported_missing() {
    let file = random_file(42, 3000);
    let mut engine = engine(Config {
        max_early_data_bytes: 1000,
        ..at_line_rate()
    });
    let now = Instant::ZERO;
    let put = Request::new(RequestType::Put, 3, "f");
    engine.handle_datagram(now, sends_from(), &Frame::Request(put).to_bytes().unwrap());
    for (i, chunk) in file.chunks(500).enumerate() {
        engine.handle_datagram(now, sends_from(), &data_frame(3, (i * 500) as u64, chunk));
    }
    // Not opened by a REQUEST: dropped, as before.
    engine.handle_datagram(now, sends_from(), &data_frame(4, 0, &file[..500]));
    engine.handle_datagram(now, sends_from(), &metadata_frame(3, "f", &file));
    replies(&mut engine, now);
    // Its next report, on its timer.
    let wake = engine.poll_timeout().unwrap();
    engine.handle_timeout(wake);
    let answers = replies(&mut engine, wake);
    let stats = engine.stats();
    assert_eq!(
        (stats.early_data_bytes, stats.early_data_dropped_bytes),
        (1000, 2000)
    );
    assert_eq!(stats.orphan_data_bytes, 500);
    let report = answers
        .iter()
        .filter_map(|b| Status::parse(b).ok())
        .rfind(|s| s.session == 3 && s.metadata_received)
        .expect("a STATUS once the METADATA came");
    let holes: Vec<(u64, u64)> = report
        .holes
        .iter()
        .map(|h| (h.range().start, h.range().end))
        .collect();
    assert_eq!(holes, [(1000, 3000)], "what was kept is held, the rest missing");
}

#[test]
fn early_data_past_the_end_of_the_file_is_dropped_as_such() {
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    let put = Request::new(RequestType::Put, 5, "f");
    engine.handle_datagram(now, sends_from(), &Frame::Request(put).to_bytes().unwrap());
    let far = common::data_frame_in(scps_saratoga::wire::Descriptor::D64, 5, u64::MAX - 10, &[1; 100]);
    engine.handle_datagram(now, sends_from(), &far);
    engine.handle_datagram(now, sends_from(), &data_frame(5, 0, b"abc"));
    engine.handle_datagram(now, sends_from(), &metadata_frame(5, "f", b"abc"));
    replies(&mut engine, now);
    assert_eq!(engine.stats().malformed.get("beyond_end"), Some(&1));
    assert_eq!(engine.store().contents("f"), Some(&b"abc"[..]));
}

#[test]
fn data_before_the_metadata_answering_our_get_is_kept_and_written() {
    let file = random_file(43, 5000);
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    let id = engine.get(now, peer(), "f", "got");
    drain(&mut engine, now);
    for (i, chunk) in file.chunks(1000).enumerate() {
        engine.handle_datagram(
            now,
            sends_from(),
            &data_frame(id.session, (i * 1000) as u64, chunk),
        );
    }
    engine.handle_datagram(now, sends_from(), &metadata_frame(id.session, "f", &file));
    drain(&mut engine, now);
    assert!(completed(&events(&mut engine), id));
    assert_eq!(engine.store().contents("got"), Some(&file[..]));
}

#[test]
fn answers_from_another_port_of_the_peer_reach_our_sessions_and_no_other_host_does() {
    let mut engine = engine(at_line_rate());
    let now = Instant::ZERO;
    engine.store_mut().insert("f", vec![8; 2000], 0);
    let id = engine.put_requested(now, peer(), "f", "f").unwrap();
    drain(&mut engine, now);
    // Another host with the same session id is a stranger.
    let stranger: SocketAddr = "192.0.2.8:7542".parse().unwrap();
    engine.handle_datagram(now, stranger, &accepted(id.session));
    let answers: Vec<(SocketAddr, Vec<u8>)> = std::iter::from_fn(|| engine.poll_transmit(now)).collect();
    assert!(
        answers.iter().all(
            |(to, b)| *to == stranger && Status::parse(b).is_ok_and(|s| s.error == ErrorCode::UNKNOWN_ID)
        ),
        "{answers:?}"
    );
    engine.handle_datagram(now, sends_from(), &accepted(id.session));
    let sent = drain(&mut engine, now);
    let asked = data_of(&sent).last().unwrap().offset;
    engine.handle_datagram(now, sends_from(), &status(id.session, 2000, &[], false, asked));
    assert!(completed(&events(&mut engine), id));
}
