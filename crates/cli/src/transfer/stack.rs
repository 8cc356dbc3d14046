//! Which stack carries the test: ours over a TUN device or UDP
//! encapsulation, or the kernel's TCP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use scps_config::Direction;
use scps_config::bundle::{Bundle, BundleChannel};
use scps_config::stack::{RealStack, StackSettings, ToolKeepalive};
use scps_config::sweep::parse_assignment;
use scps_net::{BundleMonitor, BundlePath, Listener, Net, NetOptions, TunPath, UdpPath};
use scps_proto::config::Keepalive;
use tokio::net::{TcpListener, TcpStream};

use scps_workload::report::BundleChannelFigures;

use super::conn::Conn;
use super::kernel_congestion;

#[derive(Debug, Clone)]
pub enum Transport {
    /// Our stack, each IP packet in a UDP datagram; `peer` is the other
    /// end's UDP address (a receiver learns it from what arrives).
    Udp {
        bind: SocketAddr,
        peer: Option<SocketAddr>,
        encapsulation: Encapsulation,
    },
    /// Our stack on a bundle of UDP channels (those of `--channel`, or of
    /// the configuration's `[bundle]`), with a hook command over the
    /// configuration's.
    Bundle { hook: Option<String> },
    /// Our stack on TUN device `name`, answering to `addrs` (each routed to
    /// the device with its prefix).
    Tun { name: String, addrs: Vec<(IpAddr, u8)> },
    /// The kernel's TCP, with this congestion controller (the system's
    /// default if none).
    Tcp { congestion: Option<String> },
}

/// How the UDP path wraps our packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Encapsulation {
    /// Ours: the IP packet and a CRC-32C of it.
    #[default]
    Scps,
    /// The SCPS RI's: an IPv4 packet carrying SCPS-TP as IP protocol 106,
    /// alone in the datagram, UDP port 7168 both ways
    /// (docs/spec/scps-tp-options.md, "The RI's UDP encapsulation").
    Ri,
}

/// The UDP port of the SCPS RI's encapsulation, both ways.
pub const RI_UDP_PORT: u16 = 7168;

