//! Two bonds joined by model channels, in virtual time: what the sending
//! bond stripes, what it learns of each channel from its probes, and how
//! it takes down and marginal channels out of the stripe.

use std::collections::VecDeque;
use std::time::Duration;

use scps_bond::{Bond, BondConfig, BondFigures, ChannelState, Event};

const STEP: Duration = Duration::from_millis(1);

/// Channels fast enough to be probed as configured (a slower one is probed
/// less often, see `slow_channels_are_probed_less_often_than_configured`).
const FAST: f64 = 38_400.0;

/// One direction of a channel: packets leave one at a time at `rate_bps`
/// and arrive `delay` later (and up to `jitter` more, in order), unless
/// lost or the channel is down.
#[derive(Debug, Clone)]
struct Wire {
    rate_bps: f64,
    /// Bytes the line adds to each packet (PPP's framing).
    framing: usize,
    delay: Duration,
    jitter: Duration,
    /// Share of packets lost (every n-th, deterministically).
    loss_every: Option<u64>,
    down: Vec<(Duration, Duration)>,
    free_at: Duration,
    sent: u64,
    in_flight: VecDeque<(Duration, Vec<u8>)>,
}

impl Wire {
    fn new(rate_bps: f64, delay_ms: u64) -> Wire {
        Wire {
            rate_bps,
            framing: 0,
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::ZERO,
            loss_every: None,
            down: Vec::new(),
            free_at: Duration::ZERO,
            sent: 0,
            in_flight: VecDeque::new(),
        }
    }

    fn is_down(&self, at: Duration) -> bool {
        self.down.iter().any(|(from, to)| (*from..*to).contains(&at))
    }

    fn put(&mut self, now: Duration, packet: Vec<u8>) {
        let line_bytes = packet.len() + self.framing;
        let leaves = self.free_at.max(now) + Duration::from_secs_f64(line_bytes as f64 * 8.0 / self.rate_bps);
        self.free_at = leaves;
        self.sent += 1;
        let lost = self.loss_every.is_some_and(|n| self.sent.is_multiple_of(n));
        if !lost && !self.is_down(leaves) {
            // Deterministic jitter: a different share of `jitter` for each
            // of seven packets in turn; a packet never overtakes the one
            // before it.
            let jitter = self.jitter.mul_f64((self.sent * 3 % 7) as f64 / 6.0);
            let last = self.in_flight.back().map_or(Duration::ZERO, |(at, _)| *at);
            self.in_flight
                .push_back(((leaves + self.delay + jitter).max(last), packet));
        }
    }

    fn take(&mut self, now: Duration) -> Option<Vec<u8>> {
        if self.in_flight.front().is_some_and(|(at, _)| *at <= now) {
            return self.in_flight.pop_front().map(|(_, p)| p);
        }
        None
    }
}

/// A sending bond, a receiving bond, and the channels between them (both
/// directions alike).
struct Pair {
    a: Bond,
    b: Bond,
    forward: Vec<Wire>,
    back: Vec<Wire>,
    now: Duration,
    /// Data packets delivered at b, by sequence number.
    delivered: Vec<u64>,
    /// Data packets a put on each channel.
    data_per_channel: Vec<u64>,
    events: Vec<Event>,
}

impl Pair {
    fn new(config: BondConfig, wires: Vec<Wire>) -> Pair {
        let channels = wires.len();
        Pair {
            a: Bond::new(config.clone(), Duration::ZERO).unwrap(),
            b: Bond::new(config, Duration::ZERO).unwrap(),
            back: wires.clone(),
            forward: wires,
            now: Duration::ZERO,
            delivered: Vec::new(),
            data_per_channel: vec![0; channels],
            events: Vec::new(),
        }
    }

    /// Circuit `channel`'s call is down from `from` until `to`, both ways.
    fn drop_call(&mut self, channel: usize, from: Duration, to: Duration) {
        self.forward[channel].down.push((from, to));
        self.back[channel].down.push((from, to));
    }

