//! Scenarios: a named experiment as a sweep of points, each point fully
//! resolved (link models, engine configuration, workload) and checked
//! before anything runs.

use std::collections::BTreeMap;
use std::time::Duration;

use scps_channel::{ChannelConfig, expected_up_fraction, goodput_limit_bps};
use serde::Deserialize;
use toml::Value;

use crate::error::Error;
use crate::gateways::{Gateways, RouteEngineSpec};
use crate::link::{ChannelSpec, Direction, Link, sustained_rate_bps};
use crate::protocol::Protocol;
use crate::routes::RouteSpec;
use crate::sweep::Sweep;
use crate::tcp::{TcpSpec, validate};
use crate::topology::{Topology, TopologySpec};
use crate::units::{Time, format_duration};
use crate::workload::{Workload, WorkloadSpec};

/// The scenarios shipped with the project, by name.
pub const BUILTIN: [(&str, &str); 5] = [
    (
        "lowrate-leo-geo",
        include_str!("../../../scenarios/lowrate-leo-geo.toml"),
    ),
    ("geo-8mbit", include_str!("../../../scenarios/geo-8mbit.toml")),
    ("t1-geo", include_str!("../../../scenarios/t1-geo.toml")),
    ("iridium-3ch", include_str!("../../../scenarios/iridium-3ch.toml")),
    (
        "complex-35ws",
        include_str!("../../../scenarios/complex-35ws.toml"),
    ),
];

/// Keys that describe a whole scenario and cannot be sweep axes.
const WHOLE_SCENARIO_KEYS: [&str; 4] = ["name", "description", "seed", "runs"];

/// Most runs one command may ask for (points times runs per point).
pub const MAX_RUNS: u64 = 100_000;

/// Longest a run may last in virtual time unless the scenario says.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// One point's document, as the schema has it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointSpec {
    name: String,
    #[serde(default)]
    description: String,
    protocol: String,
    seed: Option<u64>,
    runs: Option<u32>,
    time_limit: Option<Time>,
    link: ChannelSpec,
    workload: WorkloadSpec,
    #[serde(default)]
    tcp: TcpSpec,
    /// Settings for one protocol label only, over `[tcp]` (over
    /// `[gateway]` for the gateways of a `gw-` label).
    #[serde(default)]
    stacks: BTreeMap<String, TcpSpec>,
    /// The link engine of the gateways of `gw-` labels.
    #[serde(default)]
    gateway: TcpSpec,
    /// What the gateways of a `gw-` label carry (all TCP without any).
    #[serde(default)]
    route: Vec<RouteSpec<RouteEngineSpec>>,
    #[serde(default)]
    limit: LimitSpec,
    /// The network of nodes; two hosts on `[link]` without it.
    topology: Option<TopologySpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitSpec {
    /// H in the physical limit (docs/scenarios.md, "The limit").
    header_bytes: Option<u32>,
}

/// One fully resolved point of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub scenario: String,
    pub protocol: Protocol,
    /// The value of every sweep axis at this point.
    pub params: Vec<(String, Value)>,
    pub link: Link,
    pub tcp: scps_proto::Config,
    pub workload: Workload,
    pub header_bytes: u32,
    pub time_limit: Duration,
    pub topology: Topology,
    /// The gateways that split each connection around the stressed link,
    /// for a `gw-` label.
    pub gateways: Option<Gateways>,
    /// Tables of the point's document that configure real programs the
    /// way this point configures the simulator.
    pub tables: PointTables,
}

/// The point's `[link]` (for `scps emulate`), for a `gw-` label the
/// gateways' keys (`[gateway]`, then `[stacks.LABEL]` over it, for `scps
/// gateway`'s `[engine.tcp]`), as the document gives them, and the whole
/// document (for `scps send`/`recv --config`, which take its `[tcp]`,
/// `[stacks]` and `[link]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointTables {
    pub link: toml::Table,
    pub gateway: toml::Table,
    pub document: toml::Table,
}

