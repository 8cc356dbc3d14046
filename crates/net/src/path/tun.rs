//! The routed path: a TUN device the kernel routes the endpoint's
//! addresses into. The device gets no address of its own; for each address
//! of ours the kernel gets a route `PREFIX dev NAME`, so packets for us
//! (from this host, or forwarded from elsewhere) come out of the device and
//! what we write into it is routed like any other packet.
//!
//! Routes are set with iproute2's `ip` (tun-rs's own address management
//! would pull in a second netlink stack); the device and its routes vanish
//! when the path is dropped.
//!
//! The device is opened with offload (a virtio-net header on each read and
//! write, as virtual machines use): the kernel hands us TCP data coalesced
//! (GRO) and tun-rs splits it back into MTU-sized packets; our packets of
//! one flow are coalesced into one write that the kernel segments (TSO).
//! Without that, every 1500-byte packet costs a system call and a trip
//! through the stack on its own.

use std::net::IpAddr;
use std::process::Command;

use tun_rs::{AsyncDevice, DeviceBuilder, GROTable, IDEAL_BATCH_SIZE, VIRTIO_NET_HDR_LEN};

use super::batch::{RecvBatch, SLOT_BYTES};
use super::{PacketPath, would_block};
use crate::error::NetError;

/// Room tun-rs asks of a buffer it coalesces into: the largest IP packet,
/// and twice the virtio-net header.
const COALESCED_BUFFER_BYTES: usize = u16::MAX as usize + 2 * VIRTIO_NET_HDR_LEN;

pub struct TunPath {
    device: AsyncDevice,
    name: String,
    local_addrs: Vec<IpAddr>,
    /// One read from the device: header and (perhaps coalesced) packet.
    raw: Vec<u8>,
    /// The packets of one read, split; `sizes` their lengths.
    split: Vec<Vec<u8>>,
    sizes: Vec<usize>,
    /// Our packets with room for the virtio-net header before each.
    outgoing: Vec<Vec<u8>>,
    gro: GROTable,
}

impl std::fmt::Debug for TunPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunPath")
            .field("name", &self.name)
            .field("local_addrs", &self.local_addrs)
            .finish()
    }
}

