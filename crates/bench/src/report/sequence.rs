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
use scps_node::ip_header::ip_length;

use crate::report::svg::{Kind, Plot, Series, XAxis, XY};

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

/// The colours (palette indices) of the sent and the resent segments:
/// blue and vermilion.
const SENT_STYLE: usize = 0;
const RESENT_STYLE: usize = 3;

/// The time-sequence graph of one transfer: its data segments, its
/// resent ones apart, and the limit's slope, on axes fitted to the
/// capture (to its last data segment's time and its highest sequence
/// offset); a capture with no data is an error saying so.
pub fn graph(title: String, transfer: &Transfer) -> Result<Plot, String> {
    let segments = segments(transfer.capture)?;
    if segments.is_empty() {
        return Err(format!(
            "{}: the capture holds no data segment",
            transfer.capture.display()
        ));
    }
    Ok(graph_of(title, transfer, &segments))
}

/// The graph of `segments`, the data of `transfer`.
fn graph_of(title: String, transfer: &Transfer, segments: &[Segment]) -> Plot {
    let mut plot = Plot::new(
        Kind::Lines,
        title,
        "time (s)",
        "sequence offset (bytes)",
        XAxis::Linear,
    );
    for (resent, label, style) in [(false, "sent", SENT_STYLE), (true, "resent", RESENT_STYLE)] {
        let mine: Vec<XY> = segments
            .iter()
            .filter(|s| s.resent == resent)
            .map(|s| XY::at(s.time, s.offset))
            .collect();
        let Some(&last) = mine.last() else {
            continue;
        };
        let step = mine.len().div_ceil(MAX_DOTS);
        let mut points: Vec<XY> = mine.into_iter().step_by(step).collect();
        // The last is kept whatever the thinning: the axis ends at it.
        if points.last() != Some(&last) {
            points.push(last);
        }
        plot.series.push(Series {
            name: format!("{} {label}", transfer.name),
            points,
            dots: true,
            style: Some(style),
        });
    }
    let highest = segments.iter().map(|s| s.offset).fold(0.0, f64::max);
    let (x_end, _) = plot.x_fit();
    if transfer.limit_bps > 0.0 {
        // The slope of the limit: the highest offset reached at it, or
        // as far as the axis goes.
        let at_limit = (highest * 8.0 / transfer.limit_bps).min(x_end);
        plot.references.push(Series::line(
            "physical limit",
            vec![
                XY::at(0.0, 0.0),
                XY::at(at_limit, transfer.limit_bps / 8.0 * at_limit),
            ],
        ));
    }
    plot
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
        let declared = u32::try_from(ip_length(inner)?).ok()?;
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

    #[test]
    fn a_graph_s_axes_are_fitted_to_its_capture() {
        // 10 MB sent in 23.4 s, a segment resent at 12 s.
        let mut segments: Vec<Segment> = (0..=1000)
            .map(|i| Segment {
                time: 0.6 + 22.8 * f64::from(i) / 1000.0,
                offset: 10_000.0 * f64::from(i),
                resent: false,
            })
            .collect();
        segments.push(Segment {
            time: 12.0,
            offset: 40_000.0,
            resent: true,
        });
        let path = Path::new("unused.pcap");
        let transfer = Transfer {
            name: "linux-cubic (testbed)".into(),
            capture: path,
            limit_bps: 6.85e6,
        };
        let plot = graph_of("t".into(), &transfer, &segments);
        assert_eq!(plot.x_fit(), (25.0, 5.0), "to 25 s, the tick after 23.4 s");
        assert_eq!(plot.y_fit(), (1e7, 2e6), "to the highest offset, 10 MB");
        let names: Vec<&str> = plot.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["linux-cubic (testbed) sent", "linux-cubic (testbed) resent"]
        );
        let limit = &plot.references[0].points;
        assert!((limit[1].x - 1e7 * 8.0 / 6.85e6).abs() < 1e-9, "{limit:?}");
        let svg = plot.svg();
        let x_ticks = svg.split(r#"class="ticks x-ticks""#).nth(1).unwrap();
        let x_ticks = &x_ticks[..x_ticks.find("</g>").unwrap()];
        assert!(x_ticks.ends_with(">25</text>"), "{x_ticks}");
        assert!(!x_ticks.contains(">30</text>") && !x_ticks.contains(">50</text>"));
    }

    #[test]
    fn thinning_keeps_the_last_segment() {
        let segments: Vec<Segment> = (0..(3 * MAX_DOTS + 1))
            .map(|i| Segment {
                time: i as f64 / 100.0,
                offset: 1000.0 * i as f64,
                resent: false,
            })
            .collect();
        let transfer = Transfer {
            name: "x".into(),
            capture: Path::new("unused.pcap"),
            limit_bps: 0.0,
        };
        let plot = graph_of("t".into(), &transfer, &segments);
        let points = &plot.series[0].points;
        assert!(points.len() <= MAX_DOTS + 1, "{}", points.len());
        assert_eq!(points.last().unwrap().x, segments.last().unwrap().time);
        assert!(plot.references.is_empty(), "no limit known, no slope");
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