impl PointTables {
    fn of(document: &toml::Table, protocol: Protocol) -> PointTables {
        let table = |value: Option<&Value>| value.and_then(Value::as_table).cloned().unwrap_or_default();
        let mut gateway = toml::Table::new();
        if protocol.through_gateways() {
            gateway = table(document.get("gateway"));
            gateway.extend(table(
                document.get("stacks").and_then(|s| s.get(protocol.label())),
            ));
        }
        PointTables {
            link: table(document.get("link")),
            gateway,
            document: document.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Seed and runs per point unless the command line says otherwise.
    pub seed: u64,
    pub runs: u32,
    pub points: Vec<Point>,
}

impl Scenario {
    /// Checks `runs` runs of every point (`key` names where the number came
    /// from: `runs` in the file, or `--runs`).
    pub fn check_runs(&self, key: &str, runs: u32) -> Result<(), Error> {
        let total = self.points.len() as u64 * u64::from(runs);
        if runs == 0 || total > MAX_RUNS {
            return Err(Error::invalid(
                key,
                runs,
                format!(
                    "1 to {} runs per point ({} points, at most {MAX_RUNS} runs in all)",
                    (MAX_RUNS / self.points.len().max(1) as u64).max(1),
                    self.points.len()
                ),
            ));
        }
        Ok(())
    }

    /// Loads a built-in scenario by name, or a TOML file by path, applies
    /// the `--set` assignments and resolves every point.
    pub fn load(name_or_path: &str, sets: &[(String, Value)]) -> Result<Scenario, Error> {
        let text = match BUILTIN.iter().find(|(name, _)| *name == name_or_path) {
            Some((_, text)) => return Scenario::from_text(text, &format!("scenario {name_or_path}"), sets),
            None => match crate::text_file::read_config_text(std::path::Path::new(name_or_path)) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::UnknownScenario {
                        name: name_or_path.to_owned(),
                        known: BUILTIN.map(|(n, _)| n).join(", "),
                    });
                }
                Err(error) => {
                    return Err(Error::Syntax {
                        origin: name_or_path.to_owned(),
                        message: format!("cannot read it: {error}"),
                    });
                }
            },
        };
        // Errors in a file name it; a built-in scenario is only wrong
        // through --set, whose keys the errors name.
        Scenario::from_text(&text, name_or_path, sets).map_err(|e| e.in_file(name_or_path))
    }

    pub fn from_text(text: &str, origin: &str, sets: &[(String, Value)]) -> Result<Scenario, Error> {
        let mut sweep = Sweep::parse(text, origin)?;
        for (key, value) in sets {
            sweep.set(key, value.clone())?;
        }
        // These describe the whole scenario, not a point of it.
        if let Some((key, _)) = sweep
            .axes
            .iter()
            .find(|(k, _)| WHOLE_SCENARIO_KEYS.contains(&k.as_str()))
        {
            return Err(Error::invalid(
                key.as_str(),
                "a list",
                "a single value (seeds and run counts vary with --seed and --runs)",
            ));
        }
        let mut scenario = None;
        let mut points = Vec::new();
        for document in sweep.points()? {
            let at = |error: Error| {
                if document.params.is_empty() {
                    return error;
                }
                let point = document
                    .params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                Error::AtPoint {
                    point,
                    error: Box::new(error),
                }
            };
            let spec: PointSpec = crate::deserialize(document.document.clone()).map_err(at)?;
            let point = resolve(&spec, document.params.clone(), &document.document).map_err(at)?;
            scenario.get_or_insert_with(|| Scenario {
                name: spec.name.clone(),
                description: spec.description.clone(),
                seed: spec.seed.unwrap_or(1),
                runs: spec.runs.unwrap_or(1),
                points: Vec::new(),
            });
            points.push(point);
        }
        let mut scenario = scenario.ok_or_else(|| Error::invalid("sweep", "empty", "at least one point"))?;
        scenario.points = points;
        scenario.check_runs("runs", scenario.runs)?;
        Ok(scenario)
    }
}

/// H of the physical limit (docs/scenarios.md, "The limit"): the headers
/// the stack really sends on a data segment, IPv4 and TCP (52 with
/// timestamps; 40 without), or IPv4 and the compressed header when an
/// SCPS stack offers header compression (docs/spec/compression.md: connection id,
/// control byte, sequence number, both timestamps, checksum: 36 with
/// timestamps, 28 without).
fn default_header_bytes(tcp: &scps_proto::Config) -> u32 {
    let compressed = tcp.scps && tcp.header_compression;
    let transport = match (compressed, tcp.timestamps) {
        (false, true) => 32,
        (false, false) => 20,
        (true, true) => 16,
        (true, false) => 8,
    };
    20 + transport
}

/// H of the limit under `saratoga`: IPv4, UDP and a DATA frame's header
/// (flags, session id, and an offset as wide as the descriptor a file of
/// `file_bytes` needs; no timestamp), as the engine sends them.
fn saratoga_header_bytes(file_bytes: u64) -> u32 {
    let descriptor = scps_saratoga::engine::descriptor_for(file_bytes);
    let data = scps_saratoga::wire::Data::header_len(descriptor, false);
    (scps_node::udp::IPV4_UDP_HEADER_LEN + data) as u32
}

