//! What the kernel must do for the transparent mode, installed on start
//! and removed on every exit (DESIGN.md "The gateway"):
//!
//! - **interception**: TCP from the LAN interface between a local and a
//!   remote prefix goes to the gateway's `IP_TRANSPARENT` listener
//!   (nftables TPROXY, a firewall mark, and a `local` route for marked
//!   packets in a table of its own); LAN packets of the sockets the
//!   gateway opened or accepted transparently are marked and delivered
//!   the same way (`socket transparent`). Only LAN packets: the link
//!   connection of an intercepted one has the very same addresses and
//!   ports, and its packets, leaving the TUN device, must be forwarded,
//!   not delivered to the intercepted socket;
//! - **steering**: TCP of the routes' connections, and compressed SCPS-TP
//!   (IP protocol 105), arriving on the link interface from a remote
//!   prefix to a local one is marked (`mark + 1`) and routed into the
//!   gateway's TUN device (a policy rule on the mark and a table whose
//!   default route is the device), where the engine reads it.
//!
//! Both follow the routes (routes.rs), most specific first: a route that
//! carries intercepts and steers its connections, one that passes lets
//! them through, and a connection no route matches passes too. Everything
//! else is routed by the kernel as if the gateway were a plain router.
//! IPv4 only for now.
//!
//! One kernel setting changes while the mode runs: TCP early demux is
//! turned off (`net.ipv4.tcp_early_demux`, restored on exit). The link
//! connection of an intercepted connection has its very addresses and
//! ports, so early demux would find the intercepted socket for the link
//! packets leaving the TUN device, and the kernel drops a packet to
//! forward that a local socket has claimed.

use std::process::{Command, Stdio};

use scps_node::IpPrefix;

use crate::routes::RouteMatch;

/// Turned off while the mode runs (see the module's documentation).
const EARLY_DEMUX: &str = "net.ipv4.tcp_early_demux";

/// The IP protocol of compressed SCPS-TP headers.
const IPPROTO_SCPS_COMPRESSED: u8 = 105;

/// What the transparent mode installs, from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plumbing {
    pub lan: String,
    pub link: String,
    pub tun: String,
    pub local: Vec<IpPrefix>,
    pub remote: Vec<IpPrefix>,
    /// The interception listener's port.
    pub port: u16,
    pub mark: u32,
    /// The routes' matches, most specific first, and whether each carries
    /// its connections (or lets them pass).
    pub routes: Vec<(RouteMatch, bool)>,
    /// Routing tables `table` (local delivery of marked packets) and
    /// `table + 1` (into the TUN device); the policy rules have those
    /// numbers as priorities, so that they can be found and removed.
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
    #[error("{setting} is {value}: {why}")]
    Setting {
        setting: String,
        value: String,
        why: &'static str,
    },
}

impl Plumbing {
    fn nft_table(&self) -> String {
        format!("scps_gateway_{}", self.port)
    }

    /// The firewall mark of link packets steered into the TUN device.
    pub fn steer_mark(&self) -> u32 {
        self.mark + 1
    }

