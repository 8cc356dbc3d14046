//! What the kernel must do for the transparent mode, installed on start
//! and removed on every exit (docs/architecture.md, "On a real network,
//! through two gateways"):
//!
//! - **interception**: TCP from the LAN interface between a local and a
//!   remote prefix goes to the gateway's `IP_TRANSPARENT` listener
//!   (nftables TPROXY, a firewall mark, and a `local` route for marked
//!   packets in a table of its own); LAN packets of the sockets the
//!   gateway opened or accepted transparently are marked and delivered
//!   the same way (`socket transparent`). A LAN segment other than a
//!   SYN may be a server's answer to a client across the link: if the
//!   route matching it as one passes, it passes (nft.rs). Only LAN
//!   packets: the link
//!   connection of an intercepted one has the very same addresses and
//!   ports, and its packets, leaving the TUN device, must be forwarded,
//!   not delivered to the intercepted socket;
//! - **steering**: TCP of the routes' connections, and compressed SCPS-TP
//!   (IP protocol 105), arriving on the link interface from a remote
//!   prefix to a local one is marked (`mark + 1`) and routed into the
//!   gateway's TUN device (a policy rule on the mark and a table whose
//!   default route is the device), where the engine reads it.
//!
//! A link that rides a bundle of UDP channels (`[engine.bundle]`,
//! [`LinkPath::Bundle`]) has no steering, no TUN device and no changed
//! kernel setting: the engine's packets travel inside the channels'
//! datagrams, which the engine's own sockets send and receive, so the
//! kernel never sees a link packet to route, steer, filter by its path
//! back or demultiplex early. The interception stays, as do its `local`
//! route and the delivery of the far side's server answers to the
//! gateway's transparent sockets: those are LAN packets.
//!
//! Both follow the routes (scps-relay's `routes.rs`), the very table the
//! accept path and the far side decide by, in its order (most specific
//! first): a route that carries intercepts and steers its connections,
//! one that passes lets them through, and a connection no route matches
//! passes too. Everything
//! else is routed by the kernel as if the gateway were a plain router.
//! IPv4 and IPv6 alike, each family where both sides have prefixes of it.
//!
//! One kernel setting changes while the mode runs: TCP early demux is
//! turned off (`net.ipv4.tcp_early_demux`, restored on exit; its value
//! before is noted on the nftables table, so that a gateway killed and
//! started again restores that value, not the 0 it finds). The link
//! connection of an intercepted connection has its very addresses and
//! ports, so early demux would find the intercepted socket for the link
//! packets leaving the TUN device, and the kernel drops a packet to
//! forward that a local socket has claimed.

use std::process::{Command, Stdio};

use scps_config::bundle::Bundle;
use scps_node::IpPrefix;
use scps_relay::RouteTable;
use scps_relay::routes::Family;

/// Turned off while the mode runs (see the module's documentation).
const EARLY_DEMUX: &str = "net.ipv4.tcp_early_demux";

/// The comment on the nftables table that keeps [`EARLY_DEMUX`]'s value
/// from before, followed by the value.
const EARLY_DEMUX_NOTE: &str = "scps: net.ipv4.tcp_early_demux was ";

/// How the link connections' packets reach the far gateway.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkPath {
    /// Written into the TUN device `tun`, the kernel routing them out of
    /// the interface `link`, where the far gateway's are steered in from.
    Routed { link: String, tun: String },
    /// In the UDP channels of this bundle, which the engine sends and
    /// receives itself (`[engine.bundle]`).
    Bundle(Bundle),
    /// Sealed by the secure link, each packet whole (addresses and all) in
    /// a UDP datagram from `udp` to the far gateway's `peer` (or where
    /// its authenticated datagrams come from, without one).
    Tunnel {
        udp: std::net::SocketAddr,
        peer: Option<std::net::SocketAddr>,
    },
}