/// Largest file `saratoga` may move in the simulator, which holds each
/// file in memory at both ends (the engine's memory store's limit).
const SARATOGA_MAX_FILE: u64 = scps_saratoga::engine::MemoryStore::MAX_FILE;

/// What `saratoga` can run: a bulk put of files one way between the two
/// hosts of `[link]`, at the route rate or a rate given as `tcp.rate`.
fn check_saratoga(spec: &PointSpec, workload: &Workload, tcp: &scps_proto::Config) -> Result<(), Error> {
    let kind = match workload {
        Workload::Bulk { both_ways: true, .. } => {
            return Err(Error::invalid(
                "workload.both_ways",
                true,
                "false under saratoga: the client puts its files to the server",
            ));
        }
        Workload::Bulk { bytes, files, .. } => {
            let per_file = bytes.div_ceil(u64::from(*files));
            if per_file > SARATOGA_MAX_FILE {
                return Err(Error::invalid(
                    "workload.bytes",
                    crate::units::Bytes(*bytes),
                    format!(
                        "at most {} per file under saratoga (the simulator holds files in memory; \
                         more workload.files split them)",
                        crate::units::Bytes(SARATOGA_MAX_FILE)
                    ),
                ));
            }
            None
        }
        Workload::Messages { .. } => Some("messages"),
        Workload::Echo { .. } => Some("echo"),
        Workload::Fetches(_) => Some("fetches"),
    };
    if let Some(kind) = kind {
        return Err(Error::invalid(
            "workload.kind",
            kind,
            "bulk under saratoga: it moves whole files, not message streams or fetches",
        ));
    }
    if spec.topology.is_some() {
        return Err(Error::invalid(
            "topology",
            "a table",
            "none under saratoga: it runs between the two hosts of [link], not through routers or gateways",
        ));
    }
    if tcp.rate_auto {
        return Err(Error::invalid(
            "tcp.rate",
            "auto",
            "a rate, or none for the route rate: saratoga sends at a fixed rate and does not measure the link",
        ));
    }
    Ok(())
}

/// The engine configuration a protocol label's hosts run with: `base`,
/// the label's defaults, then `[tcp]`, then `[stacks.LABEL]`, then what the
/// label decides (its congestion control, whether it offers SCPS-TP); each
/// stage checked, naming its keys.
pub(crate) fn engine_tcp(
    protocol: Protocol,
    tcp_spec: &TcpSpec,
    stacks: &BTreeMap<String, TcpSpec>,
    base: scps_proto::Config,
) -> Result<scps_proto::Config, Error> {
    for label in stacks.keys() {
        label.parse::<Protocol>().map_err(|_| {
            Error::invalid(
                format!("stacks.{label}"),
                "a table",
                format!("a protocol label: {}", Protocol::labels()),
            )
        })?;
    }
    layered_tcp(protocol, protocol, (tcp_spec, "tcp"), stacks, base)
}

/// `base`, `protocol`'s defaults, then `common` (the table called
/// `common_key`), then `[stacks.LABEL]` of `label`, then what `protocol`
/// decides; each stage checked, naming its keys.
pub(crate) fn layered_tcp(
    protocol: Protocol,
    label: Protocol,
    (common, common_key): (&TcpSpec, &str),
    stacks: &BTreeMap<String, TcpSpec>,
    mut tcp: scps_proto::Config,
) -> Result<scps_proto::Config, Error> {
    protocol.defaults(&mut tcp);
    common.apply(&mut tcp, common_key)?;
    validate(&tcp, common_key)?;
    if let Some(stack) = stacks.get(label.label()) {
        let prefix = format!("stacks.{label}");
        stack.apply(&mut tcp, &prefix)?;
        validate(&tcp, &prefix)?;
    }
    protocol.apply(&mut tcp);
    Ok(tcp)
}

