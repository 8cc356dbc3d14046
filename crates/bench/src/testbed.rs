//! The testbed's world: a run on real packets in network namespaces,
//! client, gwA, the live emulator, gwB and server (scps-testbed's
//! `Topology::with_gateways`), in real time. The emulator takes the
//! point's `[link]` as it is; `linux-*` stacks are the kernel's TCP end to
//! end (`scps send`/`recv --tcp=CONTROLLER`, a bulk transfer, a message
//! stream, or many users' file fetches, each a `scps send --fetch` started
//! when the simulator's run of the same seed starts it; the gateways'
//! nodes plain routers); `gw-*` stacks start two transparent `scps gateway`s whose
//! link engine takes the point's `[link]`, its gateways' keys and the
//! buffers the simulator's gateways have (over the bonding scheduler, each
//! its own bundle of the emulator's circuits, see [`gateways_bond`]); our
//! stack end to end (`scps-*`, `tcp-*`) is `scps send`/`recv` over their
//! UDP path (over the bonding scheduler, a bundle of the circuits at each
//! host, see [`ends_bond`]), configured by the point's document. The transfer's content is
//! checked by SHA-256 at both ends; a run that does not verify, a process
//! that dies, or a transfer not done within its time is a failed record.
//!
//! Everything a run starts is stopped before the next starts; the
//! namespaces and whatever still runs in them go with the [`Testbed`]
//! (also when this process is killed: the testbed crate's processes die
//! with their parent, its namespaces with their last holder).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use scps_config::{Direction, Fetches, MessageFlow, Point, Protocol, Workload};
use scps_sim::apps::shared_link;
use scps_sim::result::FetchFigures;
use scps_testbed::{EMU, EMU_SIDE_A, EMU_SIDE_B, Output, Process, Testbed, Topology};
use scps_workload_format::figures::FlowFigures;
use serde_json::Value;

use crate::plan::Job;
use crate::record::{Cause, Figures, Outcome, Record};
use crate::stack::{LinuxTcp, Stack};

/// The server's port.
const PORT: u16 = 5001;
/// The least time a transfer is given; otherwise four times what it takes
/// at the link's limit.
const MIN_TIME: Duration = Duration::from_secs(60);
/// How long a receiver that ended a transfer has to write its report.
const RECEIVER_REPORT_TIME: Duration = Duration::from_secs(2);
/// How long a program has to say it is ready.
const START_TIME: Duration = Duration::from_secs(15);
/// `sh -c` scripts that run `"$@"` with its standard error, or all its
/// output, appended to the log given before it.
const STDERR_TO_LOG: &str = r#"log=$1; shift; exec "$@" 2>>"$log""#;
const ALL_TO_LOG: &str = r#"log=$1; shift; exec "$@" >>"$log" 2>&1"#;

/// A testbed for a bench's runs, one at a time.
#[derive(Debug)]
pub struct TestbedWorld {
    testbed: Testbed,
    /// The `scps` binary the runs' programs are.
    scps: PathBuf,
    /// The bench's directory: captures under it as the simulator's are,
    /// each run's configurations and logs in `testbed/`.
    out: PathBuf,
}

impl TestbedWorld {
    /// Builds the namespaces (as root, or root in a user namespace).
    pub fn new(scps: PathBuf, out: &Path) -> Result<TestbedWorld, String> {
        let testbed = Testbed::build(Topology::with_gateways()).map_err(|e| format!("the testbed: {e}"))?;
        Ok(TestbedWorld {
            testbed,
            scps,
            out: out.to_owned(),
        })
    }

    /// Runs `job`: its record, as the simulator's has it.
    pub fn run(&self, job: &Job) -> Record {
        let started = Instant::now();
        let (outcome, capture) = match self.transfer(job) {
            Ok(figures) => (
                Outcome::Completed {
                    figures: Box::new(figures),
                },
                job.capture
                    .then(|| crate::run::capture_path(job).to_string_lossy().into_owned()),
            ),
            Err(cause) => (Outcome::failed(cause), None),
        };
        Record {
            run: crate::run::identity(job),
            outcome,
            capture,
            wall_s: Some(started.elapsed().as_secs_f64()),
        }
    }