/// What the transparent mode installs, from its configuration; its rules
/// follow a route table given where they are written.
#[derive(Debug, Clone, PartialEq)]
pub struct Plumbing {
    pub lan: String,
    pub link: LinkPath,
    pub local: Vec<IpPrefix>,
    pub remote: Vec<IpPrefix>,
    /// The interception listener's port.
    pub port: u16,
    pub mark: u32,
    /// Routing tables `table` (local delivery of marked packets) and
    /// `table + 1` (into the TUN device, for a routed link); the policy
    /// rules have those numbers as priorities, so that they can be found
    /// and removed.
    pub table: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum PlumbingError {
    #[error("cannot run `{command}`: {error} (is {program} installed?)")]
    Spawn {
        command: String,
        program: &'static str,
        error: std::io::Error,
    },
    #[error("`{command}` failed: {message}")]
    Failed { command: String, message: String },
    #[error("{key} = {name:?}: there is no such interface here (`ip link` lists those there are)")]
    NoInterface { key: &'static str, name: String },
    #[error("{setting} is {value}: {why}")]
    Setting {
        setting: String,
        value: String,
        why: &'static str,
    },
    /// Reverse-path filtering is on where the mode's packets arrive: the
    /// devices where it is, and what gives it.
    #[error("{}", reverse_path_text(.0))]
    ReversePathFilter(Vec<ReversePath>),
}

/// Reverse-path filtering as the kernel applies it to the packets arriving
/// on a device: the larger of `net.ipv4.conf.all.rp_filter` and the
/// device's own `net.ipv4.conf.DEVICE.rp_filter` (0 off, 1 strict, 2
/// loose). `net.ipv4.conf.default.rp_filter` has no part in it: it is
/// only the value a device created later starts with.
pub fn effective_rp_filter(all: u32, own: u32) -> u32 {
    all.max(own)
}

/// One device the transparent mode's packets arrive on, and its
/// reverse-path filtering as the start-up check read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReversePath {
    /// The configuration key that names the device.
    pub key: &'static str,
    pub device: String,
    /// `net.ipv4.conf.all.rp_filter`.
    pub all: u32,
    /// `net.ipv4.conf.DEVICE.rp_filter`; `None` for the TUN device, whose
    /// own value the gateway sets to 0 itself when it installs the
    /// steering (whatever `default` gave it when it was created).
    pub own: Option<u32>,
}

impl ReversePath {
    /// The filtering the kernel applies there (once the gateway has set
    /// what it sets).
    pub fn effective(&self) -> u32 {
        effective_rp_filter(self.all, self.own.unwrap_or(0))
    }
}

/// Refuses `devices` if reverse-path filtering is on (not 0) on any of
/// them, naming those where it is.
fn reverse_paths_off(devices: Vec<ReversePath>) -> Result<(), PlumbingError> {
    let on: Vec<ReversePath> = devices
        .into_iter()
        .filter(|device| device.effective() != 0)
        .collect();
    if on.is_empty() {
        Ok(())
    } else {
        Err(PlumbingError::ReversePathFilter(on))
    }
}

/// An `rp_filter` value's name.
fn filtering(value: u32) -> &'static str {
    match value {
        0 => "off",
        1 => "strict",
        _ => "loose",
    }
}

/// The sysctl key of `setting` under `net.ipv4.conf.DEVICE`, as `sysctl`
/// takes it: with slashes when the device's name holds a dot (a VLAN's
/// `eth0.100`), which the dotted form would split.
fn conf_key(device: &str, setting: &str) -> String {
    if device.contains('.') {
        format!("net/ipv4/conf/{device}/{setting}")
    } else {
        format!("net.ipv4.conf.{device}.{setting}")
    }
}

/// The one `sysctl` command that turns reverse-path filtering off on
/// `devices`: `all`, and each device's own value (those given).
fn rp_filter_off<'a>(all: bool, devices: impl IntoIterator<Item = &'a str>) -> String {
    let mut command = "sysctl -w".to_owned();
    if all {
        command.push_str(" net.ipv4.conf.all.rp_filter=0");
    }
    for device in devices {
        command.push(' ');
        command.push_str(&conf_key(device, "rp_filter"));
        command.push_str("=0");
    }
    command
}

/// What [`PlumbingError::ReversePathFilter`] says: each device where the
/// filtering is on, the two values it is the larger of, and the command
/// that turns it off.
fn reverse_path_text(on: &[ReversePath]) -> String {
    let clauses: Vec<String> = on
        .iter()
        .map(|device| {
            let value = device.effective();
            match device.own {
                None => format!(
                    "on the TUN device {} ({}) it would be {value} ({}): net.ipv4.conf.all.rp_filter is {}, and the \
                     gateway sets the device's own value to 0; the device has no address, so {} filtering drops \
                     every packet the gateway writes to it",
                    device.device,
                    device.key,
                    filtering(value),
                    device.all,
                    filtering(value)
                ),
                Some(own) => format!(
                    "on {} ({}) it is {value} ({}), the larger of net.ipv4.conf.all.rp_filter = {} and {} = {own}",
                    device.device,
                    device.key,
                    filtering(value),
                    device.all,
                    conf_key(&device.device, "rp_filter")
                ),
            }
        })
        .collect();
    let all = on.iter().any(|device| device.all != 0);
    let own = on
        .iter()
        .filter(|device| device.own.is_some_and(|own| own != 0))
        .map(|device| device.device.as_str());
    format!(
        "reverse-path filtering must be off (0) on each device the transparent mode's packets arrive on, and the \
         kernel filters with the larger of net.ipv4.conf.all.rp_filter and the device's own value: {}. Run `{}` \
         (and keep it in /etc/sysctl.d/)",
        clauses.join("; "),
        rp_filter_off(all, own)
    )
}