    /// The events that put a channel on standby, in order.
    fn standby_events(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.to == ChannelState::Standby)
            .collect()
    }

    /// Runs until `until`, a sends a packet of `size` bytes every
    /// `every` (numbered from `first`); returns the next number.
    fn run(&mut self, until: Duration, size: usize, every: Option<Duration>, mut next: u64) -> u64 {
        let mut due = self.now;
        while self.now < until {
            if let Some(every) = every
                && self.now >= due
            {
                let mut packet = vec![0x45; size];
                packet[1..9].copy_from_slice(&next.to_be_bytes());
                let _ = self.a.send(packet);
                next += 1;
                due += every;
            }
            while let Some((channel, datagram)) = self.a.poll_transmit(self.now) {
                if datagram[0] == 0x45 {
                    self.data_per_channel[channel] += 1;
                }
                self.forward[channel].put(self.now, datagram);
            }
            while let Some((channel, datagram)) = self.b.poll_transmit(self.now) {
                self.back[channel].put(self.now, datagram);
            }
            // With nothing more to send now, a bond wakes later, never now
            // (a driver would spin).
            for bond in [&self.a, &self.b] {
                if let Some(wake) = bond.next_wake(self.now) {
                    assert!(
                        wake > self.now,
                        "woken at {wake:?} with nothing to do at {:?}",
                        self.now
                    );
                }
            }
            for channel in 0..self.forward.len() {
                while let Some(datagram) = self.forward[channel].take(self.now) {
                    if let Some(data) = self.b.handle(self.now, channel, datagram) {
                        self.delivered
                            .push(u64::from_be_bytes(data[1..9].try_into().unwrap()));
                    }
                }
                while let Some(datagram) = self.back[channel].take(self.now) {
                    assert_eq!(
                        self.a.handle(self.now, channel, datagram),
                        None,
                        "b sends no data"
                    );
                }
            }
            while let Some(event) = self.a.poll_event() {
                self.events.push(event);
            }

            self.now += STEP;
        }
        next
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

#[test]
fn each_channel_carries_in_proportion_to_what_it_delivers() {
    // Channels of 2400, 4800 and 9600 bit/s, configured so; the middle one
    // degrades to half its rate after five minutes (a worse modulation),
    // which its answers tell.
    let wires = vec![
        Wire::new(2400.0, 300),
        Wire::new(4800.0, 300),
        Wire::new(9600.0, 300),
    ];
    let mut pair = Pair::new(BondConfig::new(vec![2400, 4800, 9600]), wires);
    // 100-byte packets at 14 kbit/s: 83% of the 16800 bit/s they carry.
    let sent = pair.run(secs(300.0), 100, Some(secs(100.0 * 8.0 / 14_000.0)), 0);
    let rates = |pair: &Pair| -> Vec<f64> { pair.a.channels().iter().map(|c| c.rate_bps).collect() };
    println!(
        "estimated rates {:?}, data packets per channel {:?}",
        rates(&pair),
        pair.data_per_channel
    );
    for (estimate, truth) in rates(&pair).iter().zip([2400.0, 4800.0, 9600.0]) {
        assert!((estimate / truth - 1.0).abs() < 0.2, "{:?}", rates(&pair));
    }
    pair.forward[1].rate_bps = 2400.0;
    // Offered more than they carry, each channel takes its share: the
    // shares follow the rates (below saturation the fastest channels take
    // more, as each packet goes where it leaves soonest).
    let before = pair.data_per_channel.clone();
    let sent_later = pair.run(secs(400.0), 100, Some(secs(100.0 * 8.0 / 20_000.0)), sent);
    let shares: Vec<f64> = pair
        .data_per_channel
        .iter()
        .zip(&before)
        .map(|(after, before)| (after - before) as f64)
        .collect();
    let total: f64 = shares.iter().sum();
    println!("estimated rates {:?}, shares {shares:?}", rates(&pair));
    assert!((rates(&pair)[1] / 2400.0 - 1.0).abs() < 0.2, "{:?}", rates(&pair));
    for (share, expected) in shares.iter().zip([1.0 / 6.0, 1.0 / 6.0, 4.0 / 6.0]) {
        assert!((share / total - expected).abs() < 0.06, "{shares:?}");
    }
    // What the bond took arrived: only what it could not hold was
    // dropped, and counted.
    pair.run(secs(470.0), 100, None, sent_later);
    let dropped = pair.a.stats().dropped_full;
    assert_eq!(pair.delivered.len() as u64 + dropped, sent_later);
    // Until the degraded channel's answers taught the bond, the queue it
    // was fed delayed them past the down mark now and then; before and
    // since, nothing changed.
    assert!(
        pair.events
            .iter()
            .all(|e| e.channel == 1 && (secs(300.0)..secs(360.0)).contains(&e.at)),
        "{:?}",
        pair.events
    );
}

#[test]
fn a_channel_whose_probes_go_unanswered_is_out_within_two_intervals_and_back_when_they_return() {
    let mut wires = vec![Wire::new(FAST, 1500), Wire::new(FAST, 1500), Wire::new(FAST, 600)];
    // Channel 1's call drops at 60 s and is back at 120 s.
    wires[1].down.push((secs(60.0), secs(120.0)));
    let mut config = BondConfig::new(vec![FAST as u64; 3]);
    config.probe_interval = secs(2.0);
    let mut pair = Pair::new(config, wires);
    let every = Some(secs(64.0 * 8.0 / 4096.0 / 16.0));
    let next = pair.run(secs(70.0), 64, every, 0);
    assert_eq!(pair.a.channels()[1].state, ChannelState::Down);
    // While down it is given no data.
    let carried_before = pair.data_per_channel[1];
    let next = pair.run(secs(119.0), 64, every, next);
    assert_eq!(pair.data_per_channel[1], carried_before);
    let next = pair.run(secs(180.0), 64, every, next);
    let down = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == ChannelState::Down)
        .expect("channel 1 marked down");
    // The last probe answered left at most one interval before the drop
    // and came back 3 s later; down within two intervals of that answer.
    assert!(
        down.at > secs(60.0) && down.at <= secs(60.0 + 2.0 + 3.0 + 4.0),
        "{down:?}"
    );
    let up = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == ChannelState::Up)
        .expect("channel 1 back");
    // A probe leaves within an interval of the redial and is answered a
    // round trip later.
    assert!(
        up.at >= secs(120.0) && up.at <= secs(120.0 + 2.0 + 3.0 + 0.1),
        "{up:?}"
    );
    println!("down at {:?}, up at {:?}", down.at, up.at);
    assert!(
        pair.data_per_channel[1] > carried_before,
        "used again after the redial"
    );
    // Nothing offered was dropped by the bond; what the dead channel was
    // given before it was found down is lost (the transport repairs it).
    pair.run(secs(190.0), 64, None, next);
    assert_eq!(pair.a.stats().dropped_full, 0);
    // The channel counts its changes as the events tell them: down, up.
    let report = &pair.a.channels()[1];
    let changes = pair.events.iter().filter(|e| e.channel == 1).count();
    assert_eq!((report.changes, report.went_down, report.went_standby), (2, 1, 0));
    assert_eq!(changes, 2, "{:?}", pair.events);
    let lost = next - pair.delivered.len() as u64;
    assert!(lost > 0 && lost < 40, "lost {lost} packets in the drop");
}

