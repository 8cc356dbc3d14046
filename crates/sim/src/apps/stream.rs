//! Writing and checking the content of one direction of a connection.

use scps_proto::{ConnectionHandle, Endpoint, StreamError};

use scps_workload_format::payload::Pattern;

/// Feeds a connection the pattern's bytes up to a total.
#[derive(Debug)]
pub struct StreamWriter {
    pattern: Pattern,
    total: u64,
    /// Bytes the connection has taken.
    written: u64,
    /// Generated content not yet taken, from stream offset `written`:
    /// generated once, however many polls it takes to hand over.
    pending: Vec<u8>,
    taken: usize,
}

/// Bytes generated at a time.
const CHUNK: usize = 64 * 1024;

impl StreamWriter {
    pub fn new(pattern: Pattern, total: u64) -> StreamWriter {
        StreamWriter {
            pattern,
            total,
            written: 0,
            pending: Vec::with_capacity(CHUNK),
            taken: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.written == self.total
    }

    /// Writes as much as the connection takes; errors other than "would
    /// block" are returned.
    pub fn pump(&mut self, endpoint: &mut Endpoint, handle: ConnectionHandle) -> Result<(), StreamError> {
        while self.written < self.total {
            if self.taken == self.pending.len() {
                let len = ((self.total - self.written) as usize).min(CHUNK);
                self.pending.resize(len, 0);
                self.pattern.fill(self.written, &mut self.pending);
                self.taken = 0;
            }
            match endpoint.send(handle, &self.pending[self.taken..]) {
                Ok(0) | Err(StreamError::WouldBlock) => return Ok(()),
                Ok(n) => {
                    self.taken += n;
                    self.written += n as u64;
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// Bytes read from a connection at a time.
pub const READ_CHUNK: usize = 64 * 1024;

/// Reads one direction of a connection and checks every byte against the
/// pattern.
#[derive(Debug)]
pub struct StreamReader {
    pattern: Pattern,
    received: u64,
    end_of_stream: bool,
}

/// What went wrong with a stream's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    #[error("received data differs from what was sent, first at byte {0}")]
    Mismatch(u64),
    #[error(transparent)]
    Stream(#[from] StreamError),
}

impl StreamReader {
    pub fn new(pattern: Pattern) -> StreamReader {
        StreamReader {
            pattern,
            received: 0,
            end_of_stream: false,
        }
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    pub fn end_of_stream(&self) -> bool {
        self.end_of_stream
    }

    /// Reads everything available through `buf` (which readers may
    /// share), checking it.
    pub fn pump(
        &mut self,
        endpoint: &mut Endpoint,
        handle: ConnectionHandle,
        buf: &mut [u8],
    ) -> Result<(), ContentError> {
        loop {
            match endpoint.recv(handle, buf) {
                Ok(0) => {
                    self.end_of_stream = true;
                    return Ok(());
                }
                Ok(n) => {
                    if let Some(at) = self.pattern.first_mismatch(self.received, &buf[..n]) {
                        return Err(ContentError::Mismatch(at));
                    }
                    self.received += n as u64;
                }
                Err(StreamError::WouldBlock) => return Ok(()),
                Err(err) => return Err(err.into()),
            }
        }
    }
}
