//! Time-sequence graphs from a capture: each data segment of the
//! transfer's data direction as a dot at (time since the first, offset of
//! its first byte from the initial sequence number), resent segments
//! apart, as Stevens drew them and tcptrace does. Reads the pcap a bench
//! run wrote (IPv4 or IPv6, TCP headers; other packets are skipped).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::net::IpAddr;
use std::path::Path;

use pcap_file::pcap::PcapReader;

use crate::report::svg::{Plot, Series, XAxis, XY};

/// Most dots a series of the graph draws: a long transfer is thinned to
/// this many, evenly (resent segments are kept first, they are few).
const MAX_DOTS: usize = 2500;

/// A capture's transfer, as its stack and world name it, and the limit
/// its link allows.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    pub name: String,
    pub capture: &'a Path,
    pub limit_bps: f64,
}

/// The time-sequence graph of some transfers of one point, each stack's
/// data segments and its resent ones, and the limit's slope; over four
/// times the time the transfer takes at the limit, so that a stack many
/// times slower does not squeeze the others into a corner.
pub fn graph(title: String, transfers: &[Transfer]) -> Result<Plot, String> {
    let captured: Vec<(&Transfer, Vec<Segment>)> = transfers
        .iter()
        .map(|t| segments(t.capture).map(|s| (t, s)))
        .collect::<Result<_, _>>()?;
    let bytes = captured
        .iter()
        .flat_map(|(_, segments)| segments.iter().map(|s| s.offset))
        .fold(0.0, f64::max);
    let limit = transfers.iter().map(|t| t.limit_bps).fold(0.0, f64::max);
    let at_limit = if limit > 0.0 { bytes * 8.0 / limit } else { 0.0 };
    let latest = captured
        .iter()
        .flat_map(|(_, segments)| segments.iter().map(|s| s.time))
        .fold(0.0, f64::max);
    let shown = if at_limit > 0.0 {
        latest.min(4.0 * at_limit)
    } else {
        latest
    };
    let mut series = Vec::new();
    for (transfer, segments) in &captured {
        for (resent, label) in [(false, "sent"), (true, "resent")] {
            let mine: Vec<XY> = segments
                .iter()
                .filter(|s| s.resent == resent && s.time <= shown)
                .map(|s| XY::at(s.time, s.offset))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let step = mine.len().div_ceil(MAX_DOTS);
            series.push(Series {
                name: format!("{} {label}", transfer.name),
                points: mine.into_iter().step_by(step).collect(),
                dots: true,
            });
        }
    }
    let slope = Series::line(
        "physical limit",
        vec![
            XY::at(0.0, 0.0),
            XY::at(at_limit.min(shown), limit / 8.0 * at_limit.min(shown)),
        ],
    );
    let title = if shown < latest {
        format!("{title} (first {shown:.0} s of {latest:.0} s)")
    } else {
        title
    };
    Ok(Plot {
        title,
        x_label: "time (s)".into(),
        y_label: "sequence offset (bytes)".into(),
        x_axis: XAxis::Linear,
        series,
        references: vec![slope],
    })
}

/// One data segment seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Seconds since the first packet of the capture.
    pub time: f64,
    /// Bytes from the initial sequence number to its first byte.
    pub offset: f64,
    /// Whether it sends bytes sent before.
    pub resent: bool,
}

type Flow = (IpAddr, u16, IpAddr, u16);

/// The data segments of the flow that carried the most data in the
/// capture at `path`, in the order the capture saw them.
pub fn segments(path: &Path) -> Result<Vec<Segment>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    segments_in(BufReader::new(file)).map_err(|e| format!("{}: {e}", path.display()))
}

