//! Whole transfers between two engines in virtual time: loss, outages,
//! long delays, restarts, several at once, and every request type.

mod harness;

use std::time::Duration;

use harness::{Pair, random_file, secs, seed};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use scps_saratoga::engine::{Config, Event, FailReason, Operation};
use scps_saratoga::wire::{ChecksumKind, EntryKind, ErrorCode, Frame, Status};
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn config(rate_bps: u64) -> Config {
    Config {
        rate_bps,
        ..Config::default()
    }
}

/// Puts a random file of `len` bytes from a to b and checks it arrived
/// intact; returns the pair for more checks.
fn put(pair: &mut Pair, len: usize, seed: u64, limit: Duration) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let file = random_file(&mut rng, len);
    pair.a
        .store_mut()
        .insert("out/file.bin", file.clone(), 1_700_000_000);
    let b = pair.b_addr;
    let now = pair.now;
    pair.a
        .put_requested(now, b, "out/file.bin", "in/file.bin")
        .unwrap();
    let done = pair.run_until(limit, |p| {
        Pair::completed(&p.events_a) == 1 && Pair::completed(&p.events_b) == 1
    });
    assert!(
        done,
        "put did not complete by {:?}: a {:?} b {:?}",
        pair.now,
        pair.events_a.last(),
        pair.events_b.last()
    );
    let received = pair.b.store().contents("in/file.bin").expect("file committed");
    assert_eq!(sha256(received), sha256(&file));
    assert_eq!(
        pair.b.stats().duplicate_bytes_received,
        0,
        "a byte that arrived was sent again"
    );
    // Every byte is sent once, plus once more each time it failed to
    // arrive: lost on the link, or dropped for want of its METADATA
    // (beyond what is kept for a session its REQUEST opened).
    let b_stats = pair.b.stats();
    let lost = pair.ab.dropped_data_bytes + b_stats.orphan_data_bytes + b_stats.early_data_dropped_bytes;
    assert_eq!(pair.a.stats().data_bytes_sent, len as u64 + lost);
    file
}

#[test]
fn a_queue_longer_than_the_round_trip_sends_nothing_twice() {
    // A sender twice as fast as the bottleneck: a queue of seconds builds
    // (a socket buffer, a link's buffer), far beyond the 100 ms the first
    // STATUS measured. The receiver answers our requests, so only its
    // answers settle what was sent: a frame waiting in the queue is not
    // taken for lost and sent again (`put` checks that every byte went
    // once, lost ones aside).
    let seed = seed(5);
    let mut pair = Pair::new(config(16_000_000), Duration::from_millis(50), seed);
    pair.ab.rate_bps = Some(8_000_000);
    put(&mut pair, 4_000_000, seed, secs(120));
    assert_eq!(pair.a.stats().data_bytes_sent, 4_000_000, "nothing re-sent");
}

#[test]
fn a_put_delivers_the_file_at_the_configured_rate() {
    let seed = seed(1);
    let mut pair = Pair::new(config(8_000_000), Duration::from_millis(50), seed);
    put(&mut pair, 1_000_000, seed, secs(60));
    let stats = pair.a.stats();
    assert_eq!(
        stats.data_bytes_sent, 1_000_000,
        "nothing re-sent on a clean link"
    );
    // 1 MB plus headers at 8 Mbit/s takes just over a second; the last
    // STATUS comes back 50 ms later.
    let finished = pair.now.as_duration();
    assert!(finished > Duration::from_millis(1000), "{finished:?}");
    assert!(finished < Duration::from_millis(1300), "{finished:?}");
    assert!(pair.a.active() == 0, "the sender's session ends");
    for events in [&pair.events_a, &pair.events_b] {
        let progress: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Progress { bytes, .. } => Some(*bytes),
                _ => None,
            })
            .collect();
        assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
        assert_eq!(
            progress.last(),
            Some(&1_000_000),
            "progress reaches the end at both ends"
        );
    }
    let started = pair.events_b.iter().any(|e| {
        matches!(
            e,
            Event::Started {
                operation: Operation::Receive,
                size: 1_000_000,
                ..
            }
        )
    });
    assert!(started);
}

