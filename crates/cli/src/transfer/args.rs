//! Options shared by `scps send` and `scps recv`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use scps_config::units::{Bytes, parse_duration};

use super::stack::StackOptions;

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Our stack on this TUN device (created, and removed on exit), routed
    /// by the kernel; needs --addr. Needs CAP_NET_ADMIN.
    #[arg(long, value_name = "NAME", group = "path")]
    pub tun: Option<String>,
    /// With --tun: an address of our stack and the prefix routed to the
    /// device, e.g. 10.9.0.2/24 or fd09::2/64 (repeatable).
    #[arg(long = "addr", value_name = "ADDRESS/PREFIX", value_parser = parse_prefix, requires = "tun")]
    pub addrs: Vec<(IpAddr, u8)>,
    /// The kernel's TCP instead of our stack, to measure it the same way.
    #[arg(long, group = "path")]
    pub tcp: bool,
    /// Write every packet of our stack to this pcap file (link type RAW).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Largest IP packet of ours, bytes (default 1500 on a TUN device; on
    /// UDP, what fits a 1500-byte outer packet).
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u16>,
    /// Send and receive buffer of our connections, e.g. 4MiB (default
    /// 256KiB).
    #[arg(long, value_name = "SIZE")]
    pub buffer: Option<Bytes>,
    /// Probe an idle connection after this long without a segment from the
    /// peer, every this long again, and give up after 3 unanswered probes
    /// (RFC 1122 4.2.3.6 keepalive, on either stack): a peer that vanished
    /// mid-transfer ends the test with an error instead of a wait forever.
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "15s")]
    pub keepalive: Duration,
    /// Our stack offers plain TCP only. By default it offers SCPS-TP (the
    /// capabilities option, SNACK) and speaks plain TCP with a peer that
    /// does not answer in kind.
    #[arg(long)]
    pub no_scps: bool,
    /// Our stack also offers SCPS header compression: once both SYNs set
    /// it, every later segment travels as IP protocol 105 with a compressed
    /// header.
    #[arg(long, conflicts_with = "no_scps")]
    pub header_compression: bool,
    /// One JSON object (the field names of `scps sim --json`) instead of
    /// text.
    #[arg(long)]
    pub json: bool,
}

impl CommonArgs {
    pub fn stack_options(&self, connect_timeout: Duration) -> StackOptions {
        StackOptions {
            pcap: self.pcap.clone(),
            mtu: self.mtu,
            buffer: self.buffer.map(|b| b.0),
            scps: !self.no_scps,
            header_compression: self.header_compression,
            keepalive: self.keepalive,
            connect_timeout,
        }
    }
}

pub fn parse_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, prefix) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?}: expected ADDRESS/PREFIX, such as 10.9.0.2/24 or fd09::2/64"))?;
    let addr: IpAddr = addr.parse().map_err(|e| format!("{addr:?}: {e}"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| format!("prefix length {prefix:?}: expected 0 to {max}"))?;
    Ok((addr, prefix))
}

pub fn parse_time(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_bad_ones_are_named() {
        assert_eq!(parse_prefix("10.9.0.2/24"), Ok(("10.9.0.2".parse().unwrap(), 24)));
        assert_eq!(parse_prefix("fd09::2/64"), Ok(("fd09::2".parse().unwrap(), 64)));
        assert!(parse_prefix("10.9.0.2").unwrap_err().contains("ADDRESS/PREFIX"));
        assert!(parse_prefix("10.9.0.2/33").unwrap_err().contains("0 to 32"));
        assert!(parse_prefix("10.9.0/24").is_err());
    }
}
