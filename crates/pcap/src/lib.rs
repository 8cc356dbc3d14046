//! Packet captures in the classic pcap format with link type RAW (packets
//! begin at the IP header) and nanosecond timestamps, so tshark and
//! Wireshark read them. The simulator stamps packets with virtual time,
//! the real drivers with the wall clock; this crate only writes.
//!
//! [`PcapTap`] is the capture as a tap (`scps_node::Tap`): the simulator
//! and the real drivers put the same one at an interface.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use scps_node::{Crossing, Instant, Tap, TapError};

#[derive(Debug, thiserror::Error)]
#[error("cannot write capture {path}: {message}")]
pub struct CaptureError {
    pub path: PathBuf,
    pub message: String,
}

pub struct Capture {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
    /// Bytes of each packet kept; the rest is counted, not written.
    snaplen: usize,
}

/// The pcap header's snapshot length for whole packets.
pub const WHOLE_PACKETS: u32 = 65535;

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").field("path", &self.path).finish()
    }
}

impl Capture {
    pub fn create(path: &Path) -> Result<Capture, CaptureError> {
        Capture::create_with_snaplen(path, WHOLE_PACKETS)
    }

    /// A capture that keeps the first `snaplen` bytes of each packet
    /// (its headers, for a time-sequence graph of a long transfer).
    pub fn create_with_snaplen(path: &Path, snaplen: u32) -> Result<Capture, CaptureError> {
        let error = |message: String| CaptureError {
            path: path.to_owned(),
            message,
        };
        let file = File::create(path).map_err(|e| error(e.to_string()))?;
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            snaplen,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| error(describe(e)))?;
        Ok(Capture {
            path: path.to_owned(),
            writer,
            snaplen: snaplen as usize,
        })
    }

    /// Writes out everything buffered; errors that a drop would swallow are
    /// reported here.
    pub fn finish(self) -> Result<(), CaptureError> {
        use std::io::Write;
        let path = self.path;
        self.writer.into_writer().flush().map_err(|e| CaptureError {
            path,
            message: e.to_string(),
        })
    }

    /// Records `packet` with `timestamp` (since the Unix epoch for a real
    /// capture, since the start of a run for a simulated one).
    pub fn record(&mut self, timestamp: Duration, packet: &[u8]) -> Result<(), CaptureError> {
        let len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        let kept = &packet[..packet.len().min(self.snaplen)];
        self.writer
            .write_packet(&PcapPacket::new(timestamp, len, kept))
            .map(|_| ())
            .map_err(|e| CaptureError {
                path: self.path.clone(),
                message: describe(e),
            })
    }
}

/// What went wrong, in the operating system's words for an I/O error
/// (pcap-file's own message for one is only "Error reading bytes", even
/// when writing).
fn describe(error: pcap_file::PcapError) -> String {
    match error {
        pcap_file::PcapError::IoError(io) => io.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_snapshot_keeps_the_headers_and_the_original_length() {
        let path = std::env::temp_dir().join(format!("scps-pcap-snaplen-{}.pcap", std::process::id()));
        let mut capture = Capture::create_with_snaplen(&path, 64).unwrap();
        capture.record(Duration::from_millis(5), &[7; 1500]).unwrap();
        capture.finish().unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.header().snaplen, 64);
        // pcap-file's own check refuses an original length beyond the
        // snapshot length (tshark reads it): read the raw record.
        let packet = reader.next_raw_packet().unwrap().unwrap();
        assert_eq!((packet.data.len(), packet.orig_len), (64, 1500));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_full_disk_is_reported_as_such() {
        let mut capture = Capture::create(Path::new("/dev/full")).unwrap();
        // Larger than the buffer, so the write reaches the device.
        let error = capture.record(Duration::ZERO, &[0; 60_000]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot write capture /dev/full: No space left on device (os error 28)"
        );
    }
}

/// A capture of both ways at one interface, as a tap.
#[derive(Debug)]
pub struct PcapTap {
    /// `None` once writing failed: the rest is not recorded.
    capture: Option<Capture>,
    error: Option<CaptureError>,
    /// Added to the driver's instants: zero in the simulator (virtual time
    /// since the start of the run), the wall-clock time at which a real
    /// driver's clock started (so its captures line up with others).
    epoch: Duration,
}

impl PcapTap {
    pub fn create(path: &Path) -> Result<PcapTap, CaptureError> {
        PcapTap::create_with_snaplen(path, WHOLE_PACKETS)
    }

    /// A tap that keeps the first `snaplen` bytes of each packet.
    pub fn create_with_snaplen(path: &Path, snaplen: u32) -> Result<PcapTap, CaptureError> {
        Ok(PcapTap {
            capture: Some(Capture::create_with_snaplen(path, snaplen)?),
            error: None,
            epoch: Duration::ZERO,
        })
    }

    /// Stamps packets `epoch` later than the driver's instants.
    pub fn with_epoch(mut self, epoch: Duration) -> PcapTap {
        self.epoch = epoch;
        self
    }
}

impl Tap for PcapTap {
    fn packet(&mut self, now: Instant, _crossing: Crossing, packet: &[u8]) {
        if let Some(capture) = &mut self.capture
            && let Err(error) = capture.record(self.epoch + now.as_duration(), packet)
        {
            self.error = Some(error);
            self.capture = None;
        }
    }

    fn finish(self: Box<Self>) -> Result<(), TapError> {
        if let Some(error) = self.error {
            return Err(error.into());
        }
        self.capture.map_or(Ok(()), Capture::finish).map_err(Into::into)
    }
}