#[test]
fn a_put_survives_one_percent_loss() {
    let seed = seed(2);
    let mut pair = Pair::new(config(4_000_000), Duration::from_millis(300), seed);
    pair.ab.loss = 0.01;
    pair.ba.loss = 0.01;
    put(&mut pair, 2_000_000, seed, secs(600));
    assert!(pair.a.stats().data_bytes_resent > 0);
}

#[test]
fn a_put_survives_ten_percent_loss() {
    let seed = seed(3);
    let mut pair = Pair::new(config(4_000_000), Duration::from_millis(300), seed);
    pair.ab.loss = 0.10;
    pair.ba.loss = 0.10;
    put(&mut pair, 1_000_000, seed, secs(1200));
    assert!(pair.ab.dropped_data_bytes > 50_000);
}

#[test]
fn a_five_minute_outage_resumes_where_it_stopped() {
    let seed = seed(4);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(250), seed);
    // 1 MB at 1 Mbit/s takes 8 s; the link goes away from 3 s to 303 s.
    let outage = (pair.at(secs(3)), pair.at(secs(303)));
    pair.ab.outages.push(outage);
    pair.ba.outages.push(outage);
    put(&mut pair, 1_000_000, seed, secs(3600));
    let sent = pair.a.stats().data_bytes_sent;
    let lost = pair.ab.dropped_data_bytes;
    assert!(lost > 500_000, "the outage cut the transfer: {lost}");
    assert_eq!(sent, 1_000_000 + lost, "only what the outage lost is sent again");
    assert!(pair.now > outage.1);
}

#[test]
fn a_ten_minute_one_way_delay_completes() {
    let seed = seed(5);
    let mut pair = Pair::new(config(2_000_000), secs(600), seed);
    put(&mut pair, 500_000, seed, secs(3 * 3600));
    assert_eq!(pair.a.stats().data_bytes_sent, 500_000);
    // Two crossings at least: DATA over, the last STATUS back.
    assert!(pair.now.as_duration() >= secs(1200));
}

#[test]
fn a_large_file_over_a_ten_minute_delay_with_loss_is_repaired_in_few_round_trips() {
    let seed = seed(15);
    let mut pair = Pair::new(config(10_000_000), secs(600), seed);
    pair.ab.loss = 0.01;
    pair.ba.loss = 0.01;
    put(&mut pair, 20_000_000, seed, secs(24 * 3600));
    // 16 s of sending, then a round trip of 20 minutes per repair round:
    // the first pass's losses, the re-sends' own losses, and so on.
    let rounds = pair.now.as_duration().as_secs_f64() / 1200.0;
    assert!(rounds < 5.0, "{rounds:.1} round trips");
}

#[test]
fn a_put_completes_over_a_reordering_link() {
    let seed = seed(16);
    let mut pair = Pair::new(config(4_000_000), Duration::from_millis(100), seed);
    // Up to 50 ms of jitter: frames 3 ms apart arrive well out of order.
    pair.ab.jitter = Duration::from_millis(50);
    pair.ba.jitter = Duration::from_millis(50);
    pair.ab.loss = 0.02;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let file = random_file(&mut rng, 1_000_000);
    pair.a.store_mut().insert("f", file.clone(), 0);
    let b = pair.b_addr;
    pair.a.put(pair.now, b, "f", "f").unwrap();
    assert!(pair.run_until(secs(600), |p| Pair::completed(&p.events_a) == 1
        && Pair::completed(&p.events_b) == 1));
    assert_eq!(sha256(pair.b.store().contents("f").unwrap()), sha256(&file));
    // The sender takes a frame overtaken by the one that asked for a
    // STATUS for lost: reordering costs re-sent bytes, counted here.
    let duplicates = pair.b.stats().duplicate_bytes_received;
    println!("{duplicates} bytes received twice");
    assert!(duplicates < 1_000_000 / 4, "{duplicates}");
}

