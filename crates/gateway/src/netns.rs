//! The network namespace a process runs in, as a gateway tells `scps
//! status` and as `scps status` compares it with its own: the inode of
//! `/proc/self/ns/net` (what `readlink` shows as `net:[INODE]`), its name
//! if `ip netns` gave it one (a file under /run/netns bound to it), and
//! whether it is the initial one (PID 1's: the host's, or a container's
//! own).
//!
//! Network namespaces share the file system: two gateways in two of them
//! would take the same default control socket, so the default path of a
//! namespace other than the initial one carries its inode (control.rs).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Where `ip netns add NAME` binds the namespaces it names.
const NAMED: &str = "/run/netns";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetNamespace {
    /// The inode of its `/proc/PID/ns/net`.
    pub inode: u64,
    /// Its name under /run/netns, if it has one (the first in order, if
    /// several are bound to it).
    #[serde(default)]
    pub name: Option<String>,
    /// Whether it is PID 1's namespace.
    pub initial: bool,
}

impl NetNamespace {
    /// This process's namespace; `None` if /proc cannot tell.
    pub fn current() -> Option<NetNamespace> {
        NetNamespace::of(Path::new("/proc/self/ns/net"), Path::new(NAMED))
    }

    /// The namespace `/proc/.../ns/net` file `file` opens, named from the
    /// files under `named`.
    fn of(file: &Path, named: &Path) -> Option<NetNamespace> {
        let own = std::fs::metadata(file).ok()?;
        let identity = (own.dev(), own.ino());
        Some(NetNamespace {
            inode: own.ino(),
            name: name_of(identity, named),
            initial: is_initial(identity),
        })
    }

    /// How `scps status` names it: `4026532246 (netns gwA)`,
    /// `4026531840 (initial)`, or `4026532246 (unnamed)`.
    pub fn describe(&self) -> String {
        match (&self.name, self.initial) {
            (Some(name), _) => format!("{} (netns {name})", self.inode),
            (None, true) => format!("{} (initial)", self.inode),
            (None, false) => format!("{} (unnamed)", self.inode),
        }
    }

    /// Whether `other` is the same namespace.
    pub fn same_as(&self, other: &NetNamespace) -> bool {
        self.inode == other.inode
    }
}

/// Whether the namespace of `identity` (this process's) is PID 1's.
///
/// PID 1's namespace file may be out of reach even for root (another
/// user's process, or one the kernel keeps from being traced): then the
/// two are told apart by their `/proc/PID/net/dev`, a file each namespace
/// has its own of, readable by anyone. Should neither tell (/proc mounted
/// with `hidepid`), the namespace is taken for the initial one, whose
/// default path every gateway had before namespaces had their own.
fn is_initial(identity: (u64, u64)) -> bool {
    if let Ok(init) = std::fs::metadata("/proc/1/ns/net") {
        return (init.dev(), init.ino()) == identity;
    }
    let dev = |pid: &str| {
        std::fs::metadata(format!("/proc/{pid}/net/dev"))
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()))
    };
    match (dev("1"), dev("self")) {
        (Some(init), Some(own)) => init == own,
        _ => true,
    }
}

/// The first name, in order, of the files under `named` that open the
/// namespace of `identity` (device and inode of its nsfs file).
fn name_of(identity: (u64, u64), named: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(named)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            // Followed: the name's file is where the namespace is bound.
            let metadata = std::fs::metadata(entry.path()).ok()?;
            ((metadata.dev(), metadata.ino()) == identity)
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_namespace_is_the_inode_readlink_shows() {
        let current = NetNamespace::current().expect("/proc is mounted");
        let link = std::fs::read_link("/proc/self/ns/net").unwrap();
        assert_eq!(
            link.to_string_lossy(),
            format!("net:[{}]", current.inode),
            "{current:?}"
        );
        assert!(current.same_as(&current.clone()));
    }

    #[test]
    fn a_name_is_a_file_bound_to_the_namespace() {
        // Files that stand for names: a link to this process's namespace
        // file is found (metadata follows it, as it follows a bind
        // mount), a plain file is not.
        let dir = std::env::temp_dir().join(format!("scps-netns-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("other"), "").unwrap();
        let none = NetNamespace::of(Path::new("/proc/self/ns/net"), &dir).unwrap();
        assert_eq!(none.name, None);
        std::os::unix::fs::symlink("/proc/self/ns/net", dir.join("gwB")).unwrap();
        std::os::unix::fs::symlink("/proc/self/ns/net", dir.join("gwA")).unwrap();
        let named = NetNamespace::of(Path::new("/proc/self/ns/net"), &dir).unwrap();
        assert_eq!(named.name.as_deref(), Some("gwA"), "the first in order");
        assert_eq!(named.describe(), format!("{} (netns gwA)", named.inode));
        std::fs::remove_dir_all(&dir).unwrap();

        let unnamed = NetNamespace {
            name: None,
            initial: false,
            ..named.clone()
        };
        assert_eq!(unnamed.describe(), format!("{} (unnamed)", named.inode));
        let initial = NetNamespace {
            name: None,
            initial: true,
            ..named
        };
        assert_eq!(initial.describe(), format!("{} (initial)", initial.inode));
    }
}