    /// Starts the link (and the gateways) and the server, moves the
    /// bytes, stops all; the run's figures.
    fn transfer(&self, job: &Job) -> Result<Figures, Cause> {
        let dir = self.out.join("testbed").join(crate::run::file_name(&job.id));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Cause::Setup(format!("cannot make {}: {e}", dir.display())))?;
        let mut started = Started {
            scps: self.scps.clone(),
            ..Started::default()
        };
        let outcome = self.transfer_in(job, &dir, &mut started);
        let link_resent = started.stop();
        outcome.map(|figures| with_link_repairs(figures, link_resent))
    }

    fn transfer_in(&self, job: &Job, dir: &Path, started: &mut Started) -> Result<Figures, Cause> {
        let hosts = self.start_link(job, dir, started)?;
        let server = self.address("server")?;
        let bundles = match hosts {
            Hosts::Ours(_) if ends_bond(job) => Some([
                self.bundle(job, ["server", "client"], HOST_INTERFACE, Direction::Reverse)?,
                self.bundle(job, ["client", "server"], HOST_INTERFACE, Direction::Forward)?,
            ]),
            _ => None,
        };
        let [receiving, sending] = hosts.options(job, dir, server, bundles)?;
        let recv_log = dir.join("recv.log");
        let port = PORT.to_string();
        // The simulator's receiver waits on a silent sender for as long as
        // the sender keeps trying (its timers back off to the scenario's
        // `rto_max`): the testbed's waits as long as the run is given,
        // not `scps recv`'s 120 s (on iridium-3ch with a marginal circuit
        // a sender backed off to 64 s can be silent for longer).
        let idle_timeout = format!("{}s", time_allowed(&job.point).as_secs());
        let mut args = vec!["recv", "--json", "--port", &port, "--idle-timeout", &idle_timeout];
        args.extend(receiving.iter().map(String::as_str));
        let fetches = match &job.point.workload {
            Workload::Fetches(fetches) => Some(fetches),
            _ => None,
        };
        // One transfer, or every fetch of the run at once.
        let max_connections = MAX_FETCHES_AT_ONCE.to_string();
        if fetches.is_some() {
            args.extend(["--max-connections", &max_connections]);
        } else {
            args.push("--once");
        }
        let recv = self.spawn_logged("server", &recv_log, &args)?;
        started.processes.push(recv.clone());
        wait_for_line(&recv_log, "listening", &recv, "scps recv")?;
        let mut sender: Vec<String> = vec!["send".into(), "--json".into(), format!("{server}:{PORT}")];
        sender.extend(sending);
        // A SYN lost on a lossy, queued link is resent after seconds, as
        // the simulator's hosts resend theirs: a connection is given as
        // long as a silent peer is.
        let patience = host_patience(&job.point) * 4;
        sender.extend(["--connect-timeout".into(), format!("{}s", patience.as_secs())]);
        if let Some(fetches) = fetches {
            return self.fetches(job, fetches, &sender, dir);
        }
        sender.extend(workload_options(&job.point)?);
        let args: Vec<&str> = sender.iter().map(String::as_str).collect();
        let log = dir.join("send.log");
        let sending_since = Instant::now();
        let send = self.spawn_logged("client", &log, &args)?;
        started.processes.push(send.clone());
        let allowed = time_allowed(&job.point);
        let ended = send
            .wait_timeout(allowed)
            .map_err(|e| Cause::Ended(format!("scps send: {e}")))?;
        if ended.is_none() {
            return stopped_at_the_limit(&job.point, sending_since, [&recv, &send], &recv_log);
        }
        let report =
            sender_report(&send, &log).map_err(|failure| with_receiver_account(failure, &recv, &recv_log))?;
        Ok(transfer_figures(&job.point, &report))
    }

    /// Starts the emulator in the middle, the capture and, for a `gw-`
    /// stack, the gateways; what the hosts run.
    fn start_link(&self, job: &Job, dir: &Path, started: &mut Started) -> Result<Hosts, Cause> {
        let emulator = self.start_emulator(job, dir)?;
        started.processes.push(emulator);
        if job.capture {
            let capture = self.start_capture(job, dir)?;
            started.captures.push(capture);
        }
        match job.stack {
            Stack::Linux(tcp) => Ok(Hosts::Kernel(tcp)),
            Stack::Ours(protocol) if protocol.through_gateways() => {
                for (node, far, local, remote, direction) in [
                    ("gwA", "gwB", "client", "server", Direction::Forward),
                    ("gwB", "gwA", "server", "client", Direction::Reverse),
                ] {
                    let gateway = self.start_gateway(job, dir, [node, far], [local, remote], direction)?;
                    started.gateways.push((gateway, socket_path(node)));
                }
                // The hosts' TCP behind the gateways, as in the simulator.
                Ok(Hosts::Kernel(LinuxTcp::Cubic))
            }
            Stack::Ours(protocol) => Ok(Hosts::Ours(protocol)),
        }
    }

    /// The simulator's requests of this run, each a `scps send --fetch`
    /// started at its time (`sender`: the command line without the
    /// workload), any still running stopped if the run fails; their
    /// figures as the simulator computes them.
    fn fetches(
        &self,
        job: &Job,
        workload: &Fetches,
        sender: &[String],
        dir: &Path,
    ) -> Result<Figures, Cause> {
        let requests = scps_sim::run::fetch_requests(&job.point, job.seed, workload);
        let log = dir.join("fetch.log");
        let allowed = time_allowed(&job.point);
        let start = Instant::now();
        let mut running: Vec<(usize, Process)> = Vec::new();
        let mut done = FetchesDone::default();
        let mut next = 0;
        while next < requests.len() || !running.is_empty() {
            let now = Instant::now();
            while let Some(&(at, bytes)) = requests.get(next)
                && start + Duration::from_secs_f64(at) <= now
            {
                let mut args: Vec<String> = sender.to_vec();
                args.extend([
                    "--fetch".into(),
                    bytes.to_string(),
                    "--seed".into(),
                    next.to_string(),
                ]);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                match self.spawn_logged("client", &log, &args) {
                    Ok(fetch) => running.push((next, fetch)),
                    Err(why) => {
                        kill_all(&running);
                        return Err(why);
                    }
                }
                next += 1;
            }
            running.retain(|(id, fetch)| {
                if !matches!(fetch.try_wait(), Ok(Some(_))) {
                    return true;
                }
                done.add(*id, requests[*id].0, sender_report(fetch, &log));
                false
            });
            if now > start + allowed {
                kill_all(&running);
                return Err(Cause::TimedOut(format!(
                    "{} of {} fetches not finished within {} s (wall clock)",
                    running.len() + requests.len() - next,
                    requests.len(),
                    allowed.as_secs()
                )));
            }
            std::thread::sleep(FETCH_POLL);
        }
        done.figures(&job.point, workload, &requests)
    }

    fn address(&self, node: &str) -> Result<std::net::IpAddr, Cause> {
        self.testbed
            .address(node)
            .map_err(|e| Cause::Setup(e.to_string()))
    }

    /// `scps ARGS...` in `node`, its standard error to `log`, its standard
    /// output kept.
    fn spawn_logged(&self, node: &str, log: &Path, args: &[&str]) -> Result<Process, Cause> {
        self.spawn_with(node, log, STDERR_TO_LOG, self.scps.as_os_str(), args)
    }

    /// `scps ARGS...` in `node`, all its output to `log` (a daemon's).
    fn spawn_daemon(&self, node: &str, log: &Path, args: &[&str]) -> Result<Process, Cause> {
        self.spawn_with(node, log, ALL_TO_LOG, self.scps.as_os_str(), args)
    }

    /// `PROGRAM ARGS...` in `node` through `sh -c SCRIPT sh LOG PROGRAM
    /// ARGS...`, which sends its output where `script` says.
    fn spawn_with(
        &self,
        node: &str,
        log: &Path,
        script: &str,
        program: &std::ffi::OsStr,
        args: &[&str],
    ) -> Result<Process, Cause> {
        let node = self.testbed.node(node).map_err(|e| Cause::Setup(e.to_string()))?;
        let mut all: Vec<&std::ffi::OsStr> = vec![
            "-c".as_ref(),
            script.as_ref(),
            "sh".as_ref(),
            log.as_os_str(),
            program,
        ];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        node.spawn("sh", &all, Output::Piped)
            .map_err(|e| Cause::Setup(e.to_string()))
    }

    /// `scps emulate` in the middle with the point's `[link]` and the
    /// run's seed; returns once it answers on its control socket.
    fn start_emulator(&self, job: &Job, dir: &Path) -> Result<Process, Cause> {
        let socket = socket_path("emu");
        let mut config = toml::Table::new();
        config.insert("seed".into(), toml::Value::Integer(job.seed as i64));
        let mut emulate = toml::Table::new();
        emulate.insert("side_a".into(), EMU_SIDE_A.into());
        emulate.insert("side_b".into(), EMU_SIDE_B.into());
        emulate.insert("control".into(), socket.to_string_lossy().into_owned().into());
        let mut link = job.point.tables.link.clone();
        if ends_bond(job) {
            // The gateways or the hosts bond the circuits; the emulator
            // carries each of their channels on its own.
            link.retain(|key, _| key != "bond" && !key.starts_with("bond_"));
            let ports =
                (0..job.point.link.forward.len()).map(|i| toml::Value::from(i64::from(channel_port(i))));
            emulate.insert("circuit_ports".into(), toml::Value::Array(ports.collect()));
        }
        config.insert("emulate".into(), emulate.into());
        config.insert("link".into(), link.into());
        let path = dir.join("emulate.toml");
        write(&path, &config.to_string())?;
        let path_text = path.to_string_lossy().into_owned();
        let emulator = self.spawn_daemon(
            EMU,
            &dir.join("emulate.log"),
            &["emulate", "--config", &path_text],
        )?;
        let deadline = Instant::now() + START_TIME;
        let socket_text = socket.to_string_lossy().into_owned();
        loop {
            let answered = std::process::Command::new(&self.scps)
                .args(["emulate", "ctl", "--socket", &socket_text, "stats"])
                .output()
                .is_ok_and(|o| o.status.success());
            if answered {
                return Ok(emulator);
            }
            if emulator.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
                return Err(Cause::Setup(format!(
                    "scps emulate did not start: {}",
                    last_line(&dir.join("emulate.log"))
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `dumpcap` on the emulator's side towards the client, headers only,
    /// into the job's capture file (the report's time-sequence graph);
    /// returns once it captures.
    fn start_capture(&self, job: &Job, dir: &Path) -> Result<Process, Cause> {
        let path = self.out.join(crate::run::capture_path(job));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Cause::Setup(format!("cannot make {}: {e}", parent.display())))?;
        }
        let log = dir.join("dumpcap.log");
        let path_text = path.to_string_lossy().into_owned();
        // The veth's Ethernet header comes before the headers kept.
        let snaplen = (crate::run::CAPTURE_SNAPLEN + 14).to_string();
        let args = ["-q", "-P", "-i", EMU_SIDE_A, "-s", &snaplen, "-w", &path_text];
        let capture = self
            .spawn_with(EMU, &log, ALL_TO_LOG, "dumpcap".as_ref(), &args)
            .map_err(|e| Cause::Setup(format!("dumpcap: {e}")))?;
        // dumpcap says on its standard error which interface it captures
        // on once it does.
        wait_for_line(&log, "Capturing on", &capture, "dumpcap")?;
        Ok(capture)
    }

    /// A transparent `scps gateway` in `gateways[0]` (the far one
    /// `gateways[1]`) between the prefixes of `sides` (its own, the far
    /// one's); returns once it says it is ready.
    fn start_gateway(
        &self,
        job: &Job,
        dir: &Path,
        gateways: [&str; 2],
        sides: [&str; 2],
        sends: Direction,
    ) -> Result<Process, Cause> {
        let node = gateways[0];
        let Some(settings) = &job.point.gateways else {
            return Err(Cause::Setup("a gw- stack without gateways".into()));
        };
        let prefix = |host: &str| -> Result<String, Cause> {
            match self.address(host)? {
                std::net::IpAddr::V4(v4) => {
                    let [a, b, c, _] = v4.octets();
                    Ok(format!("{a}.{b}.{c}.0/24"))
                }
                std::net::IpAddr::V6(_) => Err(Cause::Setup(format!("{host} has no IPv4 address"))),
            }
        };
        let mut transparent = toml::Table::new();
        transparent.insert("lan".into(), "lan0".into());
        transparent.insert("local".into(), vec![toml::Value::from(prefix(sides[0])?)].into());
        transparent.insert("remote".into(), vec![toml::Value::from(prefix(sides[1])?)].into());
        // The engine the simulator's gateway of this side runs: the
        // label's stack, the point's link (its route rate and RTT), the
        // gateways' keys, and the buffers the simulator gives them.
        let link_engine = settings.link(&job.point.link, sends);
        let mut tcp = job.point.tables.gateway.clone();
        tcp.entry("send_buffer")
            .or_insert((link_engine.send_buffer as i64).into());
        tcp.entry("recv_buffer")
            .or_insert((link_engine.recv_buffer as i64).into());
        let mut engine = toml::Table::new();
        engine.insert("protocol".into(), settings.across.label().into());
        engine.insert("link".into(), job.point.tables.link.clone().into());
        engine.insert("tcp".into(), tcp.into());
        if gateways_bond(job) {
            engine.insert(
                "bundle".into(),
                self.bundle(job, gateways, LINK_INTERFACE, sends)?.into(),
            );
        } else {
            transparent.insert("link".into(), LINK_INTERFACE.into());
        }
        let mut relay = toml::Table::new();
        relay.insert("buffer".into(), (settings.relay_buffer as i64).into());
        // A control socket of its own: two gateways of one host (and of
        // other benches) must not meet on the default one.
        let mut control = toml::Table::new();
        let socket = socket_path(node);
        control.insert("socket".into(), socket.to_string_lossy().into_owned().into());
        // The plain link: the capture on the emulator's side reads the
        // link connections' segments for the time-sequence graphs, which
        // the secure link would seal (its cost is measured apart,
        // docs/BENCHMARKS.md "The gateways on a hostile link").
        let mut link = toml::Table::new();
        link.insert("security".into(), "none".into());
        let mut config = toml::Table::new();
        config.insert("link".into(), link.into());
        config.insert("transparent".into(), transparent.into());
        config.insert("engine".into(), engine.into());
        config.insert("relay".into(), relay.into());
        config.insert("control".into(), control.into());
        let path = dir.join(format!("{node}.toml"));
        write(&path, &config.to_string())?;
        let log = dir.join(format!("{node}.log"));
        let path_text = path.to_string_lossy().into_owned();
        let gateway = self.spawn_daemon(node, &log, &["gateway", "--config", &path_text])?;
        wait_for_line(&log, "scps gateway: ready", &gateway, "scps gateway")?;
        Ok(gateway)
    }

    /// The bundle of node `ends[0]` (a gateway's `[engine.bundle]`, a
    /// host's `[bundle]`), whose data goes `sends`: a channel per circuit
    /// from its `interface` to the far end's, each on the circuit's port,
    /// at the circuit's rate.
    fn bundle(
        &self,
        job: &Job,
        ends: [&str; 2],
        interface: &str,
        sends: Direction,
    ) -> Result<toml::Table, Cause> {
        let [own, far] = ends.map(|node| {
            self.testbed
                .topology()
                .interface_address(node, interface)
                .ok_or_else(|| Cause::Setup(format!("{node} has no IPv4 address on {interface}")))
        });
        let (own, far) = (own?, far?);
        let circuits = match sends {
            Direction::Forward => &job.point.link.forward,
            Direction::Reverse => &job.point.link.reverse,
        };
        let channels = circuits.iter().enumerate().map(|(i, circuit)| {
            let mut channel = toml::Table::new();
            let port = channel_port(i);
            channel.insert(
                "local".into(),
                std::net::SocketAddr::new(own, port).to_string().into(),
            );
            channel.insert(
                "peer".into(),
                std::net::SocketAddr::new(far, port).to_string().into(),
            );
            channel.insert("rate".into(), format!("{}bps", circuit.rate_bps).into());
            toml::Value::from(channel)
        });
        let mut bundle = toml::Table::new();
        bundle.insert("channel".into(), toml::Value::Array(channels.collect()));
        Ok(bundle)
    }
}

/// The gateways' interface towards the emulator.
const LINK_INTERFACE: &str = "sat0";
/// The hosts' interface.
const HOST_INTERFACE: &str = "eth0";
/// The UDP port of the first channel of the gateways' own bundle; the
/// next channels take the next ports.
const FIRST_CHANNEL_PORT: u16 = 7001;

/// The UDP port of channel `index` of the gateways' own bundle, and of
/// the emulator's circuit that carries it.
fn channel_port(index: usize) -> u16 {
    FIRST_CHANNEL_PORT + index as u16
}

/// Whether the run's gateways bond the circuits themselves: a `gw-`
/// stack over the bonding scheduler. In the simulator the bonds are
/// nodes beside the gateways, which follow what they carry, as a real
/// bundle is part of a gateway's own path (`[engine.bundle]`); so here
/// each gateway runs its bundle, and the emulator carries each of its
/// channels on a circuit of its own (`emulate.circuit_ports`) rather than
/// bonding them itself, where no sender would learn what they carry.
fn gateways_bond(job: &Job) -> bool {
    matches!(job.stack, Stack::Ours(protocol) if protocol.through_gateways()) && ends_bond(job)
}

/// Whether the run's ends bond the circuits themselves: our stack (at the
/// gateways for a `gw-` stack, else at the hosts, each a `[bundle]` of
/// its own) over the bonding scheduler, as in the simulator, where the
/// bond beside each end tells it what the circuits carry. The kernel's
/// TCP has no bundle: the emulator bonds the circuits for it.
fn ends_bond(job: &Job) -> bool {
    matches!(job.stack, Stack::Ours(_)) && job.point.link.bond(Direction::Forward).is_some()
}

/// What carries a run's bytes between the hosts.
#[derive(Debug, Clone, Copy)]
enum Hosts {
    /// The kernel's TCP with this congestion control.
    Kernel(LinuxTcp),
    /// Our stack end to end over its UDP path, configured by the point's
    /// document as the simulator's hosts are.
    Ours(Protocol),
}

/// The UDP port our stack's receiver takes its packets on.
const OUR_UDP_PORT: u16 = 7168;

impl Hosts {
    /// The options of `scps recv` and of `scps send` (after its
    /// destination) for a run of `job` towards `server`; over `bundles`
    /// (the receiver's and the sender's `[bundle]`) if the hosts bond
    /// the circuits, else over one UDP path each.
    fn options(
        self,
        job: &Job,
        dir: &Path,
        server: std::net::IpAddr,
        bundles: Option<[toml::Table; 2]>,
    ) -> Result<[Vec<String>; 2], Cause> {
        let keepalive = [
            "--keepalive".to_owned(),
            format!("{}s", host_patience(&job.point).as_secs()),
        ];
        let mut both: Vec<String> = keepalive.into();
        let (mut receiving, mut sending) = match self {
            Hosts::Kernel(tcp) => {
                both.push(format!("--tcp={}", tcp.kernel_name()));
                (Vec::new(), Vec::new())
            }
            Hosts::Ours(protocol) => {
                both.extend(["--stack".into(), protocol.label().into()]);
                let config = |name: &str, bundle: Option<toml::Table>| -> Result<Vec<String>, Cause> {
                    let mut document = job.point.tables.document.clone();
                    // The tools autotune a receive buffer no key sets; the
                    // simulator's hosts do as the point says.
                    if let Some(tcp) = document
                        .entry("tcp")
                        .or_insert_with(|| toml::Table::new().into())
                        .as_table_mut()
                    {
                        tcp.entry("recv_buffer_auto")
                            .or_insert(job.point.tcp.recv_buffer_auto.into());
                    }
                    let transport = match bundle {
                        Some(bundle) => {
                            document.insert("bundle".into(), bundle.into());
                            vec!["--bundle".to_owned()]
                        }
                        None => Vec::new(),
                    };
                    let path = dir.join(name);
                    write(&path, &document.to_string())?;
                    Ok([
                        vec!["--config".into(), path.to_string_lossy().into_owned()],
                        transport,
                    ]
                    .concat())
                };
                match bundles {
                    Some([receiver, sender]) => (
                        config("receiver.toml", Some(receiver))?,
                        config("sender.toml", Some(sender))?,
                    ),
                    None => {
                        let hosts = config("hosts.toml", None)?;
                        let any =
                            std::net::SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), OUR_UDP_PORT);
                        let peer = std::net::SocketAddr::new(server, OUR_UDP_PORT);
                        (
                            [hosts.clone(), vec!["--udp".into(), any.to_string()]].concat(),
                            [hosts, vec!["--udp".into(), peer.to_string()]].concat(),
                        )
                    }
                }
            }
        };
        receiving.extend(both.iter().cloned());
        sending.extend(both);
        Ok([receiving, sending])
    }
}

