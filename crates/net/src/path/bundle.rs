//! A bundle (docs/bonding.md, "Real bundles"): one path over several UDP
//! channels, each its own local address and peer (a modem's circuit, a
//! radio, an interface of its own), striped by the bonding scheduler
//! (`scps_bond::Bond`): in proportion to what each channel delivers, never
//! into one it believes down, a marginal one on standby. The scheduler is
//! the simulator's, sans-IO; this path gives it the time, the sockets and
//! what arrives.
//!
//! Every datagram on a channel (the IP packets and the scheduler's probes
//! and answers) carries the CRC-32C trailer of [`crate::frame_check`]:
//! both ends are ours, so a datagram without a matching one is damaged,
//! counted and dropped. Each channel's socket is connected to its peer,
//! so the kernel drops datagrams from anyone else. Between two gateways
//! ([`BundlePath::secured`]) every datagram on every channel is sealed by
//! one secure link instead (`secured.rs`), whose replay window takes the
//! channels' reordering: what it does not authenticate reaches neither
//! the scheduler nor the engine. Its own messages go on the channels in
//! turn, so that one down does not hold a handshake up; an answer to the
//! peer's goes back on the channel its initiation came by.
//!
//! A channel whose socket fails (its interface gone, its peer's port
//! closed) is marked down with the error as the reason; its probes go on,
//! and bring it back when they are answered. Every state change is logged,
//! kept for [`BundleMonitor`], and run through the hook command if one is
//! given (a modem manager hangs up and redials a marginal circuit).

use std::future::poll_fn;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use nix::sys::socket::MsgFlags;
use scps_bond::{Bond, BondConfig, BondStats, ChannelReport, Event};
use scps_config::bundle::Bundle;
use scps_proto::PathCapacity;
use scps_secure::{Opened, Unsealed};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use super::batch::{RecvBatch, SLOT_BYTES};
use super::icmp_reports::{self, SentDatagrams};
use super::secured::{LinkSecurity, Secured, sleep_until};
use super::udp::route_source;
use super::{PacketPath, would_block};
use crate::error::NetError;
use crate::frame_check;

/// How long after an ignored ICMP report an error it left pending on the
/// socket is still taken as its.
const REPORT_LEFTOVER: Duration = Duration::from_secs(1);

/// Where one channel of a bundle runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleChannelAddrs {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    /// The interface its datagrams leave by (SO_BINDTODEVICE), whatever
    /// the routing table says.
    pub device: Option<String>,
}

/// A channel's state change, as the path reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleEvent {
    /// Since the path opened.
    pub at: Duration,
    pub channel: usize,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub from: &'static str,
    pub to: &'static str,
    pub why: String,
}

/// What a bundle has seen, for reports and metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BundleReport {
    /// Each channel's state and figures, in order.
    pub channels: Vec<ChannelReport>,
    /// Each channel's local address (with the port the kernel chose) and
    /// peer, in order.
    pub addrs: Vec<(SocketAddr, SocketAddr)>,
    /// Every state change, oldest first.
    pub events: Vec<BundleEvent>,
    pub bond: BondStats,
    /// Datagrams whose frame check failed.
    pub damaged: u64,
    /// Datagrams a channel's socket had no room for (lost, as on a full
    /// modem).
    pub send_full: u64,
    /// Hook commands that could not be started.
    pub hook_failures: u64,
    /// ICMP reports about a channel's datagrams that quote none it sent
    /// lately, or too little to tell: forged, or stale; ignored.
    pub icmp_ignored: u64,
}

/// A live view of a bundle: what it reports now, from any task.
#[derive(Debug, Clone, Default)]
pub struct BundleMonitor(Arc<Mutex<BundleReport>>);

