//! Bulk transfer (a ttcp or an FTP put): the client connects and sends
//! `bytes`, the server reads and checks them; with both ways the server
//! sends as many back at the same time. Timed from the client's SYN to the
//! last byte read.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint};
use scps_workload_format::payload::Pattern;

use super::stream::{StreamReader, StreamWriter};
use crate::world::App;

/// What the two ends report to the run.
#[derive(Debug, Default)]
pub struct BulkProgress {
    pub client: Option<ConnectionHandle>,
    pub server: Option<ConnectionHandle>,
    /// When the client sent its SYN.
    pub started: Option<Instant>,
    /// When the last byte was read: forward (at the server), reverse (at
    /// the client).
    pub finished: [Option<Instant>; 2],
    pub error: Option<String>,
}

impl BulkProgress {
    pub fn is_done(&self, both_ways: bool) -> bool {
        self.error.is_some() || (self.finished[0].is_some() && (!both_ways || self.finished[1].is_some()))
    }

    fn fail(&mut self, error: impl std::fmt::Display) {
        self.error.get_or_insert_with(|| error.to_string());
    }
}

pub type Shared = Rc<RefCell<BulkProgress>>;

/// One end's half of the work: what it writes and what it reads.
#[derive(Debug)]
struct Halves {
    total: u64,
    writer: Option<StreamWriter>,
    reader: Option<StreamReader>,
    shut_down: bool,
    buf: Vec<u8>,
}

impl Halves {
    /// Moves data both ways; `direction` is the index in `finished` of
    /// the stream this end reads.
    fn pump(
        &mut self,
        now: Instant,
        endpoint: &mut Endpoint,
        handle: ConnectionHandle,
        progress: &Shared,
        direction: usize,
    ) {
        let mut progress = progress.borrow_mut();
        if let Some(error) = endpoint.connection(handle).and_then(|c| c.error()) {
            return progress.fail(format_args!("connection failed: {error}"));
        }
        if let Some(writer) = &mut self.writer {
            if let Err(error) = writer.pump(endpoint, handle) {
                return progress.fail(format_args!("sending failed: {error}"));
            }
            if writer.done() && !self.shut_down {
                self.shut_down = true;
                // Infallible for a live handle.
                let _ = endpoint.shutdown(handle);
            }
        }
        if let Some(reader) = &mut self.reader {
            if let Err(error) = reader.pump(endpoint, handle, &mut self.buf) {
                return progress.fail(error);
            }
            if reader.received() > self.total {
                return progress.fail(format_args!(
                    "received {} bytes, {} were sent",
                    reader.received(),
                    self.total
                ));
            }
            if reader.end_of_stream() && reader.received() < self.total {
                return progress.fail(format_args!(
                    "stream ended after {} of {} bytes",
                    reader.received(),
                    self.total
                ));
            }
            // Timed at the last byte read, not at the FIN after it.
            if reader.received() == self.total && progress.finished[direction].is_none() {
                progress.finished[direction] = Some(now);
                if self.writer.is_none() && !self.shut_down {
                    self.shut_down = true;
                    let _ = endpoint.shutdown(handle);
                }
            }
        }
    }
}

/// The connecting end.
#[derive(Debug)]
pub struct BulkClient {
    server: SocketAddr,
    halves: Halves,
    progress: Shared,
}

/// The listening end.
#[derive(Debug)]
pub struct BulkServer {
    listen: SocketAddr,
    halves: Halves,
    progress: Shared,
}

/// The two applications of a transfer of `bytes` to `server`; the forward
/// stream uses `forward`, the reverse one (with `both_ways`) `reverse`.
pub fn transfer(
    server: SocketAddr,
    bytes: u64,
    both_ways: bool,
    forward: Pattern,
    reverse: Pattern,
) -> (BulkClient, BulkServer, Shared) {
    let progress = Shared::default();
    let client = BulkClient {
        server,
        halves: Halves {
            total: bytes,
            writer: Some(StreamWriter::new(forward, bytes)),
            reader: both_ways.then(|| StreamReader::new(reverse)),
            shut_down: false,
            buf: vec![0; super::stream::READ_CHUNK],
        },
        progress: progress.clone(),
    };
    let server = BulkServer {
        listen: server,
        halves: Halves {
            total: bytes,
            writer: both_ways.then(|| StreamWriter::new(reverse, bytes)),
            reader: Some(StreamReader::new(forward)),
            shut_down: false,
            buf: vec![0; super::stream::READ_CHUNK],
        },
        progress: progress.clone(),
    };
    (client, server, progress)
}

impl App for BulkClient {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        if self.progress.borrow().error.is_some() {
            return;
        }
        let existing = self.progress.borrow().client;
        let handle = match existing {
            Some(handle) => handle,
            None => match endpoint.connect(now, self.server, None, None) {
                Ok(handle) => {
                    let mut progress = self.progress.borrow_mut();
                    progress.client = Some(handle);
                    progress.started = Some(now);
                    handle
                }
                Err(error) => {
                    return self
                        .progress
                        .borrow_mut()
                        .fail(format_args!("cannot connect: {error}"));
                }
            },
        };
        self.halves.pump(now, endpoint, handle, &self.progress, 1);
    }
}

impl App for BulkServer {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        if self.progress.borrow().error.is_some() {
            return;
        }
        let existing = self.progress.borrow().server;
        let handle = match existing.or_else(|| endpoint.accept(self.listen)) {
            Some(handle) => handle,
            None => return,
        };
        self.progress.borrow_mut().server = Some(handle);
        self.halves.pump(now, endpoint, handle, &self.progress, 0);
    }
}