/// What a run started, stopped when it ends: captures by SIGINT (they
/// write out what they hold), gateways, once their connections have
/// closed, by SIGTERM (they remove their rules and say what they did),
/// the rest killed.
#[derive(Debug, Default)]
struct Started {
    captures: Vec<Process>,
    /// With their control sockets.
    gateways: Vec<(Process, PathBuf)>,
    processes: Vec<Process>,
    /// The `scps` binary, to ask the gateways how they are.
    scps: PathBuf,
}

/// How long the gateways have to finish closing a run's connections, and
/// then to stop (they give theirs 5 s).
const GATEWAY_STOP: Duration = Duration::from_secs(10);

impl Started {
    /// Stops everything; for a run through the gateways, what their link
    /// connections resent (both gateways' counts, once their connections
    /// have ended), if both told (`None` without gateways).
    fn stop(&mut self) -> Option<LinkResent> {
        for capture in self.captures.drain(..) {
            let _ = capture.signal(nix::sys::signal::Signal::SIGINT);
            if !matches!(capture.wait_timeout(GATEWAY_STOP), Ok(Some(_))) {
                let _ = capture.kill();
            }
        }
        let mut link_resent = (!self.gateways.is_empty()).then_some(LinkResent::Bytes(0));
        for (gateway, socket) in &self.gateways {
            let deadline = Instant::now() + GATEWAY_STOP;
            let mut status = gateway_status(&self.scps, socket);
            while Instant::now() < deadline && status.as_ref().is_some_and(holds_connections) {
                std::thread::sleep(Duration::from_millis(50));
                status = gateway_status(&self.scps, socket);
            }
            let resent = status.and_then(|status| status.get("link_resent_bytes")?.as_u64());
            link_resent = link_resent.map(|sum| match (sum, resent) {
                (LinkResent::Bytes(sum), Some(resent)) => LinkResent::Bytes(sum + resent),
                _ => LinkResent::Untold,
            });
            let _ = gateway.signal(nix::sys::signal::Signal::SIGTERM);
        }
        for (gateway, _) in self.gateways.drain(..) {
            if !matches!(gateway.wait_timeout(GATEWAY_STOP), Ok(Some(_))) {
                let _ = gateway.kill();
            }
        }
        for process in self.processes.drain(..).rev() {
            let _ = process.kill();
        }
        // A program killed leaves its control socket behind; a bench runs
        // one run at a time, so every socket of this bench is the run's.
        remove_sockets();
        link_resent
    }
}

