//! Waiting for a file to become readable unless told to stop: the
//! servers' threads sleep in `poll` on their listener and on one end of a
//! socket pair; the other end, dropped, wakes them. (Waking a blocked
//! `accept` by connecting to it would not work from another network
//! namespace.) The same pair tells the command that the packet loop has
//! ended.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Held by one side: dropping it wakes the waiter for good.
#[derive(Debug)]
pub(crate) struct Stopper {
    /// Closed on drop, which the waiter sees.
    _end: UnixStream,
}

/// Held by the thread that waits.
#[derive(Debug)]
pub(crate) struct Waiter(UnixStream);

pub(crate) fn pair() -> io::Result<(Stopper, Waiter)> {
    let (a, b) = UnixStream::pair()?;
    Ok((Stopper { _end: a }, Waiter(b)))
}

impl AsFd for Waiter {
    /// Readable (at end of stream) once the stopper is gone.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl Waiter {
    /// Waits until `fd` is readable (true) or the stopper is gone (false).
    pub(crate) fn readable(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        loop {
            let mut fds = [
                PollFd::new(fd, PollFlags::POLLIN),
                PollFd::new(self.0.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            if fds[1].revents().is_some_and(|r| !r.is_empty()) {
                return Ok(false);
            }
            if fds[0].revents().is_some_and(|r| !r.is_empty()) {
                return Ok(true);
            }
        }
    }
}