#[test]
fn a_marginal_channel_goes_to_standby_and_comes_back_when_it_recovers() {
    let mut wires = vec![Wire::new(FAST, 300), Wire::new(FAST, 300), Wire::new(FAST, 300)];
    // Channel 2 loses one packet in three.
    wires[2].loss_every = Some(3);
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 3]), wires);
    // Enough for all three.
    let every = Some(secs(100.0 * 8.0 / 5500.0 / 16.0));
    let next = pair.run(secs(120.0), 100, every, 0);
    let standby = pair
        .events
        .iter()
        .find(|e| e.channel == 2 && e.to == ChannelState::Standby)
        .expect("channel 2 on standby");
    println!("{standby:?}");
    assert!(standby.why.contains("loses"), "{standby:?}");
    assert!(standby.at < secs(60.0), "{standby:?}");
    let carried = pair.data_per_channel[2];
    let next = pair.run(secs(240.0), 100, every, next);
    assert_eq!(pair.data_per_channel[2], carried, "no data on standby");
    assert_eq!(pair.a.channels()[2].state, ChannelState::Standby);
    // The circuit is redialled and is clean again.
    pair.forward[2].loss_every = None;
    pair.back[2].loss_every = None;
    pair.run(secs(600.0), 100, every, next);
    let back = pair.events.iter().rfind(|e| e.channel == 2).expect("an event");
    assert_eq!(back.to, ChannelState::Up, "{:?}", pair.events);
    assert!(back.why.contains("recovered"), "{back:?}");
}

