//! Steering the two sides through the emulator.
//!
//! The kernel has no netem, so the emulator stands in the path as a
//! router with two TUN devices. Policy routing sends whatever arrives on
//! side a into TUN a (`ip rule iif SIDE_A lookup TABLE`, where TABLE holds
//! only `default dev TUN_A`), and likewise for side b. The emulator reads
//! each packet there, applies the channel models, and at the packet's time
//! writes it back into the same TUN device: it then arrives from the TUN,
//! no rule matches, and the main table routes it out of the other side.
//!
//! A TUN device has no offloads, so the kernel cuts TCP's large (GSO)
//! packets into real ones before they reach the emulator: the models see
//! the packets a real link would carry. Each packet crosses two routing
//! decisions, so its TTL drops by two.
//!
//! Forwarding is switched on and reverse-path filtering off (a packet
//! coming back from a TUN device carries a source that routes elsewhere),
//! and the TUN devices accept this namespace's own addresses as sources;
//! the rules are removed, and the sysctls restored, when the emulator
//! stops. The TUN devices disappear with the emulator, and with them the
//! routes of its tables.

use std::fs::File;
use std::process::Command;

use nix::sched::{CloneFlags, setns};

use tun_rs::{DeviceBuilder, SyncDevice};

use crate::Error;
use crate::unreachable::RouterAddresses;

/// Names of the emulator's TUN devices (one per side).
pub const TUN_NAMES: [&str; 2] = ["scps-emu-a", "scps-emu-b"];

/// Packets the kernel holds for the emulator on each TUN device: enough
/// for tens of milliseconds at hundreds of Mbit/s, so that a moment
/// without a CPU delays packets instead of dropping them (the kernel's
/// default is 500).
const TX_QUEUE_PACKETS: u32 = 10_000;

/// Priority of the emulator's routing rules (before the main table's 32766).
const RULE_PRIORITY: &str = "1000";

/// The devices and the rules that route the two sides through them.
pub(crate) struct Steering {
    pub(crate) tuns: [SyncDevice; 2],
    /// The emulator's addresses on each side: a router's, the sources of
    /// its reports to hosts there (see `unreachable.rs`).
    pub(crate) routers: [RouterAddresses; 2],
    /// The network namespace it was set up in: the teardown runs there,
    /// whichever thread drops it.
    namespace: File,
    rules: Vec<Vec<String>>,
    restore: Vec<(String, String)>,
}