/// The status of the gateway behind `socket`, if it answers.
fn gateway_status(scps: &Path, socket: &Path) -> Option<Value> {
    let output = std::process::Command::new(scps)
        .args(["status", "--json", "--control"])
        .arg(socket)
        .output()
        .ok()?;
    serde_json::from_slice::<Value>(&output.stdout).ok()
}

/// Whether a gateway's status lists a connection.
fn holds_connections(status: &Value) -> bool {
    status
        .get("connections")
        .and_then(Value::as_array)
        .is_some_and(|connections| !connections.is_empty())
}

/// What the gateways' link connections resent in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkResent {
    Bytes(u64),
    /// A gateway did not answer.
    Untold,
}

/// A run's figures with, for a run through the gateways (`link_resent`
/// given), the link's repairs as its retransmissions: the hosts' TCP
/// resends only what their LANs lose, kept as `lan_retransmitted_bytes`.
/// A gateway that did not tell leaves the figure out rather than the
/// LAN's in its place.
fn with_link_repairs(mut figures: Figures, link_resent: Option<LinkResent>) -> Figures {
    let Some(link_resent) = link_resent else {
        return figures;
    };
    figures.lan_retransmitted_bytes = figures.retransmitted_bytes.take();
    if let LinkResent::Bytes(resent) = link_resent {
        figures.retransmitted_bytes = Some(resent);
    }
    figures
}