#[test]
fn a_marginal_circuit_redialled_comes_back_on_standby_until_its_rest_is_out() {
    let mut wires = vec![Wire::new(FAST, 300), Wire::new(FAST, 300), Wire::new(FAST, 300)];
    wires[2].loss_every = Some(3);
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 3]), wires);
    let every = Some(secs(100.0 * 8.0 / 5500.0 / 16.0));
    let next = pair.run(secs(30.0), 100, every, 0);
    assert_eq!(
        pair.a.channels()[2].state,
        ChannelState::Standby,
        "{:?}",
        pair.events
    );
    // Its call drops at 30 s and is redialled at 40 s, within its rest
    // (the second, after it came back at 25 s and lost as much): the same
    // circuit, as lossy.
    pair.drop_call(2, secs(30.0), secs(40.0));
    pair.a.carrier(pair.now, 2, false);
    let next = pair.run(secs(40.0), 100, every, next);
    pair.a.carrier(pair.now, 2, true);
    let redialled = pair.now;
    let carried = pair.data_per_channel[2];
    // (It loses probes too, and flaps down and back every few seconds
    // after; the first seconds tell.)
    pair.run(secs(42.0), 100, every, next);
    let back = pair
        .events
        .iter()
        .find(|e| e.channel == 2 && e.at >= redialled)
        .expect("an event");
    assert_eq!(back.to, ChannelState::Standby, "{:?}", pair.events);
    assert!(back.why.contains("carrier"), "{back:?}");
    assert_eq!(pair.data_per_channel[2], carried, "no data on standby");
}

#[test]
fn a_slow_marginal_circuit_is_judged_by_what_its_datagrams_show_not_by_a_count_of_answers() {
    // Three 2400 bit/s circuits, 1.5 s each way, probed every 20 s (their
    // probes take at most 1% of them). The third loses one datagram in
    // three: its datagrams over three intervals show it beyond doubt, by
    // its fourth answer, where eight answers took 145 s. The second loses
    // one in twenty, half the threshold: however long it is measured, it
    // stays.
    let mut wires = vec![
        Wire::new(2400.0, 1500),
        Wire::new(2400.0, 1500),
        Wire::new(2400.0, 1500),
    ];
    wires[1].loss_every = Some(20);
    wires[2].loss_every = Some(3);
    let mut pair = Pair::new(BondConfig::new(vec![2400; 3]), wires);
    pair.run(secs(600.0), 150, Some(secs(150.0 * 8.0 / 6000.0)), 0);
    let standby = pair.standby_events();
    assert!(!standby.is_empty(), "{:?}", pair.events);
    assert!(standby.iter().all(|e| e.channel == 2), "{standby:?}");
    assert!(standby[0].why.contains("loses"), "{:?}", standby[0]);
    assert!(standby[0].at < secs(90.0), "{:?}", standby[0]);
}

#[test]
fn a_marginal_channel_is_used_when_no_other_carries_data() {
    let mut wires = vec![Wire::new(FAST, 300), Wire::new(FAST, 300)];
    wires[1].loss_every = Some(3);
    wires[0].down.push((secs(100.0), secs(1000.0)));
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 2]), wires);
    let next = pair.run(secs(99.0), 100, Some(secs(0.5 / 16.0)), 0);
    assert_eq!(
        pair.a.channels()[1].state,
        ChannelState::Standby,
        "{:?}",
        pair.events
    );
    let carried = pair.data_per_channel[1];
    pair.run(secs(120.0), 100, Some(secs(0.5 / 16.0)), next);
    let back = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == ChannelState::Up && e.at > secs(100.0))
        .unwrap_or_else(|| panic!("{:?}", pair.events));
    assert!(back.why.contains("no other channel"), "{back:?}");
    assert!(back.at < secs(104.0), "{back:?}");
    assert!(pair.data_per_channel[1] > carried, "it carries the data");
}

