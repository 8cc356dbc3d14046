//! Packet capture as a layer around any path (smoltcp's device-middleware
//! idea): every packet the path hands the engine and every packet the
//! engine hands the path is written to a pcap file, and the driver knows
//! nothing of it. The first write error stops the capture, the
//! connections go on, and [`PacketPath::finish`] reports it.

use std::net::{IpAddr, SocketAddr};

use scps_pcap::{Capture, CaptureError};
use scps_proto::FourTuple;

use super::{PacketPath, RecvBatch};
use crate::clock::Clock;
use crate::error::NetError;

pub(crate) struct Captured<P> {
    inner: P,
    capture: Option<Capture>,
    /// Stamps the packets with the driver's wall clock.
    clock: Clock,
    error: Option<CaptureError>,
}

impl<P> Captured<P> {
    pub(crate) fn new(inner: P, capture: Capture, clock: Clock) -> Captured<P> {
        Captured {
            inner,
            capture: Some(capture),
            clock,
            error: None,
        }
    }

    fn record<'a>(&mut self, packets: impl Iterator<Item = &'a [u8]>) {
        let Some(capture) = &mut self.capture else {
            return;
        };
        let wall = self.clock.wall(self.clock.now());
        if let Some(err) = packets.map(|p| capture.record(wall, p)).find_map(Result::err) {
            self.error.get_or_insert(err);
            self.capture = None;
        }
    }
}

impl<P: PacketPath> PacketPath for Captured<P> {
    fn local_addrs(&self) -> Vec<IpAddr> {
        self.inner.local_addrs()
    }

    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        self.inner.recv(batch).await?;
        self.record(batch.packets().map(|(packet, _)| packet));
        Ok(())
    }

    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        self.inner.try_recv(batch)?;
        self.record(batch.packets().map(|(packet, _)| packet));
        Ok(())
    }

    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        self.record(packets.iter().map(Vec::as_slice));
        self.inner.send(packets).await
    }

    fn heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: impl Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        self.inner.heard(packet, source, is_connection, answered);
    }

    fn forget_closed(&mut self, is_connection: impl Fn(&FourTuple) -> bool) {
        self.inner.forget_closed(is_connection);
    }

    fn take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        self.inner.take_unreachable()
    }

    fn take_damaged(&mut self) -> u64 {
        self.inner.take_damaged()
    }

    fn peers_held(&self) -> usize {
        self.inner.peers_held()
    }

    fn unroutable(&self) -> u64 {
        self.inner.unroutable()
    }

    fn finish(&mut self) -> Result<(), NetError> {
        self.inner.finish()?;
        let written = self.capture.take().map(Capture::finish).transpose();
        if let Some(err) = self.error.take() {
            return Err(err.into());
        }
        written?;
        Ok(())
    }
}
