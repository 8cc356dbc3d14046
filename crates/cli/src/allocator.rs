//! The allocator: jemalloc rather than the C library's. A gateway's
//! memory follows the connections it holds, and jemalloc gives back to
//! the system what connections that have ended held; glibc's keeps most
//! of it for the life of the process. Its decay times are built in
//! (`.cargo/config.toml`): a page unused for about a second goes back.
//! With its defaults (ten seconds, then a second stage) a far gateway
//! still held 88 to 108 MB a minute after 10,000 connections closed,
//! against 28 MB with these.
//!
//! What it does not give back is its own bookkeeping for the peak it
//! reached: about 12 MB after 10,000 connections held at once.

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Has freed memory given back to the system by jemalloc's own threads,
/// seconds after it is freed (its decay time, 10 s), whether or not the
/// process allocates again: without them, jemalloc gives it back only in
/// the course of later allocations, and a gateway gone quiet after a
/// burst of connections would keep it. For long-running commands.
pub fn give_back_freed_memory() {
    if let Err(error) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!(%error, "jemalloc's background threads did not start: freed memory is given back only as the gateway allocates");
    }
}