#[test]
fn what_no_channel_can_take_waits_and_beyond_the_hold_is_dropped_and_counted() {
    let mut config = BondConfig::new(vec![2400]);
    config.hold_bytes = 2000;
    let mut bond = Bond::new(config, Duration::ZERO).unwrap();
    let mut refused = 0;
    for _ in 0..40 {
        if bond.send(vec![0x45; 100]).is_err() {
            refused += 1;
        }
    }
    assert_eq!(refused, 20, "2000 bytes held");
    assert_eq!(bond.stats().dropped_full, 20);
    // Nothing goes before the channel has answered a probe (its delay
    // unknown, the bond cannot order what it sends there).
    let (_, probe) = bond.poll_transmit(Duration::ZERO).expect("the first probe");
    assert_eq!(bond.poll_transmit(Duration::ZERO), None, "no data yet");
    let mut peer = Bond::new(BondConfig::new(vec![2400]), Duration::ZERO).unwrap();
    peer.handle(secs(0.05), 0, probe);
    let (_, answer) = peer.poll_transmit(secs(0.05)).unwrap();
    bond.handle(secs(0.1), 0, answer);
    // Then half a second of sending at about 2400 bit/s (150 bytes), and
    // the packet that crosses that line, go at once; the rest wait for
    // room, which comes within a second.
    let mut now_out = Vec::new();
    while let Some(out) = bond.poll_transmit(secs(0.1)) {
        now_out.push(out);
    }
    assert_eq!(
        now_out.iter().filter(|(_, p)| p[0] == 0x45).count(),
        2,
        "{now_out:?}"
    );
    let wake = bond.next_wake(secs(0.1)).unwrap();
    assert!(wake > secs(0.1) && wake < secs(1.1), "{wake:?}");
}

#[test]
fn frames_that_are_wrong_are_counted_not_obeyed() {
    let mut bond = Bond::new(BondConfig::new(vec![2400, 2400]), Duration::ZERO).unwrap();
    assert_eq!(bond.handle(Duration::ZERO, 0, vec![0, 7, 0, 0]), None);
    assert_eq!(bond.stats().bad_frames, 1);
    // An answer to a probe of channel 0 arriving on channel 1.
    let (channel, probe) = bond.poll_transmit(Duration::ZERO).unwrap();
    assert_eq!(channel, 0);
    let mut peer = Bond::new(BondConfig::new(vec![2400, 2400]), Duration::ZERO).unwrap();
    assert_eq!(peer.handle(Duration::ZERO, 0, probe), None);
    let (_, answer) = peer.poll_transmit(Duration::ZERO).unwrap();
    assert_eq!(bond.handle(secs(0.1), 1, answer.clone()), None);
    assert_eq!(bond.stats().misrouted_answers, 1);
    // On its own channel it counts; a second copy is stale.
    bond.handle(secs(0.1), 0, answer.clone());
    assert_eq!(bond.channels()[0].srtt, Some(secs(0.1)));
    bond.handle(secs(0.2), 0, answer);
    assert_eq!(bond.stats().stale_answers, 1);
    // A channel we do not have.
    assert_eq!(bond.handle(secs(0.2), 9, vec![0x45]), None);
    assert_eq!(bond.stats().misrouted_answers, 2);
    // A report gives each counter, and each state by its name.
    let figures = serde_json::to_value(BondFigures::of(&bond)).unwrap();
    for (counter, value) in [("bad_frames", 1), ("misrouted_answers", 2), ("stale_answers", 1)] {
        assert_eq!(figures[counter], value, "{figures}");
    }
    assert_eq!(figures["channels"][0]["state"], "up", "{figures}");
    assert_eq!(figures["channels"][0]["srtt_s"], 0.1, "{figures}");
}

#[test]
fn a_channel_far_slower_to_answer_than_its_peers_goes_to_standby() {
    // Two circuits of 0.6 s round trip and one of 12 s (a circuit
    // routed over two geostationary hops and more, say).
    let wires = vec![
        Wire::new(2400.0, 300),
        Wire::new(2400.0, 300),
        Wire::new(2400.0, 6000),
    ];
    // Probed every 20 s (their probes take at most 1% of them): judged
    // after eight answers.
    let mut pair = Pair::new(BondConfig::new(vec![2400; 3]), wires);
    pair.run(secs(240.0), 100, Some(secs(100.0 * 8.0 / 5000.0)), 0);
    let standby = pair
        .events
        .iter()
        .find(|e| e.to == ChannelState::Standby)
        .unwrap_or_else(|| panic!("{:?}", pair.events));
    assert_eq!(standby.channel, 2, "{:?}", pair.events);
    assert!(standby.why.contains("round trip"), "{standby:?}");
    assert!(pair.events.iter().all(|e| e.channel == 2), "{:?}", pair.events);
}

#[test]
fn a_steady_channel_is_not_judged_against_a_jittery_peers_luckiest_round_trip() {
    // The first channel's round trip is 0.1 s and up to 1.5 s of jitter
    // one way: 0.8 s smoothed, 0.1 s at the luckiest. The second's is a
    // steady 1.8 s: eighteen times that luckiest one, but not much more
    // than twice what the first takes on average. Neither is far worse
    // (judged by least round trips alone, the second went on standby
    // within 12 s).
    let wires = vec![Wire::new(FAST, 50), Wire::new(FAST, 900)];
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 2]), wires);
    pair.forward[0].jitter = secs(1.5);
    pair.run(secs(600.0), 100, None, 0);
    let standby = pair.standby_events();
    assert!(standby.is_empty(), "{standby:?}");
}