/// The wall-clock time a run of `point` is given: for a transfer, four
/// times what it takes at the limit, at least [`MIN_TIME`]; for a message
/// stream, its window twice over and [`MIN_TIME`] (its messages drain
/// after the window).
pub fn time_allowed(point: &Point) -> Duration {
    match &point.workload {
        Workload::Messages { duration, .. } | Workload::Echo { duration, .. } => *duration * 2 + MIN_TIME,
        Workload::Bulk { bytes, both_ways, .. } => {
            let moved = *bytes as f64 * if *both_ways { 2.0 } else { 1.0 };
            let at_limit = moved * 8.0 / point.limit_bps(Duration::from_secs(3600)).max(1.0);
            MIN_TIME.max(Duration::from_secs_f64(4.0 * at_limit))
        }
        Workload::Fetches(fetches) => fetches.duration * 2 + MIN_TIME,
    }
}

/// How long the testbed's hosts wait on a silent peer between keepalive
/// probes (`scps send`/`recv --keepalive`, which also sets the kernel's
/// user timeout to four times it): the scenario's longest RTO, so that
/// they ride out what the simulator's hosts, with the scenario's timers,
/// ride out (a 60 s redial on iridium-3ch), and at least the tools' 15 s.
fn host_patience(point: &Point) -> Duration {
    point.tcp.rto_max.max(Duration::from_secs(15))
}