impl Transport {
    /// The label of results: which stack, over which path.
    pub fn label(&self) -> &'static str {
        match self {
            Transport::Udp { .. } => "scps-udp",
            Transport::Bundle { .. } => "scps-bundle",
            Transport::Tun { .. } => "scps-tun",
            Transport::Tcp { .. } => "tcp",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StackOptions {
    pub pcap: Option<PathBuf>,
    pub engine: EngineArgs,
    pub connect_timeout: Duration,
    /// Connections a listener holds that are not yet served, handshaking
    /// ones included: beyond it our stack answers SYNs with SYN cookies,
    /// as the kernel does.
    pub backlog: u16,
}

impl StackOptions {
    /// How our stack's driver runs `engine`.
    fn net_options(&self, engine: &RealStack) -> NetOptions {
        let mut options = NetOptions {
            capture: self.pcap.clone(),
            connect_timeout: self.connect_timeout,
            ..NetOptions::default()
        };
        options.endpoint.connection = engine.config.clone();
        options.endpoint.backlog = usize::from(self.backlog);
        options
    }
}

/// The listeners' backlog unless `scps recv --backlog` says.
pub const DEFAULT_BACKLOG: u16 = 128;

/// What configures the engine of our stack: the scenarios' schema
/// (`--config`, `--stack`, `--set`) and the tool's keepalive.
#[derive(Debug, Clone)]
pub struct EngineArgs {
    pub config: Option<PathBuf>,
    pub stack: Option<String>,
    pub sets: Vec<String>,
    pub channels: Vec<BundleChannel>,
    pub keepalive: ToolKeepalive,
}

impl EngineArgs {
    /// Whether anything here configures our stack beyond its defaults.
    fn given(&self) -> bool {
        self.config.is_some() || self.stack.is_some() || !self.sets.is_empty()
    }

    /// Our stack's configuration, sending its data `direction`, on a path
    /// of `path_mtu` unless `link.mtu` says otherwise. Unless a key sizes
    /// the receive buffer, it is autotuned: it starts at `recv_buffer`
    /// and grows with what the application reads per round trip, up to
    /// `recv_buffer_max`, so that a receiver keeps up with a long fat
    /// path without being told its size (`tcp.recv_buffer_auto=false`
    /// keeps the fixed buffer).
    fn resolve(&self, direction: Direction, path_mtu: u16) -> anyhow::Result<RealStack> {
        let text = match &self.config {
            Some(path) => Some(
                scps_config::text_file::read_config_text(path)
                    .with_context(|| format!("cannot read --config {}", path.display()))?,
            ),
            None => None,
        };
        let origin = self.config.as_ref().map(|p| p.display().to_string());
        let sets = self
            .sets
            .iter()
            .map(|text| parse_assignment(text))
            .collect::<Result<Vec<_>, _>>()?;
        let settings = StackSettings {
            file: origin.as_deref().zip(text.as_deref()),
            label: self.stack.as_deref(),
            sets: &sets,
            keepalive: self.keepalive,
            channels: &self.channels,
        };
        let mut stack = settings.resolve(direction, path_mtu)?;
        if !stack.recv_buffer_keyed && stack.config.window_scaling {
            stack.config.recv_buffer_auto = true;
            scps_config::tcp::validate(&stack.config, "tcp")?;
        }
        Ok(stack)
    }

    fn keepalive(&self) -> Keepalive {
        match self.keepalive {
            ToolKeepalive::Default(k) | ToolKeepalive::Given(k) => k,
        }
    }
}

/// Keepalive probes every `every` after as long idle, 3 of them.
pub fn keepalive_every(every: Duration) -> Keepalive {
    Keepalive {
        idle: every,
        interval: every,
        probes: KEEPALIVE_PROBES,
    }
}

#[derive(Debug)]
pub enum Stack {
    /// Our stack; `udp` is the bound UDP address of an encapsulated path,
    /// `label` the protocol label it runs.
    Ours {
        net: Net,
        udp: Option<SocketAddr>,
        bundle: Option<BundleMonitor>,
        label: &'static str,
    },
    Kernel {
        connect_timeout: Duration,
        keepalive: Keepalive,
        congestion: Option<String>,
        backlog: u16,
    },
}

/// Unanswered keepalive probes after which a connection is given up.
const KEEPALIVE_PROBES: u32 = 3;

/// Keepalive on a kernel socket, as on ours, and the same user timeout
/// (TCP_USER_TIMEOUT): a transfer without progress is given up as soon as
/// a silent idle peer would be.
fn kernel_keepalive(stream: &TcpStream, keepalive: Keepalive) -> anyhow::Result<()> {
    let socket = socket2::SockRef::from(stream);
    socket
        .set_tcp_user_timeout(Some(keepalive.silence_kept()))
        .context("cannot set TCP_USER_TIMEOUT")?;
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(keepalive.idle)
        .with_interval(keepalive.interval)
        .with_retries(keepalive.probes);
    socket
        .set_tcp_keepalive(&keepalive)
        .context("cannot set TCP keepalive")
}

/// The largest packet of ours the UDP path carries: what the route to
/// `peer` takes in one IP packet (the kernel refuses a larger datagram
/// rather than fragment it), less the outer headers; without a known
/// route, what one UDP datagram holds.
fn udp_inner_limit(peer: Option<SocketAddr>, overhead: u16) -> u16 {
    const LARGEST_IP_PACKET: u16 = u16::MAX;
    let route_mtu = peer
        .filter(SocketAddr::is_ipv4)
        .and_then(|peer| {
            let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            probe.connect(peer).ok()?;
            nix::sys::socket::getsockopt(&probe, nix::sys::socket::sockopt::IpMtu).ok()
        })
        .and_then(|mtu| u16::try_from(mtu).ok())
        .unwrap_or(LARGEST_IP_PACKET);
    route_mtu - overhead
}

/// Each channel of a bundle as it is now, for a report.
pub fn bundle_figures(monitor: &BundleMonitor) -> Vec<BundleChannelFigures> {
    let report = monitor.report();
    report
        .channels
        .iter()
        .zip(&report.addrs)
        .enumerate()
        .map(|(index, (channel, (local, peer)))| BundleChannelFigures {
            local: local.to_string(),
            peer: peer.to_string(),
            state: channel.state.name().to_owned(),
            sent_bytes: channel.sent_bytes,
            received_bytes: channel.received_bytes,
            rtt_s: channel.srtt.map(|rtt| rtt.as_secs_f64()),
            loss: channel.loss,
            rate_bps: channel.rate_bps,
            changes: report.events.iter().filter(|e| e.channel == index).count() as u64,
        })
        .collect()
}

/// Opens the bundle the engine's configuration names (`--channel`, else
/// `[bundle]`), and the engine's configuration for it: packets that every
/// channel carries in one datagram, a route rate charged the channels'
/// framing.
fn open_bundle(
    options: &StackOptions,
    direction: Direction,
    hook: Option<String>,
) -> anyhow::Result<(BundlePath, BundleMonitor, RealStack)> {
    // The channels are known once the configuration is read; the packet
    // size depends on them, so it is read twice (cheap, and the second
    // reading is the one that counts).
    let probe = options.engine.resolve(direction, 1500)?;
    let Some(bundle) = probe.bundle else {
        bail!("--bundle runs our stack on the channels of --config's [bundle]: the file has none");
    };
    let overhead = udp_overhead(bundle.channels[0].peer, Encapsulation::Scps);
    let limit = bundle
        .channels
        .iter()
        .map(|c| udp_inner_limit(Some(c.peer), overhead))
        .min()
        .unwrap_or(1500 - overhead);
    let mut engine = options.engine.resolve(direction, limit.min(1500 - overhead))?;
    if engine.config.mtu > limit {
        bail!(
            "link.mtu = {}: the bundle's channels carry packets of at most {limit} bytes inside their {overhead} \
             bytes of encapsulation",
            engine.config.mtu
        );
    }
    engine.config.rate_framing_bytes += u32::from(overhead);
    let hook = hook.or_else(|| bundle.hook.clone());
    let monitor = BundleMonitor::default();
    let path = scps_net::open_bundle(&Bundle { hook, ..bundle }, monitor.clone())?;
    Ok((path, monitor, engine))
}

/// Bytes around an encapsulated packet: the outer IP and UDP headers, and
/// in ours the frame check's trailer.
fn udp_overhead(outer: SocketAddr, encapsulation: Encapsulation) -> u16 {
    let headers = if outer.is_ipv4() { 20 + 8 } else { 40 + 8 };
    match encapsulation {
        Encapsulation::Scps => headers + scps_net::frame_check::TRAILER_BYTES as u16,
        Encapsulation::Ri => headers,
    }
}

impl Stack {
    /// Starts the stack (for ours, the driver on the current runtime),
    /// configured for data going `direction` (a sender's forward, a
    /// receiver's return) when a scenario's link gives route rates.
    pub fn start(
        transport: &Transport,
        options: &StackOptions,
        direction: Direction,
    ) -> anyhow::Result<Stack> {
        let mut udp = None;
        let mut bundle = None;
        let (net, engine) = match transport {
            Transport::Tcp { congestion } => {
                if options.pcap.is_some() {
                    bail!("--pcap captures our stack's packets; for kernel TCP use tcpdump");
                }
                if options.engine.given() {
                    bail!(
                        "--config, --stack and --set configure our stack; kernel TCP takes the system's settings and \
                         its congestion control from --tcp=CONTROLLER"
                    );
                }
                if let Some(name) = congestion.as_deref().filter(|name| !name.is_empty()) {
                    kernel_congestion::check(name)?;
                }
                return Ok(Stack::Kernel {
                    connect_timeout: options.connect_timeout,
                    keepalive: options.engine.keepalive(),
                    congestion: congestion.clone().filter(|name| !name.is_empty()),
                    backlog: options.backlog,
                });
            }
            Transport::Udp {
                bind,
                peer,
                encapsulation,
            } => {
                let ri = *encapsulation == Encapsulation::Ri;
                if ri && (!bind.is_ipv4() || peer.is_some_and(|p| !p.is_ipv4())) {
                    bail!("--encapsulation ri carries IPv4 only: the RI's inner header is IPv4");
                }
                let overhead = udp_overhead(peer.unwrap_or(*bind), *encapsulation);
                let limit = udp_inner_limit(*peer, overhead);
                let mut engine = options.engine.resolve(direction, limit.min(1500 - overhead))?;
                if engine.config.mtu > limit {
                    bail!(
                        "link.mtu = {}: the UDP path{} carries packets of at most {limit} bytes inside its {overhead} \
                         bytes of encapsulation",
                        engine.config.mtu,
                        peer.map(|p| format!(" to {}", p.ip())).unwrap_or_default()
                    );
                }
                // The route carries each packet inside outer IP and UDP
                // headers: a pacer that did not charge them would overrun
                // a route rate by their share.
                engine.config.rate_framing_bytes += u32::from(overhead);
                let mut path = UdpPath::bind(*bind, *peer)?;
                if ri {
                    // SCPS-TP on protocol 106 and no trailer, as the RI
                    // sends and expects.
                    path = path.without_frame_check();
                    engine.config.ip_protocol = scps_proto::wire::IPPROTO_SCPS_TP;
                }
                udp = Some(path.local_addr()?);
                (Net::start(path, options.net_options(&engine))?, engine)
            }
            Transport::Bundle { hook } => {
                let (path, monitor, engine) = open_bundle(options, direction, hook.clone())?;
                bundle = Some(monitor);
                (Net::start(path, options.net_options(&engine))?, engine)
            }
            Transport::Tun { name, addrs } => {
                if addrs.is_empty() {
                    bail!("--tun needs at least one --addr ADDRESS/PREFIX for our stack");
                }
                let engine = options.engine.resolve(direction, 1500)?;
                let path = TunPath::create(name, addrs, engine.config.mtu)?;
                (Net::start(path, options.net_options(&engine))?, engine)
            }
        };
        Ok(Stack::Ours {
            net,
            udp,
            bundle,
            label: engine.protocol.label(),
        })
    }

    /// What runs `conn`: our stack's protocol label, or `kernel-` and the
    /// congestion control the kernel gave the connection.
    pub fn label_of(&self, conn: &Conn) -> String {
        match (self, conn) {
            (Stack::Ours { label, .. }, _) => (*label).to_owned(),
            (Stack::Kernel { .. }, Conn::Tcp(stream)) => {
                let controller = kernel_congestion::of(&socket2::SockRef::from(stream));
                format!("kernel-{}", controller.as_deref().unwrap_or("unknown"))
            }
            (Stack::Kernel { .. }, Conn::Scps(_)) => "kernel-unknown".to_owned(),
        }
    }

    /// Where the stack receives, for people and scripts: the bound UDP
    /// address of an encapsulated path.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        match self {
            Stack::Ours { udp, .. } => *udp,
            Stack::Kernel { .. } => None,
        }
    }

