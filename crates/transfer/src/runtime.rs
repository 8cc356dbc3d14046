//! What runs a transfer: the runtime, and the Ctrl-C that stops it.

use anyhow::Context;
use tokio::runtime::Runtime;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The runtime of a transfer: two workers (our stack's driver and the
/// session run side by side), with timers and I/O.
pub fn runtime() -> anyhow::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")
}

/// Ctrl-C (SIGINT), from the moment this is called on. A
/// `tokio::signal::ctrl_c()` future per `select!` would only listen from
/// its first poll, and a signal that came before (while a busy transfer
/// was still being polled, say) would be lost.
pub fn interrupts() -> anyhow::Result<Signal> {
    signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C (SIGINT)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_has_two_workers_and_hears_ctrl_c() {
        let runtime = runtime().unwrap();
        assert_eq!(runtime.metrics().num_workers(), 2);
        assert!(runtime.block_on(async { interrupts() }).is_ok());
    }
}