/// Stops the fetches still running.
fn kill_all(running: &[(usize, Process)]) {
    for (_, fetch) in running {
        let _ = fetch.kill();
    }
}

/// A tool's JSON report (`scps send --json`, `scps recv --json`).
type Report = serde_json::Map<String, Value>;

/// The fetches a server takes at once (`scps recv`'s most): complex-35ws
/// at 1e-5 keeps a few dozen open.
const MAX_FETCHES_AT_ONCE: u16 = 1024;
/// How often the fetches are started and collected: a start is late by at
/// most this (each fetch times itself from its connect).
const FETCH_POLL: Duration = Duration::from_millis(10);

/// What a finished `scps send` reported: its JSON report, if it verified.
fn sender_report(send: &Process, log: &Path) -> Result<Report, Cause> {
    let stdout = send
        .read_stdout()
        .map_err(|e| Cause::Ended(format!("scps send: {e}")))?;
    let report: Report = serde_json::from_str(stdout.trim())
        .map_err(|_| Cause::Ended(format!("scps send ended without a report: {}", last_line(log))))?;
    if let Some(error) = report.get("error").and_then(Value::as_str) {
        return Err(Cause::Ended(format!("scps send: {error}")));
    }
    if report.get("verified").is_some_and(|v| v != &Value::Bool(true)) {
        return Err(Cause::Ended(
            "the receiver did not verify the content (SHA-256)".into(),
        ));
    }
    Ok(report)
}

/// A transfer not done in the time it was given, stopped: the receiver
/// is interrupted and reports what it read, which over the time since the
/// sender started is the run's goodput (`stopped_s` says so); the sender,
/// reset, gives its repairs if it reports them. A transfer that got
/// nothing through in all that time has no figures: it failed.
fn stopped_at_the_limit(
    point: &Point,
    sending_since: Instant,
    [recv, send]: [&Process; 2],
    recv_log: &Path,
) -> Result<Figures, Cause> {
    let _ = recv.signal(nix::sys::signal::Signal::SIGINT);
    let window = sending_since.elapsed();
    let stopped = |process: &Process| matches!(process.wait_timeout(RECEIVER_REPORT_TIME), Ok(Some(_)));
    if !stopped(recv) {
        let _ = recv.kill();
        return Err(Cause::TimedOut(format!(
            "not finished within {} s, and scps recv did not report when interrupted: {}",
            window.as_secs(),
            last_line(recv_log)
        )));
    }
    let received: Report = first_report(&recv.read_stdout().unwrap_or_default()).ok_or_else(|| {
        Cause::TimedOut(format!(
            "not finished within {} s, and scps recv ended without a report: {}",
            window.as_secs(),
            last_line(recv_log)
        ))
    })?;
    let bytes = received.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    if bytes == 0 {
        return Err(Cause::TimedOut(format!(
            "nothing got through within {} s (wall clock)",
            window.as_secs()
        )));
    }
    // The receiver's reset reaches the sender, which then reports.
    if !stopped(send) {
        let _ = send.signal(nix::sys::signal::Signal::SIGINT);
        let _ = stopped(send);
    }
    let window_s = window.as_secs_f64();
    let mut figures = throughput_figures(point, bytes, window_s, bytes as f64 * 8.0 / window_s);
    if let Some(sent) = first_report(&send.read_stdout().unwrap_or_default()) {
        with_repairs(&mut figures, &sent);
    }
    figures.stopped_s = Some(window_s);
    Ok(figures)
}

/// The first JSON report in a tool's standard output.
fn first_report(stdout: &str) -> Option<Report> {
    stdout
        .lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str(line).ok())
}

/// A sender's `failure`, with what the receiver said if it has ended: a
/// sender reset by its peer cannot say why.
fn with_receiver_account(failure: Cause, recv: &Process, log: &Path) -> Cause {
    // A receiver that ended the transfer has ended, or is writing its
    // report.
    let Ok(Some(_)) = recv.wait_timeout(RECEIVER_REPORT_TIME) else {
        return failure;
    };
    let said = receiver_said(&recv.read_stdout().unwrap_or_default(), log);
    failure.map_message(|message| format!("{message} (scps recv: {said})"))
}

/// The error in an ended receiver's report (its standard output), else
/// the last line of its log.
fn receiver_said(stdout: &str, log: &Path) -> String {
    serde_json::from_str::<Report>(stdout.trim())
        .ok()
        .and_then(|report| report.get("error")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| last_line(log))
}

