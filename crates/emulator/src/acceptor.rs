//! A listener served on a thread of its own until dropped: the control
//! socket and the metrics endpoint both accept one client at a time and
//! answer it, sleeping in `poll` in between (see `wake`).

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::thread::JoinHandle;

use crate::{Error, wake};

/// A listening socket whose accepted streams block.
pub(crate) trait Listen: AsFd + Send + 'static {
    type Stream: Send;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()>;
    fn accept_stream(&self) -> io::Result<Self::Stream>;
}

impl Listen for UnixListener {
    type Stream = UnixStream;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        UnixListener::set_nonblocking(self, nonblocking)
    }
    fn accept_stream(&self) -> io::Result<UnixStream> {
        let (stream, _) = self.accept()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    }
}

impl Listen for TcpListener {
    type Stream = TcpStream;
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        TcpListener::set_nonblocking(self, nonblocking)
    }
    fn accept_stream(&self) -> io::Result<TcpStream> {
        let (stream, _) = self.accept()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    }
}

/// The serving thread; dropping this stops and joins it.
#[derive(Debug)]
pub(crate) struct Acceptor {
    stopper: Option<wake::Stopper>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    /// Serves every client of `listener` with `serve`, on a thread called
    /// `name`.
    pub(crate) fn spawn<L: Listen>(
        name: &str,
        listener: L,
        mut serve: impl FnMut(L::Stream) + Send + 'static,
    ) -> Result<Acceptor, Error> {
        listener.set_nonblocking(true).map_err(|source| Error::Io {
            what: "make the listener non-blocking".into(),
            source,
        })?;
        let (stopper, waiter) = wake::pair().map_err(|source| Error::Io {
            what: "create the stop signal".into(),
            source,
        })?;
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Ok(true) = waiter.readable(listener.as_fd()) {
                    // Another client may have taken it: then WouldBlock.
                    if let Ok(stream) = listener.accept_stream() {
                        serve(stream);
                    }
                }
            })
            .map_err(|source| Error::Io {
                what: format!("start the {name} thread"),
                source,
            })?;
        Ok(Acceptor {
            stopper: Some(stopper),
            thread: Some(thread),
        })
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stopper.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
