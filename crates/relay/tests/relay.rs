//! The relay's promises, under any order of events: every byte read from
//! one side is written to the other once and in order; no more than the
//! buffer waits in a direction; an end of stream becomes a shutdown only
//! after everything before it; resets, refusals and idleness reset the
//! other side and drop nothing silently (the bytes counted as moved are
//! exactly those written).

use std::time::Duration;

use proptest::prelude::*;
use scps_node::Instant;
use scps_relay::{Action, OpenFailure, Outcome, Relay, RelayConfig, Side};

const BUFFER: usize = 1000;

fn config(idle: Option<Duration>) -> RelayConfig {
    RelayConfig {
        buffer: BUFFER,
        idle_timeout: idle,
    }
}

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn actions(relay: &mut Relay) -> Vec<Action> {
    std::iter::from_fn(|| relay.poll_action()).collect()
}

/// One side of a simulated pair of connections: what its application
/// sends, how far the relay has read it, what reached it.
#[derive(Debug, Default)]
struct End {
    source: Vec<u8>,
    read: usize,
    sink: Vec<u8>,
    ended_sent: bool,
    shut_down: bool,
}

#[derive(Debug, Clone)]
enum Step {
    /// Read up to this many bytes from a side.
    Read(Side, usize),
    /// Write up to this many of the waiting bytes to a side.
    Write(Side, usize),
    /// The side being opened connects.
    Open,
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Lan), Just(Side::Link)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (side(), 1..3000usize).prop_map(|(s, n)| Step::Read(s, n)),
        4 => (side(), 1..3000usize).prop_map(|(s, n)| Step::Write(s, n)),
        1 => Just(Step::Open),
    ]
}

fn index(side: Side) -> usize {
    match side {
        Side::Lan => 0,
        Side::Link => 1,
    }
}

proptest! {
    /// Both applications send, in chunks of any size, reads and writes in
    /// any order, the far side opening at any point: each receives the
    /// other's bytes exactly, then a shutdown, and the relay ends closed.
    #[test]
    fn bytes_arrive_once_in_order_then_the_shutdown(
        lan_data in proptest::collection::vec(any::<u8>(), 0..5000),
        link_data in proptest::collection::vec(any::<u8>(), 0..5000),
        steps in proptest::collection::vec(step(), 0..200),
        open in side(),
    ) {
        let mut relay = Relay::new(at(0), config(None), open);
        let mut ends = [
            End { source: lan_data.clone(), ..End::default() },
            End { source: link_data.clone(), ..End::default() },
        ];
        let mut opened = false;
        // The scripted steps, then enough of each to finish.
        let finish = (0..40).flat_map(|_| {
            [Step::Open, Step::Read(Side::Lan, 3000), Step::Read(Side::Link, 3000),
             Step::Write(Side::Lan, 3000), Step::Write(Side::Link, 3000)]
        });
        for step in steps.into_iter().chain(finish) {
            match step {
                Step::Open => {
                    opened = true;
                    relay.opened(at(1));
                }
                Step::Read(side, max) => {
                    let end = &mut ends[index(side)];
                    // The application on the opening side has not
                    // connected yet: nothing to read from it.
                    if !opened && side != open {
                        continue;
                    }
                    let room = relay.read_room(side);
                    let n = max.min(room).min(end.source.len() - end.read);
                    let taken = relay.received(at(1), side, &end.source[end.read..end.read + n]);
                    prop_assert_eq!(taken, n, "the relay takes what fits its room");
                    end.read += n;
                    if end.read == end.source.len() && !end.ended_sent {
                        end.ended_sent = true;
                        relay.ended(side);
                    }
                }
                Step::Write(side, max) => {
                    let chunk = relay.to_write(side);
                    if !opened && side != open {
                        prop_assert!(chunk.is_empty(), "nothing is written to a side being opened");
                    }
                    let n = max.min(chunk.len());
                    let end = &mut ends[index(side)];
                    prop_assert!(n == 0 || !end.shut_down, "no byte after the shutdown");
                    end.sink.extend_from_slice(&chunk[..n]);
                    relay.wrote(at(1), side, n);
                }
            }
            for side in [Side::Lan, Side::Link] {
                prop_assert!(relay.waiting_for(side) <= BUFFER, "at most the buffer waits");
            }
            for action in actions(&mut relay) {
                match action {
                    Action::Shutdown(side) => {
                        let expected = ends[index(side.other())].source.len();
                        prop_assert_eq!(ends[index(side)].sink.len(), expected, "shutdown after every byte");
                        ends[index(side)].shut_down = true;
                    }
                    Action::Reset(side) => prop_assert!(false, "reset of {side} without a failure"),
                }
            }
        }
        prop_assert_eq!(&ends[0].sink, &link_data);
        prop_assert_eq!(&ends[1].sink, &lan_data);
        prop_assert!(ends[0].shut_down && ends[1].shut_down);
        prop_assert_eq!(relay.outcome(), Some(Outcome::Closed));
        prop_assert_eq!(relay.bytes_to(Side::Lan), link_data.len() as u64);
        prop_assert_eq!(relay.bytes_to(Side::Link), lan_data.len() as u64);
    }
}