impl Plumbing {
    pub(super) fn nft_table(&self) -> String {
        format!("scps_gateway_{}", self.port)
    }

    /// The firewall mark of link packets steered into the TUN device.
    pub fn steer_mark(&self) -> u32 {
        self.mark + 1
    }

    /// The interface link packets arrive on and the TUN device they are
    /// steered into, if the link is routed (not a bundle's: see the
    /// module's documentation).
    pub fn steering(&self) -> Option<(&str, &str)> {
        match &self.link {
            LinkPath::Routed { link, tun } => Some((link, tun)),
            LinkPath::Bundle(_) | LinkPath::Tunnel { .. } => None,
        }
    }

    /// The nftables script of the interception and the steering of
    /// `routes`.
    pub fn nft_script(&self, routes: &RouteTable) -> String {
        super::nft::script(self, routes)
    }

    /// The address families the mode carries: those that have both a
    /// local and a remote prefix.
    pub fn families(&self) -> Vec<Family> {
        [Family::V4, Family::V6]
            .into_iter()
            .filter(|&f| {
                let has = |prefixes: &[IpPrefix]| prefixes.iter().any(|p| Family::of(p.network()) == f);
                has(&self.local) && has(&self.remote)
            })
            .collect()
    }

    /// The `ip` commands of the policy routing, in the order they run:
    /// the same for each family carried.
    pub fn ip_commands(&self) -> Vec<Vec<String>> {
        let (deliver, steer) = (self.table, self.table + 1);
        self.families()
            .into_iter()
            .flat_map(|family| {
                let (option, any) = match family {
                    Family::V4 => ("-4", "0.0.0.0/0"),
                    Family::V6 => ("-6", "::/0"),
                };
                let delivery = [
                    format!(
                        "{option} rule add fwmark {:#x} lookup {deliver} priority {deliver}",
                        self.mark
                    ),
                    format!("{option} route add local {any} dev lo table {deliver}"),
                ];
                let steering = self.steering().map(|(_, tun)| {
                    [
                        format!(
                            "{option} rule add fwmark {:#x} lookup {steer} priority {steer}",
                            self.steer_mark()
                        ),
                        format!("{option} route add default dev {tun} table {steer}"),
                    ]
                });
                delivery.into_iter().chain(steering.into_iter().flatten())
            })
            .map(|command| words(&command))
            .collect()
    }

    /// Installs the nftables rules again, for routes that changed: one
    /// transaction, so no packet sees half of the old and half of the new.
    fn reinstall_rules(&self, routes: &RouteTable) -> Result<(), PlumbingError> {
        run("nft", &["-f", "-"], Some(&self.nft_script(routes)))
    }

    /// Everything installed for `routes`, as an operator who manages their
    /// own rules would write it (`--print-rules`).
    pub fn describe(&self, routes: &RouteTable) -> String {
        let mut text = format!("# nft -f - <<'EOF'\n{}# EOF\n", self.nft_script(routes));
        for command in self.ip_commands() {
            text.push_str(&format!("ip {}\n", command.join(" ")));
        }
        if let Some((link, tun)) = self.steering() {
            text.push_str(&format!(
                "# checked at start, not changed: reverse-path filtering off where the link packets arrive\n\
                 # {}\n",
                rp_filter_off(true, [link])
            ));
            text.push_str(&format!(
                "sysctl -w {}=0   # the TUN device carries the clients' addresses\n",
                conf_key(tun, "rp_filter")
            ));
            text.push_str(&format!(
                "sysctl -w {EARLY_DEMUX}=0   # link packets have the intercepted sockets' addresses and ports\n"
            ));
        }
        text
    }