/// The point `spec` describes, at `params` of the sweep; `document` is
/// its text as a table, whose tables for real programs it keeps.
fn resolve(spec: &PointSpec, params: Vec<(String, Value)>, document: &toml::Table) -> Result<Point, Error> {
    let protocol: Protocol = spec.protocol.parse()?;
    let link = spec.link.resolve()?;
    let base = scps_proto::Config {
        mtu: link.mtu,
        ..scps_proto::Config::default()
    };
    let tcp = engine_tcp(protocol.hosts(), &spec.tcp, &spec.stacks, base)?;
    let gateways = Gateways::resolve(protocol, &spec.gateway, &spec.stacks, &link, &spec.route)?;
    // The stressed link carries what the gateways send, if there are any.
    let across = gateways.as_ref().map(|g| g.link(&link, Direction::Forward));
    let workload = spec.workload.resolve()?;
    match &workload {
        _ if protocol.is_saratoga() => check_saratoga(spec, &workload, &tcp)?,
        Workload::Bulk { files, .. } if *files != 1 => {
            return Err(Error::invalid(
                "workload.files",
                files,
                format!("1 under {protocol}: only saratoga sends several files"),
            ));
        }
        _ => {}
    }
    let header_bytes = spec.limit.header_bytes.unwrap_or_else(|| match &workload {
        Workload::Bulk { bytes, files, .. } if protocol.is_saratoga() => {
            saratoga_header_bytes(bytes.div_ceil(u64::from(*files)))
        }
        _ => default_header_bytes(across.as_ref().unwrap_or(&tcp)),
    });
    if header_bytes == 0 || header_bytes >= u32::from(link.mtu) {
        return Err(Error::invalid(
            "limit.header_bytes",
            header_bytes,
            "1 byte to less than the MTU",
        ));
    }
    let time_limit = spec.time_limit.map_or(DEFAULT_TIME_LIMIT, |t| t.0);
    if time_limit.is_zero() {
        return Err(Error::invalid(
            "time_limit",
            format_duration(time_limit),
            "more than 0: the virtual time a run may take",
        ));
    }
    let topology = match &spec.topology {
        Some(topology) => topology.resolve(link.mtu, tcp.hop_limit)?,
        None => Topology::two_hosts(),
    };
    let point = Point {
        scenario: spec.name.clone(),
        protocol,
        params,
        link,
        tcp,
        workload,
        header_bytes,
        time_limit,
        topology,
        gateways,
        tables: PointTables::of(document, protocol),
    };
    for direction in [Direction::Forward, Direction::Reverse] {
        validate(&point.engine_config(direction), "tcp")?;
        if let Some(gateways) = &point.gateways {
            validate(&gateways.link(&point.link, direction), "gateway")?;
        }
    }
    Ok(point)
}

/// `config` of `protocol` on `link`, sending `direction`: what
/// [`Point::engine_config`] says.
pub(crate) fn with_route(
    mut config: scps_proto::Config,
    protocol: Protocol,
    link: &Link,
    direction: Direction,
) -> scps_proto::Config {
    if protocol.paced_at_route() && config.rate_bps.is_none() {
        // The link's own rate and framing, unless `rate` was given
        // (with `rate_framing` beside it if the link frames). A rate that
        // is "auto" measures the link instead, and knows only its framing.
        let route = link.route(direction);
        if !config.rate_auto {
            config.rate_bps = Some(route.rate_bps);
        }
        config.rate_framing_bytes = route.framing_bytes;
    }
    if config.ack_adaptive && config.ack_return_rate_bps.is_none() {
        config.ack_return_rate_bps = Some(link.route(direction).rate_bps);
    }
    config
}

impl Point {
    /// The engine configuration of the node whose data goes `direction`:
    /// an SCPS stack without a `rate` of its own paces to the route rate
    /// of that direction (docs/spec/scps-tp-options.md, "Rate control"), and the
    /// adaptive ACK policy, without an `ack_return_rate`, counts on the
    /// route rate of that direction, which the node's ACKs take.
    pub fn engine_config(&self, direction: Direction) -> scps_proto::Config {
        with_route(self.tcp.clone(), self.protocol, &self.link, direction)
    }

