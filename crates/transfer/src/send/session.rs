//! A sender's session on an open connection: each workload's hello, its
//! data both ways, and the receiver's report read back.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use scps_workload::bulk;
use scps_workload::hello::{Hello, read_line, write_hello};
use scps_workload::messages;
use scps_workload::report::Report;
use scps_workload_format::payload::Pattern;
use tokio::io::{AsyncWriteExt, BufReader};

use super::Workload;
use crate::Tell;
use crate::conn::Conn;

/// Runs `workload` over `conn` to its end, filling in `report`; an error
/// leaves the report to say how far it came.
pub async fn run(
    conn: Conn,
    workload: &Workload,
    report: &mut Report,
    start: Instant,
    tell: &Tell,
) -> anyhow::Result<()> {
    if let Workload::Named(hello) = workload
        && let Some(nagle) = hello.nagle()
    {
        conn.set_nodelay(!nagle)?;
    }
    let (reader, mut writer) = tokio::io::split(conn);
    let mut reader = BufReader::new(reader);
    match workload {
        Workload::Raw(source) => {
            report.workload = "raw".into();
            let (len, file) = bulk::open(source).await?;
            report.expect_data(len, 0);
            let digest = bulk::write_source(&mut writer, source, len, file).await?;
            writer.shutdown().await.context("closing the connection")?;
            // Delivered once the receiver closes after our FIN; whatever
            // it says meanwhile is read and set aside.
            tokio::io::copy(&mut reader, &mut tokio::io::sink())
                .await
                .context("waiting for the receiver to close")?;
            report.set_moved(len, start);
            report.sha256 = Some(bulk::hex(&digest));
            report.record_connection(reader.into_inner().unsplit(writer).figures(tell));
            return Ok(());
        }
        Workload::Bulk { source, both_ways } => {
            report.workload = "bulk".into();
            let (len, file) = bulk::open(source).await?;
            let both_ways = *both_ways;
            let hello = write_hello(
                &mut writer,
                &Hello::Bulk {
                    bytes: len,
                    both_ways,
                },
            )
            .await?;
            report.expect_data(len, hello);
            let sending = bulk::write_data(&mut writer, source, len, file);
            // What the receiver sends back meanwhile, checked by its digest.
            let receiving = async {
                match both_ways {
                    true => bulk::read_data(&mut reader, len, None).await.map(Some),
                    false => Ok(None),
                }
            };
            let (sha, back) = tokio::try_join!(sending, receiving)?;
            let peer = read_report(&mut reader).await?;
            let back_bytes = back.as_ref().map_or(0, |b| b.bytes);
            report.set_moved(peer.bytes + back_bytes, start);
            report.verified = Some(
                peer.verified == Some(true)
                    && peer.sha256.as_deref() == Some(&sha)
                    && back.as_ref().is_none_or(|b| b.verified),
            );
            report.sha256 = Some(sha);
            report.peer_report = Some(Box::new(peer));
        }
        Workload::Named(
            hello @ Hello::Echo {
                flow,
                duration_s,
                seed,
                ..
            },
        ) => {
            report.workload = "echo".into();
            let (flow, duration_s, seed) = (*flow, *duration_s, *seed);
            let window = Duration::from_secs_f64(duration_s);
            write_hello(&mut writer, hello).await?;
            let sending = async {
                messages::send(&mut writer, flow, Pattern::new(seed), window).await?;
                writer.write_all(&messages::END_MARKER).await?;
                // The receiver echoes until this end closes its side.
                writer.shutdown().await.context("closing the connection")?;
                anyhow::Ok(())
            };
            let receiving = async {
                let echoed = messages::receive(&mut reader, flow, Pattern::new(seed), window).await?;
                let peer = read_report(&mut reader).await?;
                anyhow::Ok((echoed, peer))
            };
            let ((), (echoed, peer)) = tokio::try_join!(sending, receiving)?;
            report.set_messages(echoed, None, duration_s);
            report.peer_report = Some(Box::new(peer));
        }
        // Bulk transfers name their length once their source is open.
        Workload::Named(Hello::Bulk { .. }) => bail!("a bulk transfer is sent from its source"),
        Workload::Named(hello @ Hello::Fetch { bytes, .. }) => {
            report.workload = "fetch".into();
            let bytes = *bytes;
            write_hello(&mut writer, hello).await?;
            report.expect_data(bytes, 0);
            let received = bulk::read_data(&mut reader, bytes, None).await?;
            let peer = read_report(&mut reader).await?;
            report.set_moved(received.bytes, start);
            report.verified = Some(received.verified && peer.sha256.as_deref() == Some(&received.sha256));
            report.sha256 = Some(received.sha256);
            report.peer_report = Some(Box::new(peer));
        }
        Workload::Named(
            hello @ Hello::Messages {
                forward,
                reverse,
                duration_s,
                seed,
                ..
            },
        ) => {
            report.workload = "messages".into();
            let (forward, reverse, duration_s, seed) = (*forward, *reverse, *duration_s, *seed);
            let window = Duration::from_secs_f64(duration_s);
            write_hello(&mut writer, hello).await?;
            let sending = async {
                messages::send(&mut writer, forward, Pattern::new(seed), window).await?;
                writer.write_all(&messages::END_MARKER).await?;
                anyhow::Ok(())
            };
            let receiving = async {
                let reverse = match reverse {
                    Some(flow) => Some(
                        messages::receive(&mut reader, flow, Pattern::new(seed.wrapping_add(1)), window)
                            .await?,
                    ),
                    None => {
                        messages::expect_end_marker(&mut reader).await?;
                        None
                    }
                };
                let peer = read_report(&mut reader).await?;
                anyhow::Ok((reverse, peer))
            };
            let ((), (reverse, peer)) = tokio::try_join!(sending, receiving)?;
            let forward = peer
                .messages
                .as_ref()
                .map(|m| m.forward.clone())
                .context("the receiver's report has no message figures")?;
            // The receiver's figures of our flow, as its report computed
            // them (the same window: the hello's).
            report.set_messages(forward, reverse, duration_s);
            report.peer_report = Some(Box::new(peer));
        }
    }
    // The receiver has everything and closes first: while our side is
    // still open the kernel still has its counters (a kernel socket in
    // TIME-WAIT, the lot of the side that closes first, has none).
    let mut conn = reader.into_inner().unsplit(writer);
    report.record_connection(conn.figures(tell));
    conn.shutdown().await.context("closing the connection")?;
    Ok(())
}

async fn read_report(reader: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> anyhow::Result<Report> {
    let line = read_line(reader, "its report").await?;
    serde_json::from_slice(&line).context("the receiver's report is not valid")
}
