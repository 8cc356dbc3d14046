//! The packet loop: read what arrives on either side, let the channel
//! models decide its fate, and write it out on the other side at its time.
//!
//! One thread, which sleeps in `ppoll` until a packet arrives, the next
//! packet is due (nanosecond timeout), or it is told to stop: no busy
//! polling. Time is the monotonic clock since the emulator's start, the
//! epoch of the channel models.

use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::time::TimeSpec;
use tun_rs::SyncDevice;

use crate::Error;
use crate::command::Change;
use crate::scope::crosses_link;
use crate::state::{ChangeError, Direction, LinkState};

/// Packets read from one side before turning to the other and to the
/// packets due, so that neither direction starves the other.
const READ_BURST: usize = 64;

/// Locks the link state; a panic elsewhere does not make it unusable
/// (every change to it is applied whole or not at all).
pub(crate) fn lock(state: &Mutex<LinkState>) -> MutexGuard<'_, LinkState> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs until a byte arrives on `stop` (or it closes).
pub(crate) fn run(
    state: &Mutex<LinkState>,
    tuns: &[SyncDevice; 2],
    epoch: Instant,
    mut stop: UnixStream,
    buffer_bytes: usize,
) -> Result<(), Error> {
    let mut buffer = vec![0u8; buffer_bytes];
    // Wake-ups are otherwise grouped within 50 us (the default timer
    // slack); a link's delay should not drift by that much.
    let _ = nix::sys::prctl::set_timerslack(1);
    loop {
        let timeout = lock(state).next_due(epoch.elapsed()).map(|due| {
            let wait = due.saturating_sub(epoch.elapsed());
            TimeSpec::from_duration(wait)
        });
        let (readable, stop_now) = {
            let mut fds = [
                PollFd::new(tuns[0].as_fd(), PollFlags::POLLIN),
                PollFd::new(tuns[1].as_fd(), PollFlags::POLLIN),
                PollFd::new(stop.as_fd(), PollFlags::POLLIN),
            ];
            match ppoll(&mut fds, timeout, None) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => {
                    return Err(Error::Io {
                        what: "wait for packets".into(),
                        source: e.into(),
                    });
                }
            }
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            ([ready(&fds[0]), ready(&fds[1])], ready(&fds[2]))
        };
        if stop_now {
            let _ = stop.read(&mut [0u8; 1]);
            return Ok(());
        }
        for direction in Direction::BOTH {
            if readable[direction.index()] {
                read_side(state, &tuns[direction.index()], direction, epoch, &mut buffer)?;
            }
        }
        deliver_due(state, tuns, epoch);
    }
}

/// Reads up to [`READ_BURST`] packets from the side where `direction`
/// starts and offers each to the model at its arrival time.
fn read_side(
    state: &Mutex<LinkState>,
    tun: &SyncDevice,
    direction: Direction,
    epoch: Instant,
    buffer: &mut [u8],
) -> Result<(), Error> {
    for _ in 0..READ_BURST {
        match tun.recv(buffer) {
            Ok(len) => {
                let now = epoch.elapsed();
                let packet = &buffer[..len];
                let mut state = lock(state);
                if crosses_link(packet) {
                    state.offer(direction, now, packet.to_vec());
                } else {
                    state.set_aside(direction);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Io {
                    what: format!("read from the {} side", direction.name()),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Writes every packet whose time has come.
fn deliver_due(state: &Mutex<LinkState>, tuns: &[SyncDevice; 2], epoch: Instant) {
    let mut state = lock(state);
    let now = epoch.elapsed();
    for direction in Direction::BOTH {
        while let Some(packet) = state.take_due(direction, now) {
            // Written back into the TUN it came from; the kernel routes it
            // out of the other side (see `steering.rs`).
            let result = tuns[direction.index()].send(&packet).map_err(drop);
            state.written(direction, result);
        }
    }
    // A report goes back to the datagram's sender: the kernel routes it
    // there from either TUN device. Lost if refused, as a router's.
    while let Some((direction, report)) = state.take_report() {
        let _ = tuns[direction.index()].send(&report);
    }
}

/// What the rest of the emulator shares with the packet loop.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) state: Arc<Mutex<LinkState>>,
    pub(crate) epoch: Instant,
}

impl Shared {
    /// Time since the emulator started: the models' clock.
    pub(crate) fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Applies `change` now, and says when. The clock is read under the
    /// lock, so the packet loop never sees the models' time go back (the
    /// bonds and channels are driven from both threads).
    pub(crate) fn apply(&self, change: &Change) -> Result<Duration, ChangeError> {
        let mut state = lock(&self.state);
        let now = self.now();
        state.apply(now, change)?;
        Ok(now)
    }
}
