//! A four-tuple held in TIME-WAIT is taken by a new connection without
//! waiting out 2 MSL: at once by the peer's SYN when its timestamp shows it
//! is new (RFC 6191), and by an open of ours a second after the old
//! connection entered TIME-WAIT. Content is checked byte for byte.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::pair::{A, B, Pair, data};
use scps_proto::{Config, EndpointError, State};

const RTT: Duration = Duration::from_millis(100);

fn addresses() -> (SocketAddr, SocketAddr) {
    (SocketAddr::new(A, 40_000), SocketAddr::new(B, 80))
}

/// Which side closes first, and so ends in TIME-WAIT.
#[derive(Clone, Copy, PartialEq)]
enum FirstCloser {
    A,
    B,
}

/// One connection from `client` to B's listener on `server` carrying
/// `to_b`, closed by `first` once it is open and the data is across and
/// by the other side once it has the first's FIN; both handles released.
/// The states each side ended in, and how long it took from the open to
/// B's having everything.
fn one_connection(
    pair: &mut Pair,
    (client, server): (Option<SocketAddr>, SocketAddr),
    to_b: &[u8],
    first: FirstCloser,
) -> (State, State, Duration) {
    let started = pair.now;
    let ca = pair.a.connect(pair.now, server, client, None).unwrap();
    let (mut cb, mut sent, mut at_b, mut took) = (None, 0, Vec::new(), None);
    let mut buf = vec![0u8; 65536];
    let done = |state: Option<State>| matches!(state, None | Some(State::TimeWait | State::Closed));
    pair.run(|p| {
        if cb.is_none() {
            cb = p.b.accept(server);
        }
        let Some(cb) = cb else { return false };
        sent += p.a.send(ca, &to_b[sent..]).unwrap_or(0);
        while let Ok(n @ 1..) = p.b.recv(cb, &mut buf) {
            at_b.extend_from_slice(&buf[..n]);
        }
        if at_b.len() == to_b.len() {
            took.get_or_insert(p.now.saturating_since(started));
            let (closer, closer_handle, other, other_handle) = match first {
                FirstCloser::A => (&mut p.a, ca, &mut p.b, cb),
                FirstCloser::B => (&mut p.b, cb, &mut p.a, ca),
            };
            if closer.state(closer_handle) == Some(State::Established) {
                closer.shutdown(closer_handle).unwrap();
            }
            if other.state(other_handle) == Some(State::CloseWait) {
                other.shutdown(other_handle).unwrap();
            }
        }
        done(p.a.state(ca)) && done(p.b.state(cb))
    });
    assert!(at_b == to_b, "content differs");
    let cb = cb.unwrap();
    let states = (
        pair.a.state(ca).unwrap_or(State::Closed),
        pair.b.state(cb).unwrap_or(State::Closed),
    );
    let now = pair.now;
    pair.a.release(now, ca).unwrap();
    pair.b.release(now, cb).unwrap();
    (states.0, states.1, took.unwrap())
}

/// Lets `by` pass on the pair's clock, nothing in flight, the timers due
/// by then run (and no later one).
fn wait(pair: &mut Pair, by: Duration) {
    pair.now += by;
    let now = pair.now;
    pair.a.handle_timeout(now);
    pair.b.handle_timeout(now);
}

#[test]
fn a_newer_syn_takes_a_tuple_the_listener_holds_in_time_wait() {
    let mut pair = Pair::new(Config::default(), RTT / 2);
    let (client, server) = addresses();
    pair.b.listen(server, None).unwrap();
    let fixed = (Some(client), server);
    let (_, at_b, first) = one_connection(&mut pair, fixed, &data(50_000, 1), FirstCloser::B);
    assert_eq!(at_b, State::TimeWait, "B closed first");
    let (_, _, second) = one_connection(&mut pair, fixed, &data(50_000, 2), FirstCloser::B);
    assert_eq!(pair.b.stats().time_wait_reused, 1);
    assert!(
        second <= first + RTT / 2,
        "the second connection carried its data as fast as the first ({second:?} against {first:?})"
    );
}

#[test]
fn an_open_of_ours_takes_our_time_wait_tuple_after_a_second() {
    let mut pair = Pair::new(Config::default(), RTT / 2);
    let (client, server) = addresses();
    pair.b.listen(server, None).unwrap();
    let fixed = (Some(client), server);
    let (at_a, _, _) = one_connection(&mut pair, fixed, &data(50_000, 3), FirstCloser::A);
    assert_eq!(at_a, State::TimeWait, "A closed first");
    assert!(
        matches!(
            pair.a.connect(pair.now, server, Some(client), None),
            Err(EndpointError::AddressInUse(_))
        ),
        "a fresh TIME-WAIT keeps its tuple"
    );
    wait(&mut pair, scps_proto::REUSE_AFTER);
    one_connection(&mut pair, fixed, &data(50_000, 4), FirstCloser::A);
    assert_eq!(pair.a.stats().time_wait_reused, 1);
}

#[test]
fn ephemeral_ports_in_time_wait_are_reused_after_a_second() {
    let mut pair = Pair::new(Config::default(), Duration::from_micros(100));
    let server = addresses().1;
    pair.b.listen(server, None).unwrap();
    // More connections than there are ephemeral ports (16,384), each
    // closed first by A, more than a thousand a second: the range comes
    // round again well within the 60 s of TIME-WAIT.
    let started = pair.now;
    for _ in 0..20_000u32 {
        one_connection(&mut pair, (None, server), b"x", FirstCloser::A);
        wait(&mut pair, Duration::from_micros(100));
    }
    let took = pair.now.saturating_since(started);
    assert!(took < Duration::from_secs(40), "{took:?}");
    assert!(
        pair.a.stats().time_wait_reused >= 20_000 - 16_384,
        "{:?}",
        pair.a.stats()
    );
}
