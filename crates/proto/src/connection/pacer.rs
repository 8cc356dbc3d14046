//! A connection's pacer: its share of its route's rate.
//!
//! A route's rate is one budget for all the connections on it (as the
//! reference gateway's per-route bucket), not a rate for each: 35
//! connections each pacing at a 680 kbit/s route's rate offer it 35 times
//! what it carries, fill its queue and resend a third of what they
//! deliver. So the connections an endpoint has on one route draw on one
//! [`TokenBucket`] ([`RateBudget`]), and take turns: when the bucket
//! cannot pay for a packet, a connection with data to send joins a queue,
//! and once the bucket can, the connection at the head of the queue sends
//! first. Turns are by packet, so connections sending full-sized segments
//! share the rate evenly and none starves however many there are. Pure
//! ACKs do not queue (they are small and delaying them by a turn of every
//! other connection would stretch their senders' round trips), but are
//! charged like anything else.
//!
//! The order of the turns is the route's [`RateOrder`]: in the order the
//! connections came, or the connection with the least still to deliver
//! first (each tells its backlog as it asks for a turn).
//!
//! A route whose rate is `auto` measures what its path carries from the
//! ACKs of all its connections and paces at that ([`AutoRate`]).
//!
//! A route may follow what the path under it says it carries now
//! ([`PathCapacity`]: a bundle, the sum of its channels that are up): its
//! rate, configured or measured, is then never above that, so a route
//! paced for three circuits does not fill the queue of the two left when
//! one drops its call.
//!
//! A connection that was queued may have nothing to send when its turn
//! comes (its window closed meanwhile); a head that does not take its turn
//! within [`TURN_GRACE`] of the bucket being able to pay loses it, so the
//! queue never waits on it for longer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::auto_rate::AutoRate;
use super::handshake::initial_window;
use super::token_bucket::TokenBucket;
use crate::config::{Config, MAX_RATE_BPS, RateOrder};
use crate::time::Instant;

/// How long the head of the queue has to take its turn once the bucket can
/// pay for it, before the next connection may go instead: long enough for a
/// real driver's timer to fire late.
const TURN_GRACE: Duration = Duration::from_millis(2);

/// What a paced packet carries, which decides whether it takes a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paced {
    /// Data, a retransmission or a probe: in turn.
    Data,
    /// A pure ACK: whenever the bucket can pay.
    Ack,
}

/// What the path under a route carries now, bit/s, as the layer below it
/// knows (a bundle of channels: the sum of the rates of those that are
/// up). Shared: the path sets it, the routes that follow it read it as
/// they pace.
#[derive(Debug, Clone, Default)]
pub struct PathCapacity(Arc<AtomicU64>);

impl PathCapacity {
    /// A capacity not known yet.
    pub fn new() -> PathCapacity {
        PathCapacity::default()
    }

    /// The path carries `rate_bps` now (0: nothing; a route that follows
    /// it then paces at 1 bit/s until it carries again).
    pub fn set(&self, rate_bps: u64) {
        self.0.store(rate_bps.max(1), Ordering::Relaxed);
    }

    /// What the path carries, bit/s, once it has been set.
    pub fn get(&self) -> Option<u64> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            rate => Some(rate),
        }
    }
}

/// One route's rate, shared by the connections that hold a clone of it.
#[derive(Debug, Clone)]
pub struct RateBudget(Arc<Mutex<Turns>>);

/// A connection held back: who, with how much still to deliver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiter {
    member: u64,
    backlog: u64,
}

#[derive(Debug)]
struct Turns {
    bucket: TokenBucket,
    order: RateOrder,
    /// Connections held back, in the order they came.
    waiting: VecDeque<Waiter>,
    /// When the bucket could first pay for the head of `waiting` while the
    /// head had not yet come for it.
    head_due_since: Option<Instant>,
    /// The size of the last packet charged: the wait of the connections
    /// behind the head is estimated in packets of this size.
    last_packet: usize,
    next_member: u64,
    /// The measured rate the bucket follows, for a route whose rate is
    /// `auto`.
    auto: Option<AutoRate>,
    /// The route's rate before the path's capacity bounds it: the
    /// configured one, or what `auto` measured.
    wanted_bps: u64,
    /// What the path under it says it carries, and what it said when the
    /// bucket's rate was last set.
    path: Option<(PathCapacity, Option<u64>)>,
}