impl TunPath {
    /// Creates TUN device `name` with `mtu`, and routes each
    /// `(address, prefix length)` of ours into it.
    pub fn create(name: &str, addrs: &[(IpAddr, u8)], mtu: u16) -> Result<TunPath, NetError> {
        let device = DeviceBuilder::new()
            .name(name)
            .mtu(mtu)
            .offload(true)
            .build_async()
            .map_err(NetError::io(format!(
                "cannot create TUN device {name} (needs CAP_NET_ADMIN and /dev/net/tun)"
            )))?;
        let name = device.name().unwrap_or_else(|_| name.to_owned());
        for &(addr, prefix) in addrs {
            let max = if addr.is_ipv4() { 32 } else { 128 };
            if prefix > max {
                return Err(NetError::Command {
                    command: format!("route {addr}/{prefix}"),
                    message: format!("prefix length {prefix} is above {max}"),
                });
            }
            let network = match addr {
                IpAddr::V4(a) => IpAddr::V4(mask_v4(a, prefix).into()),
                IpAddr::V6(a) => IpAddr::V6(mask_v6(a, prefix).into()),
            };
            let family = if addr.is_ipv4() { "-4" } else { "-6" };
            run_ip(&[
                family,
                "route",
                "replace",
                &format!("{network}/{prefix}"),
                "dev",
                &name,
            ])?;
        }
        Ok(TunPath {
            device,
            name,
            local_addrs: addrs.iter().map(|&(addr, _)| addr).collect(),
            raw: vec![0; VIRTIO_NET_HDR_LEN + SLOT_BYTES],
            split: vec![vec![0; usize::from(mtu)]; IDEAL_BATCH_SIZE],
            sizes: vec![0; IDEAL_BATCH_SIZE],
            outgoing: Vec::new(),
            gro: GROTable::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn local_addrs(&self) -> &[IpAddr] {
        &self.local_addrs
    }

    fn append(&self, batch: &mut RecvBatch, count: usize) {
        for (packet, &size) in self.split.iter().zip(&self.sizes).take(count) {
            // Room for a whole read is checked before each read.
            batch.append(&packet[..size]);
        }
    }

    /// Reads what is already waiting while `batch` has room for a whole
    /// read.
    fn take_more(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        while batch.buf.len() - batch.used() >= SLOT_BYTES {
            match self
                .device
                .try_recv_multiple(&mut self.raw, &mut self.split, &mut self.sizes, 0)
            {
                Ok(count) => self.append(batch, count),
                Err(err) if would_block(&err) => break,
                Err(err) => return Err(NetError::io("TUN read failed")(err)),
            }
        }
        Ok(())
    }
}

fn mask_v4(addr: std::net::Ipv4Addr, prefix: u8) -> u32 {
    let bits = u32::from(addr);
    if prefix == 0 {
        0
    } else {
        bits & (u32::MAX << (32 - u32::from(prefix)))
    }
}

fn mask_v6(addr: std::net::Ipv6Addr, prefix: u8) -> u128 {
    let bits = u128::from(addr);
    if prefix == 0 {
        0
    } else {
        bits & (u128::MAX << (128 - u32::from(prefix)))
    }
}

/// Runs `ip ARGS`, turning a failure into an error that shows the command
/// and what `ip` said.
pub(crate) fn run_ip(args: &[&str]) -> Result<(), NetError> {
    let command = format!("ip {}", args.join(" "));
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NetError::Command {
            command: command.clone(),
            message: format!("cannot run ip (is iproute2 installed?): {e}"),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(NetError::Command {
            command,
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

impl PacketPath for TunPath {
    fn local_addrs(&self) -> Vec<IpAddr> {
        TunPath::local_addrs(self).to_vec()
    }

    /// Waits for a read, then takes it and any others already there.
    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        batch.clear();
        let count = self
            .device
            .recv_multiple(&mut self.raw, &mut self.split, &mut self.sizes, 0)
            .await
            .map_err(NetError::io("TUN read failed"))?;
        self.append(batch, count);
        self.take_more(batch)
    }

    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        batch.clear();
        self.take_more(batch)
    }

    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        if packets.is_empty() {
            return Ok(());
        }
        // tun-rs coalesces a run of one flow's segments into the buffer of
        // the first (into one TSO write), and only if that buffer already
        // has room for a whole coalesced packet: without the room every
        // segment would be a write, a trip through the kernel and a read at
        // the far end of its own.
        self.outgoing
            .resize_with(packets.len(), || Vec::with_capacity(COALESCED_BUFFER_BYTES));
        for (out, packet) in self.outgoing.iter_mut().zip(packets) {
            out.clear();
            out.resize(VIRTIO_NET_HDR_LEN, 0);
            out.extend_from_slice(packet);
        }
        // A packet the kernel cannot route is accepted and dropped by the
        // kernel (a loss the engine deals with); an error here means the
        // device itself is unusable.
        self.device
            .send_multiple(
                &mut self.gro,
                &mut self.outgoing[..packets.len()],
                VIRTIO_NET_HDR_LEN,
            )
            .await
            .map(|_| ())
            .map_err(NetError::io(format!("TUN write to {} failed", self.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_mask_the_host_bits() {
        assert_eq!(
            std::net::Ipv4Addr::from(mask_v4("10.9.1.2".parse().unwrap(), 16)),
            "10.9.0.0".parse::<std::net::Ipv4Addr>().unwrap()
        );
        assert_eq!(mask_v4("10.9.1.2".parse().unwrap(), 0), 0);
        assert_eq!(
            std::net::Ipv6Addr::from(mask_v6("fd00:9::2".parse().unwrap(), 64)),
            "fd00:9::".parse::<std::net::Ipv6Addr>().unwrap()
        );
    }
}