    /// Checks the kernel settings the mode depends on (before anything is
    /// made, so that a refusal leaves nothing behind).
    ///
    /// Forwarding and reverse-path filtering (`reverse_paths`)
    /// are about link packets the kernel forwards and filters; a bundle's
    /// link has none (the module's documentation), nor has the secure
    /// link, and the intercepted LAN connections end and start at the
    /// gateway's own sockets, so nothing is checked for them.
    pub fn check_settings(&self) -> Result<(), PlumbingError> {
        // A missing interface would install rules that match nothing: a
        // gateway that runs and carries nothing.
        let mut interfaces = vec![("transparent.lan", self.lan.as_str())];
        if let Some((link, _)) = self.steering() {
            interfaces.push(("transparent.link", link));
        }
        for (key, name) in interfaces {
            if nix::net::if_::if_nametoindex(name).is_err() {
                return Err(PlumbingError::NoInterface {
                    key,
                    name: name.to_owned(),
                });
            }
        }
        if self.steering().is_none() {
            return Ok(());
        }
        let families = self.families();
        if families.contains(&Family::V4) {
            check_setting(
                "net.ipv4.ip_forward",
                |v| v == "1",
                "the gateway forwards its link packets: set it to 1",
            )?;
            reverse_paths_off(self.reverse_paths()?)?;
        }
        if families.contains(&Family::V6) {
            check_setting(
                "net.ipv6.conf.all.forwarding",
                |v| v == "1",
                "the gateway forwards its link packets: set it to 1",
            )?;
        }
        Ok(())
    }

    /// Reverse-path filtering on each device the routed link's packets
    /// arrive on to be forwarded, read now (before the TUN device is
    /// created).
    ///
    /// - The TUN device: the engine writes the link packets into it, with
    ///   the applications' addresses, for the kernel to forward out of the
    ///   link interface. The device has no address, and the kernel drops
    ///   a packet that arrives on a device without one unless its source
    ///   is routed back through that very device, or the filtering is
    ///   off: loose (2) drops every one of them as surely as strict (1).
    ///   The gateway creates the device and sets its own value to 0
    ///   (`install`), so `default`, which a new device starts with, does
    ///   not count there, and only `all` can be wrong.
    /// - The link interface: the far side's link packets arrive there from
    ///   the remote prefixes, to be steered into the TUN device. It exists
    ///   before the gateway starts, so its own value counts with `all`. A
    ///   filter passes them only if the host routes the remote prefixes
    ///   back out of that interface (strict) or at all (loose, and not
    ///   even then on an interface without an IPv4 address): a satellite
    ///   link whose return path is another interface loses every one, and
    ///   the gateway cannot tell from the routes it does not own, so it
    ///   asks for 0 there as on the TUN device.
    ///
    /// The LAN interface is not checked: the packets the mode takes there
    /// come from the local prefixes, which the gateway reaches through
    /// that same interface (its answers to the clients go there), so a
    /// filter passes them at any setting; so it is for a bundled link,
    /// which checks nothing.
    fn reverse_paths(&self) -> Result<Vec<ReversePath>, PlumbingError> {
        let Some((link, tun)) = self.steering() else {
            return Ok(Vec::new());
        };
        let all = read_rp_filter("all")?;
        Ok(vec![
            ReversePath {
                key: "transparent.link",
                device: link.to_owned(),
                all,
                own: Some(read_rp_filter(link)?),
            },
            ReversePath {
                key: "transparent.tun",
                device: tun.to_owned(),
                all,
                own: None,
            },
        ])
    }

    /// Installs the interception and the steering of `routes` (after
    /// removing what a gateway of the same configuration may have left,
    /// killed before it could). The TUN device of a routed link must
    /// exist. Undone when the result is dropped.
    pub fn install(self, routes: &RouteTable) -> Result<Installed, PlumbingError> {
        // What a killed gateway of this configuration changed is known
        // from the table it left: read before that table goes.
        let left = self.early_demux_noted();
        self.remove();
        // Read only where it is changed: an empty one is not restored.
        let early_demux = match self.steering() {
            Some(_) => left.unwrap_or_else(|| read_setting(EARLY_DEMUX)),
            None => String::new(),
        };
        // From here on, whatever fails is undone by the guard's drop.
        let installed = Installed {
            plumbing: self,
            early_demux,
        };
        let plumbing = &installed.plumbing;
        if let Some((_, tun)) = plumbing.steering() {
            // The setting's value before, noted on the table, where a
            // gateway restarted after being killed finds it.
            let note = format!(
                "table inet {} {{ comment \"{EARLY_DEMUX_NOTE}{}\"; }}\n",
                plumbing.nft_table(),
                installed.early_demux
            );
            run("nft", &["-f", "-"], Some(&note))?;
            // The path by hand: an interface name may hold dots.
            write_proc(&format!("net/ipv4/conf/{tun}/rp_filter"), "0")?;
            write_proc(&EARLY_DEMUX.replace('.', "/"), "0")?;
        }
        run("nft", &["-f", "-"], Some(&plumbing.nft_script(routes)))?;
        for command in plumbing.ip_commands() {
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            run("ip", &args, None)?;
        }
        tracing::info!(table = %plumbing.nft_table(), "interception and steering installed");
        Ok(installed)
    }