impl RateBudget {
    /// A budget of `rate_bps` on a link that adds `framing_bytes` to every
    /// packet, its turns in `order`, its bucket full at `now`.
    pub fn new(rate_bps: u64, framing_bytes: u32, order: RateOrder, now: Instant) -> RateBudget {
        RateBudget(Arc::new(Mutex::new(Turns {
            bucket: TokenBucket::new(rate_bps, framing_bytes, now),
            order,
            waiting: VecDeque::new(),
            head_due_since: None,
            last_packet: 1500,
            next_member: 0,
            auto: None,
            wanted_bps: rate_bps,
            path: None,
        })))
    }

    /// Paces no faster than `path` says the path carries, from `now`
    /// (configured or measured, the route's rate is bounded by it).
    pub fn follow(&self, path: PathCapacity, now: Instant) {
        let mut turns = lock(&self.0);
        turns.path = Some((path, None));
        turns.set_rate(now);
    }

    /// The budget of a route as `config` describes it, if it has a rate:
    /// a configured one, or `auto` (starting at an initial window over a
    /// second, RFC 6298's first RTO, until the first RTT is measured).
    pub fn for_config(config: &Config, now: Instant) -> Option<RateBudget> {
        let (framing, order) = (config.rate_framing_bytes, config.rate_order);
        if config.rate_auto {
            let ceiling = config.rate_bps.unwrap_or(MAX_RATE_BPS);
            let smss = u64::from(config.mtu.saturating_sub(40));
            let auto = AutoRate::new(initial_window(config, smss), config.rate_min_bps, ceiling, now);
            let budget = RateBudget::new(auto.pacing_bps(), framing, order, now);
            lock(&budget.0).auto = Some(auto);
            return Some(budget);
        }
        config
            .rate_bps
            .map(|rate| RateBudget::new(rate, framing, order, now))
    }

    /// Connections drawing on this budget.
    pub fn members(&self) -> usize {
        // The endpoint's handle is one of the references.
        Arc::strong_count(&self.0).saturating_sub(1)
    }

    pub(crate) fn join(&self) -> Pacer {
        let (member, measures) = {
            let mut turns = lock(&self.0);
            turns.next_member += 1;
            (turns.next_member, turns.auto.is_some())
        };
        Pacer {
            budget: self.0.clone(),
            member,
            measures,
        }
    }
}

/// A connection's membership of a route's budget.
#[derive(Debug)]
pub(crate) struct Pacer {
    budget: Arc<Mutex<Turns>>,
    member: u64,
    /// The route's rate is `auto`: ACKs tell it of the path. Known when
    /// joining, so that the ACKs of a fixed rate's route take no lock.
    measures: bool,
}

impl Pacer {
    /// When this connection's next packet may go: `now`, in which case it
    /// has taken its turn and must send, or a later instant to try again.
    /// `backlog` is what it still has to deliver, in bytes.
    pub(crate) fn ready_at(&mut self, now: Instant, paced: Paced, backlog: u64) -> Instant {
        let waiter = Waiter {
            member: self.member,
            backlog,
        };
        lock(&self.budget).ready_at(waiter, now, paced)
    }

    /// Takes the credit of a packet of `bytes` (IP header included) that
    /// is being sent with `payload` bytes of data, and of the link's
    /// framing around it.
    pub(crate) fn consume(&mut self, now: Instant, bytes: usize, payload: usize) {
        let mut turns = lock(&self.budget);
        if payload == 0 && turns.acks_unpaced() {
            // Not held back (`ready_at`), so not charged either: a debt of
            // ACKs at a first guess would hold back the route's first data.
            return;
        }
        turns.bucket.consume(now, bytes);
        turns.last_packet = bytes;
        let wire = bytes + turns.bucket.framing_bytes();
        if let Some(auto) = turns.auto.as_mut() {
            auto.on_sent(wire, payload);
        }
    }

