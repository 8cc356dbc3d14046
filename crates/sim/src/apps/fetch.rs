//! File fetches by many clients (the complex network of the Xiphos
//! paper): each fetch is one connection that sends a 16-byte request (an
//! id and a size), receives that many bytes and closes. Clients request
//! files at exponentially distributed intervals, of exponentially
//! distributed sizes; the figure is the time from SYN to last byte.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_config::Fetches;
use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint, StreamError};
use scps_workload_format::payload::Pattern;

use super::stream::{StreamReader, StreamWriter};
use crate::result::ConnectionTotals;
use crate::world::App;

const REQUEST: usize = 16;

#[derive(Debug, Default)]
pub struct FetchProgress {
    pub planned: usize,
    /// Download time of every completed fetch, in completion order.
    pub completed: Vec<Duration>,
    pub bytes: u64,
    pub failed: usize,
    pub first_error: Option<String>,
    /// Figures of every connection, clients' and server's, once it ends.
    pub connections: ConnectionTotals,
    pub last_completion: Option<Instant>,
}

impl FetchProgress {
    pub fn is_done(&self) -> bool {
        self.completed.len() + self.failed == self.planned
    }
}

pub type Shared = Rc<RefCell<FetchProgress>>;

/// A planned request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Planned {
    at: Instant,
    id: u64,
    size: u64,
}

/// An exponentially distributed sample with the given mean (inverse
/// transform; `1 - u` keeps the logarithm finite).
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -mean * (1.0 - rng.random::<f64>()).ln()
}

/// The requests of a workload drawn with `seed`: when (seconds from the
/// start) and how many bytes, in time order.
pub fn requests(workload: &Fetches, seed: u64) -> Vec<(f64, u64)> {
    plan(workload, seed)
        .iter()
        .map(|p| (p.at.as_duration().as_secs_f64(), p.size))
        .collect()
}

/// The request schedule of all clients, in time order.
fn plan(workload: &Fetches, seed: u64) -> Vec<Planned> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mean_gap = workload.mean_interval.as_secs_f64();
    let mut requests = Vec::new();
    for _client in 0..workload.clients {
        let mut t = exponential(&mut rng, mean_gap);
        while t < workload.duration.as_secs_f64() {
            let bytes = (exponential(&mut rng, workload.mean_size as f64) as u64)
                .clamp(workload.size_min, workload.size_max);
            requests.push((t, bytes));
            t += exponential(&mut rng, mean_gap);
        }
    }
    requests.sort_by(|a, b| a.0.total_cmp(&b.0));
    requests
        .into_iter()
        .enumerate()
        .map(|(id, (t, size))| Planned {
            at: Instant::from_duration(Duration::from_secs_f64(t)),
            id: id as u64,
            size,
        })
        .collect()
}

/// The content of the file answering request `id`.
fn file_pattern(seed: u64, id: u64) -> Pattern {
    Pattern::new(seed ^ id.wrapping_mul(0xa076_1d64_78bd_642f))
}

#[derive(Debug)]
struct Download {
    handle: ConnectionHandle,
    planned: Planned,
    started: Instant,
    request_sent: usize,
    reader: StreamReader,
}

/// All the clients, as one application on their side.
#[derive(Debug)]
pub struct FetchClients {
    server: SocketAddr,
    plan: VecDeque<Planned>,
    active: Vec<Download>,
    seed: u64,
    progress: Shared,
    /// One read buffer for all downloads.
    buf: Vec<u8>,
}

#[derive(Debug)]
struct Upload {
    handle: ConnectionHandle,
    request: Vec<u8>,
    writer: Option<StreamWriter>,
    shut_down: bool,
}

/// The file server.
#[derive(Debug)]
pub struct FetchServer {
    listen: SocketAddr,
    serving: Vec<Upload>,
    seed: u64,
    buf: Vec<u8>,
    progress: Shared,
}

/// The clients and the server of a fetch workload; `seed` fixes the
/// schedule and the content.
pub fn fetches(server: SocketAddr, workload: &Fetches, seed: u64) -> (FetchClients, FetchServer, Shared) {
    let plan: VecDeque<Planned> = plan(workload, seed).into();
    let progress = Shared::new(RefCell::new(FetchProgress {
        planned: plan.len(),
        ..FetchProgress::default()
    }));
    let clients = FetchClients {
        server,
        plan,
        active: Vec::new(),
        seed,
        progress: progress.clone(),
        buf: vec![0; super::stream::READ_CHUNK],
    };
    let server = FetchServer {
        listen: server,
        serving: Vec::new(),
        seed,
        buf: vec![0; 4096],
        progress: progress.clone(),
    };
    (clients, server, progress)
}

impl FetchClients {
    fn fail(&self, error: impl std::fmt::Display) {
        let mut progress = self.progress.borrow_mut();
        progress.failed += 1;
        progress.first_error.get_or_insert_with(|| error.to_string());
    }