    /// The value of TCP early demux before it was turned off, as noted on
    /// this configuration's table by a gateway that could not restore it
    /// (killed), if there is such a table.
    fn early_demux_noted(&self) -> Option<String> {
        let output = Command::new("nft")
            .args(["list", "table", "inet", &self.nft_table()])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let listing = String::from_utf8_lossy(&output.stdout);
        let value = listing.split(EARLY_DEMUX_NOTE).nth(1)?.split('"').next()?;
        (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())).then(|| value.to_owned())
    }

    /// Removes what `install` installs, ignoring what is not there.
    /// (Both families, and the `ip` table of earlier versions, whatever
    /// this configuration carries: what a gateway left may have been
    /// configured otherwise.)
    fn remove(&self) {
        for family in ["inet", "ip"] {
            let _ = run("nft", &["delete", "table", family, &self.nft_table()], None);
        }
        for option in ["-4", "-6"] {
            for priority in [self.table, self.table + 1] {
                // One rule per call: until none of that priority is left.
                let priority = priority.to_string();
                while run("ip", &[option, "rule", "del", "priority", &priority], None).is_ok() {}
            }
            for table in [self.table, self.table + 1] {
                let _ = run(
                    "ip",
                    &[option, "route", "flush", "table", &table.to_string()],
                    None,
                );
            }
        }
    }
}

/// The installed plumbing; dropping it removes it.
#[derive(Debug)]
pub struct Installed {
    plumbing: Plumbing,
    /// `net.ipv4.tcp_early_demux` before, to restore (empty: not changed).
    early_demux: String,
}