    /// An ACK told of payload bytes the path `delivered` and `lost`, with
    /// the RTT of a segment that arrived with it: a route whose rate is
    /// `auto` measures its path by them.
    pub(crate) fn on_delivery(&mut self, now: Instant, delivered: u64, lost: u64, rtt: Option<Duration>) {
        if !self.measures {
            return;
        }
        let mut turns = lock(&self.budget);
        let Turns { bucket, auto, .. } = &mut *turns;
        let Some(auto) = auto.as_mut() else {
            return;
        };
        if bucket.take_idle() {
            auto.on_idle();
        }
        auto.on_ack(now, delivered, lost, rtt);
        turns.wanted_bps = auto.pacing_bps();
        turns.set_rate(now);
    }

    /// The route's rate now, bit/s, and for an `auto` route the path's rate
    /// as last measured.
    pub(crate) fn rates(&self) -> (u64, Option<u64>) {
        let turns = lock(&self.budget);
        (
            turns.bucket.rate_bps(),
            turns.auto.as_ref().map(AutoRate::path_bps),
        )
    }
}

impl Drop for Pacer {
    /// A connection that is gone leaves the queue.
    fn drop(&mut self) {
        let mut turns = lock(&self.budget);
        if turns.head() == Some(self.member) {
            turns.head_due_since = None;
        }
        let member = self.member;
        turns.waiting.retain(|w| w.member != member);
    }
}

impl Turns {
    /// An `auto` route that has carried only ACKs has nothing to measure
    /// its path by: its rate, still the first guess, neither holds back
    /// nor charges the ACKs of the data coming the other way.
    fn acks_unpaced(&self) -> bool {
        self.auto.as_ref().is_some_and(|auto| !auto.has_sent_data())
    }

    /// The bucket's rate: the route's, bounded by what the path under it
    /// says it carries now.
    fn set_rate(&mut self, now: Instant) {
        let capacity = self.path.as_mut().and_then(|(path, seen)| {
            *seen = path.get();
            *seen
        });
        let rate = capacity.map_or(self.wanted_bps, |c| c.min(self.wanted_bps));
        if rate != self.bucket.rate_bps() {
            self.bucket.set_rate(now, rate);
        }
    }

    fn ready_at(&mut self, waiter: Waiter, now: Instant, paced: Paced) -> Instant {
        if self.path.as_ref().is_some_and(|(path, seen)| path.get() != *seen) {
            self.set_rate(now);
        }
        if paced == Paced::Ack && self.acks_unpaced() {
            return now;
        }
        let payable_at = self.bucket.ready_at(now);
        if paced == Paced::Ack {
            return payable_at;
        }
        self.queue(waiter);
        if payable_at > now {
            // Every connection in the queue looks again when the bucket
            // can pay, not when its place would come if all ahead of it
            // took theirs: one ahead that leaves the queue must not leave
            // the next asleep at its turn (a real driver's timers fire
            // late, and a head that is late by more than the grace loses
            // its turn).
            return payable_at;
        }
        while let Some(head) = self.head() {
            if head == waiter.member {
                self.leave(head);
                return now;
            }
            let since = *self.head_due_since.get_or_insert(now);
            if now < since + TURN_GRACE {
                // Again once the head has had time to send, or when its
                // grace runs out.
                return (since + TURN_GRACE).min(now + self.bucket.time_of(self.last_packet));
            }
            // The head let its turn pass.
            self.leave(head);
        }
        now
    }

    /// The connection whose turn it is: the first to come, or with
    /// [`RateOrder::Shortest`] the one with the least to deliver (the
    /// first to come of those).
    fn head(&self) -> Option<u64> {
        let head = match self.order {
            RateOrder::Turns => self.waiting.front(),
            RateOrder::Shortest => self.waiting.iter().min_by_key(|w| w.backlog),
        };
        head.map(|w| w.member)
    }

    fn leave(&mut self, member: u64) {
        self.waiting.retain(|w| w.member != member);
        self.head_due_since = None;
    }

    /// Puts `waiter` in the queue, or tells the queue its new backlog.
    fn queue(&mut self, waiter: Waiter) {
        match self.waiting.iter_mut().find(|w| w.member == waiter.member) {
            Some(queued) => queued.backlog = waiter.backlog,
            None => self.waiting.push_back(waiter),
        }
    }
}