    /// The physical limit (docs/scenarios.md, "The limit") for the data this point moves,
    /// bit/s: each channel's rate (the shaper's sustained rate if lower),
    /// less packet errors at the MTU and header overhead, times the time
    /// it is up during a run of `run_length`; summed over the channels and
    /// the directions that carry data. Message streams cannot beat their
    /// offered rate (one stream per client host).
    pub fn limit_bps(&self, run_length: Duration) -> f64 {
        let direction = |channels: &[ChannelConfig]| -> f64 {
            channels
                .iter()
                .map(|c| {
                    goodput_limit_bps(
                        sustained_rate_bps(c) as f64,
                        c.effective_ber(usize::from(self.link.mtu)),
                        usize::from(self.link.mtu),
                        self.header_bytes as usize,
                        expected_up_fraction(&c.outages, run_length),
                    )
                })
                .sum()
        };
        let (forward, reverse) = (direction(&self.link.forward), direction(&self.link.reverse));
        match &self.workload {
            Workload::Bulk { both_ways: false, .. } => forward,
            Workload::Bulk { both_ways: true, .. } => forward + reverse,
            Workload::Messages {
                forward: f,
                reverse: r,
                ..
            } => {
                let clients = self.topology.clients().count() as f64;
                let offered = |flow: &crate::workload::MessageFlow| flow.rate_bps as f64 * clients;
                forward.min(offered(f)) + r.as_ref().map_or(0.0, |r| reverse.min(offered(r)))
            }
            // Each message crosses both ways.
            Workload::Echo { flow, .. } => {
                let clients = self.topology.clients().count() as f64;
                forward.min(reverse).min(flow.rate_bps as f64 * clients)
            }
            // Files flow from the server back to the clients.
            Workload::Fetches(_) => reverse,
        }
    }