#[test]
fn a_sender_whose_peer_is_gone_gives_up_quietly() {
    let seed = seed(6);
    let config = Config {
        inactivity_timeout: secs(600),
        ..config(1_000_000)
    };
    let mut pair = Pair::new(config, Duration::from_millis(10), seed);
    let gone = (pair.at(Duration::ZERO), pair.at(secs(100_000)));
    pair.ab.outages.push(gone);
    pair.a.store_mut().insert("f", vec![7; 100_000], 0);
    let b = pair.b_addr;
    pair.a.put(pair.now, b, "f", "f").unwrap();
    assert!(pair.run_until(secs(3600), |p| !Pair::failed(&p.events_a).is_empty()));
    assert!(matches!(
        Pair::failed(&pair.events_a)[..],
        [Event::Failed { reason: FailReason::Timeout(t), .. }] if *t >= secs(600)
    ));
    // One pass of DATA, then probes backing off: no flood.
    let frames = pair.a.stats().datagrams_out;
    assert!(frames < 100 + 30, "{frames} datagrams");
}

/// `bytes` with its STATUS (if it is one) changed by `change`.
fn rewrite_status(bytes: Vec<u8>, change: fn(&mut Status)) -> Vec<u8> {
    match Status::parse(&bytes) {
        Ok(mut status) => {
            change(&mut status);
            Frame::Status(status).to_bytes().unwrap()
        }
        Err(_) => bytes,
    }
}

#[test]
fn a_put_completes_with_a_peer_that_never_answers_a_request_exactly() {
    let seed = seed(17);
    // Every STATUS marked voluntary, or echoing an offset we never sent.
    let peers: [fn(Vec<u8>) -> Vec<u8>; 2] = [
        |bytes| rewrite_status(bytes, |s| s.voluntary = true),
        |bytes| {
            rewrite_status(bytes, |s| {
                s.in_response_to = s.in_response_to.wrapping_add(1) | 1 << 31
            })
        },
    ];
    for rewrite in peers {
        let mut pair = Pair::new(config(2_000_000), Duration::from_millis(200), seed);
        pair.ab.loss = 0.05;
        pair.ba.rewrite = Some(rewrite);
        // Sent once, plus once per loss: a late repair, never a duplicate.
        put(&mut pair, 300_000, seed, secs(600));
    }
}

#[test]
fn a_requester_answered_only_with_success_gives_up() {
    let seed = seed(18);
    let config = Config {
        inactivity_timeout: secs(600),
        ..config(1_000_000)
    };
    let mut pair = Pair::new(config, Duration::from_millis(50), seed);
    pair.b.store_mut().insert("f", vec![1; 1000], 0);
    // b's METADATA and DATA never arrive; its STATUS frames, "success", do.
    pair.ba.rewrite = Some(|bytes| {
        let session = match Frame::parse(&bytes) {
            Ok(Frame::Metadata(m)) => m.session,
            Ok(Frame::Data(d)) => d.session,
            Ok(Frame::Status(s)) => s.session,
            _ => return bytes,
        };
        Frame::Status(Status::error(session, ErrorCode::SUCCESS))
            .to_bytes()
            .unwrap()
    });
    let b = pair.b_addr;
    pair.a.get(pair.now, b, "f", "g");
    assert!(pair.run_until(secs(3600), |p| !Pair::failed(&p.events_a).is_empty()));
    assert!(
        matches!(
            Pair::failed(&pair.events_a)[..],
            [Event::Failed { reason: FailReason::Stalled(t), .. }] if *t >= secs(600)
        ),
        "{:?}",
        pair.events_a
    );
    assert!(pair.now < pair.at(secs(700)), "{:?}", pair.now);
}