fn lock(turns: &Mutex<Turns>) -> MutexGuard<'_, Turns> {
    // A panic elsewhere while the lock was held leaves nothing half done
    // here that matters more than pacing on.
    turns.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    /// Runs `senders` connections that always have a full-sized packet to
    /// send on one budget for `duration`, each polling when its pacer says;
    /// the packets each sent.
    fn saturate(budget: &RateBudget, senders: usize, duration: Duration) -> Vec<u64> {
        let mut pacers: Vec<Pacer> = (0..senders).map(|_| budget.join()).collect();
        let mut wake = vec![Instant::ZERO; senders];
        let mut sent = vec![0u64; senders];
        let end = Instant::ZERO + duration;
        loop {
            let (i, &now) = wake.iter().enumerate().min_by_key(|&(_, at)| *at).unwrap();
            if now >= end {
                return sent;
            }
            let ready = pacers[i].ready_at(now, Paced::Data, 1 << 20);
            if ready == now {
                pacers[i].consume(now, 1500, 1448);
                sent[i] += 1;
            } else {
                assert!(ready > now, "a wake-up in the past");
                wake[i] = ready;
            }
        }
    }

    #[test]
    fn connections_on_one_route_share_its_rate_evenly() {
        // 680 kbit/s for 60 s: 3400 packets of 1500 bytes in all.
        let budget = RateBudget::new(680_000, 0, RateOrder::Turns, Instant::ZERO);
        let sent = saturate(&budget, 35, Duration::from_secs(60));
        let total: u64 = sent.iter().sum();
        assert!(
            (3400..=3402).contains(&total),
            "the route's rate, not 35 times it: {total}"
        );
        let (least, most) = (sent.iter().min().unwrap(), sent.iter().max().unwrap());
        // In turn, one packet each: the first connection's packet before
        // any queue formed and the last round cut short are the only
        // differences.
        assert!(most - least <= 2, "in turn, one packet each: {sent:?}");
    }

    /// Packets of 1500 bytes one connection that always has data sends
    /// from `from` to `to`, polling when its pacer says.
    fn sent_between(pacer: &mut Pacer, from: Instant, to: Instant) -> u64 {
        let (mut now, mut sent) = (from, 0);
        while now < to {
            let ready = pacer.ready_at(now, Paced::Data, 1 << 20);
            if ready == now {
                pacer.consume(now, 1500, 1448);
                sent += 1;
            } else {
                now = ready;
            }
        }
        sent
    }

    #[test]
    fn a_route_that_follows_its_path_paces_at_no_more_than_the_path_carries() {
        // 12 Mbit/s configured, a packet a millisecond; the path says what
        // it carries as channels come and go.
        let budget = RateBudget::new(12_000_000, 0, RateOrder::Turns, Instant::ZERO);
        let path = PathCapacity::new();
        budget.follow(path.clone(), Instant::ZERO);
        let mut pacer = budget.join();
        let second = |s: u64| Instant::ZERO + Duration::from_secs(s);
        // Not known yet: the configured rate.
        let unknown = sent_between(&mut pacer, second(0), second(1));
        path.set(6_000_000);
        let halved = sent_between(&mut pacer, second(1), second(2));
        // More than configured: the configured rate still bounds it.
        path.set(24_000_000);
        let more = sent_between(&mut pacer, second(2), second(3));
        path.set(0);
        let none = sent_between(&mut pacer, second(3), second(4));
        assert!((1000..=1012).contains(&unknown), "{unknown}");
        assert!((495..=512).contains(&halved), "{halved}");
        assert!((995..=1012).contains(&more), "{more}");
        assert!(none <= 2, "a path that carries nothing: {none}");
    }

    #[test]
    fn shortest_first_sends_the_smallest_backlog_before_the_others() {
        // 12 Mbit/s: a 1500-byte packet a millisecond. a has 100 kB to
        // deliver, b 3 kB; both wait for the bucket.
        for (order, first) in [(RateOrder::Turns, "a"), (RateOrder::Shortest, "b")] {
            let budget = RateBudget::new(12_000_000, 0, order, Instant::ZERO);
            let (mut a, mut b) = (budget.join(), budget.join());
            a.consume(Instant::ZERO, 16_500, 16_000); // 11 ms of debt, less the bucket's 10
            assert_eq!(a.ready_at(Instant::ZERO, Paced::Data, 100_000), at_ms(1));
            assert_eq!(b.ready_at(Instant::ZERO, Paced::Data, 3_000), at_ms(1));
            // Once the bucket can pay, the one whose turn it is not asks
            // first, and must wait; then the other goes.
            let goes =
                |pacer: &mut Pacer, backlog| pacer.ready_at(at_ms(1), Paced::Data, backlog) == at_ms(1);
            let (early, late) = if first == "a" {
                (goes(&mut b, 3_000), goes(&mut a, 100_000))
            } else {
                (goes(&mut a, 100_000), goes(&mut b, 3_000))
            };
            assert_eq!((early, late), (false, true), "{order:?}: {first} first");
        }
    }

    #[test]
    fn a_lone_connection_paces_at_the_whole_rate() {
        let budget = RateBudget::new(12_000_000, 0, RateOrder::Turns, Instant::ZERO);
        let sent = saturate(&budget, 1, Duration::from_secs(1));
        // 1000 packets a second, and the full bucket's 10 ms at the start.
        assert_eq!(sent, vec![1010]);
    }

    #[test]
    fn a_head_that_lets_its_turn_pass_holds_the_others_for_the_grace_only() {
        let budget = RateBudget::new(120_000, 0, RateOrder::Turns, Instant::ZERO);
        let (mut a, mut b) = (budget.join(), budget.join());
        a.consume(Instant::ZERO, 1500, 1448); // 100 ms of debt, less the bucket's 10
        let due = a.ready_at(Instant::ZERO, Paced::Data, 1 << 20);
        assert_eq!(due, at_ms(90), "a queues at the head");
        let b_due = b.ready_at(Instant::ZERO, Paced::Data, 1 << 20);
        assert_eq!(b_due, at_ms(90), "b looks again when the bucket can pay too");
        // a never comes back; b, asking when the bucket can pay, waits
        // out a's grace, then goes.
        assert_eq!(b.ready_at(at_ms(90), Paced::Data, 1 << 20), at_ms(92));
        assert_eq!(b.ready_at(at_ms(92), Paced::Data, 1 << 20), at_ms(92));
    }

    #[test]
    fn an_auto_route_that_has_sent_no_data_neither_holds_nor_charges_its_acks() {
        let config = Config {
            rate_auto: true,
            ..Config::default()
        };
        let budget = RateBudget::for_config(&config, Instant::ZERO).unwrap();
        let mut pacer = budget.join();
        for _ in 0..10_000 {
            assert_eq!(pacer.ready_at(Instant::ZERO, Paced::Ack, 0), Instant::ZERO);
            pacer.consume(Instant::ZERO, 52, 0);
        }
        // The first data goes at once, with no debt of ACKs before it.
        assert_eq!(pacer.ready_at(Instant::ZERO, Paced::Data, 32), Instant::ZERO);
    }

    #[test]
    fn acks_do_not_wait_for_turns_and_a_connection_gone_leaves_the_queue() {
        let budget = RateBudget::new(120_000, 0, RateOrder::Turns, Instant::ZERO);
        let (mut a, mut b, mut c) = (budget.join(), budget.join(), budget.join());
        a.consume(Instant::ZERO, 1500, 1448);
        a.ready_at(Instant::ZERO, Paced::Data, 1 << 20);
        b.ready_at(Instant::ZERO, Paced::Data, 1 << 20);
        assert_eq!(
            c.ready_at(at_ms(90), Paced::Ack, 1 << 20),
            at_ms(90),
            "an ACK goes when it can be paid"
        );
        drop(a);
        assert_eq!(
            b.ready_at(at_ms(90), Paced::Data, 1 << 20),
            at_ms(90),
            "b is the head now"
        );
        assert_eq!(budget.members(), 2);
    }
}
