//! `scps recv (--udp BIND | --tun NAME --addr A/P | --tcp) [--port P] [--output FILE] [--once]`

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use scps_config::Direction;
use scps_workload_format::payload::Pattern;
use tokio::io::{AsyncWriteExt, BufReader};

use crate::transfer::args::{CommonArgs, parse_bind_socket, parse_time};
use crate::transfer::conn::Conn;
use crate::transfer::progress::Counted;
use crate::transfer::stack::{DEFAULT_BACKLOG, Stack, StackOptions, Transport, bundle_figures};
use crate::transfer::{Outcome, interrupts, print_report};
use scps_workload::bulk;
use scps_workload::files;
use scps_workload::hello::{Hello, read_hello};
use scps_workload::idle::IdleRead;
use scps_workload::messages;
use scps_workload::report::Report;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    scps recv --udp 0.0.0.0:7168 --once\n  \
    scps recv --tun scps0 --addr 10.9.0.1/24 --output received.iso --once\n  \
    scps recv --tcp --port 5001")]
pub struct RecvArgs {
    /// Our stack, UDP-encapsulated: the UDP address to receive on.
    #[arg(long, value_name = "ADDR:PORT", group = "path", value_parser = parse_bind_socket)]
    udp: Option<SocketAddr>,
    #[command(flatten)]
    common: CommonArgs,
    /// The port to accept connections on.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Write a bulk transfer's bytes to this file. It appears under this
    /// name only once complete and verified.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Serve one connection, then exit with its status (default: serve
    /// until Ctrl-C).
    #[arg(long)]
    once: bool,
    /// Plain bytes (ttcp-like) from any TCP client: read what arrives until
    /// the client closes, no hello, no digest, no report back; print the
    /// bytes and their SHA-256 (--output keeps them once the stream has
    /// ended in order).
    #[arg(long)]
    raw: bool,
    /// Connections served at once; one more is reset at once (a client
    /// holding a connection cannot keep others out).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    max_connections: u16,
    /// A connection whose sender has not named its workload this long
    /// after the connection opened is reset.
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "10s")]
    hello_timeout: Duration,
    /// A connection on which nothing arrives for this long is reset (the
    /// peer may still answer keepalive probes; it is not using the
    /// connection).
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "120s")]
    idle_timeout: Duration,
    /// Connections held before they are served, handshaking ones
    /// included; beyond it SYNs are answered with SYN cookies, so a SYN
    /// flood neither keeps clients out nor grows memory.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BACKLOG, value_parser = clap::value_parser!(u16).range(1..))]
    backlog: u16,
}

impl RecvArgs {
    fn transport(&self) -> Transport {
        if let Some(bundle) = self.common.bundle_transport() {
            bundle
        } else if let Some(bind) = self.udp {
            Transport::Udp {
                bind,
                peer: None,
                encapsulation: self.common.encapsulation.unwrap_or_default(),
            }
        } else if let Some(name) = &self.common.tun {
            Transport::Tun {
                name: name.clone(),
                addrs: self.common.addrs.clone(),
            }
        } else {
            Transport::Tcp {
                congestion: self.common.tcp.clone(),
            }
        }
    }
}

