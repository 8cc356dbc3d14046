//! Which stack carries the test: ours over a TUN device or UDP
//! encapsulation, or the kernel's TCP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use scps_net::{Listener, Net, NetOptions, PacketPath, TunPath, UdpPath};
use scps_proto::config::Keepalive;
use tokio::net::{TcpListener, TcpStream};

use super::conn::Conn;

#[derive(Debug, Clone)]
pub enum Transport {
    /// Our stack, each IP packet in a UDP datagram; `peer` is the other
    /// end's UDP address (a receiver learns it from what arrives).
    Udp {
        bind: SocketAddr,
        peer: Option<SocketAddr>,
    },
    /// Our stack on TUN device `name`, answering to `addrs` (each routed to
    /// the device with its prefix).
    Tun { name: String, addrs: Vec<(IpAddr, u8)> },
    /// The kernel's TCP.
    Tcp,
}

impl Transport {
    /// The label of results: which stack, over which path.
    pub fn label(&self) -> &'static str {
        match self {
            Transport::Udp { .. } => "scps-udp",
            Transport::Tun { .. } => "scps-tun",
            Transport::Tcp => "tcp",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StackOptions {
    pub pcap: Option<PathBuf>,
    /// Largest IP packet of ours; default 1500 on a TUN device, and on UDP
    /// what fits a 1500-byte outer packet.
    pub mtu: Option<u16>,
    /// Send and receive buffer of each connection, bytes.
    pub buffer: Option<u64>,
    /// Offer SCPS-TP (capabilities option and SNACK).
    pub scps: bool,
    /// Offer header compression too (IP protocol 105).
    pub header_compression: bool,
    /// Keepalive idle time and probe interval (3 probes).
    pub keepalive: Duration,
    pub connect_timeout: Duration,
}

#[derive(Debug)]
pub enum Stack {
    /// Our stack; `udp` is the bound UDP address of an encapsulated path.
    Ours { net: Net, udp: Option<SocketAddr> },
    Kernel {
        connect_timeout: Duration,
        keepalive: Duration,
    },
}

/// Unanswered keepalive probes after which a connection is given up.
const KEEPALIVE_PROBES: u32 = 3;

/// Keepalive on a kernel socket, as on ours.
fn kernel_keepalive(stream: &TcpStream, every: Duration) -> anyhow::Result<()> {
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(every)
        .with_interval(every)
        .with_retries(KEEPALIVE_PROBES);
    socket2::SockRef::from(stream)
        .set_tcp_keepalive(&keepalive)
        .context("cannot set TCP keepalive")
}

/// Bytes of the outer IP and UDP headers around an encapsulated packet.
fn udp_overhead(outer: SocketAddr) -> u16 {
    if outer.is_ipv4() { 20 + 8 } else { 40 + 8 }
}

impl Stack {
    /// Starts the stack (for ours, the driver on the current runtime).
    pub fn start(transport: &Transport, options: &StackOptions) -> anyhow::Result<Stack> {
        let mut udp = None;
        let (path, default_mtu) = match transport {
            Transport::Tcp => {
                if options.pcap.is_some() {
                    bail!("--pcap captures our stack's packets; for kernel TCP use tcpdump");
                }
                if options.mtu.is_some()
                    || options.buffer.is_some()
                    || !options.scps
                    || options.header_compression
                {
                    bail!(
                        "--mtu, --buffer, --no-scps and --header-compression set our stack; kernel TCP takes the \
                         system's settings"
                    );
                }
                return Ok(Stack::Kernel {
                    connect_timeout: options.connect_timeout,
                    keepalive: options.keepalive,
                });
            }
            Transport::Udp { bind, peer } => {
                let path = UdpPath::bind(*bind, *peer)?;
                udp = Some(path.local_addr()?);
                (PacketPath::Udp(path), 1500 - udp_overhead(peer.unwrap_or(*bind)))
            }
            Transport::Tun { name, addrs } => {
                if addrs.is_empty() {
                    bail!("--tun needs at least one --addr ADDRESS/PREFIX for our stack");
                }
                let mtu = options.mtu.unwrap_or(1500);
                (PacketPath::Tun(TunPath::create(name, addrs, mtu)?), 1500)
            }
        };
        let mut net_options = NetOptions {
            capture: options.pcap.clone(),
            connect_timeout: options.connect_timeout,
            ..NetOptions::default()
        };
        let connection = &mut net_options.endpoint.connection;
        connection.mtu = options.mtu.unwrap_or(default_mtu);
        connection.scps = options.scps;
        connection.header_compression = options.header_compression;
        if options.keepalive.is_zero() {
            bail!("--keepalive 0s: expected a duration above 0");
        }
        connection.keepalive = Some(Keepalive {
            idle: options.keepalive,
            interval: options.keepalive,
            probes: KEEPALIVE_PROBES,
        });
        if let Some(buffer) = options.buffer {
            let bytes = usize::try_from(buffer).context("--buffer is too large")?;
            connection.send_buffer = bytes;
            connection.recv_buffer = bytes;
        }
        Ok(Stack::Ours {
            net: Net::start(path, net_options)?,
            udp,
        })
    }

    /// Where the stack receives, for people and scripts: the bound UDP
    /// address of an encapsulated path.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        match self {
            Stack::Ours { udp, .. } => *udp,
            Stack::Kernel { .. } => None,
        }
    }

    pub async fn connect(&self, to: SocketAddr) -> anyhow::Result<Conn> {
        match self {
            Stack::Ours { net, .. } => Ok(Conn::Scps(net.connect(to).await?)),
            Stack::Kernel {
                connect_timeout,
                keepalive,
            } => {
                let stream = tokio::time::timeout(*connect_timeout, TcpStream::connect(to))
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
            Stack::Kernel { keepalive, .. } => {
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
                socket
                    .bind(&addr.into())
                    .with_context(|| format!("cannot listen on TCP port {port}"))?;
                socket
                    .listen(16)
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
        keepalive: Duration,
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