/// The data segments of the flow that carried the most data in a pcap
/// capture read from `capture`; a capture that is not pcap, or cut short,
/// is an error naming what was wrong.
pub fn segments_in(capture: impl std::io::Read) -> Result<Vec<Segment>, String> {
    let mut reader = PcapReader::new(capture).map_err(|e| e.to_string())?;
    let fraction = match reader.header().ts_resolution {
        pcap_file::TsResolution::NanoSecond => 1e-9,
        pcap_file::TsResolution::MicroSecond => 1e-6,
    };
    // The simulator's captures begin at the IP header; a capture of an
    // Ethernet interface (the testbed's veths) has 14 bytes before it.
    let link_header = match reader.header().datalink {
        pcap_file::DataLink::ETHERNET => 14,
        _ => 0,
    };
    let mut first_time = None;
    let mut flows: HashMap<Flow, Vec<(f64, u32, u32)>> = HashMap::new();
    // pcap-file's checked reader refuses captures cut to a snapshot
    // length: read the raw records.
    while let Some(packet) = reader.next_raw_packet() {
        let packet = packet.map_err(|e| e.to_string())?;
        let time = f64::from(packet.ts_sec) + f64::from(packet.ts_frac) * fraction;
        let start = *first_time.get_or_insert(time);
        let (Some(ip), Some(length)) = (
            packet.data.get(link_header..),
            packet.orig_len.checked_sub(link_header as u32),
        ) else {
            continue;
        };
        if let Some((flow, seq, length)) = tcp_data(ip, length) {
            flows.entry(flow).or_default().push((time - start, seq, length));
        }
    }
    let Some(data) = flows
        .into_values()
        .max_by_key(|segments| segments.iter().map(|s| u64::from(s.2)).sum::<u64>())
    else {
        return Ok(Vec::new());
    };
    let initial = data[0].1;
    let mut highest: u64 = 0;
    Ok(data
        .into_iter()
        .map(|(time, seq, length)| {
            let offset = u64::from(seq.wrapping_sub(initial));
            let end = offset + u64::from(length);
            let resent = end <= highest;
            highest = highest.max(end);
            Segment {
                time,
                offset: offset as f64,
                resent,
            }
        })
        .collect())
}

/// A TCP segment's flow, sequence number and data length, if it carries
/// data; `length` is the packet's length on the wire (the capture may
/// have kept its headers only). A segment our stack's UDP path carries
/// (an IP packet alone in a datagram, perhaps with its 4-byte frame check
/// after it) is read inside its datagram.
fn tcp_data(packet: &[u8], length: u32) -> Option<(Flow, u32, u32)> {
    let mut ip = ip_payload(packet, length)?;
    if ip.protocol == UDP {
        let inner = ip.payload.get(UDP_HEADER..)?;
        let inner_length = ip.length.checked_sub(UDP_HEADER as u32)?;
        let declared = ip_length(inner)?;
        if declared != inner_length && declared + FRAME_CHECK != inner_length {
            return None;
        }
        ip = ip_payload(inner, declared)?;
    }
    if !matches!(ip.protocol, TCP | SCPS_TP) {
        return None;
    }
    let tcp = ip.payload;
    let field =
        |at: usize| -> Option<u16> { Some(u16::from_be_bytes(tcp.get(at..at + 2)?.try_into().ok()?)) };
    let seq = u32::from_be_bytes(tcp.get(4..8)?.try_into().ok()?);
    let tcp_header = usize::from(tcp.get(12)? >> 4) * 4;
    let data = (ip.length as usize).checked_sub(tcp_header)?;
    (data > 0).then_some((
        (ip.source, field(0)?, ip.destination, field(2)?),
        seq,
        data as u32,
    ))
}

const TCP: u8 = 6;
const UDP: u8 = 17;
/// SCPS-TP's own IP protocol number (the reference implementation's).
const SCPS_TP: u8 = 106;
const UDP_HEADER: usize = 8;
/// The CRC-32C our UDP path puts after the packet.
const FRAME_CHECK: u32 = 4;

/// What an IP packet carries: its addresses, the protocol, the payload as
/// captured and its length on the wire.
struct IpPayload<'a> {
    source: IpAddr,
    destination: IpAddr,
    protocol: u8,
    payload: &'a [u8],
    length: u32,
}