    /// The params as `key=value` text, for tables and errors.
    pub fn describe(&self) -> String {
        self.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::parse_assignment;

    const DOC: &str = r#"
name = "demo"
[sweep]
protocol = ["tcp-vj", "tcp-cubic"]
"link.ber" = [0, 1e-5]
[link]
rate = "8Mbit"
delay = "300ms"
[workload]
kind = "bulk"
bytes = "100MB"
[tcp]
recv_buffer = "4MiB"
[stacks.tcp-cubic]
recv_buffer = "6MiB"
"#;

    #[test]
    fn points_are_resolved_with_per_stack_settings() {
        let scenario = Scenario::from_text(DOC, "demo", &[]).unwrap();
        assert_eq!(scenario.points.len(), 4);
        let vj = &scenario.points[0];
        let cubic = &scenario.points[2];
        assert_eq!(vj.protocol, Protocol::TcpVj);
        assert_eq!(vj.tcp.recv_buffer, 4 << 20);
        assert_eq!(cubic.tcp.recv_buffer, 6 << 20);
        assert_eq!(cubic.tcp.congestion, scps_proto::cc::CongestionAlgorithm::Cubic);
        assert_eq!(vj.link.forward[0].delay, Duration::from_millis(300));
    }

    #[test]
    fn scps_labels_bring_the_ri_rto_margin_which_a_stack_table_may_override() {
        let overrides = ["protocol=[\"tcp-vj\",\"scps-rate\",\"scps-vj\"]", "link.ber=0"]
            .map(|a| parse_assignment(a).unwrap());
        let doc = format!("{DOC}[stacks.scps-vj]\nrto_margin_min = \"2s\"\n");
        let scenario = Scenario::from_text(&doc, "demo", &overrides).unwrap();
        let margin = |label: &str| {
            let point = scenario
                .points
                .iter()
                .find(|p| p.protocol.label() == label)
                .unwrap();
            point.tcp.rto_margin_min
        };
        assert_eq!(
            margin("tcp-vj"),
            Duration::ZERO,
            "RFC 6298: the clock granularity only"
        );
        assert_eq!(margin("scps-rate"), Duration::from_millis(500));
        assert_eq!(margin("scps-vj"), Duration::from_secs(2));
    }

    #[test]
    fn behind_gateways_the_hosts_run_cubic_and_the_gateways_their_own_engine() {
        let overrides = ["protocol=\"gw-scps-vegas\"", "link.ber=0"].map(|a| parse_assignment(a).unwrap());
        let doc = format!(
            "{DOC}[gateway]\nsnack_delay = \"50ms\"\n[stacks.gw-scps-vegas]\nrecv_buffer = \"3MiB\"\n"
        );
        let scenario = Scenario::from_text(&doc, "demo", &overrides).unwrap();
        let point = &scenario.points[0];
        // The hosts: [tcp] and [stacks.tcp-cubic], CUBIC, no SCPS-TP.
        assert_eq!(point.tcp.congestion, scps_proto::cc::CongestionAlgorithm::Cubic);
        assert_eq!(point.tcp.recv_buffer, 6 << 20);
        assert!(!point.tcp.scps);
        assert_eq!(point.engine_config(Direction::Forward).rate_bps, None);
        let gateways = point.gateways.as_ref().unwrap();
        assert_eq!(gateways.across, Protocol::ScpsVegas);
        let across = gateways.link(&point.link, Direction::Forward);
        assert!(across.scps);
        assert_eq!(across.congestion, scps_proto::cc::CongestionAlgorithm::Vegas);
        assert_eq!(across.rate_bps, Some(8_000_000), "paced at the link's rate");
        let auto = Scenario::from_text(
            &doc,
            "demo",
            &["protocol=\"gw-scps-rate\"", "link.ber=0", "gateway.rate=\"auto\""]
                .map(|a| parse_assignment(a).unwrap()),
        )
        .unwrap();
        let across_auto = auto.points[0]
            .gateways
            .as_ref()
            .unwrap()
            .link(&auto.points[0].link, Direction::Forward);
        assert!(across_auto.rate_auto);
        assert_eq!(across_auto.rate_bps, None, "\"auto\" is not told the link's rate");
        assert_eq!(across.snack_delay, Duration::from_millis(50), "[gateway]");
        assert_eq!(across.recv_buffer, 3 << 20, "[stacks.gw-scps-vegas]");
        // Not [tcp]'s 4 MiB: four 8 Mbit/s x 600 ms products.
        assert_eq!(across.send_buffer, 2_400_000);
        assert_eq!(gateways.relay_buffer, 600_000);
        assert_eq!(
            across.rto_margin_min,
            Duration::from_millis(500),
            "an SCPS stack's RTO"
        );
        // The limit's headers are the gateways' on the link.
        assert_eq!(point.header_bytes, 52);
    }

    #[test]
    fn a_gw_label_s_routes_lay_their_own_keys_over_the_gateways_engine() {
        let overrides = ["protocol=\"gw-scps-rate\"", "link.ber=0"].map(|a| parse_assignment(a).unwrap());
        let at = |routes: &str| {
            let doc = format!("{DOC}[gateway]\nsnack_delay = \"50ms\"\n{routes}");
            Scenario::from_text(&doc, "demo", &overrides).unwrap().points[0].clone()
        };
        let point = at(
            "[[route]]\nname = \"rest\"\n[route.engine.tcp]\nrate = \"2Mbit\"\n\
             [[route]]\nname = \"ssh\"\nports = \"22\"\npass = true\n\
             [[route]]\nname = \"bulk\"\nports = \"5001\"\nbuffer = \"1MiB\"\n\
             [route.engine]\nprotocol = \"scps-vegas\"\n",
        );
        let gateways = point.gateways.as_ref().unwrap();
        let table = gateways.routes(Direction::Forward);
        let names: Vec<&str> = table.routes().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["ssh", "bulk", "rest"], "most specific first");
        let settings = |i: usize| table.routes()[i].carried.clone();
        assert_eq!(settings(0), None, "ssh passes");
        let bulk = settings(1).unwrap();
        assert_eq!(bulk.engine.congestion, scps_proto::cc::CongestionAlgorithm::Vegas);
        assert_eq!(bulk.engine.snack_delay, Duration::from_millis(50), "[gateway]");
        assert_eq!(bulk.engine.rate_bps, Some(8_000_000), "paced at the link's rate");
        assert_eq!(
            (bulk.engine.rate_route, bulk.relay.buffer),
            (3, 1 << 20),
            "its number in the file, and its own buffer"
        );
        let rest = settings(2).unwrap();
        assert_eq!(rest.engine.congestion, scps_proto::cc::CongestionAlgorithm::Rate);
        assert_eq!(rest.engine.rate_bps, Some(2_000_000), "its own rate");
        assert_eq!(
            (rest.engine.rate_route, rest.relay.buffer),
            (1, gateways.relay_buffer)
        );
        // Without routes: one carries everything, as the gateways' link
        // engine of each direction, with one rate budget.
        let point = at("");
        let gateways = point.gateways.as_ref().unwrap();
        for direction in [Direction::Forward, Direction::Reverse] {
            let routes = gateways.routes(direction).routes();
            assert_eq!(routes.len(), 1);
            let carried = routes[0].carried.as_ref().unwrap();
            assert_eq!(*carried.engine, gateways.link(&point.link, direction));
            assert_eq!(
                (carried.engine.rate_route, carried.relay.buffer),
                (0, gateways.relay_buffer)
            );
        }
    }

