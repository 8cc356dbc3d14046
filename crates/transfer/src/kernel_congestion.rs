//! The kernel's congestion control for `--tcp=CONTROLLER`
//! (TCP_CONGESTION). A fresh network namespace silently inherits the
//! host's default, so a comparison with kernel TCP names its controller
//! and reports the one each connection really ran.

use anyhow::{Context, bail};
use socket2::SockRef;

/// What the kernel offers (loaded controllers; root may load others).
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Refuses, before anything connects, a controller the kernel does not
/// have, naming those it offers.
pub fn check(name: &str) -> anyhow::Result<()> {
    let probe = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .context("cannot create a TCP socket")?;
    set(&SockRef::from(&probe), name)
}

/// Sets the controller of `socket` (a listener's is inherited by the
/// connections it accepts).
pub fn set(socket: &SockRef<'_>, name: &str) -> anyhow::Result<()> {
    if let Err(error) = socket.set_tcp_congestion(name.as_bytes()) {
        let offered = std::fs::read_to_string(AVAILABLE).unwrap_or_default();
        bail!(
            "--tcp={name}: the kernel has no such congestion control ({error}); it offers: {}",
            offered.split_whitespace().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The controller a connection runs.
pub fn of(socket: &SockRef<'_>) -> Option<String> {
    let name = socket.tcp_congestion().ok()?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Some(String::from_utf8_lossy(&name[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_is_set_and_read_back_and_an_unknown_one_is_named() {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let socket = SockRef::from(&socket);
        // reno is built into every Linux kernel.
        set(&socket, "reno").unwrap();
        assert_eq!(of(&socket).as_deref(), Some("reno"));
        let error = check("warp-drive").unwrap_err().to_string();
        assert!(
            error.starts_with("--tcp=warp-drive: the kernel has no such congestion control"),
            "{error}"
        );
        assert!(error.contains("reno"), "names what it offers: {error}");
    }
}
