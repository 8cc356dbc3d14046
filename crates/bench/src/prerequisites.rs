//! The system programs the testbed's runs start, checked before the first
//! run: a missing one is installed from Debian's archive when this is
//! root with `apt-get` (as the test suite's `scripts/test-deps.sh` does),
//! and otherwise named with its package and the command that installs
//! it, before anything runs.

use std::path::{Path, PathBuf};

use crate::{Job, Stack, World};

/// A program the testbed starts, and the Debian package it comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Program {
    pub name: &'static str,
    pub package: &'static str,
    /// What the testbed uses it for, to say so when it is missing.
    pub purpose: &'static str,
}

const IP: Program = Program {
    name: "ip",
    package: "iproute2",
    purpose: "addresses and routes in the namespaces",
};
const SETPRIV: Program = Program {
    name: "setpriv",
    package: "util-linux",
    purpose: "its programs die with the bench",
};
const UNSHARE: Program = Program {
    name: "unshare",
    package: "util-linux",
    purpose: "a user namespace, without root",
};
const DUMPCAP: Program = Program {
    name: "dumpcap",
    package: "tshark",
    purpose: "the link's capture, for the report's time-sequence plots",
};
const NFT: Program = Program {
    name: "nft",
    package: "nftables",
    purpose: "the transparent gateways' packet steering",
};

/// What the testbed's `jobs` need (`root`: whether this process is root,
/// else it needs a user namespace of its own).
fn needed(jobs: &[Job], root: bool) -> Vec<Program> {
    let testbed: Vec<&Job> = jobs.iter().filter(|j| j.world == World::Testbed).collect();
    if testbed.is_empty() {
        return Vec::new();
    }
    let mut needs = vec![IP, SETPRIV];
    if !root {
        needs.push(UNSHARE);
    }
    if testbed.iter().any(|j| j.capture) {
        needs.push(DUMPCAP);
    }
    if testbed
        .iter()
        .any(|j| matches!(j.stack, Stack::Ours(protocol) if protocol.through_gateways()))
    {
        needs.push(NFT);
    }
    needs
}

/// The programs of `needs` that `PATH` (and the system directories,
/// which a user's `PATH` may lack) does not hold.
fn missing(needs: &[Program], path: Option<&std::ffi::OsStr>) -> Vec<Program> {
    needs
        .iter()
        .copied()
        .filter(|program| !on_path(program.name, path))
        .collect()
}

/// Whether the program `name` is in a directory of `path` or a system
/// directory.
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> bool {
    let mut dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin"].map(PathBuf::from));
    dirs.iter().any(|dir| is_executable(&dir.join(name)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The packages of `programs`, each once, in order.
fn packages(programs: &[Program]) -> Vec<&'static str> {
    let mut packages: Vec<&'static str> = Vec::new();
    for program in programs {
        if !packages.contains(&program.package) {
            packages.push(program.package);
        }
    }
    packages
}

/// Why the bench cannot run: the missing programs, their packages and
/// the command that installs them.
fn refusal(missing: &[Program], root: bool) -> String {
    let named: Vec<String> = missing
        .iter()
        .map(|p| format!("{} (package {}: {})", p.name, p.package, p.purpose))
        .collect();
    let sudo = if root { "" } else { "sudo " };
    format!(
        "the testbed needs programs this machine lacks: {}. Install them with `{sudo}apt-get install {}` \
         (or run scripts/test-deps.sh, which installs what the tests need too), then run this again",
        named.join(", "),
        packages(missing).join(" ")
    )
}

/// Why the testbed's programs are not all here: what is missing and how
/// to install it, said in full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MissingPrograms(String);

/// Makes sure the testbed's programs for `jobs` are here: installs the
/// missing ones with `apt-get` as root (after `say`ing so), else refuses
/// with what to do.
pub fn ensure(jobs: &[Job], say: impl FnOnce(&str)) -> Result<(), MissingPrograms> {
    let root = nix::unistd::geteuid().is_root();
    let path = std::env::var_os("PATH");
    let missing = missing(&needed(jobs, root), path.as_deref());
    if missing.is_empty() {
        return Ok(());
    }
    if !root || !on_path("apt-get", path.as_deref()) {
        return Err(MissingPrograms(refusal(&missing, root)));
    }
    let packages = packages(&missing);
    say(&format!(
        "installing {} with apt-get (the testbed needs {})",
        packages.join(" "),
        missing.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
    ));
    let apt_get = |args: &[&str]| {
        std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(&packages);
    if !(apt_get(&["update", "-q"]) && apt_get(&install)) {
        return Err(MissingPrograms(format!(
            "{} (apt-get could not install them here)",
            refusal(&missing, root)
        )));
    }
    let still = self::missing(&missing, path.as_deref());
    if !still.is_empty() {
        return Err(MissingPrograms(refusal(&still, root)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_its_package_and_the_command() {
        let dir = std::env::temp_dir().join(format!("scps-needs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ip = dir.join("ip");
        std::fs::write(&ip, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ip, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A file that is not executable is not the program.
        std::fs::write(dir.join("zz-not-a-program"), "").unwrap();
        let needs = [
            IP,
            Program {
                name: "zz-not-a-program",
                package: "zz-package",
                purpose: "a test",
            },
        ];
        let missing = missing(&needs, Some(dir.as_os_str()));
        assert_eq!(
            missing.iter().map(|p| p.name).collect::<Vec<_>>(),
            ["zz-not-a-program"]
        );
        let said = refusal(&missing, false);
        assert!(said.contains("zz-not-a-program (package zz-package"), "{said}");
        assert!(said.contains("`sudo apt-get install zz-package`"), "{said}");
        assert!(refusal(&missing, true).contains("`apt-get install zz-package`"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The jobs of `scps bench` with these scenarios and settings in
    /// `world`.
    fn jobs(scenario: &str, sets: &[&str], world: World) -> Vec<Job> {
        let request = crate::Request {
            scenarios: vec![scenario.to_owned()],
            sets: sets
                .iter()
                .map(|s| scps_config::sweep::parse_assignment(s).unwrap())
                .collect(),
            runs: None,
            seed: None,
            worlds: vec![world],
            shard: None,
            max_runs: 100,
        };
        crate::Plan::new(&request).unwrap().jobs
    }

    #[test]
    fn the_testbed_needs_its_capture_and_for_gateways_nftables_and_the_simulator_nothing() {
        let names = |needs: Vec<Program>| needs.iter().map(|p| p.name).collect::<Vec<_>>();
        let quick = ["link.rtt=600ms", "protocol=[\"linux-cubic\", \"gw-scps-rate\"]"];
        assert_eq!(
            names(needed(&jobs("geo-8mbit", &quick, World::Testbed), true)),
            ["ip", "setpriv", "dumpcap", "nft"]
        );
        assert_eq!(
            names(needed(&jobs("geo-8mbit", &quick, World::Testbed), false)),
            ["ip", "setpriv", "unshare", "dumpcap", "nft"]
        );
        let kernel = ["link.rtt=600ms", "protocol=linux-cubic"];
        assert!(!names(needed(&jobs("geo-8mbit", &kernel, World::Testbed), true)).contains(&"nft"));
        assert!(needed(&jobs("geo-8mbit", &quick, World::Sim), false).is_empty());
    }

    #[test]
    fn each_package_is_installed_once() {
        assert_eq!(packages(&[SETPRIV, UNSHARE, DUMPCAP]), ["util-linux", "tshark"]);
    }
}
