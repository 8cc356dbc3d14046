//! A bench interrupted (Ctrl-C, SIGTERM) ends at once with status 130,
//! its runs' control sockets removed; the programs it started die with
//! it (their parent-death signal) and the records written so far stay,
//! for a rerun to resume.

/// Why the watcher of interrupts could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot start the signal watcher")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Signal(std::io::Error),
}

/// Watches for SIGINT and SIGTERM from now on, on a thread of its own,
/// and ends the process cleanly on either. The handler is set whatever
/// the disposition this process inherited: a bench started from a shell
/// that ignores SIGINT (a background job, `nohup`) still stops on it.
pub fn stop_cleanly_when_interrupted() -> Result<(), WatchError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(WatchError::Runtime)?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?))
        })
        .map_err(WatchError::Signal)?;
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
        crate::testbed::remove_sockets();
        eprintln!("scps bench: interrupted; the runs recorded so far are kept, and a rerun resumes");
        std::process::exit(130);
    });
    Ok(())
}