#[test]
fn the_side_being_opened_is_not_written_but_its_bytes_wait_within_the_buffer() {
    let mut relay = Relay::new(at(0), config(None), Side::Lan);
    // An HTTP request sent at once by the client waits for the link.
    assert_eq!(relay.received(at(1), Side::Lan, &[7; 600]), 600);
    assert_eq!(relay.read_room(Side::Lan), BUFFER - 600);
    assert_eq!(
        relay.received(at(1), Side::Lan, &[7; 600]),
        BUFFER - 600,
        "no more than the buffer"
    );
    assert_eq!(relay.read_room(Side::Lan), 0, "the LAN sender is pushed back");
    assert!(relay.to_write(Side::Link).is_empty());
    relay.ended(Side::Lan);
    assert_eq!(relay.poll_action(), None, "no shutdown before the link is open");
    relay.opened(at(2));
    assert_eq!(relay.to_write(Side::Link).len(), BUFFER);
    relay.wrote(at(2), Side::Link, BUFFER);
    assert_eq!(actions(&mut relay), [Action::Shutdown(Side::Link)]);
    assert_eq!(relay.outcome(), None, "the other direction is still open");
}

#[test]
fn a_refusal_at_the_far_end_resets_the_open_side_and_drops_its_bytes() {
    for failure in [
        OpenFailure::Refused,
        OpenFailure::TimedOut,
        OpenFailure::Unreachable,
    ] {
        let mut relay = Relay::new(at(0), config(None), Side::Lan);
        relay.received(at(1), Side::Lan, b"GET / HTTP/1.1\r\n\r\n");
        relay.open_failed(failure);
        assert_eq!(actions(&mut relay), [Action::Reset(Side::Lan)], "{failure}");
        assert_eq!(relay.outcome(), Some(Outcome::OpenFailed(failure)));
        assert_eq!(relay.read_room(Side::Lan), 0);
        assert!(relay.to_write(Side::Link).is_empty());
        assert_eq!(relay.bytes_to(Side::Link), 0, "nothing counted as moved");
    }
    // At the server's gateway, the link was accepted and the LAN server
    // refused: the link connection is reset.
    let mut relay = Relay::new(at(0), config(None), Side::Link);
    relay.open_failed(OpenFailure::Refused);
    assert_eq!(actions(&mut relay), [Action::Reset(Side::Link)]);
}

#[test]
fn a_reset_on_either_side_resets_the_other_even_mid_transfer() {
    for failed in [Side::Lan, Side::Link] {
        let mut relay = Relay::new(at(0), config(None), Side::Lan);
        relay.opened(at(1));
        relay.received(at(1), Side::Lan, &[1; 500]);
        relay.received(at(1), Side::Link, &[2; 500]);
        relay.wrote(at(1), Side::Link, 200);
        relay.failed(failed);
        assert_eq!(actions(&mut relay), [Action::Reset(failed.other())]);
        assert_eq!(relay.outcome(), Some(Outcome::Reset(failed)));
        assert!(relay.to_write(Side::Lan).is_empty() && relay.to_write(Side::Link).is_empty());
        assert_eq!(relay.bytes_to(Side::Link), 200, "what was written stays counted");
        // Later events change nothing.
        relay.ended(Side::Lan);
        relay.failed(failed.other());
        relay.opened(at(2));
        assert_eq!(relay.poll_action(), None);
        assert_eq!(relay.outcome(), Some(Outcome::Reset(failed)));
    }
}

#[test]
fn a_failure_before_the_far_side_opens_cancels_the_opening() {
    // The client gave up (reset) while the link connection was opening.
    let mut relay = Relay::new(at(0), config(None), Side::Lan);
    relay.failed(Side::Lan);
    assert_eq!(actions(&mut relay), [Action::Reset(Side::Link)]);
}

#[test]
fn half_close_each_way_in_turn() {
    let mut relay = Relay::new(at(0), config(None), Side::Lan);
    relay.opened(at(1));
    // The client sends its request and half-closes; the server answers
    // long after.
    relay.received(at(1), Side::Lan, b"request");
    relay.ended(Side::Lan);
    assert_eq!(relay.to_write(Side::Link), b"request");
    relay.wrote(at(1), Side::Link, 7);
    assert_eq!(actions(&mut relay), [Action::Shutdown(Side::Link)]);
    assert_eq!(
        relay.read_room(Side::Lan),
        0,
        "nothing more is read from an ended side"
    );
    assert_eq!(relay.read_room(Side::Link), BUFFER, "the other way is open");
    relay.received(at(5), Side::Link, b"reply");
    relay.wrote(at(5), Side::Lan, 5);
    assert_eq!(relay.outcome(), None);
    relay.ended(Side::Link);
    assert_eq!(actions(&mut relay), [Action::Shutdown(Side::Lan)]);
    assert_eq!(relay.outcome(), Some(Outcome::Closed));
}

#[test]
fn idle_for_the_timeout_resets_both_and_activity_defers_it() {
    let idle = Duration::from_secs(60);
    let mut relay = Relay::new(at(0), config(Some(idle)), Side::Lan);
    relay.opened(at(1000));
    assert_eq!(relay.poll_timeout(), Some(at(61_000)));
    relay.received(at(30_000), Side::Link, b"x");
    assert_eq!(relay.poll_timeout(), Some(at(90_000)), "a byte read defers it");
    relay.handle_timeout(at(89_999));
    assert_eq!(relay.outcome(), None, "not before the deadline");
    relay.wrote(at(40_000), Side::Lan, 1);
    relay.handle_timeout(at(99_999));
    assert_eq!(relay.outcome(), None, "a byte written defers it");
    relay.handle_timeout(at(100_000));
    assert_eq!(
        actions(&mut relay),
        [Action::Reset(Side::Lan), Action::Reset(Side::Link)]
    );
    assert_eq!(relay.outcome(), Some(Outcome::Idle));
    assert_eq!(relay.poll_timeout(), None);
    // Without an idle timeout, no deadline at all.
    let relay = Relay::new(at(0), config(None), Side::Lan);
    assert_eq!(relay.poll_timeout(), None);
}
