//! Paths of different kinds side by side: [`PacketPath`] has async
//! methods, so it cannot be a trait object; [`DynPath`] is the same
//! interface with boxed futures, implemented for every path, and a
//! [`BoxedPath`] is a path again. A node hosted over a TUN device and a
//! UDP channel holds both as `BoxedPath`s.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

use scps_proto::{FourTuple, PathCapacity};

use super::{PacketPath, RecvBatch};
use crate::error::NetError;

/// A path of any kind; see [`DynPath`].
pub type BoxedPath = Box<dyn DynPath>;

type PathFuture<'a> = Pin<Box<dyn Future<Output = Result<(), NetError>> + Send + 'a>>;

/// [`PacketPath`] as a trait object (implemented for every path; use it
/// through [`BoxedPath`], itself a `PacketPath`).
pub trait DynPath: Send + 'static {
    fn dyn_local_addrs(&self) -> Vec<IpAddr>;
    fn dyn_recv<'a>(&'a mut self, batch: &'a mut RecvBatch) -> PathFuture<'a>;
    fn dyn_try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError>;
    fn dyn_send<'a>(&'a mut self, packets: &'a [Vec<u8>]) -> PathFuture<'a>;
    fn dyn_heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: &dyn Fn(&FourTuple) -> bool,
        answered: bool,
    );
    fn dyn_forget_closed(&mut self, is_connection: &dyn Fn(&FourTuple) -> bool);
    fn dyn_take_unreachable(&mut self) -> Vec<Option<IpAddr>>;
    fn dyn_take_damaged(&mut self) -> u64;
    fn dyn_peers_held(&self) -> usize;
    fn dyn_unroutable(&self) -> u64;
    fn dyn_capacity(&self) -> Option<PathCapacity>;
    fn dyn_finish(&mut self) -> Result<(), NetError>;
}

impl<P: PacketPath> DynPath for P {
    fn dyn_local_addrs(&self) -> Vec<IpAddr> {
        self.local_addrs()
    }
    fn dyn_recv<'a>(&'a mut self, batch: &'a mut RecvBatch) -> PathFuture<'a> {
        Box::pin(self.recv(batch))
    }
    fn dyn_try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        self.try_recv(batch)
    }
    fn dyn_send<'a>(&'a mut self, packets: &'a [Vec<u8>]) -> PathFuture<'a> {
        Box::pin(self.send(packets))
    }
    fn dyn_heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: &dyn Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        self.heard(packet, source, is_connection, answered);
    }
    fn dyn_forget_closed(&mut self, is_connection: &dyn Fn(&FourTuple) -> bool) {
        self.forget_closed(is_connection);
    }
    fn dyn_take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        self.take_unreachable()
    }
    fn dyn_take_damaged(&mut self) -> u64 {
        self.take_damaged()
    }
    fn dyn_peers_held(&self) -> usize {
        self.peers_held()
    }
    fn dyn_unroutable(&self) -> u64 {
        self.unroutable()
    }
    fn dyn_capacity(&self) -> Option<PathCapacity> {
        self.capacity()
    }
    fn dyn_finish(&mut self) -> Result<(), NetError> {
        self.finish()
    }
}

impl PacketPath for BoxedPath {
    fn local_addrs(&self) -> Vec<IpAddr> {
        (**self).dyn_local_addrs()
    }
    async fn recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        (**self).dyn_recv(batch).await
    }
    fn try_recv(&mut self, batch: &mut RecvBatch) -> Result<(), NetError> {
        (**self).dyn_try_recv(batch)
    }
    async fn send(&mut self, packets: &[Vec<u8>]) -> Result<(), NetError> {
        (**self).dyn_send(packets).await
    }
    fn heard(
        &mut self,
        packet: &[u8],
        source: SocketAddr,
        is_connection: impl Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        (**self).dyn_heard(packet, source, &is_connection, answered);
    }
    fn forget_closed(&mut self, is_connection: impl Fn(&FourTuple) -> bool) {
        (**self).dyn_forget_closed(&is_connection);
    }
    fn take_unreachable(&mut self) -> Vec<Option<IpAddr>> {
        (**self).dyn_take_unreachable()
    }
    fn take_damaged(&mut self) -> u64 {
        (**self).dyn_take_damaged()
    }
    fn peers_held(&self) -> usize {
        (**self).dyn_peers_held()
    }
    fn unroutable(&self) -> u64 {
        (**self).dyn_unroutable()
    }
    fn capacity(&self) -> Option<PathCapacity> {
        (**self).dyn_capacity()
    }
    fn finish(&mut self) -> Result<(), NetError> {
        (**self).dyn_finish()
    }
}