    /// Over a bundle, what watches it.
    pub fn bundle(&self) -> Option<BundleMonitor> {
        match self {
            Stack::Ours { bundle, .. } => bundle.clone(),
            Stack::Kernel { .. } => None,
        }
    }

    /// Reads our endpoint's counters from any task (none for the kernel,
    /// whose counters are the host's).
    pub fn watch(&self) -> Option<scps_net::EndpointWatch> {
        match self {
            Stack::Ours { net, .. } => Some(net.watch()),
            Stack::Kernel { .. } => None,
        }
    }

    pub async fn connect(&self, to: SocketAddr) -> anyhow::Result<Conn> {
        match self {
            Stack::Ours { net, .. } => Ok(Conn::Scps(net.connect(to).await?)),
            Stack::Kernel {
                connect_timeout,
                keepalive,
                congestion,
                ..
            } => {
                let socket = if to.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()
                } else {
                    tokio::net::TcpSocket::new_v6()
                }
                .context("cannot create a TCP socket")?;
                if let Some(name) = congestion {
                    kernel_congestion::set(&socket2::SockRef::from(&socket), name)?;
                }
                let stream = tokio::time::timeout(*connect_timeout, socket.connect(to))
                    .await
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "no answer from {to} within {connect_timeout:?}: the peer is unreachable or not listening"
                        )
                    })?
                    .with_context(|| format!("cannot connect to {to}"))?;
                kernel_keepalive(&stream, *keepalive)?;
                Ok(Conn::Tcp(stream))
            }
        }
    }

    /// Accepts connections on `port` at every address of the stack.
    pub fn listen(&self, port: u16) -> anyhow::Result<Acceptor> {
        match self {
            Stack::Ours { net, .. } => {
                let addrs = net.local_addrs();
                let mut listeners = Vec::new();
                if addrs.iter().any(IpAddr::is_ipv4) {
                    listeners.push(net.listen(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port))?);
                }
                if addrs.iter().any(IpAddr::is_ipv6) {
                    listeners.push(net.listen(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port))?);
                }
                Ok(Acceptor::Ours(listeners))
            }
            Stack::Kernel {
                keepalive,
                congestion,
                backlog,
                ..
            } => {
                // IPv6 unspecified also takes IPv4 (as mapped addresses)
                // unless the host has set bindv6only; a host without IPv6
                // gets IPv4 only.
                let (socket, addr) =
                    match socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None) {
                        Ok(socket) => {
                            socket.set_only_v6(false).ok();
                            (socket, SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port))
                        }
                        Err(_) => (
                            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                                .context("cannot create a TCP socket")?,
                            SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
                        ),
                    };
                socket.set_reuse_address(true).ok();
                // Accepted connections inherit the listener's controller.
                if let Some(name) = congestion {
                    kernel_congestion::set(&socket2::SockRef::from(&socket), name)?;
                }
                socket
                    .bind(&addr.into())
                    .with_context(|| format!("cannot listen on TCP port {port}"))?;
                socket
                    .listen(i32::from(*backlog))
                    .with_context(|| format!("cannot listen on TCP port {port}"))?;
                socket.set_nonblocking(true)?;
                Ok(Acceptor::Kernel {
                    listener: TcpListener::from_std(socket.into())?,
                    keepalive: *keepalive,
                })
            }
        }
    }

    /// Lets closing connections finish (briefly), then stops our driver
    /// and writes out the capture.
    pub async fn close(self) -> anyhow::Result<()> {
        if let Stack::Ours { net, .. } = self {
            net.close(Duration::from_secs(2)).await?;
        }
        Ok(())
    }
}

