//! A receiver's session on an accepted connection: the hello read, the
//! workload it names served, and the report sent back; or plain bytes
//! read to their end.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use scps_workload::bulk;
use scps_workload::hello::{Hello, read_hello};
use scps_workload::messages;
use scps_workload::report::Report;
use scps_workload_format::payload::Pattern;
use tokio::io::{AsyncWriteExt, BufReader};

use super::connection::Reading;
use crate::Tell;
use crate::conn::Conn;

/// Serves one connection of plain bytes: reads to the end, then closes.
pub async fn serve_raw(
    mut conn: Conn,
    report: &mut Report,
    output: Option<&Path>,
    reading: Reading,
    tell: &Tell,
) -> anyhow::Result<()> {
    report.workload = "raw".into();
    report.expect_data(u64::MAX, 0);
    let start = Instant::now();
    let (bytes, sha256) = bulk::read_to_end(&mut reading.wrap(&mut conn), output).await?;
    report.set_moved(bytes, start);
    report.sha256 = Some(sha256);
    report.record_connection(conn.figures(tell));
    conn.shutdown().await.context("closing the connection")?;
    Ok(())
}

/// Serves one connection: reads the hello, runs the workload, sends the
/// report back. Errors end the connection with a reset (by the caller).
pub async fn serve(
    conn: Conn,
    report: &mut Report,
    output: Option<&Path>,
    hello_timeout: Duration,
    reading: Reading,
    tell: &Tell,
) -> anyhow::Result<()> {
    let mut conn = BufReader::new(conn);
    let hello = tokio::time::timeout(hello_timeout, read_hello(&mut conn))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "no hello within {hello_timeout:?} (--hello-timeout): the sender did not name its workload"
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
    report.record_connection(conn.get_ref().figures(tell));
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