    #[test]
    fn saratoga_paces_at_the_route_rate_and_its_headers_are_ip_udp_and_data() {
        let at = |sets: &[&str]| {
            let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).unwrap()).collect();
            Scenario::from_text(DOC, "demo", &sets).map(|s| s.points[0].clone())
        };
        let point = at(&["protocol=\"saratoga\"", "link.ber=0"]).unwrap();
        assert_eq!(point.engine_config(Direction::Forward).rate_bps, Some(8_000_000));
        // 20 + 8, then flags, session id and a 32-bit offset for 1 MiB.
        assert_eq!(point.header_bytes, 20 + 8 + 12);
        let small = at(&["protocol=\"saratoga\"", "link.ber=0", "workload.bytes=\"60KB\""]).unwrap();
        // The engine never sends 16-bit offsets (Vallona's stray STATUS
        // bytes would read as a hole): a 32-bit one for a small file too.
        assert_eq!(small.header_bytes, 20 + 8 + 12, "a 32-bit offset");
        let split = at(&["protocol=\"saratoga\"", "link.ber=0", "workload.files=4"]).unwrap();
        assert!(matches!(split.workload, Workload::Bulk { files: 4, .. }));
        let rated = at(&["protocol=\"saratoga\"", "link.ber=0", "tcp.rate=\"2Mbit\""]).unwrap();
        assert_eq!(rated.engine_config(Direction::Forward).rate_bps, Some(2_000_000));
    }

    #[test]
    fn what_saratoga_cannot_run_is_refused_naming_the_key() {
        let err = |sets: &[&str]| {
            let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).unwrap()).collect();
            Scenario::from_text(DOC, "demo", &sets).unwrap_err().to_string()
        };
        let messages = err(&[
            "protocol=\"saratoga\"",
            "workload={kind=\"messages\",size=64,rate=\"2kbit\",duration=\"1min\"}",
        ]);
        assert!(
            messages.contains("workload.kind = messages: bulk under saratoga"),
            "{messages}"
        );
        let both = err(&["protocol=\"saratoga\"", "workload.both_ways=true"]);
        assert!(
            both.contains("workload.both_ways = true: false under saratoga"),
            "{both}"
        );
        let auto = err(&["protocol=\"saratoga\"", "tcp.rate=\"auto\""]);
        assert!(auto.contains("tcp.rate = auto"), "{auto}");
        let gateways = err(&["protocol=\"saratoga\"", "topology.nodes=[]"]);
        assert!(gateways.contains("topology"), "{gateways}");
        let files = err(&["protocol=\"tcp-vj\"", "workload.files=2"]);
        assert!(files.contains("workload.files = 2: 1 under tcp-vj"), "{files}");
    }

    #[test]
    fn without_gateways_a_point_has_none() {
        let scenario = Scenario::from_text(DOC, "demo", &[]).unwrap();
        assert!(scenario.points.iter().all(|p| p.gateways.is_none()));
    }

    #[test]
    fn the_limit_matches_the_figures_of_docs_scenarios() {
        let scenario = Scenario::from_text(DOC, "demo", &[]).unwrap();
        let run = Duration::from_secs(100);
        let clean = scenario.points[0].limit_bps(run);
        let lossy = scenario.points[1].limit_bps(run);
        assert!((clean - 7.72e6).abs() < 0.01e6, "{clean}");
        assert!((lossy - 6.85e6).abs() < 0.01e6, "{lossy}");
    }

    #[test]
    fn header_compression_is_a_key_and_lowers_the_header_bytes_of_scps_stacks() {
        let sets = [
            "tcp.header_compression=true",
            "protocol=[\"tcp-vj\",\"scps-rate\"]",
        ]
        .map(|s| parse_assignment(s).unwrap());
        let scenario = Scenario::from_text(DOC, "demo", &sets).unwrap();
        let header_bytes = |protocol| {
            let point = scenario.points.iter().find(|p| p.protocol == protocol).unwrap();
            assert!(point.tcp.header_compression);
            point.header_bytes
        };
        // Only SCPS stacks offer it (the capabilities option carries it).
        assert_eq!(header_bytes(Protocol::TcpVj), 52);
        assert_eq!(header_bytes(Protocol::ScpsRate), 20 + 16);
        let plain = Scenario::from_text(DOC, "demo", &[]).unwrap();
        assert!(!plain.points[0].tcp.header_compression, "off unless asked for");
    }

    #[test]
    fn unknown_keys_bad_units_and_ranges_are_refused_before_running() {
        let cases = [
            (
                "link.bandwidth=5",
                "at protocol=\"tcp-vj\", link.ber=0: link.bandwidth: unknown field `bandwidth`, expected one of `rate`",
            ),
            (
                "link.delay=300",
                "at protocol=\"tcp-vj\", link.ber=0: link.delay: invalid duration \"300\"",
            ),
            ("link.ber=2", "link.ber: invalid bit-error rate \"2\""),
            (
                "protocol=tcp-reno",
                "protocol = \"tcp-reno\": one of tcp-vj, tcp-cubic",
            ),
            ("tcp.rto_min=0s", "tcp.rto_min = 0ns: greater than zero"),
            (
                "stacks.tcp-foo.nagle=false",
                "stacks.tcp-foo = a table: a protocol label",
            ),
            (
                "link.rate=0",
                "link.rate: rate \"0\" is out of range: from 1 bit/s to 1000 Gbit/s",
            ),
            (
                "link.delay=36500d",
                "link.delay: duration \"36500d\" is out of range: at most 1e9 s",
            ),
            ("link.mtu=70000", "link.mtu = 70000: 576 to 65535 bytes"),
            ("link.mtu=20", "link.mtu = 20: 576 to 65535 bytes"),
            (
                "time_limit=0s",
                "time_limit = 0ns: more than 0: the virtual time a run may take",
            ),
        ];
        for (set, expected) in cases {
            let assignment = parse_assignment(set).unwrap();
            let err = Scenario::from_text(DOC, "demo", &[assignment])
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "--set {set}: {err}");
        }
    }

    #[test]
    fn whole_scenario_keys_cannot_be_swept_and_runs_are_bounded() {
        let seeds = parse_assignment("seed=[5,7]").unwrap();
        let err = Scenario::from_text(DOC, "demo", &[seeds])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("seed = a list: a single value"), "{err}");
        let scenario = Scenario::from_text(DOC, "demo", &[]).unwrap();
        assert!(scenario.check_runs("--runs", 25_000).is_ok());
        let err = scenario.check_runs("--runs", 25_001).unwrap_err().to_string();
        assert_eq!(
            err,
            "--runs = 25001: 1 to 25000 runs per point (4 points, at most 100000 runs in all)"
        );
        assert!(scenario.check_runs("--runs", 0).is_err());
        let many = parse_assignment("runs=4000000000").unwrap();
        let err = Scenario::from_text(DOC, "demo", &[many]).unwrap_err().to_string();
        assert!(err.starts_with("runs = 4000000000: 1 to 25000"), "{err}");
    }

    #[test]
    fn errors_in_a_file_name_the_file_once() {
        let dir = std::env::temp_dir().join(format!("scps-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("broken.toml");
        let path_text = path.to_str().unwrap();
        for (text, expected) in [
            ("[link]\nmtu = 20\n", "top level: missing field `name`"),
            (
                "name = \"x\"\nprotocol = \"tcp-vj\"\n[workload]\nkind = \"bulk\"\nbytes = \"1MB\"\n[link]\nrate = \"8Mbit\"\nmtu = 20\n",
                "link.mtu = 20: 576 to 65535 bytes",
            ),
            ("[link\n", "line 1, column 6: unclosed table"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Scenario::load(path_text, &[]).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{path_text}: ")), "{err}");
            assert!(err.contains(expected), "{err}");
            assert_eq!(err.matches(path_text).count(), 1, "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unreadable_files_say_why() {
        let err = Scenario::load("/", &[]).unwrap_err().to_string();
        assert!(err.starts_with("/: cannot read it: "), "{err}");
    }

    #[test]
    fn scps_stacks_pace_at_the_line_rate_and_charge_its_framing() {
        let sets = [
            "protocol=scps-rate",
            "link.return.rate=2400bps",
            "link.ber=0",
            "link.delay=0ms",
        ]
        .map(|a| parse_assignment(a).unwrap());
        let scenario = Scenario::load("lowrate-leo-geo", &sets).unwrap();
        let point = &scenario.points[0];
        let forward = point.engine_config(Direction::Forward);
        let reverse = point.engine_config(Direction::Reverse);
        assert_eq!((forward.rate_bps, forward.rate_framing_bytes), (Some(115_200), 8));
        assert_eq!((reverse.rate_bps, reverse.rate_framing_bytes), (Some(2400), 8));
        let tcp = Scenario::load("lowrate-leo-geo", &[parse_assignment("protocol=tcp-vj").unwrap()]).unwrap();
        assert_eq!(tcp.points[0].engine_config(Direction::Forward).rate_bps, None);
    }

    #[test]
    fn every_builtin_scenario_loads() {
        for (name, _) in BUILTIN {
            let scenario = Scenario::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(scenario.name, name);
            assert!(!scenario.points.is_empty());
        }
        let err = Scenario::load("no-such", &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("no scenario \"no-such\": not a built-in scenario (lowrate-leo-geo, "),
            "{err}"
        );
    }
}