/// The payload of the IPv4 or IPv6 packet (no extension headers) that
/// begins `packet`, which was `length` bytes on the wire.
fn ip_payload(packet: &[u8], length: u32) -> Option<IpPayload<'_>> {
    let (source, destination, protocol, header) = match packet.first()? >> 4 {
        4 => {
            let ihl = usize::from(packet.first()? & 0x0f) * 4;
            if ihl < 20 {
                return None;
            }
            let address = |at: usize| -> Option<IpAddr> {
                let bytes: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::from(bytes))
            };
            (address(12)?, address(16)?, *packet.get(9)?, ihl)
        }
        6 => {
            let address = |at: usize| -> Option<IpAddr> {
                let bytes: [u8; 16] = packet.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::from(bytes))
            };
            (address(8)?, address(24)?, *packet.get(6)?, 40)
        }
        _ => return None,
    };
    Some(IpPayload {
        source,
        destination,
        protocol,
        payload: packet.get(header..)?,
        length: length.checked_sub(header as u32)?,
    })
}

/// The length an IP header at the start of `packet` gives its packet.
fn ip_length(packet: &[u8]) -> Option<u32> {
    let field = |at: usize| -> Option<u32> {
        Some(u32::from(u16::from_be_bytes(
            packet.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    match packet.first()? >> 4 {
        4 => field(2),
        6 => Some(field(4)? + 40),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 TCP segment with `data` bytes from `seq`, headers only.
    fn segment(seq: u32, data: u16) -> (Vec<u8>, u32) {
        let mut packet = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        packet.extend([0x13, 0x89, 0x13, 0x8a]);
        packet.extend(seq.to_be_bytes());
        packet.extend([0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0]);
        (packet, 40 + u32::from(data))
    }

    #[test]
    fn resent_segments_are_told_apart_across_sequence_wrap() {
        let path = std::env::temp_dir().join(format!("scps-bench-seq-{}.pcap", std::process::id()));
        let mut capture = scps_pcap_writer(&path);
        let start = u32::MAX - 1000;
        for (i, (seq, data)) in [
            (start, 1000u16),
            (start.wrapping_add(1000), 1000),
            (start, 1000),
            (start.wrapping_add(2000), 1000),
        ]
        .into_iter()
        .enumerate()
        {
            let (packet, length) = segment(seq, data);
            let header = pcap_file::pcap::PcapPacket::new(
                std::time::Duration::from_millis(10 * i as u64),
                length,
                &packet,
            );
            capture.write_packet(&header).unwrap();
        }
        drop(capture);
        let seen = segments(&path).unwrap();
        let offsets: Vec<(f64, bool)> = seen.iter().map(|s| (s.offset, s.resent)).collect();
        assert_eq!(
            offsets,
            [(0.0, false), (1000.0, false), (0.0, true), (2000.0, false)]
        );
        assert!((seen[3].time - 0.03).abs() < 1e-9);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn our_udp_path_s_segments_are_read_inside_their_datagrams() {
        let (inner, inner_length) = segment(7, 1000);
        let mut inner = inner;
        inner[2..4].copy_from_slice(&(inner_length as u16).to_be_bytes());
        for trailer in [0u32, FRAME_CHECK] {
            let outer_length = 20 + 8 + inner_length + trailer;
            let mut packet = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, UDP, 0, 0, 10, 1, 0, 1, 10, 2, 0, 2];
            packet[2..4].copy_from_slice(&(outer_length as u16).to_be_bytes());
            packet.extend([0x1c, 0x00, 0x1c, 0x00, 0, 0, 0, 0]);
            packet.extend(&inner);
            let (flow, seq, data) = tcp_data(&packet, outer_length).expect("a segment inside");
            assert_eq!((seq, data), (7, 1000));
            assert_eq!(
                flow.0,
                IpAddr::from([10, 0, 0, 1]),
                "the inner packet's addresses"
            );
            // A datagram whose payload is not one IP packet is not read.
            assert_eq!(tcp_data(&packet, outer_length + 1), None);
        }
    }

    fn scps_pcap_writer(path: &Path) -> pcap_file::pcap::PcapWriter<File> {
        let header = pcap_file::pcap::PcapHeader {
            datalink: pcap_file::DataLink::RAW,
            snaplen: 65535,
            ..Default::default()
        };
        pcap_file::pcap::PcapWriter::with_header(File::create(path).unwrap(), header).unwrap()
    }
}