#[test]
fn a_restarted_receiver_resumes_from_its_partial_file() {
    let seed = seed(7);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(100), seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let file = random_file(&mut rng, 1_000_000);
    pair.a.store_mut().insert("f", file.clone(), 0);
    let b = pair.b_addr;
    pair.a.put(pair.now, b, "f", "g").unwrap();
    // Half-way (1 MB at 1 Mbit/s takes 8 s), b restarts.
    pair.run_until(secs(4), |_| false);
    let before = pair.b.store().partial_ranges("g").expect("a partial file");
    let on_disk: u64 = before.iter().map(|r| r.end - r.start).sum();
    assert!(on_disk > 300_000, "{on_disk}");
    pair.restart_b();
    let done = pair.run_until(secs(600), |p| {
        Pair::completed(&p.events_a) == 1 && Pair::completed(&p.events_b) == 1
    });
    assert!(done, "a {:?} b {:?}", pair.events_a, pair.events_b);
    assert_eq!(sha256(pair.b.store().contents("g").unwrap()), sha256(&file));
    let resumed = pair.events_b.iter().find_map(|e| match e {
        Event::Resumed { bytes, .. } => Some(*bytes),
        _ => None,
    });
    assert!(resumed.is_some_and(|r| r >= on_disk), "{resumed:?}");
    let resent = pair.a.stats().data_bytes_resent;
    assert!(
        resent <= 1_000_000 - on_disk,
        "{resent} re-sent, {on_disk} were on disk"
    );
}

#[test]
fn three_transfers_to_one_peer_run_at_once() {
    let seed = seed(8);
    let mut pair = Pair::new(config(4_000_000), Duration::from_millis(100), seed);
    pair.ab.loss = 0.02;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let files: Vec<Vec<u8>> = [300_000, 1, 500_000]
        .iter()
        .map(|len| random_file(&mut rng, *len))
        .collect();
    let b = pair.b_addr;
    for (i, file) in files.iter().enumerate() {
        pair.a.store_mut().insert(&format!("f{i}"), file.clone(), 0);
        pair.a
            .put(pair.now, b, &format!("f{i}"), &format!("g{i}"))
            .unwrap();
    }
    assert_eq!(pair.a.active(), 3);
    let done = pair.run_until(secs(600), |p| {
        Pair::completed(&p.events_a) == 3 && Pair::completed(&p.events_b) == 3
    });
    assert!(done, "a {:?}", pair.events_a);
    for (i, file) in files.iter().enumerate() {
        assert_eq!(
            sha256(pair.b.store().contents(&format!("g{i}")).unwrap()),
            sha256(file)
        );
    }
    assert_eq!(pair.b.stats().duplicate_bytes_received, 0);
}

#[test]
fn an_empty_file_is_put() {
    let seed = seed(9);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(10), seed);
    put(&mut pair, 0, seed, secs(60));
}

#[test]
fn a_get_fetches_a_file_and_a_get_delete_removes_it() {
    let seed = seed(10);
    for checksum in [
        ChecksumKind::None,
        ChecksumKind::Crc32,
        ChecksumKind::Md5,
        ChecksumKind::Sha1,
    ] {
        let config = Config {
            checksum,
            ..config(2_000_000)
        };
        let mut pair = Pair::new(config, Duration::from_millis(200), seed);
        pair.ab.loss = 0.05;
        pair.ba.loss = 0.05;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let file = random_file(&mut rng, 200_000);
        pair.b
            .store_mut()
            .insert("srv/data.bin", file.clone(), 1_700_000_000);
        let b = pair.b_addr;
        let id = pair.a.get(pair.now, b, "srv/data.bin", "local.bin");
        assert!(
            pair.run_until(secs(600), |p| Pair::completed(&p.events_a) == 1),
            "{:?}",
            pair.events_a
        );
        assert!(
            pair.events_a
                .iter()
                .any(|e| matches!(e, Event::Completed { id: i, operation: Operation::Get, .. } if *i == id))
        );
        assert_eq!(
            sha256(pair.a.store().contents("local.bin").unwrap()),
            sha256(&file)
        );
        assert!(
            pair.b.store().contents("srv/data.bin").is_some(),
            "a get leaves the file"
        );

        let id = pair.a.get_delete(pair.now, b, "srv/data.bin", "again.bin");
        assert!(pair.run_until(secs(1200), |p| Pair::completed(&p.events_a) == 2
            && Pair::completed(&p.events_b) == 2));
        assert!(
            pair.events_a
                .iter()
                .any(|e| matches!(e, Event::Completed { id: i, .. } if *i == id))
        );
        assert_eq!(pair.a.store().contents("again.bin"), Some(&file[..]));
        assert_eq!(
            pair.b.store().contents("srv/data.bin"),
            None,
            "get+delete removes the file"
        );
    }
}

