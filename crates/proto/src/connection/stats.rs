//! Per-connection statistics, as the application and reports see them.

use std::time::Duration;

use super::State;

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionStats {
    pub state: State,
    /// Bytes the application handed to the connection.
    pub bytes_written: u64,
    /// Data bytes sent for the first time.
    pub bytes_sent: u64,
    /// Data bytes sent again.
    pub bytes_retransmitted: u64,
    /// Data bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Data bytes received in order (readable or read).
    pub bytes_received: u64,
    /// Data bytes the application read.
    pub bytes_read: u64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub segments_received: u64,
    /// Segments refused by the acceptability tests of RFC 9293 3.10.7.4
    /// (outside the window, PAWS, unacceptable ACK).
    pub segments_rejected: u64,
    /// Answers to rejected segments not sent, to stop an ACK loop: one per
    /// 500 ms to segments without data, within the endpoint's budget.
    pub answers_suppressed: u64,
    /// Fast recoveries begun (RFC 5681 3.2, RFC 6675).
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Retransmissions found lost because later segments arrived.
    pub lost_retransmissions: u64,
    /// Retransmissions found needless: the original arrived after all,
    /// late (Eifel detection with timestamps, RFC 3522).
    pub spurious_retransmissions: u64,
    /// The duplicate-ACK threshold in force: the configured one, raised by
    /// the reordering spurious retransmissions showed.
    pub dup_threshold: u32,
    /// How long a hole waits before a SNACK names it: the configured
    /// delay, stretched to the reordering this end has seen.
    pub snack_delay: Duration,
    /// SNACK options sent, naming holes in what we received.
    pub snacks_sent: u64,
    /// Segments marked for retransmission by the peer's SNACKs.
    pub snacked_segments: u64,
    /// Holes we named twice in vain and left to duplicate ACKs.
    pub snack_fallbacks: u64,
    /// Corruption-experienced options sent and received.
    pub corruption_reports_sent: u64,
    pub corruption_reports_received: u64,
    /// Link outages entered (signalled or detected) and probes sent in them.
    pub outages: u64,
    pub outage_probes: u64,
    pub srtt: Option<Duration>,
    pub rttvar: Duration,
    pub rto: Duration,
    pub min_rtt: Option<Duration>,
    /// Congestion window and slow-start threshold, bytes.
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Bytes believed in flight (RFC 6675 pipe).
    pub pipe: u64,
    /// The route's rate the connection paces within now, bit/s, if it has
    /// one; for a route whose rate is `auto`, the rate its path was last
    /// measured to carry too.
    pub pacing_rate_bps: Option<u64>,
    pub path_rate_bps: Option<u64>,
    /// The peer's window, bytes.
    pub send_window: u64,
    /// The window we last advertised, bytes.
    pub receive_window: u64,
    /// Bytes the receive buffer may hold: `recv_buffer`, or what
    /// autotuning (`recv_buffer_auto`) has grown it to.
    pub receive_buffer: u64,
    /// Maximum payload per segment we send: the MSS less the timestamps
    /// option, or with header compression what a packet of the path's size
    /// holds under a compressed data header (1464 bytes with timestamps on
    /// a 1500-byte IPv4 path).
    pub smss: u64,
    /// Payload of a full data segment now: `smss`, or less as the adaptive
    /// segment size chose (`mss_adapt`).
    pub segment_size: u64,
    /// In-order segments per ACK we send: `ack_every`, or what the adaptive
    /// policy last chose.
    pub ack_every: u32,
    pub sack: bool,
    pub timestamps: bool,
    /// SCPS-TP capabilities were exchanged; SNACK is in force.
    pub scps: bool,
    pub snack: bool,
    /// Both SYNs set the header compression bit: segments after them
    /// travel as IP protocol 105.
    pub header_compression: bool,
    /// Segments sent and received with compressed headers.
    pub compressed_segments_sent: u64,
    pub compressed_segments_received: u64,
    /// Compressed segments for this connection dropped because they could
    /// not be parsed or reconstructed (the endpoint's drop counters say why).
    pub decompression_failures: u64,
    /// Window scale shifts: the peer's (applied to its windows) and ours.
    pub send_window_shift: u8,
    pub receive_window_shift: u8,
}
