//! File descriptors, which bound how many connections a gateway holds as
//! surely as its memory does: each split connection holds one (its kernel
//! TCP socket on the LAN side), and a gateway that runs out can neither
//! accept nor connect.
//!
//! - At start the soft open-file limit is raised to the hard one (a
//!   systemd service starts with a soft limit of 1024 unless its unit says
//!   otherwise), and the connection limit lowered to what the descriptors
//!   allow, the gateway saying so.
//! - Should the descriptors run out all the same (other processes'
//!   sockets count against a system-wide limit too), a listener whose
//!   accept fails for want of one would leave its clients waiting in the
//!   kernel's queue until they time out. A spare descriptor is kept for
//!   that moment: given up, it lets one waiting connection be accepted and
//!   reset at once, then is taken again.

use std::sync::Mutex;

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::pump::Connection;

/// Descriptors kept for everything but the split connections: listeners,
/// the link's sockets, the TUN device, the control and metrics sockets,
/// the log, and connections being accepted or opened.
pub const RESERVED: u64 = 256;

/// The open-file limit as the gateway found it and left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFileLimit {
    pub found: u64,
    pub now: u64,
}

/// Raises the soft open-file limit to the hard one; the limits before and
/// after (unchanged if it cannot be read or raised).
pub fn raise_open_file_limit() -> OpenFileLimit {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return OpenFileLimit {
            found: u64::MAX,
            now: u64::MAX,
        };
    };
    let now = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    OpenFileLimit { found: soft, now }
}

/// The split connections `limit` descriptors leave room for, beside what
/// [`RESERVED`] keeps (one descriptor each).
pub fn connections_within(limit: u64) -> usize {
    usize::try_from(limit.saturating_sub(RESERVED).max(1)).unwrap_or(usize::MAX)
}

/// Whether an accept or connect failed for want of a descriptor.
pub fn out_of_descriptors(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(nix::libc::EMFILE | nix::libc::ENFILE))
}

/// A descriptor held in reserve, given up for a moment to turn away a
/// connection that could not otherwise be accepted.
#[derive(Debug)]
pub struct Spare(Mutex<Option<std::fs::File>>);

impl Default for Spare {
    fn default() -> Spare {
        Spare(Mutex::new(std::fs::File::open("/dev/null").ok()))
    }
}

impl Spare {
    /// Accepts one connection from `listener` with the spare descriptor
    /// given up, and resets it; its client. `None` if there was no spare,
    /// or the accept failed all the same.
    pub async fn turn_away_one(&self, listener: &tokio::net::TcpListener) -> Option<std::net::SocketAddr> {
        let spare = self.lock().take()?;
        drop(spare);
        // A reset, not an end of stream: the client must not take the
        // connection for one served.
        let client = listener.accept().await.ok().map(|(lan, client)| {
            lan.reset();
            client
        });
        *self.lock() = std::fs::File::open("/dev/null").ok();
        client
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<std::fs::File>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_comes_off_the_limit() {
        assert_eq!(connections_within(1024), 1024 - RESERVED as usize);
        assert_eq!(connections_within(100), 1, "never none");
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let limit = raise_open_file_limit();
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!((limit.now, soft), (hard, hard), "{limit:?}");
        assert!(limit.found <= limit.now);
    }
}