fn ip(args: &[String]) -> Result<(), Error> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| Error::Io {
            what: "run `ip`".into(),
            source,
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Setup(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

impl std::fmt::Debug for Steering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steering")
            .field("tuns", &TUN_NAMES)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Steering {
    /// Sets up steering between `sides` with routing tables `table` and
    /// `table + 1`, for packets of up to `mtu` bytes.
    pub(crate) fn new(sides: [&str; 2], table: u32, mtu: u16) -> Result<Steering, Error> {
        for side in sides {
            ip(&words(&format!("link show dev {side}")))
                .map_err(|_| Error::Setup(format!("no interface {side:?} in this network namespace")))?;
        }
        let tun = |name: &str| -> Result<SyncDevice, Error> {
            // The devices' names are fixed: one that exists already is
            // another emulator's in this namespace (EBUSY from the kernel
            // would read as a missing capability).
            if ip(&words(&format!("link show dev {name}"))).is_ok() {
                return Err(Error::Setup(format!(
                    "a TUN device {name} exists already: another emulator runs in this network \
                     namespace (one per namespace)"
                )));
            }
            let device = DeviceBuilder::new()
                .name(name)
                .mtu(mtu)
                .enable(true)
                .build_sync()
                .map_err(|source| Error::Io {
                    what: format!("create TUN device {name} (needs CAP_NET_ADMIN)"),
                    source,
                })?;
            device.set_nonblocking(true).map_err(|source| Error::Io {
                what: format!("make {name} non-blocking"),
                source,
            })?;
            // Through netlink: the ioctl needs CAP_NET_ADMIN in the
            // initial user namespace, netlink only in the device's.
            ip(&words(&format!(
                "link set dev {name} txqueuelen {TX_QUEUE_PACKETS}"
            )))?;
            Ok(device)
        };
        let namespace = File::open("/proc/thread-self/ns/net").map_err(|source| Error::Io {
            what: "open this thread's network namespace".into(),
            source,
        })?;
        let mut steering = Steering {
            tuns: [tun(TUN_NAMES[0])?, tun(TUN_NAMES[1])?],
            routers: [side_addresses(sides[0])?, side_addresses(sides[1])?],
            namespace,
            rules: Vec::new(),
            restore: Vec::new(),
        };
        steering.sysctl("net/ipv4/ip_forward", "1")?;
        steering.sysctl("net/ipv6/conf/all/forwarding", "1")?;
        for interface in ["all", "default", sides[0], sides[1], TUN_NAMES[0], TUN_NAMES[1]] {
            steering.sysctl(&format!("net/ipv4/conf/{interface}/rp_filter"), "0")?;
        }
        // The emulator's own reports (see `unreachable.rs`) come back from
        // a TUN device with one of this namespace's addresses as their
        // source, which IPv4 otherwise drops as a martian.
        for tun in TUN_NAMES {
            steering.sysctl(&format!("net/ipv4/conf/{tun}/accept_local"), "1")?;
        }
        for (i, side) in sides.iter().enumerate() {
            let table = table + i as u32;
            for family in ["-4", "-6"] {
                ip(&words(&format!(
                    "{family} route replace default dev {} table {table}",
                    TUN_NAMES[i]
                )))?;
                let rule = words(&format!(
                    "{family} rule add iif {side} lookup {table} priority {RULE_PRIORITY}"
                ));
                // A rule left by an emulator that was killed: remove it
                // first, so that rules never pile up.
                let mut stale = rule.clone();
                stale[2] = "del".into();
                while ip(&stale).is_ok() {}
                ip(&rule)?;
                steering.rules.push(stale);
            }
        }
        Ok(steering)
    }

    /// Sets a sysctl of this network namespace, remembering the old value.
    fn sysctl(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let path = format!("/proc/sys/{key}");
        let old = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            what: format!("read {path}"),
            source,
        })?;
        if old.trim() != value {
            std::fs::write(&path, value).map_err(|source| Error::Io {
                what: format!("write {path}"),
                source,
            })?;
            self.restore.push((path, old.trim().to_owned()));
        }
        Ok(())
    }
}

/// The first IPv4 address of interface `side`, and its first IPv6 one that
/// is not link-local (a report from a link-local source would name no
/// router a host could tell apart).
fn side_addresses(side: &str) -> Result<RouterAddresses, Error> {
    let interfaces = nix::ifaddrs::getifaddrs().map_err(|e| Error::Io {
        what: format!("read the addresses of {side}"),
        source: e.into(),
    })?;
    let mut addresses = RouterAddresses::default();
    for interface in interfaces.filter(|i| i.interface_name == side) {
        let Some(address) = interface.address else {
            continue;
        };
        if let Some(v4) = address.as_sockaddr_in() {
            addresses.v4.get_or_insert(v4.ip());
        } else if let Some(v6) = address.as_sockaddr_in6()
            && !v6.ip().is_unicast_link_local()
        {
            addresses.v6.get_or_insert(v6.ip());
        }
    }
    Ok(addresses)
}

impl Drop for Steering {
    fn drop(&mut self) {
        let rules = std::mem::take(&mut self.rules);
        let restore = std::mem::take(&mut self.restore);
        let Ok(namespace) = self.namespace.try_clone() else {
            return;
        };
        // setns changes only the calling thread: a thread of its own
        // enters the emulator's namespace to undo what was done there.
        let undo = std::thread::spawn(move || {
            if setns(&namespace, CloneFlags::CLONE_NEWNET).is_err() {
                return;
            }
            for rule in &rules {
                // Best effort: the namespace may already be going away.
                let _ = ip(rule);
            }
            for (path, old) in restore.iter().rev() {
                let _ = std::fs::write(path, old);
            }
        });
        let _ = undo.join();
    }
}