impl Installed {
    /// Installs the interception and steering of `routes` in place of
    /// the present ones, in one transaction: on failure the present ones
    /// stay.
    pub fn replace_routes(&self, routes: &RouteTable) -> Result<(), PlumbingError> {
        self.plumbing.reinstall_rules(routes)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.plumbing.remove();
        if !self.early_demux.is_empty() {
            let _ = write_proc(&EARLY_DEMUX.replace('.', "/"), &self.early_demux);
        }
        tracing::info!("interception and steering removed");
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn run(program: &'static str, args: &[&str], stdin: Option<&str>) -> Result<(), PlumbingError> {
    let command = format!("{program} {}", args.join(" "));
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| PlumbingError::Spawn {
            command: command.clone(),
            program,
            error,
        })?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        input
            .write_all(text.as_bytes())
            .map_err(|e| PlumbingError::Failed {
                command: command.clone(),
                message: e.to_string(),
            })?;
    }
    let output = child.wait_with_output().map_err(|e| PlumbingError::Failed {
        command: command.clone(),
        message: e.to_string(),
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(PlumbingError::Failed {
            command,
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn sysctl_path(setting: &str) -> String {
    format!("/proc/sys/{}", setting.replace('.', "/"))
}

/// A sysctl's value, empty if it cannot be read.
fn read_setting(setting: &str) -> String {
    std::fs::read_to_string(sysctl_path(setting))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn check_setting(setting: &str, ok: impl Fn(&str) -> bool, why: &'static str) -> Result<(), PlumbingError> {
    let value = read_setting(setting);
    let value = value.as_str();
    if ok(value) {
        Ok(())
    } else {
        Err(PlumbingError::Setting {
            setting: setting.to_owned(),
            value: value.to_owned(),
            why,
        })
    }
}

/// `net.ipv4.conf.{device}.rp_filter` (`all` for the one that applies to
/// every device). The path by hand: an interface name may hold dots.
fn read_rp_filter(device: &str) -> Result<u32, PlumbingError> {
    let path = format!("/proc/sys/net/ipv4/conf/{device}/rp_filter");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.trim().parse().map_err(|_| PlumbingError::Setting {
        setting: conf_key(device, "rp_filter"),
        value: format!("{:?}", text.trim()),
        why: "cannot be read as a number: the transparent mode needs reverse-path filtering off (0) there",
    })
}

/// Writes `value` to `/proc/sys/{path}`.
fn write_proc(path: &str, value: &str) -> Result<(), PlumbingError> {
    let file = format!("/proc/sys/{path}");
    std::fs::write(&file, value).map_err(|e| PlumbingError::Failed {
        command: format!("echo {value} > {file}"),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A route that carries or passes; `*` for any address.
    fn route(source: &str, destination: &str, ports: (u16, u16), carries: bool) -> scps_relay::Route {
        let prefix = |text: &str| (text != "*").then(|| text.parse().unwrap());
        scps_relay::Route {
            name: format!("{source} {destination} {ports:?}"),
            matching: scps_relay::RouteMatch {
                source: prefix(source),
                destination: prefix(destination),
                ports,
            },
            carried: carries.then(|| scps_relay::Carried {
                engine: Default::default(),
                relay: scps_relay::RelayConfig {
                    buffer: 4096,
                    idle_timeout: None,
                },
            }),
        }
    }

    /// A port range of one client subnet carried, ssh to a remote subnet
    /// passing, and everything else carried.
    fn routes() -> RouteTable {
        RouteTable::new(vec![
            route("*", "10.99.4.0/24", (22, 22), false),
            route("10.99.1.0/24", "*", (8000, 8999), true),
            route("*", "*", (1, 65535), true),
        ])
        .unwrap()
    }

    fn plumbing(local: &[&str], remote: &[&str]) -> Plumbing {
        Plumbing {
            lan: "lan0".into(),
            link: LinkPath::Routed {
                link: "sat0".into(),
                tun: "scpsgw0".into(),
            },
            local: local.iter().map(|p| p.parse().unwrap()).collect(),
            remote: remote.iter().map(|p| p.parse().unwrap()).collect(),
            port: 7301,
            mark: 0x5c,
            table: 153,
        }
    }

    #[test]
    fn the_rules_name_the_interfaces_prefixes_routes_and_tables() {
        let plumbing = plumbing(&["10.99.1.0/24"], &["10.99.4.0/24", "10.98.0.0/16"]);
        let script = plumbing.nft_script(&routes());
        let has = |line: &str| assert!(script.contains(line), "{line:?} in:\n{script}");
        has("flush table inet scps_gateway_7301\n");
        has(
            "iifname \"lan0\" meta l4proto tcp ip saddr { 10.99.1.0/24 } ip daddr { 10.99.4.0/24, 10.98.0.0/16 } jump intercept",
        );
        // Interception in the table's order, most specific first: a port
        // range of a client subnet is carried, ssh to a server subnet
        // passes, then everything else is carried.
        has("chain intercept {\n\
             \t\ttcp flags & (syn | ack) != syn jump answers\n\
             \t\tmeta nfproto ipv4 ip saddr 10.99.1.0/24 meta l4proto tcp tcp dport 8000-8999 tproxy ip to :7301 meta mark set 0x5c accept\n\
             \t\tmeta nfproto ipv4 ip daddr 10.99.4.0/24 meta l4proto tcp tcp dport 22 accept\n\
             \t\tmeta nfproto ipv4 meta l4proto tcp tproxy ip to :7301 meta mark set 0x5c accept\n\t}");
        // A segment other than a client's SYN is first read as a server's
        // answer: ssh's answers pass, those of the carried routes are left
        // to the interception.
        has("chain answers {\n\
             \t\tmeta nfproto ipv4 ip daddr 10.99.1.0/24 meta l4proto tcp tcp sport 8000-8999 return\n\
             \t\tmeta nfproto ipv4 ip saddr 10.99.4.0/24 meta l4proto tcp tcp sport 22 accept\n\
             \t\tmeta nfproto ipv4 meta l4proto tcp return\n\t}");
        // Steering: both ends' connections, by their server's port.
        has(
            "iifname \"sat0\" meta l4proto 105 ip saddr { 10.99.4.0/24, 10.98.0.0/16 } ip daddr { 10.99.1.0/24 } meta mark set 0x5d accept",
        );
        has("\t\tmeta nfproto ipv4 ip saddr 10.99.4.0/24 meta l4proto tcp tcp sport 22 accept\n");
        has(
            "\t\tmeta nfproto ipv4 ip saddr 10.99.1.0/24 meta l4proto tcp tcp dport 8000-8999 meta mark set 0x5d accept\n",
        );
        has(
            "\t\tmeta nfproto ipv4 ip daddr 10.99.1.0/24 meta l4proto tcp tcp sport 8000-8999 meta mark set 0x5d accept\n",
        );
        assert!(
            !script.contains("ip6"),
            "no IPv6 prefixes, no IPv6 rules:\n{script}"
        );
        let commands: Vec<String> = plumbing.ip_commands().iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            commands,
            [
                "-4 rule add fwmark 0x5c lookup 153 priority 153",
                "-4 route add local 0.0.0.0/0 dev lo table 153",
                "-4 rule add fwmark 0x5d lookup 154 priority 154",
                "-4 route add default dev scpsgw0 table 154",
            ]
        );
        let described = plumbing.describe(&routes());
        assert!(
            described.contains("ip -4 route add default dev scpsgw0 table 154"),
            "{described}"
        );
        assert!(
            described.contains("sysctl -w net.ipv4.conf.scpsgw0.rp_filter=0")
                && described
                    .contains("# sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.sat0.rp_filter=0\n"),
            "the TUN device's setting, and those checked: {described}"
        );
        assert!(described.contains("net.ipv4.tcp_early_demux=0"), "{described}");
    }

    #[test]
    fn reverse_path_filtering_is_the_larger_of_all_and_the_device() {
        for (all, own, effective) in [
            (0, 0, 0),
            (0, 1, 1),
            (0, 2, 2),
            (2, 0, 2),
            (1, 2, 2),
            (2, 1, 2),
            (1, 0, 1),
        ] {
            assert_eq!(
                effective_rp_filter(all, own),
                effective,
                "all {all}, device {own}"
            );
        }
        let device = |all, own| ReversePath {
            key: "transparent.link",
            device: "sat0".into(),
            all,
            own,
        };
        assert_eq!(device(2, Some(0)).effective(), 2);
        assert_eq!(device(0, Some(1)).effective(), 1);
        // The TUN device's own value is the gateway's 0: `all` alone counts.
        assert_eq!(device(0, None).effective(), 0);
        assert_eq!(device(2, None).effective(), 2);
    }

    /// The link interface and the TUN device as the check reads them, with
    /// `all` and the link interface's own value.
    fn read(all: u32, link: u32) -> Vec<ReversePath> {
        vec![
            ReversePath {
                key: "transparent.link",
                device: "sat0".into(),
                all,
                own: Some(link),
            },
            ReversePath {
                key: "transparent.tun",
                device: "scps-gw".into(),
                all,
                own: None,
            },
        ]
    }

    #[test]
    fn reverse_path_filtering_on_anywhere_is_refused_naming_the_device_and_the_fix() {
        assert!(reverse_paths_off(read(0, 0)).is_ok(), "off everywhere");

        // Loose in `all` (many distributions' default): both devices, and
        // one setting to change.
        let err = reverse_paths_off(read(2, 0)).unwrap_err().to_string();
        assert_eq!(
            err,
            "reverse-path filtering must be off (0) on each device the transparent mode's packets arrive on, and \
             the kernel filters with the larger of net.ipv4.conf.all.rp_filter and the device's own value: on sat0 \
             (transparent.link) it is 2 (loose), the larger of net.ipv4.conf.all.rp_filter = 2 and \
             net.ipv4.conf.sat0.rp_filter = 0; on the TUN device scps-gw (transparent.tun) it would be 2 (loose): \
             net.ipv4.conf.all.rp_filter is 2, and the gateway sets the device's own value to 0; the device has \
             no address, so loose filtering drops every packet the gateway writes to it. Run `sysctl -w \
             net.ipv4.conf.all.rp_filter=0` (and keep it in /etc/sysctl.d/)"
        );

        // `all` off, the link interface strict: that device alone.
        let err = reverse_paths_off(read(0, 1)).unwrap_err().to_string();
        assert!(
            err.contains("on sat0 (transparent.link) it is 1 (strict), the larger of net.ipv4.conf.all.rp_filter = 0 and net.ipv4.conf.sat0.rp_filter = 1.")
                && !err.contains("scps-gw")
                && err.contains("Run `sysctl -w net.ipv4.conf.sat0.rp_filter=0`"),
            "{err}"
        );

        // Both: both settings in the one command.
        let err = reverse_paths_off(read(1, 2)).unwrap_err().to_string();
        assert!(
            err.contains("Run `sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.sat0.rp_filter=0`"),
            "{err}"
        );

        // A VLAN's name holds a dot: the command's key has slashes.
        let vlan = vec![ReversePath {
            key: "transparent.link",
            device: "eth0.100".into(),
            all: 0,
            own: Some(2),
        }];
        let err = reverse_paths_off(vlan).unwrap_err().to_string();
        assert!(
            err.contains("net/ipv4/conf/eth0.100/rp_filter = 2")
                && err.contains("Run `sysctl -w net/ipv4/conf/eth0.100/rp_filter=0`"),
            "{err}"
        );
    }

    #[test]
    fn a_bundled_link_is_intercepted_but_not_steered() {
        let channel = scps_config::bundle::BundleChannel {
            local: "10.99.2.2:7001".parse().unwrap(),
            peer: "10.99.3.2:7001".parse().unwrap(),
            rate_bps: 2400,
            device: None,
        };
        let plumbing = Plumbing {
            link: LinkPath::Bundle(Bundle {
                channels: vec![channel],
                bond: scps_bond::BondConfig::new(vec![2400]),
                hook: None,
            }),
            ..plumbing(&["10.99.1.0/24"], &["10.99.4.0/24"])
        };
        let script = plumbing.nft_script(&routes());
        let has = |line: &str| assert!(script.contains(line), "{line:?} in:\n{script}");
        has("iifname \"lan0\" meta l4proto tcp socket transparent 1 meta mark set 0x5c accept\n");
        has(
            "iifname \"lan0\" meta l4proto tcp ip saddr { 10.99.1.0/24 } ip daddr { 10.99.4.0/24 } jump intercept",
        );
        has(
            "\t\tmeta nfproto ipv4 ip saddr 10.99.1.0/24 meta l4proto tcp tcp dport 8000-8999 tproxy ip to :7301 meta mark set 0x5c accept\n",
        );
        for absent in ["sat0", "steer", "0x5d", "105"] {
            assert!(
                !script.contains(absent),
                "no {absent:?}: nothing is steered\n{script}"
            );
        }
        let commands: Vec<String> = plumbing.ip_commands().iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            commands,
            [
                "-4 rule add fwmark 0x5c lookup 153 priority 153",
                "-4 route add local 0.0.0.0/0 dev lo table 153",
            ],
            "the local delivery only"
        );
        let described = plumbing.describe(&routes());
        assert!(
            !described.contains("sysctl"),
            "no kernel setting changes:\n{described}"
        );
        let on_loopback = Plumbing {
            lan: "lo".into(),
            ..plumbing.clone()
        };
        assert!(on_loopback.check_settings().is_ok(), "no setting is needed");
        let missing = Plumbing {
            lan: "no-such-if0".into(),
            ..plumbing
        };
        assert_eq!(
            missing.check_settings().unwrap_err().to_string(),
            "transparent.lan = \"no-such-if0\": there is no such interface here (`ip link` lists those there are)"
        );
    }

    #[test]
    fn both_families_get_their_own_rules_and_routes() {
        let plumbing = plumbing(
            &["10.99.1.0/24", "fd00:99:1::/64"],
            &["10.99.4.0/24", "fd00:99:4::/64"],
        );
        assert_eq!(plumbing.families(), [Family::V4, Family::V6]);
        let script = plumbing.nft_script(&routes());
        let has = |line: &str| assert!(script.contains(line), "{line:?} in:\n{script}");
        has(
            "iifname \"lan0\" meta l4proto tcp ip6 saddr { fd00:99:1::/64 } ip6 daddr { fd00:99:4::/64 } jump intercept",
        );
        has(
            "iifname \"sat0\" meta l4proto tcp ip6 saddr { fd00:99:4::/64 } ip6 daddr { fd00:99:1::/64 } jump steer",
        );
        // A route of IPv4 prefixes has IPv4 rules only; one of any address
        // has both.
        assert_eq!(script.matches("dport 8000-8999 tproxy").count(), 1, "{script}");
        has("\t\tmeta nfproto ipv6 meta l4proto tcp tproxy ip6 to :7301 meta mark set 0x5c accept\n");
        has("\t\tmeta nfproto ipv6 meta l4proto tcp meta mark set 0x5d accept\n");
        let commands: Vec<String> = plumbing.ip_commands().iter().map(|c| c.join(" ")).collect();
        assert_eq!(commands.len(), 8);
        assert!(
            commands.contains(&"-6 route add local ::/0 dev lo table 153".to_owned()),
            "{commands:?}"
        );
        assert!(commands.contains(&"-6 rule add fwmark 0x5d lookup 154 priority 154".to_owned()));
        let only_v6 = super::Plumbing {
            local: vec!["fd00:99:1::/64".parse().unwrap()],
            ..plumbing.clone()
        };
        assert_eq!(only_v6.families(), [Family::V6], "IPv4 needs a local prefix too");
    }
}