#[test]
fn a_delete_removes_a_file_and_reports_a_missing_one() {
    let seed = seed(11);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(100), seed);
    pair.b.store_mut().insert("old.log", vec![1, 2, 3], 0);
    let b = pair.b_addr;
    pair.a.delete(pair.now, b, "old.log");
    assert!(pair.run_until(secs(60), |p| Pair::completed(&p.events_a) == 1));
    assert_eq!(pair.b.store().contents("old.log"), None);
    pair.a.delete(pair.now, b, "old.log");
    assert!(pair.run_until(secs(60), |p| !Pair::failed(&p.events_a).is_empty()));
    assert!(matches!(
        Pair::failed(&pair.events_a)[..],
        [Event::Failed {
            reason: FailReason::Peer(ErrorCode::FILE_NOT_FOUND),
            ..
        }]
    ));
}

#[test]
fn a_lost_delete_request_is_repeated() {
    let seed = seed(12);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(100), seed);
    let first = (pair.at(Duration::ZERO), pair.at(Duration::from_millis(1)));
    pair.ab.outages.push(first);
    pair.b.store_mut().insert("x", vec![1], 0);
    let b = pair.b_addr;
    pair.a.delete(pair.now, b, "x");
    assert!(pair.run_until(secs(60), |p| Pair::completed(&p.events_a) == 1));
    assert_eq!(pair.ab.dropped, 1);
}

#[test]
fn a_listing_names_files_and_directories() {
    let seed = seed(13);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(100), seed);
    pair.b
        .store_mut()
        .insert("pub/a.txt", vec![0; 10], 946_684_800 + 60);
    pair.b.store_mut().insert("pub/b.bin", vec![0; 70_000], 0);
    pair.b.store_mut().insert("pub/sub/c", vec![], 0);
    let b = pair.b_addr;
    pair.a.list(pair.now, b, "pub");
    assert!(pair.run_until(secs(60), |p| {
        p.events_a.iter().any(|e| matches!(e, Event::Listing { .. }))
    }));
    let entries = pair
        .events_a
        .iter()
        .find_map(|e| match e {
            Event::Listing { dir, entries, .. } if dir == "pub" => Some(entries.clone()),
            _ => None,
        })
        .unwrap();
    let summary: Vec<(&str, u64, bool)> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.size, e.kind == EntryKind::Directory))
        .collect();
    assert_eq!(
        summary,
        [("a.txt", 10, false), ("b.bin", 70_000, false), ("sub", 0, true)]
    );
    assert_eq!(entries[0].mtime, 60, "seconds since 2000");
}

#[test]
fn missing_forbidden_and_unsafe_files_get_error_codes() {
    let seed = seed(14);
    let mut pair = Pair::new(config(1_000_000), Duration::from_millis(100), seed);
    pair.b.store_mut().insert("secret", vec![1], 0);
    pair.b.store_mut().deny("secret");
    let b = pair.b_addr;
    let now = pair.now;
    let missing = pair.a.get(now, b, "nope", "x");
    let denied = pair.a.get(now, b, "secret", "y");
    let escape = pair.a.get(now, b, "../etc/passwd", "z");
    let no_dir = pair.a.list(now, b, "nowhere");
    assert!(pair.run_until(secs(60), |p| Pair::failed(&p.events_a).len() == 4));
    let code = |id| {
        pair.events_a.iter().find_map(|e| match e {
            Event::Failed {
                id: i,
                reason: FailReason::Peer(code),
            } if *i == id => Some(*code),
            _ => None,
        })
    };
    assert_eq!(code(missing), Some(ErrorCode::FILE_NOT_FOUND));
    assert_eq!(code(denied), Some(ErrorCode::ACCESS_DENIED));
    assert_eq!(code(escape), Some(ErrorCode::ACCESS_DENIED));
    assert_eq!(code(no_dir), Some(ErrorCode::FILE_NOT_FOUND));
    assert_eq!(pair.b.active(), 0);
}