#[test]
fn a_lost_carrier_takes_a_channel_out_at_once_and_only_new_probes_bring_it_back() {
    // Two channels of 38.4 kbit/s, 1.5 s each way: a probe answered after
    // the call dropped was sent while it still stood, and says nothing.
    let wires = vec![Wire::new(FAST, 1500), Wire::new(FAST, 1500)];
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 2]), wires);
    // 51.2 kbit/s: more than one channel carries.
    let every = Some(secs(0.25 / 16.0));
    let next = pair.run(secs(30.0), 100, every, 0);
    let one = pair.a.up_rate_bps() / 2;
    assert!(
        one > 37_000 && one < 38_400,
        "both up, less their probes: {:?}",
        pair.events
    );
    // The call drops at 30 s: both modems say so.
    pair.drop_call(1, secs(30.0), secs(90.0));
    pair.a.channel_failed(pair.now, 1, "its carrier was lost".into());
    pair.b.channel_failed(pair.now, 1, "its carrier was lost".into());
    let carried = pair.data_per_channel[1];
    let stale_before = pair.a.stats().stale_answers;
    let next = pair.run(secs(89.0), 100, every, next);
    assert_eq!(
        pair.a.channels()[1].state,
        ChannelState::Down,
        "{:?}",
        pair.events
    );
    assert_eq!(
        pair.data_per_channel[1], carried,
        "nothing sent into the dead circuit"
    );
    assert_eq!(pair.a.up_rate_bps(), one);
    assert!(
        pair.a.stats().stale_answers > stale_before,
        "the answers on their way when it dropped are stale"
    );
    let dropped = pair
        .events
        .iter()
        .filter(|e| e.channel == 1 && e.at >= secs(30.0))
        .count();
    assert_eq!(
        dropped, 1,
        "down once, never back on an old answer: {:?}",
        pair.events
    );
    // Redialled at 90 s: in the stripe with its carrier, carrying within
    // the 3 s its probe's answer takes.
    let next = pair.run(secs(90.0), 100, every, next);
    pair.a.carrier_back(pair.now, 1);
    pair.b.carrier_back(pair.now, 1);
    let redialled = pair.now;
    let next = pair.run(secs(92.0), 100, every, next);
    let back = pair.events.iter().rfind(|e| e.channel == 1).unwrap();
    assert_eq!(back.to, ChannelState::Up, "{:?}", pair.events);
    assert_eq!(back.at, redialled, "back with its carrier: {back:?}");
    assert!(
        pair.data_per_channel[1] > carried,
        "carrying before its probe is answered"
    );
    let next = pair.run(secs(94.0), 100, every, next);
    assert_eq!(
        pair.a.channels()[1].state,
        ChannelState::Up,
        "still up once answered: {:?}",
        pair.events
    );
    pair.run(secs(120.0), 100, every, next);
    assert_eq!(pair.a.up_rate_bps(), 2 * one);
}

#[test]
fn a_carrier_back_on_a_circuit_that_delivers_nothing_is_down_again_within_its_silence() {
    // The modem says the call is up, the circuit carries nothing: what
    // the bond gives it until the probes' silence says so is lost, and no
    // more after that.
    let wires = vec![Wire::new(FAST, 1500), Wire::new(FAST, 1500)];
    let mut pair = Pair::new(BondConfig::new(vec![FAST as u64; 2]), wires);
    let every = Some(secs(0.25 / 16.0));
    let next = pair.run(secs(30.0), 100, every, 0);
    pair.drop_call(1, secs(30.0), secs(3600.0));
    pair.a.channel_failed(pair.now, 1, "its carrier was lost".into());
    let next = pair.run(secs(90.0), 100, every, next);
    pair.a.carrier_back(pair.now, 1);
    let redialled = pair.now;
    let next = pair.run(secs(100.0), 100, every, next);
    let down_again = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.at > redialled && e.to == ChannelState::Down)
        .unwrap_or_else(|| panic!("{:?}", pair.events));
    // Two probe intervals: at 38.4 kbit/s 1.25 s each, the probes'
    // share of the channel bounding the configured second.
    let silence = secs(2.0 * 1.25);
    assert!(
        down_again.at <= redialled + silence + STEP,
        "down within two probe intervals: {down_again:?}"
    );
    let given = pair.data_per_channel[1];
    pair.run(secs(120.0), 100, every, next);
    assert_eq!(pair.data_per_channel[1], given, "nothing more given to it");
}