    /// The nftables script of the interception and the steering. It
    /// flushes the table first, so that installing it again replaces the
    /// rules in one transaction (a reload of the routes).
    pub fn nft_script(&self) -> String {
        let set = |prefixes: &[IpPrefix]| {
            prefixes
                .iter()
                .map(IpPrefix::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let table = self.nft_table();
        let (mark, steer) = (self.mark, self.steer_mark());
        let mut intercept = String::new();
        let mut steering = String::new();
        for (matching, carried) in &self.routes {
            let RouteMatch {
                source,
                destination,
                ports,
            } = matching;
            let (take, steer_to) = if *carried {
                (
                    format!("tproxy to :{} meta mark set {mark:#x} accept", self.port),
                    format!("meta mark set {steer:#x} accept"),
                )
            } else {
                ("accept".to_owned(), "accept".to_owned())
            };
            let client_to_server = format!(
                "{}{}meta l4proto tcp{}",
                address_match("saddr", source),
                address_match("daddr", destination),
                port_match("dport", *ports)
            );
            let server_to_client = format!(
                "{}{}meta l4proto tcp{}",
                address_match("saddr", destination),
                address_match("daddr", source),
                port_match("sport", *ports)
            );
            intercept.push_str(&format!("\t\t{client_to_server} {take}\n"));
            steering.push_str(&format!("\t\t{client_to_server} {steer_to}\n"));
            if server_to_client != client_to_server {
                steering.push_str(&format!("\t\t{server_to_client} {steer_to}\n"));
            }
        }
        format!(
            "table ip {table} {{}}\n\
             flush table ip {table}\n\
             table ip {table} {{\n\
             \tchain prerouting {{\n\
             \t\ttype filter hook prerouting priority mangle; policy accept;\n\
             \t\tiifname \"{lan}\" meta l4proto tcp socket transparent 1 meta mark set {mark:#x} accept\n\
             \t\tiifname \"{lan}\" meta l4proto tcp ip saddr {{ {local} }} ip daddr {{ {remote} }} jump intercept\n\
             \t\tiifname \"{link}\" meta l4proto {compressed} ip saddr {{ {remote} }} ip daddr {{ {local} }} \
             meta mark set {steer:#x} accept\n\
             \t\tiifname \"{link}\" meta l4proto tcp ip saddr {{ {remote} }} ip daddr {{ {local} }} jump steer\n\
             \t}}\n\
             \tchain intercept {{\n{intercept}\t}}\n\
             \tchain steer {{\n{steering}\t}}\n\
             }}\n",
            lan = self.lan,
            link = self.link,
            local = set(&self.local),
            remote = set(&self.remote),
            compressed = IPPROTO_SCPS_COMPRESSED,
        )
    }

    /// The `ip` commands of the policy routing, in the order they run.
    pub fn ip_commands(&self) -> Vec<Vec<String>> {
        let (deliver, steer) = (self.table, self.table + 1);
        vec![
            words(&format!(
                "-4 rule add fwmark {:#x} lookup {deliver} priority {deliver}",
                self.mark
            )),
            words(&format!("-4 route add local 0.0.0.0/0 dev lo table {deliver}")),
            words(&format!(
                "-4 rule add fwmark {:#x} lookup {steer} priority {steer}",
                self.steer_mark()
            )),
            words(&format!("-4 route add default dev {} table {steer}", self.tun)),
        ]
    }

    /// Installs the nftables rules again, for routes that changed: one
    /// transaction, so no packet sees half of the old and half of the new.
    fn reinstall_rules(&self) -> Result<(), PlumbingError> {
        run("nft", &["-f", "-"], Some(&self.nft_script()))
    }

    /// Everything installed, as an operator who manages their own rules
    /// would write it (`--print-rules`).
    pub fn describe(&self) -> String {
        let mut text = format!("# nft -f - <<'EOF'\n{}# EOF\n", self.nft_script());
        for command in self.ip_commands() {
            text.push_str(&format!("ip {}\n", command.join(" ")));
        }
        text.push_str(&format!(
            "sysctl -w net.ipv4.conf.{}.rp_filter=0   # the TUN device carries the clients' addresses\n",
            self.tun
        ));
        text.push_str(&format!(
            "sysctl -w {EARLY_DEMUX}=0   # link packets have the intercepted sockets' addresses and ports\n"
        ));
        text
    }

    /// Checks the kernel settings the mode depends on (before anything is
    /// made, so that a refusal leaves nothing behind).
    pub fn check_settings(&self) -> Result<(), PlumbingError> {
        check_setting(
            "net.ipv4.ip_forward",
            |v| v == "1",
            "the gateway forwards its link packets: set it to 1",
        )?;
        check_setting(
            "net.ipv4.conf.all.rp_filter",
            |v| v != "1",
            "strict reverse-path filtering drops the clients' packets the TUN device carries: set it to 0 or 2",
        )
    }

    /// Installs the interception and the steering (after removing what a
    /// gateway of the same configuration may have left, killed before it
    /// could). The TUN device must exist. Undone when the result is
    /// dropped.
    pub fn install(self) -> Result<Installed, PlumbingError> {
        self.remove();
        let early_demux = read_setting(EARLY_DEMUX);
        // From here on, whatever fails is undone by the guard's drop.
        let installed = Installed {
            plumbing: self,
            early_demux,
        };
        let plumbing = &installed.plumbing;
        // The path by hand: an interface name may hold dots.
        write_proc(&format!("net/ipv4/conf/{}/rp_filter", plumbing.tun), "0")?;
        write_proc(&EARLY_DEMUX.replace('.', "/"), "0")?;
        run("nft", &["-f", "-"], Some(&plumbing.nft_script()))?;
        for command in plumbing.ip_commands() {
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            run("ip", &args, None)?;
        }
        tracing::info!(table = %plumbing.nft_table(), "interception and steering installed");
        Ok(installed)
    }

    /// Removes what `install` installs, ignoring what is not there.
    fn remove(&self) {
        let _ = run("nft", &["delete", "table", "ip", &self.nft_table()], None);
        for priority in [self.table, self.table + 1] {
            // One rule per call: until none of that priority is left.
            let priority = priority.to_string();
            while run("ip", &["-4", "rule", "del", "priority", &priority], None).is_ok() {}
        }
        for table in [self.table, self.table + 1] {
            let _ = run("ip", &["-4", "route", "flush", "table", &table.to_string()], None);
        }
    }
}

/// The installed plumbing; dropping it removes it.
#[derive(Debug)]
pub struct Installed {
    plumbing: Plumbing,
    /// `net.ipv4.tcp_early_demux` before, to restore.
    early_demux: String,
}

impl Installed {
    /// Installs the interception and steering of `routes` in place of
    /// the present ones, in one transaction: on failure the present ones
    /// stay.
    pub fn replace_routes(&mut self, routes: Vec<(RouteMatch, bool)>) -> Result<(), PlumbingError> {
        let plumbing = Plumbing {
            routes,
            ..self.plumbing.clone()
        };
        plumbing.reinstall_rules()?;
        self.plumbing = plumbing;
        Ok(())
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

/// `ip saddr PREFIX ` for a prefix that restricts; nothing for `/0`.
fn address_match(field: &str, prefix: &IpPrefix) -> String {
    if prefix.is_empty() {
        String::new()
    } else {
        format!("ip {field} {prefix} ")
    }
}

/// ` tcp dport FIRST-LAST` for a range that restricts; nothing for all
/// ports.
fn port_match(field: &str, (first, last): (u16, u16)) -> String {
    match (first, last) {
        (1, 65535) => String::new(),
        (first, last) if first == last => format!(" tcp {field} {first}"),
        (first, last) => format!(" tcp {field} {first}-{last}"),
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

    fn route(source: &str, destination: &str, ports: (u16, u16)) -> RouteMatch {
        RouteMatch {
            source: source.parse().unwrap(),
            destination: destination.parse().unwrap(),
            ports,
        }
    }

    #[test]
    fn the_rules_name_the_interfaces_prefixes_routes_and_tables() {
        let plumbing = Plumbing {
            lan: "lan0".into(),
            link: "sat0".into(),
            tun: "scpsgw0".into(),
            local: vec!["10.99.1.0/24".parse().unwrap()],
            remote: vec!["10.99.4.0/24".parse().unwrap(), "10.98.0.0/16".parse().unwrap()],
            routes: vec![
                (route("0.0.0.0/0", "10.99.4.0/24", (22, 22)), false),
                (route("10.99.1.0/24", "0.0.0.0/0", (8000, 8999)), true),
                (route("0.0.0.0/0", "0.0.0.0/0", (1, 65535)), true),
            ],
            port: 7301,
            mark: 0x5c,
            table: 153,
        };
        let script = plumbing.nft_script();
        let has = |line: &str| assert!(script.contains(line), "{line:?} in:\n{script}");
        has("flush table ip scps_gateway_7301\n");
        has(
            "iifname \"lan0\" meta l4proto tcp ip saddr { 10.99.1.0/24 } ip daddr { 10.99.4.0/24, 10.98.0.0/16 } jump intercept",
        );
        // Interception, most specific first: ssh passes, a port range is
        // carried, then everything else.
        has(
            "chain intercept {\n\t\tip daddr 10.99.4.0/24 meta l4proto tcp tcp dport 22 accept\n\
             \t\tip saddr 10.99.1.0/24 meta l4proto tcp tcp dport 8000-8999 tproxy to :7301 meta mark set 0x5c accept\n\
             \t\tmeta l4proto tcp tproxy to :7301 meta mark set 0x5c accept\n\t}",
        );
        // Steering: both ends' connections, by their server's port.
        has(
            "iifname \"sat0\" meta l4proto 105 ip saddr { 10.99.4.0/24, 10.98.0.0/16 } ip daddr { 10.99.1.0/24 } meta mark set 0x5d accept",
        );
        has("\t\tip saddr 10.99.4.0/24 meta l4proto tcp tcp sport 22 accept\n");
        has("\t\tip saddr 10.99.1.0/24 meta l4proto tcp tcp dport 8000-8999 meta mark set 0x5d accept\n");
        has("\t\tip daddr 10.99.1.0/24 meta l4proto tcp tcp sport 8000-8999 meta mark set 0x5d accept\n");
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
        let described = plumbing.describe();
        assert!(
            described.contains("ip -4 route add default dev scpsgw0 table 154"),
            "{described}"
        );
        assert!(described.contains("rp_filter=0"), "{described}");
        assert!(described.contains("net.ipv4.tcp_early_demux=0"), "{described}");
    }
}