mod any_link {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Any file over any link of this family arrives whole, and no byte
        /// that arrived is sent again.
        #[test]
        fn a_put_completes_over_any_link(
            len in 0usize..300_000,
            rate_kbps in 100u64..20_000,
            delay_ms in 1u64..3_000,
            loss_ab in 0.0f64..0.2,
            loss_ba in 0.0f64..0.2,
            outage in prop::option::of((0u64..20, 1u64..1_200)),
            seed: u64,
        ) {
            let mut pair = Pair::new(config(rate_kbps * 1000), Duration::from_millis(delay_ms), seed);
            pair.ab.loss = loss_ab;
            pair.ba.loss = loss_ba;
            if let Some((start, len)) = outage {
                let window = (pair.at(secs(start)), pair.at(secs(start + len)));
                pair.ab.outages.push(window);
                pair.ba.outages.push(window);
            }
            put(&mut pair, len, seed, secs(6 * 3600));
        }
    }
}

mod any_mix {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Puts and a get at once over any link of the family: all arrive
        /// whole, each end sends every byte once plus once per loss, and
        /// nothing waits on a timer it should not (a bound on the time).
        #[test]
        fn puts_and_a_get_at_once_complete_over_any_link(
            puts in prop::collection::vec(0usize..120_000, 1..4),
            get in 0usize..120_000,
            rate_kbps in 200u64..10_000,
            delay_ms in 1u64..2_000,
            loss in 0.0f64..0.15,
            outage in prop::option::of((0u64..10, 1u64..600)),
            seed: u64,
        ) {
            let mut pair = Pair::new(config(rate_kbps * 1000), Duration::from_millis(delay_ms), seed);
            pair.ab.loss = loss;
            pair.ba.loss = loss;
            let mut outage_len = 0;
            if let Some((start, len)) = outage {
                let window = (pair.at(secs(start)), pair.at(secs(start + len)));
                pair.ab.outages.push(window);
                pair.ba.outages.push(window);
                outage_len = start + len;
            }
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let b = pair.b_addr;
            let files: Vec<Vec<u8>> = puts.iter().map(|len| random_file(&mut rng, *len)).collect();
            for (i, file) in files.iter().enumerate() {
                pair.a.store_mut().insert(&format!("p{i}"), file.clone(), 0);
                pair.a.put(pair.now, b, &format!("p{i}"), &format!("q{i}")).unwrap();
            }
            let fetched = random_file(&mut rng, get);
            pair.b.store_mut().insert("g", fetched.clone(), 0);
            pair.a.get(pair.now, b, "g", "h");
            let transfers = files.len() + 1;
            let done = pair.run_until(secs(24 * 3600), |p| {
                Pair::completed(&p.events_a) == transfers && Pair::completed(&p.events_b) == transfers
            });
            prop_assert!(done, "a {:?} b {:?}", Pair::failed(&pair.events_a), Pair::failed(&pair.events_b));
            for (i, file) in files.iter().enumerate() {
                prop_assert_eq!(pair.b.store().contents(&format!("q{i}")), Some(&file[..]));
            }
            prop_assert_eq!(pair.a.store().contents("h"), Some(&fetched[..]));
            let (a, b) = (pair.a.stats(), pair.b.stats());
            prop_assert_eq!(a.duplicate_bytes_received + b.duplicate_bytes_received, 0);
            let put_bytes: u64 = puts.iter().map(|l| *l as u64).sum();
            prop_assert_eq!(a.data_bytes_sent, put_bytes + pair.ab.dropped_data_bytes + b.orphan_data_bytes);
            prop_assert_eq!(b.data_bytes_sent, get as u64 + pair.ba.dropped_data_bytes + a.orphan_data_bytes);
            // Sending time thrice over, plus the outage, plus a generous
            // number of repair rounds (a round trip and the longest probe
            // interval each).
            let sending = (put_bytes + get as u64) as f64 * 8.0 * 1.1 / (rate_kbps as f64 * 1000.0);
            let round = 2.0 * delay_ms as f64 / 1000.0 + 61.0;
            let bound = 3.0 * sending + outage_len as f64 + 15.0 * round;
            prop_assert!(pair.now.as_duration().as_secs_f64() < bound, "{:?} > {bound:.0} s", pair.now);
        }
    }
}