#[test]
fn slow_channels_are_probed_less_often_than_configured() {
    // Probed every second, a 2400 bit/s circuit would spend a sixth of
    // itself on probes and answers (60 bytes with framing each way); its
    // probes take at most 1% of it instead: one every 20 s. At 38.4
    // kbit/s, every 1.25 s; at 96 kbit/s and more, every second as
    // configured.
    let wires = vec![
        Wire::new(2400.0, 1500),
        Wire::new(FAST, 1500),
        Wire::new(96_000.0, 1500),
    ];
    let mut pair = Pair::new(BondConfig::new(vec![2400, FAST as u64, 96_000]), wires);
    pair.run(secs(186.0), 100, None, 0);
    // A probe of its own and an answer to b's for each interval.
    let slow = pair.forward[0].sent;
    assert!((18..=21).contains(&slow), "{slow} control frames in 186 s");
    let fast = pair.forward[1].sent;
    assert!((296..=300).contains(&fast), "{fast} in 186 s");
    let fastest = pair.forward[2].sent;
    assert!(
        (370..=374).contains(&fastest),
        "as configured: {fastest} in 186 s"
    );
    // What the stripe offers its senders is each rate less its probes.
    let control = |interval: f64| 60.0 * 8.0 / interval;
    let expected = 2400.0 - control(20.0) + FAST - control(1.25) + 96_000.0 - control(1.0);
    let offered = pair.a.up_rate_bps() as f64;
    assert!((offered - expected).abs() < 2.0, "{offered} against {expected}");
}

#[test]
fn a_slow_channel_that_is_down_is_probed_as_configured_and_found_back_within_that() {
    // Two 2400 bit/s circuits, 0.75 s each way, probed every 10 s while
    // they carry data. The second's call drops at 30 s and is back at 60 s;
    // both ends hear it drop (a socket's error, a router's report) but
    // not come back. While down it carries nothing else, so it is probed
    // every second as configured, and is back within that and a round
    // trip of the call, not within its 10 s interval.
    let wires = vec![Wire::new(2400.0, 750), Wire::new(2400.0, 750)];
    let mut pair = Pair::new(BondConfig::new(vec![2400; 2]), wires);
    let every = Some(secs(0.5));
    let next = pair.run(secs(30.0), 100, every, 0);
    pair.drop_call(1, secs(30.0), secs(60.0));
    pair.a
        .channel_failed(pair.now, 1, "the network reports its peer unreachable".into());
    pair.b
        .channel_failed(pair.now, 1, "the network reports its peer unreachable".into());
    let probes_before = pair.forward[1].sent;
    let next = pair.run(secs(60.0), 100, every, next);
    let probes = pair.forward[1].sent - probes_before;
    assert!(
        (29..=31).contains(&probes),
        "{probes} probes in the 30 s it was down"
    );
    pair.run(secs(75.0), 100, every, next);
    let back = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.to == ChannelState::Up && e.at > secs(60.0))
        .unwrap_or_else(|| panic!("not back: {:?}", pair.events));
    assert!(back.at < secs(62.8), "back at {:?}", back.at);
}

#[test]
fn a_slow_channel_a_router_reported_down_comes_back_with_its_figures_afresh() {
    // Two 2400 bit/s circuits; the second loses one packet in twenty on
    // its first call (5%: not marginal). The call drops at 60 s, a router
    // reports it (no carrier), and a clean new call is back at 115 s,
    // sooner than two of its 20 s silences twice over: the loss of the
    // call before is not the new one's (a figure it kept put such a
    // channel on standby at once in the testbed).
    let wires = vec![Wire::new(2400.0, 750), Wire::new(2400.0, 750)];
    let mut pair = Pair::new(BondConfig::new(vec![2400; 2]), wires);
    pair.forward[1].loss_every = Some(20);
    let every = Some(secs(0.2));
    let next = pair.run(secs(60.0), 100, every, 0);
    let before = pair.a.channels()[1].loss;
    assert!(before > 0.02, "the first call's loss is seen: {before}");
    pair.forward[1].loss_every = None;
    pair.drop_call(1, secs(60.0), secs(115.0));
    pair.a
        .channel_failed(pair.now, 1, "the network reports its peer unreachable".into());
    pair.b
        .channel_failed(pair.now, 1, "the network reports its peer unreachable".into());
    pair.run(secs(130.0), 100, every, next);
    let back = pair
        .events
        .iter()
        .find(|e| e.channel == 1 && e.at > secs(60.0) && e.to == ChannelState::Up)
        .unwrap_or_else(|| panic!("{:?}", pair.events));
    assert!(back.at < secs(117.0), "{back:?}");
    let after = pair.a.channels()[1].loss;
    assert!(after < 0.005, "afresh: {after} (before the drop {before})");
}