impl BundleMonitor {
    pub fn report(&self) -> BundleReport {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, BundleReport> {
        // A panic elsewhere while holding it leaves figures, still worth
        // reading.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[derive(Debug)]
struct Channel {
    socket: UdpSocket,
    addrs: BundleChannelAddrs,
    /// What it sent lately, for the ICMP reports about it to quote.
    sent: SentDatagrams,
    /// When a report was last ignored, and the error it left pending on
    /// the socket.
    ignored_report: Option<(Duration, i32)>,
}

#[derive(Debug)]
pub struct BundlePath {
    bond: Bond,
    channels: Vec<Channel>,
    /// The bond's clock starts here.
    origin: tokio::time::Instant,
    local_addrs: Vec<IpAddr>,
    hook: Option<String>,
    monitor: BundleMonitor,
    /// What the channels that are up carry, for the endpoint's routes.
    capacity: PathCapacity,
    /// Frame check failures since the driver last asked.
    damaged: u64,
    /// A datagram being received, or sealed to send.
    buf: Vec<u8>,
    /// The secure link that seals every datagram, between two gateways.
    secure: Option<Secured>,
    /// The channel the secure link's next message of its own goes by.
    next_control_channel: usize,
}

/// The path over a configured bundle of channels (docs/bonding.md),
/// reporting to `monitor`: a gateway's link (the explicit modes' or the
/// transparent mode's), and `scps send`/`recv`'s. Its state changes are
/// logged and run through its hook by the path itself.
pub fn open_bundle(bundle: &Bundle, monitor: BundleMonitor) -> Result<BundlePath, NetError> {
    let channels: Vec<BundleChannelAddrs> = bundle
        .channels
        .iter()
        .map(|c| BundleChannelAddrs {
            local: c.local,
            peer: c.peer,
            device: c.device.clone(),
        })
        .collect();
    BundlePath::open(&channels, bundle.bond.clone(), bundle.hook.clone(), monitor)
}

impl BundlePath {
    /// Binds every channel (refused before anything runs: a channel that
    /// cannot bind, a bundle the scheduler refuses), reporting to
    /// `monitor` (made beforehand: a gateway serves its metrics before its
    /// link opens). The endpoint's inner address is the first channel's
    /// local one (or, unspecified, the address the kernel would use
    /// towards its peer).
    pub fn open(
        channels: &[BundleChannelAddrs],
        config: BondConfig,
        hook: Option<String>,
        monitor: BundleMonitor,
    ) -> Result<BundlePath, NetError> {
        let origin = tokio::time::Instant::now();
        let bond = Bond::new(config, Duration::ZERO)
            .map_err(|e| NetError::PathFailed(format!("the bundle's settings: {e}")))?;
        if bond.channel_count() != channels.len() {
            return Err(NetError::PathFailed(format!(
                "the bundle's settings have rates for {} channels, but {} were given",
                bond.channel_count(),
                channels.len()
            )));
        }
        let sockets = channels
            .iter()
            .map(|addrs| {
                let socket = channel_socket(addrs)?;
                // Reported with the port the kernel chose.
                let local = socket
                    .local_addr()
                    .map_err(NetError::io("cannot read a channel's address"))?;
                Ok(Channel {
                    socket,
                    addrs: BundleChannelAddrs {
                        local,
                        ..addrs.clone()
                    },
                    sent: SentDatagrams::new(),
                    ignored_report: None,
                })
            })
            .collect::<Result<Vec<_>, NetError>>()?;
        let first = &channels[0];
        let inner = match first.local.ip() {
            ip if ip.is_unspecified() => route_source(first.local, first.peer)?,
            ip => ip,
        };
        let mut path = BundlePath {
            bond,
            channels: sockets,
            origin,
            local_addrs: vec![inner],
            hook,
            monitor,
            capacity: PathCapacity::new(),
            damaged: 0,
            buf: vec![0; SLOT_BYTES],
            secure: None,
            next_control_channel: 0,
        };
        path.publish();
        Ok(path)
    }

    /// Seals every datagram on every channel with the secure link to the
    /// far gateway (see the module's documentation).
    pub fn secured(mut self, security: LinkSecurity) -> Result<BundlePath, NetError> {
        self.secure = Some(Secured::new(security)?);
        Ok(self)
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Sends what the scheduler has for the channels now: answers,
    /// probes, and data a channel can take.
    fn pump(&mut self, now: Duration) {
        while let Some((index, datagram)) = self.bond.poll_transmit(now) {
            self.buf.clear();
            match &mut self.secure {
                // Without a session yet, dropped (and counted): the bond
                // and the engine repeat what they must.
                Some(secure) => {
                    if !secure.seal(&datagram, &mut self.buf, Unsealed::Drop) {
                        continue;
                    }
                }
                None => frame_check::append(&datagram, &mut self.buf),
            }
            self.send_on(now, index);
        }
        self.pump_secure(now);
    }

    /// Sends the secure link's own messages, each on the next channel.
    fn pump_secure(&mut self, now: Duration) {
        let Some(secure) = &mut self.secure else {
            return;
        };
        secure.handle_timeout();
        let mut outgoing = Vec::new();
        while let Some(datagram) = secure.poll_transmit() {
            outgoing.push(datagram);
        }
        secure.publish();
        for datagram in outgoing {
            let index = self.next_control_channel % self.channels.len();
            self.next_control_channel = index + 1;
            self.buf = datagram;
            self.send_on(now, index);
        }
    }

    /// Sends `self.buf` on channel `index`.
    fn send_on(&mut self, now: Duration, index: usize) {
        // Straight to the kernel: tokio's `try_send` refuses until its
        // reactor has seen the socket writable, which a channel just
        // opened has not, and its first probe would be lost.
        let sent = nix::sys::socket::send(
            self.channels[index].socket.as_raw_fd(),
            &self.buf,
            MsgFlags::MSG_DONTWAIT,
        );
        match sent.map_err(std::io::Error::from) {
            Ok(_) => self.channels[index].sent.sent(&self.buf),
            Err(err) if would_block(&err) => self.monitor.lock().send_full += 1,
            Err(err) => self.send_failed(now, index, &err),
        }
    }

    fn failed(&mut self, now: Duration, index: usize, err: &std::io::Error) {
        self.bond
            .channel_failed(now, index, format!("its socket failed: {err}"));
    }

    /// The socket of channel `index` holds `err`, found when asked for it
    /// or by a read: what ICMP reported (see [`Self::read_reports`]), or
    /// "packet too big" (path MTU discovery's), or the socket's own
    /// failure.
    fn heard_error(&mut self, now: Duration, index: usize, err: &std::io::Error) {
        if !self.read_reports(now, index, err) && err.raw_os_error() != Some(nix::libc::EMSGSIZE) {
            self.failed(now, index, err);
        }
    }

    /// A send on channel `index` failed with `err`: the error an ICMP
    /// report left pending (see [`Self::read_reports`]), or the socket's
    /// own failure (a datagram too big for the route is one: it did not
    /// go).
    fn send_failed(&mut self, now: Duration, index: usize, err: &std::io::Error) {
        if !self.read_reports(now, index, err) {
            self.failed(now, index, err);
        }
    }

    /// Empties channel `index`'s error queue: a peer reported unreachable
    /// in a report that quotes a datagram the channel sent takes the
    /// channel down; one that does not is counted and ignored. Whether
    /// `err` is what such a report left pending on the socket (read now,
    /// or within [`REPORT_LEFTOVER`] of an ignored one: a report can reach
    /// the queue before its error reaches the socket).
    fn read_reports(&mut self, now: Duration, index: usize, err: &std::io::Error) -> bool {
        let channel = &mut self.channels[index];
        let (believed, ignored): (Vec<_>, Vec<_>) = icmp_reports::take_unreachable(&channel.socket)
            .into_iter()
            .partition(|report| channel.sent.quotes_one(&report.quoted));
        if let Some(last) = ignored.last() {
            let mut report = self.monitor.lock();
            // The first is news; a flood of them is a count.
            if report.icmp_ignored == 0 {
                tracing::warn!(
                    channel = index,
                    report = %last,
                    "an ICMP report quotes no datagram the channel sent lately: ignored, \
                     as later ones will be (counted in the bundle's icmp_ignored)"
                );
            }
            report.icmp_ignored += ignored.len() as u64;
            channel.ignored_report = Some((now, last.errno as i32));
        }
        let leftover = channel.ignored_report.take_if(|(at, errno)| {
            err.raw_os_error() == Some(*errno) && now.saturating_sub(*at) <= REPORT_LEFTOVER
        });
        match believed.last() {
            Some(report) => {
                self.bond.channel_failed(
                    now,
                    index,
                    format!("the network reports its peer unreachable: {report}"),
                );
                true
            }
            None => leftover.is_some(),
        }
    }

    /// Reads what has arrived on every channel into `batch`, while it has
    /// room for one more datagram.
    fn read_channels(&mut self, now: Duration, batch: &mut RecvBatch) {
        for index in 0..self.channels.len() {
            // An error the socket holds (an ICMP report about one of its
            // datagrams) does not make it readable: it wakes `wait` as
            // an error, and is asked for here at every wake-up. The
            // error readiness is cleared first, so that one arriving
            // after the question wakes it again.
            let socket = &self.channels[index].socket;
            let _ = socket.try_io(Interest::ERROR, || {
                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
            });
            if let Ok(Some(err)) = socket.take_error() {
                self.heard_error(now, index, &err);
            }
            while batch.buf.len() - batch.used() >= SLOT_BYTES {
                self.buf.resize(SLOT_BYTES, 0);
                match self.channels[index].socket.try_recv(&mut self.buf) {
                    Ok(len) => self.arrived(now, index, len, batch),
                    Err(err) if would_block(&err) => break,
                    // A read returns the error an ICMP report left pending.
                    Err(err) => {
                        self.heard_error(now, index, &err);
                        break;
                    }
                }
            }
        }
    }

    fn arrived(&mut self, now: Duration, index: usize, len: usize, batch: &mut RecvBatch) {
        let datagram = match &mut self.secure {
            Some(secure) => match secure.open(&self.buf[..len]) {
                Opened::Packet(datagram) => datagram.to_vec(),
                Opened::Reply(answer) => {
                    self.buf = answer.to_vec();
                    self.send_on(now, index);
                    return;
                }
                // Counted by the link.
                Opened::Control | Opened::Dropped(_) => return,
            },
            None => {
                let Some(datagram) = frame_check::check_sealed(&self.buf[..len]) else {
                    self.damaged += 1;
                    self.monitor.lock().damaged += 1;
                    return;
                };
                datagram.to_vec()
            }
        };
        if let Some(packet) = self.bond.handle(now, index, datagram) {
            // Room for it was checked before the read.
            batch.append(&packet);
        }
    }

    /// Logs and reports the state changes since last asked, runs the
    /// hook on each, and refreshes the report.
    fn publish(&mut self) {
        let mut report = self.monitor.lock();
        while let Some(event) = self.bond.poll_event() {
            let event = self.describe(event);
            tracing::warn!(
                channel = event.channel,
                local = %event.local,
                peer = %event.peer,
                from = event.from,
                to = event.to,
                why = %event.why,
                "bundle channel changed state"
            );
            if let Some(hook) = &self.hook
                && let Err(err) = run_hook(hook, &event)
            {
                report.hook_failures += 1;
                tracing::warn!(hook, %err, "the bundle's hook could not be started");
            }
            report.events.push(event);
        }
        report.channels = self.bond.channels();
        if report.addrs.is_empty() {
            report.addrs = self
                .channels
                .iter()
                .map(|c| (c.addrs.local, c.addrs.peer))
                .collect();
        }
        report.bond = self.bond.stats().clone();
        self.capacity.set(self.bond.sender_rate_bps());
    }

    fn describe(&self, event: Event) -> BundleEvent {
        let addrs = &self.channels[event.channel].addrs;
        BundleEvent {
            at: event.at,
            channel: event.channel,
            local: addrs.local,
            peer: addrs.peer,
            from: event.from.name(),
            to: event.to.name(),
            why: event.why,
        }
    }

    /// Waits until a channel has something to read or an error to tell,
    /// or the scheduler has something to do.
    async fn wait(&self) {
        let bond_wake = self.bond.next_wake(self.now()).map(|at| self.origin + at);
        let secure_wake = self.secure.as_ref().and_then(Secured::deadline);
        let wake = bond_wake.into_iter().chain(secure_wake).min();
        let sleep = sleep_until(wake);
        let mut sleep = std::pin::pin!(sleep);
        let mut errors: Vec<_> = self
            .channels
            .iter()
            .map(|c| Box::pin(c.socket.ready(Interest::ERROR)))
            .collect();
        poll_fn(|cx| {
            if self
                .channels
                .iter()
                .any(|c| c.socket.poll_recv_ready(cx).is_ready())
                || errors.iter_mut().any(|error| error.as_mut().poll(cx).is_ready())
            {
                return Poll::Ready(());
            }
            sleep.as_mut().poll(cx)
        })
        .await;
    }
}

/// A channel's socket: bound (to its device first, if it has one) and
/// connected to its peer.
fn channel_socket(addrs: &BundleChannelAddrs) -> Result<UdpSocket, NetError> {
    let name = format!("channel {} -> {}", addrs.local, addrs.peer);
    let socket = Socket::new(Domain::for_address(addrs.local), Type::DGRAM, Some(Protocol::UDP))
        .map_err(NetError::io(format!("{name}: cannot create a UDP socket")))?;
    icmp_reports::listen(&socket, addrs.local.is_ipv6())
        .map_err(|e| NetError::io(format!("{name}: cannot listen for ICMP reports"))(e.into()))?;
    if let Some(device) = &addrs.device {
        socket
            .bind_device(Some(device.as_bytes()))
            .map_err(NetError::io(format!("{name}: cannot bind to device {device}")))?;
    }
    socket
        .bind(&addrs.local.into())
        .map_err(NetError::io(format!("{name}: cannot bind")))?;
    socket
        .connect(&addrs.peer.into())
        .map_err(NetError::io(format!("{name}: no route to the peer")))?;
    socket.set_nonblocking(true).map_err(NetError::io(format!(
        "{name}: cannot make the socket non-blocking"
    )))?;
    UdpSocket::from_std(socket.into()).map_err(NetError::io(format!("{name}: cannot register the socket")))
}

/// Starts `sh -c hook` with the change in its environment, without
/// waiting for it (a thread reaps it): a redial takes a minute.
fn run_hook(hook: &str, event: &BundleEvent) -> std::io::Result<()> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(hook)
        .env("SCPS_BUNDLE_CHANNEL", event.channel.to_string())
        .env("SCPS_BUNDLE_LOCAL", event.local.to_string())
        .env("SCPS_BUNDLE_PEER", event.peer.to_string())
        .env("SCPS_BUNDLE_FROM", event.from)
        .env("SCPS_BUNDLE_TO", event.to)
        .env("SCPS_BUNDLE_WHY", &event.why)
        .stdin(std::process::Stdio::null())
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

impl PacketPath for BundlePath {
    fn local_addrs(&self) -> Vec<IpAddr> {
        self.local_addrs.clone()
    }

    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        loop {
            self.try_recv(batch)?;
            if !batch.is_empty() {
                return Ok(());
            }
            self.wait().await;
        }
    }

    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        batch.clear();
        let now = self.now();
        self.read_channels(now, batch);
        self.pump(now);
        self.publish();
        Ok(())
    }

    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        for packet in packets {
            // Full: counted by the bond, as a router's queue drops.
            let _ = self.bond.send(packet.clone());
        }
        let now = self.now();
        self.pump(now);
        self.publish();
        Ok(())
    }

    fn capacity(&self) -> Option<PathCapacity> {
        Some(self.capacity.clone())
    }

    fn take_damaged(&mut self) -> u64 {
        std::mem::take(&mut self.damaged)
    }
}