/// The figures of one transfer or message stream from its sender's
/// report.
fn transfer_figures(point: &Point, report: &Report) -> Figures {
    let bytes = report.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    let duration = report.get("duration_s").and_then(Value::as_f64).unwrap_or(0.0);
    // A message stream's figure is its actual rate.
    let goodput = report
        .get("actual_bps")
        .or_else(|| report.get("goodput_bps"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let mut figures = throughput_figures(point, bytes, duration, goodput);
    // A message stream's report gives its forward flow's figures beside
    // the rest.
    figures.messages = serde_json::from_value::<FlowFigures>(Value::Object(report.clone())).ok();
    with_repairs(&mut figures, report);
    figures
}

/// How a sender of our stack repaired its losses, from its report (kernel
/// TCP reports only its retransmitted bytes).
fn with_repairs(figures: &mut Figures, report: &Report) {
    let count = |key: &str| report.get(key).and_then(Value::as_u64);
    figures.retransmitted_bytes = count("retransmitted_bytes");
    figures.timeouts = count("timeouts");
    figures.fast_recoveries = count("fast_recoveries");
}

/// Bytes, time, goodput and its ratio to the point's limit.
fn throughput_figures(point: &Point, bytes: u64, duration_s: f64, goodput_bps: f64) -> Figures {
    let limit = point.limit_bps(Duration::from_secs_f64(duration_s.max(1e-3)));
    Figures {
        bytes,
        duration_s,
        goodput_bps,
        limit_bps: limit,
        ratio: goodput_bps / limit,
        ..Figures::default()
    }
}

/// The fetches of a run that have ended.
#[derive(Debug, Default)]
struct FetchesDone {
    downloads: Vec<Duration>,
    bytes: u64,
    /// When the last one ended, from the start of the run.
    end_s: f64,
    /// What the serving ends retransmitted.
    retransmitted_bytes: u64,
    failed: usize,
    first_error: Option<String>,
}

impl FetchesDone {
    /// Fetch `id`, requested at `at` seconds, has ended with `report`.
    fn add(&mut self, id: usize, at: f64, report: Result<Report, Cause>) {
        let report = match report {
            Ok(report) => report,
            Err(why) => {
                self.failed += 1;
                self.first_error
                    .get_or_insert_with(|| format!("fetch {id}: {why}"));
                return;
            }
        };
        let duration = report.get("duration_s").and_then(Value::as_f64).unwrap_or(0.0);
        self.downloads.push(Duration::from_secs_f64(duration));
        self.bytes += report.get("bytes").and_then(Value::as_u64).unwrap_or(0);
        self.end_s = self.end_s.max(at + duration);
        self.retransmitted_bytes += report
            .get("peer_report")
            .and_then(|peer| peer.get("retransmitted_bytes"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }

    /// The run's figures, as the simulator's (its ideal on the same
    /// requests); a failed fetch fails the run.
    fn figures(
        mut self,
        point: &Point,
        workload: &Fetches,
        requests: &[(f64, u64)],
    ) -> Result<Figures, Cause> {
        if let Some(first) = &self.first_error {
            return Err(Cause::Ended(format!(
                "{} of {} fetches failed, the first: {first}",
                self.failed,
                requests.len()
            )));
        }
        let mut fetches = FetchFigures::of(&mut self.downloads, self.failed);
        let capacity = point.limit_bps(workload.duration);
        fetches.download_ideal_mean_s = shared_link::mean_download_s(requests, capacity);
        let goodput = self.bytes as f64 * 8.0 / self.end_s.max(1e-3);
        let mut figures = throughput_figures(point, self.bytes, self.end_s, goodput);
        figures.fetches = Some(fetches);
        figures.retransmitted_bytes = Some(self.retransmitted_bytes);
        Ok(figures)
    }
}

/// `scps send`'s options for the workload of `point`. Messages keep Nagle's algorithm as the point's
/// hosts do in the simulator (on unless `tcp.nagle = false`); the tools
/// turn it off unless told.
fn workload_options(point: &Point) -> Result<Vec<String>, Cause> {
    let mut options = workload_only_options(&point.workload)?;
    let messages = matches!(point.workload, Workload::Messages { .. } | Workload::Echo { .. });
    if messages && point.tcp.nagle {
        options.push("--nagle".into());
    }
    Ok(options)
}

fn workload_only_options(workload: &Workload) -> Result<Vec<String>, Cause> {
    match workload {
        Workload::Bulk { bytes, both_ways, .. } => {
            let mut options = vec!["--bytes".into(), bytes.to_string()];
            if *both_ways {
                options.push("--both-ways".into());
            }
            Ok(options)
        }
        Workload::Messages {
            forward,
            reverse,
            duration,
        } => {
            let mut options = message_options("--messages", forward, *duration);
            if let Some(reverse) = reverse {
                options.extend([
                    "--two-way".into(),
                    "--reverse-size".into(),
                    reverse.size.to_string(),
                    "--reverse-rate".into(),
                    format!("{}bps", reverse.rate_bps),
                ]);
            }
            Ok(options)
        }
        Workload::Echo { flow, duration } => Ok(message_options("--echo", flow, *duration)),
        _ => Err(Cause::Setup("a workload the testbed does not run".into())),
    }
}

/// `scps send`'s options for messages of `flow` over `duration`, sent as
/// `kind` says (`--messages`, `--echo`).
fn message_options(kind: &str, flow: &MessageFlow, duration: Duration) -> Vec<String> {
    vec![
        kind.into(),
        "--size".into(),
        flow.size.to_string(),
        "--rate".into(),
        format!("{}bps", flow.rate_bps),
        "--duration".into(),
        format!("{}ms", duration.as_millis()),
    ]
}

/// A Unix socket's path for `what` of this bench: short (a socket's path
/// holds at most 107 bytes), and its own, so that two gateways of one
/// host, or two benches, never meet on one.
fn socket_path(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{}{what}.sock", socket_prefix()))
}

fn socket_prefix() -> String {
    format!("scps-bench-{}-", std::process::id())
}

/// Removes whatever control sockets this bench's runs left (after each
/// run, and for a bench interrupted in the middle of one, whose programs
/// die with it).
pub fn remove_sockets() {
    let prefix = socket_prefix();
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".sock") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Waits until `log` holds a line containing `text`, while `process`
/// runs.
fn wait_for_line(log: &Path, text: &str, process: &Process, what: &str) -> Result<(), Cause> {
    let deadline = Instant::now() + START_TIME;
    loop {
        if std::fs::read_to_string(log).is_ok_and(|l| l.contains(text)) {
            return Ok(());
        }
        if process.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
            return Err(Cause::Setup(format!("{what} did not start: {}", last_line(log))));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .ok()
        .and_then(|text| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| format!("nothing in {}", log.display()))
}

fn write(path: &Path, text: &str) -> Result<(), Cause> {
    std::fs::write(path, text).map_err(|e| Cause::Setup(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(scenario: &str, sets: &[&str]) -> Point {
        let sets: Vec<_> = sets
            .iter()
            .map(|s| scps_config::sweep::parse_assignment(s).unwrap())
            .collect();
        scps_config::Scenario::load(scenario, &sets)
            .unwrap()
            .points
            .remove(0)
    }

    #[test]
    fn hosts_wait_on_a_silent_peer_as_long_as_the_scenario_s_timers_do() {
        // iridium-3ch's hosts back off to 64 s: a 60 s redial is ridden out.
        let iridium = point("iridium-3ch", &["workload.rate=2048bps"]);
        assert_eq!(host_patience(&iridium), Duration::from_secs(64));
        let geo = point(
            "geo-8mbit",
            &["protocol=tcp-cubic", "link.rtt=600ms", "link.ber=0"],
        );
        assert_eq!(
            host_patience(&geo),
            Duration::from_secs(60),
            "the engine's RTO ceiling"
        );
    }

    #[test]
    fn a_sender_s_repairs_are_recorded_under_the_simulator_s_names() {
        let point = point("iridium-3ch", &["workload.rate=2048bps"]);
        let report: Report = serde_json::from_str(
            r#"{"bytes": 1000, "duration_s": 10.0, "actual_bps": 800.0, "retransmitted_bytes": 120,
                "timeouts": 2, "fast_recoveries": 1, "verified": true}"#,
        )
        .unwrap();
        let figures = transfer_figures(&point, &report);
        assert_eq!(figures.retransmitted_bytes, Some(120));
        assert_eq!(figures.timeouts, Some(2));
        assert_eq!(figures.fast_recoveries, Some(1));
        assert_eq!(figures.goodput_bps, 800.0, "a stream's figure is its actual rate");
        // Kernel TCP's report has no timeouts: none are made up.
        let kernel: Report = serde_json::from_str(r#"{"bytes": 1000, "retransmitted_bytes": 7}"#).unwrap();
        let figures = transfer_figures(&point, &kernel);
        assert_eq!(figures.retransmitted_bytes, Some(7));
        assert_eq!(figures.timeouts, None, "{figures:?}");
    }

    #[test]
    fn a_message_stream_s_figures_are_recorded_as_the_simulator_s() {
        let point = point("iridium-3ch", &["workload.rate=2048bps"]);
        let report: Report = serde_json::from_str(
            r#"{"bytes": 1000, "duration_s": 60.0, "goodput_bps": 133.3, "offered_bps": 2048.0,
                "actual_bps": 1800.5, "messages": 211, "latency_p50_s": 7.5, "latency_p95_s": 11.0,
                "latency_max_s": 12.25, "verified": true}"#,
        )
        .unwrap();
        let figures = transfer_figures(&point, &report);
        let stream = figures.messages.expect("a message stream");
        assert_eq!(
            (stream.offered_bps, stream.messages, stream.latency_max_s),
            (2048.0, 211, 12.25)
        );
        let bulk: Report = serde_json::from_str(r#"{"bytes": 1000, "duration_s": 1.0}"#).unwrap();
        assert_eq!(transfer_figures(&point, &bulk).messages, None);
    }

    #[test]
    fn a_run_through_the_gateways_counts_the_link_s_repairs_not_the_lan_s() {
        let figures = || Figures {
            bytes: 10,
            retransmitted_bytes: Some(448),
            ..Figures::default()
        };
        let through = with_link_repairs(figures(), Some(LinkResent::Bytes(91_000)));
        assert_eq!(through.retransmitted_bytes, Some(91_000));
        assert_eq!(through.lan_retransmitted_bytes, Some(448));
        let untold = with_link_repairs(figures(), Some(LinkResent::Untold));
        assert_eq!(untold.retransmitted_bytes, None, "not the LAN's in its place");
        assert_eq!(with_link_repairs(figures(), None), figures(), "hosts end to end");
    }

    #[test]
    fn a_failed_run_says_what_the_receiver_reported() {
        let log = std::env::temp_dir().join(format!("scps-bench-recv-{}.log", std::process::id()));
        std::fs::write(&log, "scps recv: listening\nthe last words\n").unwrap();
        let report = r#"{"bytes": 10, "error": "the peer closed in the middle of a message"}"#;
        assert_eq!(
            receiver_said(report, &log),
            "the peer closed in the middle of a message"
        );
        assert_eq!(receiver_said("", &log), "the last words", "no report: its log");
        assert_eq!(receiver_said(r#"{"bytes": 10}"#, &log), "the last words");
        std::fs::remove_file(&log).unwrap();
    }

    #[test]
    fn a_transfer_gets_four_times_its_ideal_and_a_stream_its_window_twice() {
        let geo = point(
            "geo-8mbit",
            &[
                "protocol=tcp-cubic",
                "link.rtt=600ms",
                "link.ber=0",
                "workload.bytes=100MB",
            ],
        );
        // 100 MB at 7.72 Mbit/s: 103.6 s, four times.
        assert_eq!(time_allowed(&geo).as_secs(), 414);
        let small = point(
            "geo-8mbit",
            &[
                "protocol=tcp-cubic",
                "link.rtt=600ms",
                "link.ber=0",
                "workload.bytes=1MB",
            ],
        );
        assert_eq!(time_allowed(&small), MIN_TIME);
        let iridium = point(
            "iridium-3ch",
            &["workload.rate=2048bps", "workload.duration=3min"],
        );
        assert_eq!(time_allowed(&iridium), Duration::from_secs(420));
    }
}