#[test]
fn a_lightly_used_jittery_channel_keeps_its_rate() {
    // The answering bond's channels carry only its probes and answers
    // (at 2400 bit/s, one each every 10 s), with up to 6 s of jitter:
    // long round trips that are no queue, and deliveries that are what
    // the channels were given, not what they carry. Its estimates must
    // stay where they were configured (taking long round trips for a
    // queue, they fell to 38 bit/s).
    let mut wires = vec![Wire::new(2400.0, 1500), Wire::new(2400.0, 600)];
    for wire in &mut wires {
        wire.jitter = secs(6.0);
    }
    let mut pair = Pair::new(BondConfig::new(vec![2400; 2]), wires);
    pair.run(secs(1200.0), 100, Some(secs(1.0)), 0);
    for channel in pair.b.channels() {
        assert!(
            channel.rate_bps > 2000.0,
            "{:?}",
            pair.b.channels().iter().map(|c| c.rate_bps).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_framing_it_is_told_of_keeps_a_channel_of_small_packets_from_queueing() {
    // Two 2400 bit/s circuits whose line adds 8 bytes to every packet,
    // offered 40-byte packets beyond what they carry: the bond keeps each
    // channel's queue to its bound (half a second) by its account, and the
    // line holds what the account says only if the account counts the
    // framing too (without it, a sixth of every packet's line time goes
    // unseen and the modems' queues grow until probes correct them).
    let worst_queue = |framing_bytes: u32| {
        let mut wires = vec![Wire::new(2400.0, 300), Wire::new(2400.0, 300)];
        for wire in &mut wires {
            wire.framing = 8;
        }
        let mut config = BondConfig::new(vec![2400, 2400]);
        config.framing_bytes = framing_bytes;
        let mut pair = Pair::new(config, wires);
        let mut next = pair.run(secs(20.0), 40, Some(secs(0.05)), 0);
        let mut worst = Duration::ZERO;
        for second in 21..120 {
            next = pair.run(secs(f64::from(second)), 40, Some(secs(0.05)), next);
            for wire in &pair.forward {
                worst = worst.max(wire.free_at.saturating_sub(pair.now));
            }
        }
        worst
    };
    let (told, untold) = (worst_queue(8), worst_queue(0));
    println!("worst queue: told {told:?}, not told {untold:?}");
    assert!(told < secs(0.7), "{told:?}");
    assert!(untold > secs(1.0), "{untold:?}");
}

#[test]
fn what_the_bond_holds_slows_its_senders() {
    // One 64 kbit/s channel: with nothing held, the senders are asked for
    // what it carries; a 1500-byte packet held (0.19 s of it) asks for
    // 0.19 / 2 s less; a long hold, at most a quarter less. (The channel
    // takes nothing before its first probe is answered: what is sent
    // stays held.)
    let mut bond = Bond::new(BondConfig::new(vec![64_000]), Duration::ZERO).unwrap();
    let carried = bond.up_rate_bps() as f64;
    assert_eq!(bond.sender_rate_bps(), bond.up_rate_bps());
    bond.send(vec![0x45; 1500]).unwrap();
    let expected = carried * (1.0 - 1500.0 * 8.0 / carried / 2.0);
    assert!(
        (bond.sender_rate_bps() as f64 - expected).abs() < 2.0,
        "{}",
        bond.sender_rate_bps()
    );
    for _ in 0..20 {
        bond.send(vec![0x45; 1500]).unwrap();
    }
    assert_eq!(bond.sender_rate_bps(), (carried * 0.75) as u64);
    assert_eq!(bond.up_rate_bps() as f64, carried, "the channels carry as much");
}