#[derive(Debug)]
pub enum Acceptor {
    Ours(Vec<Listener>),
    Kernel {
        listener: TcpListener,
        keepalive: Keepalive,
    },
}

impl Acceptor {
    /// The port connections are accepted on (the one the system chose, for
    /// kernel TCP and port 0).
    pub fn port(&self) -> u16 {
        match self {
            Acceptor::Ours(listeners) => listeners.first().map_or(0, |l| l.local_addr().port()),
            Acceptor::Kernel { listener, .. } => listener.local_addr().map_or(0, |a| a.port()),
        }
    }

    pub async fn accept(&self) -> anyhow::Result<Conn> {
        match self {
            Acceptor::Ours(listeners) => {
                let stream = match listeners.as_slice() {
                    [one] => one.accept().await?,
                    [v4, v6] => tokio::select! {
                        s = v4.accept() => s?,
                        s = v6.accept() => s?,
                    },
                    _ => bail!("the stack has no address to listen on"),
                };
                Ok(Conn::Scps(stream))
            }
            Acceptor::Kernel { listener, keepalive } => {
                let (stream, _) = listener.accept().await.context("accepting a TCP connection")?;
                kernel_keepalive(&stream, *keepalive)?;
                Ok(Conn::Tcp(stream))
            }
        }
    }
}
