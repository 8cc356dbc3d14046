//! The stack that carries a transfer, started from a [`Transport`]: ours
//! (its driver on the current runtime) over a TUN device, UDP
//! encapsulation or a bundle, or the kernel's TCP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use scps_config::Direction;
use scps_config::stack::RealStack;
use scps_net::{BundleMonitor, Net, NetOptions, TunPath, UdpPath};

use crate::acceptor::Acceptor;
use crate::bundle::open_bundle;
use crate::conn::Conn;
use crate::engine::EngineOptions;
use crate::kernel::Kernel;
use crate::kernel_congestion;
use crate::transport::{Encapsulation, Transport};
use crate::udp_size::{udp_inner_limit, udp_overhead};

#[derive(Debug, Clone)]
pub struct StackOptions {
    /// Where our stack writes every packet (a pcap file, link type RAW).
    pub pcap: Option<PathBuf>,
    pub engine: EngineOptions,
    pub connect_timeout: Duration,
    /// Connections a listener holds that are not yet served, handshaking
    /// ones included: beyond it our stack answers SYNs with SYN cookies,
    /// as the kernel does.
    pub backlog: u16,
}

/// A listener's backlog unless its user says.
pub const DEFAULT_BACKLOG: u16 = 128;

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

#[derive(Debug)]
pub enum Stack {
    /// Our stack over the path labelled `path`; `udp` is the bound UDP
    /// address of an encapsulated path, `label` the protocol label it
    /// runs.
    Ours {
        net: Net,
        path: &'static str,
        udp: Option<SocketAddr>,
        bundle: Option<BundleMonitor>,
        label: &'static str,
    },
    Kernel(Kernel),
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
                return start_kernel(congestion.as_deref(), options).map(Stack::Kernel);
            }
            Transport::Udp {
                bind,
                peer,
                encapsulation,
            } => {
                let (path, engine) = open_udp(*bind, *peer, *encapsulation, options, direction)?;
                udp = Some(path.local_addr()?);
                (Net::start(path, options.net_options(&engine))?, engine)
            }
            Transport::Bundle { hook } => {
                let (path, monitor, engine) = open_bundle(&options.engine, direction, hook.clone())?;
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
            path: transport.label(),
            udp,
            bundle,
            label: engine.protocol.label(),
        })
    }

    /// The label of results: which stack, over which path (that of the
    /// [`Transport`] it started from).
    pub fn path(&self) -> &'static str {
        match self {
            Stack::Ours { path, .. } => path,
            Stack::Kernel(_) => "tcp",
        }
    }

    /// What runs `conn`: our stack's protocol label, or `kernel-` and the
    /// congestion control the kernel gave the connection.
    pub fn label_of(&self, conn: &Conn) -> String {
        match (self, conn) {
            (Stack::Ours { label, .. }, _) => (*label).to_owned(),
            (Stack::Kernel(_), Conn::Tcp(stream)) => {
                let controller = kernel_congestion::of(&socket2::SockRef::from(stream));
                format!("kernel-{}", controller.as_deref().unwrap_or("unknown"))
            }
            (Stack::Kernel(_), Conn::Scps(_)) => "kernel-unknown".to_owned(),
        }
    }

    /// Where the stack receives, for people and scripts: the bound UDP
    /// address of an encapsulated path.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        match self {
            Stack::Ours { udp, .. } => *udp,
            Stack::Kernel(_) => None,
        }
    }

    /// Over a bundle, what watches it.
    pub fn bundle(&self) -> Option<BundleMonitor> {
        match self {
            Stack::Ours { bundle, .. } => bundle.clone(),
            Stack::Kernel(_) => None,
        }
    }

    /// Reads our endpoint's counters from any task (none for the kernel,
    /// whose counters are the host's).
    pub fn watch(&self) -> Option<scps_net::EndpointWatch> {
        match self {
            Stack::Ours { net, .. } => Some(net.watch()),
            Stack::Kernel(_) => None,
        }
    }

    pub async fn connect(&self, to: SocketAddr) -> anyhow::Result<Conn> {
        match self {
            Stack::Ours { net, .. } => Ok(Conn::Scps(net.connect(to).await?)),
            Stack::Kernel(kernel) => Ok(Conn::Tcp(kernel.connect(to).await?)),
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
            Stack::Kernel(kernel) => Ok(Acceptor::Kernel {
                listener: kernel.listen(port)?,
                keepalive: kernel.keepalive,
            }),
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

/// The kernel's TCP, once what only our stack takes is refused and the
/// congestion control asked for is known to the kernel.
fn start_kernel(congestion: Option<&str>, options: &StackOptions) -> anyhow::Result<Kernel> {
    if options.pcap.is_some() {
        bail!("--pcap captures our stack's packets; for kernel TCP use tcpdump");
    }
    if options.engine.given() {
        bail!(
            "--config, --stack and --set configure our stack; kernel TCP takes the system's settings and its \
             congestion control from --tcp=CONTROLLER"
        );
    }
    if let Some(name) = congestion {
        kernel_congestion::check(name)?;
    }
    Ok(Kernel {
        connect_timeout: options.connect_timeout,
        keepalive: options.engine.keepalive(),
        congestion: congestion.map(str::to_owned),
        backlog: options.backlog,
    })
}

/// The UDP path bound at `bind` (to `peer`, if known), and the engine's
/// configuration for it: packets that fit the route inside the
/// encapsulation, a route rate charged the encapsulation's bytes.
fn open_udp(
    bind: SocketAddr,
    peer: Option<SocketAddr>,
    encapsulation: Encapsulation,
    options: &StackOptions,
    direction: Direction,
) -> anyhow::Result<(UdpPath, RealStack)> {
    let ri = encapsulation == Encapsulation::Ri;
    if ri && (!bind.is_ipv4() || peer.is_some_and(|p| !p.is_ipv4())) {
        bail!("--encapsulation ri carries IPv4 only: the RI's inner header is IPv4");
    }
    let overhead = udp_overhead(peer.unwrap_or(bind), encapsulation);
    let limit = udp_inner_limit(peer, overhead);
    let mut engine = options.engine.resolve(direction, limit.min(1500 - overhead))?;
    if engine.config.mtu > limit {
        bail!(
            "link.mtu = {}: the UDP path{} carries packets of at most {limit} bytes inside its {overhead} bytes of \
             encapsulation",
            engine.config.mtu,
            peer.map(|p| format!(" to {}", p.ip())).unwrap_or_default()
        );
    }
    // The route carries each packet inside outer IP and UDP headers: a
    // pacer that did not charge them would overrun a route rate by their
    // share.
    engine.config.rate_framing_bytes += u32::from(overhead);
    let mut path = UdpPath::bind(bind, peer)?;
    if ri {
        // SCPS-TP on protocol 106 and no trailer, as the RI sends and
        // expects.
        path = path.without_frame_check();
        engine.config.ip_protocol = scps_proto::wire::IPPROTO_SCPS_TP;
    }
    Ok((path, engine))
}
