//! Message streams, the Iridium paper's test applications: each message is
//! a send timestamp, a length and random bytes
//! (`scps_workload_format::message`), written at the offered rate for the
//! test window. Message `i` is written when its time comes, `i` intervals
//! into the window, and stamped as it is written; while the connection
//! takes no more the write waits and later messages follow as soon as
//! there is room (the offered rate is kept, not the exact times), as in
//! the simulator.
//!
//! The receiver counts the whole messages that arrive within the sender's
//! window (which starts at the first message's timestamp) and the latency
//! of each (arrival less timestamp).

use std::time::Duration;

use anyhow::{Context, bail};
use scps_workload_format::figures::FlowFigures;
use scps_workload_format::message::{self, HEADER};
use scps_workload_format::payload::Pattern;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::hello::Flow;
use super::report::flow_figures;
use super::wall_nanos;

/// The header that ends a flow of messages: timestamp 0, length 0 (no
/// message is shorter than its header).
pub const END_MARKER: [u8; HEADER] = [0; HEADER];

/// Writes `flow`'s messages for `window`; returns how many.
pub async fn send(
    out: &mut (impl AsyncWrite + Unpin),
    flow: Flow,
    pattern: Pattern,
    window: Duration,
) -> anyhow::Result<u64> {
    let start = tokio::time::Instant::now();
    let mut buf = vec![0u8; flow.size];
    let mut index = 0u64;
    loop {
        let at = message::due(index, flow.size, flow.rate_bps);
        if at >= window {
            return Ok(index);
        }
        tokio::time::sleep_until(start + at).await;
        message::write(&mut buf, index * flow.size as u64, wall_nanos(), &pattern);
        out.write_all(&buf).await.context("sending messages failed")?;
        index += 1;
    }
}

/// Reads `flow`'s messages until the end marker; checks each one.
pub async fn receive(
    input: &mut (impl AsyncRead + Unpin),
    flow: Flow,
    pattern: Pattern,
    window: Duration,
) -> anyhow::Result<FlowFigures> {
    let mut buf = vec![0u8; flow.size];
    let mut offset = 0u64;
    let mut window_end = None;
    let mut bytes = 0u64;
    let mut latencies = Vec::new();
    loop {
        input
            .read_exact(&mut buf[..HEADER])
            .await
            .context("the peer closed before the end of its messages")?;
        if buf[..HEADER] == END_MARKER {
            break;
        }
        input
            .read_exact(&mut buf[HEADER..])
            .await
            .context("the peer closed in the middle of a message")?;
        let arrived = wall_nanos();
        let sent = message::check(&buf, offset, flow.size, &pattern)?;
        offset += flow.size as u64;
        let end = *window_end.get_or_insert(sent.saturating_add(window.as_nanos() as u64));
        if arrived <= end {
            bytes += flow.size as u64;
            latencies.push(Duration::from_nanos(arrived.saturating_sub(sent)));
        }
    }
    Ok(flow_figures(flow.rate_bps, bytes, window, &mut latencies))
}

/// Reads the end marker of a peer that sends no messages.
pub async fn expect_end_marker(input: &mut (impl AsyncRead + Unpin)) -> anyhow::Result<()> {
    let mut head = [0u8; HEADER];
    input
        .read_exact(&mut head)
        .await
        .context("the peer closed before its report")?;
    if head != END_MARKER {
        bail!("the peer sent messages although none were asked for");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_of_messages_reads_back_and_damage_is_caught() {
        let flow = Flow {
            size: 32,
            rate_bps: 1_000_000,
        };
        let mut wire = Vec::new();
        let sent = send(&mut wire, flow, Pattern::new(5), Duration::from_millis(2))
            .await
            .unwrap();
        assert!(sent > 0);
        wire.extend_from_slice(&END_MARKER);
        let figures = receive(&mut &wire[..], flow, Pattern::new(5), Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(figures.messages, sent);
        wire[HEADER + 3] ^= 0x40;
        let err = receive(&mut &wire[..], flow, Pattern::new(5), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("differs"), "{err}");
    }
}