    /// Moves one download on, reading through `buf`; returns whether it
    /// is over.
    fn step(&self, now: Instant, endpoint: &mut Endpoint, download: &mut Download, buf: &mut [u8]) -> bool {
        let handle = download.handle;
        if let Some(error) = endpoint.connection(handle).and_then(|c| c.error()) {
            self.fail(format_args!("fetch {} failed: {error}", download.planned.id));
            self.progress.borrow_mut().connections.add(endpoint, handle);
            let _ = endpoint.release(now, handle);
            return true;
        }
        if download.request_sent < REQUEST {
            let mut request = [0u8; REQUEST];
            request[..8].copy_from_slice(&download.planned.id.to_be_bytes());
            request[8..].copy_from_slice(&download.planned.size.to_be_bytes());
            match endpoint.send(handle, &request[download.request_sent..]) {
                Ok(n) => download.request_sent += n,
                Err(StreamError::WouldBlock) => {}
                Err(error) => {
                    self.fail(format_args!("fetch {} failed: {error}", download.planned.id));
                    let _ = endpoint.release(now, handle);
                    return true;
                }
            }
        }
        if let Err(error) = download.reader.pump(endpoint, handle, buf) {
            self.fail(format_args!("fetch {}: {error}", download.planned.id));
            let _ = endpoint.abort(now, handle);
            let _ = endpoint.release(now, handle);
            return true;
        }
        if !download.reader.end_of_stream() {
            return false;
        }
        if download.reader.received() != download.planned.size {
            self.fail(format_args!(
                "fetch {} ended after {} of {} bytes",
                download.planned.id,
                download.reader.received(),
                download.planned.size
            ));
        } else {
            let mut progress = self.progress.borrow_mut();
            progress.completed.push(now.saturating_since(download.started));
            progress.bytes += download.planned.size;
            progress.last_completion = Some(now);
            progress.connections.add(endpoint, handle);
        }
        let _ = endpoint.close(now, handle);
        true
    }
}

impl App for FetchClients {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        while self.plan.front().is_some_and(|p| p.at <= now) {
            let Some(planned) = self.plan.pop_front() else {
                break;
            };
            match endpoint.connect(now, self.server, None, None) {
                Ok(handle) => self.active.push(Download {
                    handle,
                    planned,
                    started: now,
                    request_sent: 0,
                    reader: StreamReader::new(file_pattern(self.seed, planned.id)),
                }),
                Err(error) => self.fail(format_args!("fetch {} could not start: {error}", planned.id)),
            }
        }
        let mut active = std::mem::take(&mut self.active);
        let mut buf = std::mem::take(&mut self.buf);
        active.retain_mut(|download| !self.step(now, endpoint, download, &mut buf));
        self.active = active;
        self.buf = buf;
    }

    fn next_wake(&self) -> Option<Instant> {
        self.plan.front().map(|p| p.at)
    }
}

impl App for FetchServer {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint) {
        while let Some(handle) = endpoint.accept(self.listen) {
            self.serving.push(Upload {
                handle,
                request: Vec::with_capacity(REQUEST),
                writer: None,
                shut_down: false,
            });
        }
        let (seed, buf, progress) = (self.seed, &mut self.buf, &self.progress);
        // An upload is over: count its connection, let it finish closing.
        let finish = |endpoint: &mut Endpoint, handle| {
            progress.borrow_mut().connections.add(endpoint, handle);
            let _ = endpoint.release(now, handle);
            false
        };
        self.serving.retain_mut(|upload| {
            let handle = upload.handle;
            let Some(connection) = endpoint.connection(handle) else {
                return false;
            };
            if connection.error().is_some() {
                return finish(endpoint, handle);
            }
            // Read the request, and afterwards whatever else comes (the
            // client's FIN ends the exchange).
            loop {
                match endpoint.recv(handle, buf) {
                    Ok(0) => return finish(endpoint, handle),
                    Ok(n) => {
                        let take = n.min(REQUEST - upload.request.len());
                        upload.request.extend_from_slice(&buf[..take]);
                    }
                    Err(_) => break,
                }
            }
            if upload.writer.is_none() && upload.request.len() == REQUEST {
                let id = u64::from_be_bytes(upload.request[..8].try_into().unwrap_or_default());
                let size = u64::from_be_bytes(upload.request[8..].try_into().unwrap_or_default());
                upload.writer = Some(StreamWriter::new(file_pattern(seed, id), size));
            }
            if let Some(writer) = &mut upload.writer {
                if writer.pump(endpoint, handle).is_err() {
                    return finish(endpoint, handle);
                }
                if writer.done() && !upload.shut_down {
                    upload.shut_down = true;
                    let _ = endpoint.shutdown(handle);
                }
            }
            true
        });
    }
}
