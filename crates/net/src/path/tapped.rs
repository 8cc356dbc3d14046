//! A tap as a layer around any path (smoltcp's device-middleware idea):
//! every packet the path hands the node and every packet the node hands
//! the path is shown to the tap (`scps_node::Tap`; a capture for
//! `--pcap` is `scps_pcap::PcapTap`, the simulator's own), and the driver
//! knows nothing of it. The first error stops the tap, the connections go
//! on, and [`PacketPath::finish`] reports it.

use std::net::{IpAddr, SocketAddr};

use scps_node::{Crossing, Tap};
use scps_proto::{FourTuple, PathCapacity};

use super::{PacketPath, RecvBatch};
use crate::clock::Clock;
use crate::error::NetError;

pub(crate) struct Tapped<P> {
    inner: P,
    tap: Option<Box<dyn Tap>>,
    /// The driver's clock, for the instants the tap is given.
    clock: Clock,
}

impl<P> Tapped<P> {
    pub(crate) fn new(inner: P, tap: Box<dyn Tap>, clock: Clock) -> Tapped<P> {
        Tapped {
            inner,
            tap: Some(tap),
            clock,
        }
    }

    fn show<'a>(&mut self, crossing: Crossing, packets: impl Iterator<Item = &'a [u8]>) {
        if let Some(tap) = &mut self.tap {
            let now = self.clock.now();
            packets.for_each(|packet| tap.packet(now, crossing, packet));
        }
    }

    fn finish_tap(&mut self) -> Result<(), NetError> {
        self.tap
            .take()
            .map_or(Ok(()), |tap| tap.finish())
            .map_err(NetError::Tap)
    }
}

impl<P: PacketPath> PacketPath for Tapped<P> {
    fn local_addrs(&self) -> Vec<IpAddr> {
        self.inner.local_addrs()
    }

    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        self.inner.recv(batch).await?;
        self.show(Crossing::Arriving, batch.packets().map(|(packet, _)| packet));
        Ok(())
    }

    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        self.inner.try_recv(batch)?;
        self.show(Crossing::Arriving, batch.packets().map(|(packet, _)| packet));
        Ok(())
    }

    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        self.show(Crossing::Leaving, packets.iter().map(Vec::as_slice));
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

    fn capacity(&self) -> Option<PathCapacity> {
        self.inner.capacity()
    }

    fn finish(&mut self) -> Result<(), NetError> {
        let path = self.inner.finish();
        let tap = self.finish_tap();
        path.and(tap)
    }
}