pub fn main(args: RecvArgs) -> anyhow::Result<Outcome> {
    if args.udp.is_none()
        && args.common.tun.is_none()
        && !args.common.kernel()
        && args.common.bundle_transport().is_none()
    {
        bail!(
            "choose a path: --udp ADDR:PORT, --channel SPEC (repeated), --bundle, --tun NAME --addr ADDRESS/PREFIX, or --tcp"
        );
    }
    if args.common.encapsulation.is_some() && args.udp.is_none() {
        bail!("--encapsulation wraps the UDP path's packets: it needs --udp ADDR:PORT");
    }
    if let Some(output) = &args.output {
        files::check_output(output)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: RecvArgs) -> anyhow::Result<Outcome> {
    let mut interrupt = interrupts()?;
    let transport = args.transport();
    let options = StackOptions {
        backlog: args.backlog,
        ..args.common.stack_options(Duration::from_secs(20))
    };
    let stack = Stack::start(&transport, &options, Direction::Reverse)?;
    let acceptor = stack.listen(args.port)?;
    // Scripts (and the tests) read this line to learn the ports.
    match (stack.udp_addr(), stack.bundle().as_ref().map(bundle_figures)) {
        (Some(udp), _) => eprintln!(
            "scps recv: {} listening on port {} (UDP {udp})",
            transport.label(),
            acceptor.port()
        ),
        (None, Some(channels)) => eprintln!(
            "scps recv: {} listening on port {} (channels {})",
            transport.label(),
            acceptor.port(),
            channels
                .iter()
                .map(|c| format!("{} -> {}", c.local, c.peer))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, None) => eprintln!(
            "scps recv: {} listening on port {}",
            transport.label(),
            acceptor.port()
        ),
    }
    // After the line above, which scripts read first.
    if let Some(output) = &args.output {
        for stale in files::remove_stale_partials(output) {
            eprintln!(
                "scps recv: removed {}, left by a receiver that is gone",
                stale.display()
            );
        }
    }
    let serving = Serving {
        protocol: transport.label(),
        raw: args.raw,
        output: args.output.clone(),
        json: args.common.json,
        hello_timeout: args.hello_timeout,
        idle_timeout: args.idle_timeout,
        endpoint: stack.watch(),
        bundle: stack.bundle(),
    };
    let serving = std::sync::Arc::new(serving);
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(usize::from(args.max_connections)));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let outcome = loop {
        let conn = tokio::select! {
            conn = acceptor.accept() => conn?,
            _ = interrupt.recv() => break Outcome::Interrupted,
            // Reap served connections as they end.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            eprintln!(
                "scps recv: reset a connection from {}: {} are being served already (--max-connections)",
                conn.peer(),
                args.max_connections
            );
            conn.abort_handle()?.abort();
            continue;
        };
        let label = stack.label_of(&conn);
        let served = connection(conn, label, serving.clone(), stopped.clone());
        connections.spawn(async move {
            let _slot = slot;
            served.await
        });
        if args.once {
            break tokio::select! {
                done = connections.join_next() => match done {
                    Some(Ok(Ok(false))) | None => Outcome::Complete,
                    Some(Ok(Ok(true))) => Outcome::Failed,
                    Some(Ok(Err(error))) => return Err(error),
                    Some(Err(error)) => bail!("serving the connection stopped: {error}"),
                },
                _ = interrupt.recv() => Outcome::Interrupted,
            };
        }
    };
    if outcome == Outcome::Interrupted {
        stop.send_replace(true);
        let reset = connections.len();
        while connections.join_next().await.is_some() {}
        if reset > 0 {
            eprintln!("scps recv: interrupted; {reset} connection(s) reset and no partial file kept");
        }
    }
    drop(acceptor);
    stack.close().await?;
    Ok(outcome)
}

/// How every connection is served.
#[derive(Debug)]
struct Serving {
    protocol: &'static str,
    raw: bool,
    output: Option<PathBuf>,
    json: bool,
    hello_timeout: Duration,
    idle_timeout: Duration,
    /// Our endpoint's counters, for each report's drops.
    endpoint: Option<scps_net::EndpointWatch>,
    /// Over a bundle: its channels, for each report.
    bundle: Option<scps_net::BundleMonitor>,
}

/// Serves one connection to its end and prints its report; on `stop`
/// (Ctrl-C) resets it instead, reporting how far it came. Returns whether it failed.
async fn connection(
    conn: Conn,
    stack: String,
    serving: std::sync::Arc<Serving>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    let accepted = Instant::now();
    let abort = conn.abort_handle()?;
    let mut report = Report::start("recv", serving.protocol, stack, conn.peer());
    // The data read, for the report of a transfer that fails.
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    // Held outside the select, so that on Ctrl-C the reset goes first
    // (dropped first, the connection would close on its own terms).
    let output = serving.output.as_deref();
    let reading = Reading {
        idle_timeout: serving.idle_timeout,
        read: read.clone(),
    };
    let mut served = if serving.raw {
        Box::pin(serve_raw(conn, &mut report, output, reading))
            as std::pin::Pin<Box<dyn Future<Output = _> + Send>>
    } else {
        Box::pin(serve(conn, &mut report, output, &serving, reading))
    };
    let failure = tokio::select! {
        result = &mut served => {
            drop(served);
            let failure = result.err().map(|err| crate::error_text::error_text(&err));
            if failure.is_some() {
                // Stop the sender too: it learns by a reset.
                abort.abort();
            }
            failure
        }
        _ = stop.wait_for(|stop| *stop) => {
            abort.abort();
            drop(served);
            Some("interrupted: the connection was reset".to_owned())
        }
    };
    if let Some(failure) = failure {
        report.error = Some(failure);
        // What got through, and over what time: an interrupted transfer's
        // report says how far it came.
        report.set_bytes_before_failure(read.load(std::sync::atomic::Ordering::Relaxed));
        if report.duration_s == 0.0 {
            report.set_moved(report.bytes, accepted);
        }
    }
    report.set_cpu();
    report.endpoint_drops = serving.endpoint.as_ref().map(|endpoint| {
        endpoint
            .stats()
            .drops
            .into_iter()
            .map(|(cause, n)| (cause.to_owned(), n))
            .collect()
    });
    report.bundle = serving.bundle.as_ref().map(bundle_figures);
    print_report(&report, serving.json);
    Ok(report.failed())
}

/// How a connection's data is read: given up after `idle_timeout` without
/// a byte, and counted into `read`.
struct Reading {
    idle_timeout: Duration,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Reading {
    fn wrap<R: tokio::io::AsyncRead + Unpin>(self, inner: R) -> Counted<IdleRead<R>> {
        Counted::new(IdleRead::new(inner, self.idle_timeout), self.read)
    }
}

/// Serves one connection of plain bytes: reads to the end, then closes.
async fn serve_raw(
    mut conn: Conn,
    report: &mut Report,
    output: Option<&std::path::Path>,
    reading: Reading,
) -> anyhow::Result<()> {
    report.workload = "raw".into();
    report.expect_data(u64::MAX, 0);
    let start = Instant::now();
    let (bytes, sha256) = bulk::read_to_end(&mut reading.wrap(&mut conn), output).await?;
    report.set_moved(bytes, start);
    report.sha256 = Some(sha256);
    report.record_connection(conn.figures());
    conn.shutdown().await.context("closing the connection")?;
    Ok(())
}

/// Serves one connection: reads the hello, runs the workload, sends the
/// report back. Errors end the connection with a reset (by the caller).
async fn serve(
    conn: Conn,
    report: &mut Report,
    output: Option<&std::path::Path>,
    serving: &Serving,
    reading: Reading,
) -> anyhow::Result<()> {
    let mut conn = BufReader::new(conn);
    let hello = tokio::time::timeout(serving.hello_timeout, read_hello(&mut conn))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "no hello within {:?} (--hello-timeout): the sender did not name its workload",
                serving.hello_timeout
            )
        })??;
    let start = Instant::now();
    if let Some(nagle) = hello.nagle() {
        // The sender's choice holds for both directions.
        conn.get_ref().set_nodelay(!nagle)?;
    }
    let (reader, mut writer) = tokio::io::split(conn);
    let mut reader = BufReader::new(reading.wrap(reader));
    match hello {
        Hello::Bulk { bytes, both_ways } => {
            report.workload = "bulk".into();
            report.expect_data(bytes, 0);
            let back = bulk::Source::Generated {
                bytes,
                seed: bulk::RETURN_SEED,
            };
            let sending_back = async {
                match both_ways {
                    true => bulk::write_data(&mut writer, &back, bytes, None).await.map(Some),
                    false => Ok(None),
                }
            };
            let (received, _) = tokio::try_join!(bulk::read_data(&mut reader, bytes, output), sending_back)?;
            report.set_moved(received.bytes, start);
            report.sha256 = Some(received.sha256);
            report.verified = Some(received.verified);
            if !received.verified {
                report.error = Some("the data does not match the sender's SHA-256; nothing was kept".into());
            }
        }
        Hello::Echo { .. } => {
            report.workload = "echo".into();
            // Back as it comes, to the sender's close.
            let echoed = tokio::io::copy(&mut reader, &mut writer)
                .await
                .context("echoing failed")?;
            report.set_moved(echoed, start);
        }
        Hello::Fetch { bytes, seed } => {
            report.workload = "fetch".into();
            let source = bulk::Source::Generated { bytes, seed };
            report.sha256 = Some(bulk::write_data(&mut writer, &source, bytes, None).await?);
            report.set_moved(bytes, start);
        }
        Hello::Messages {
            forward,
            reverse,
            duration_s,
            seed,
            ..
        } => {
            report.workload = "messages".into();
            let window = Duration::from_secs_f64(duration_s);
            let receiving = messages::receive(&mut reader, forward, Pattern::new(seed), window);
            let sending = async {
                if let Some(flow) = reverse {
                    messages::send(&mut writer, flow, Pattern::new(seed.wrapping_add(1)), window).await?;
                }
                anyhow::Ok(())
            };
            let (figures, ()) = tokio::try_join!(receiving, sending)?;
            report.set_messages(figures, None, duration_s);
            writer.write_all(&messages::END_MARKER).await?;
        }
    }
    let conn = reader.into_inner().into_inner().into_inner().unsplit(writer);
    report.record_connection(conn.get_ref().figures());
    let (reader, mut writer) = tokio::io::split(conn);
    report.set_cpu();
    let mut line = serde_json::to_vec(&*report)?;
    line.push(b'\n');
    writer.write_all(&line).await.context("sending the report")?;
    writer.shutdown().await.context("closing the connection")?;
    // Wait for the sender to close its side too, so that our close is
    // the orderly kind.
    let mut rest = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut BufReader::new(reader), &mut rest)
        .await
        .ok();
    Ok(())
}
