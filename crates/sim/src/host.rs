//! A host: one endpoint of the engine on its one interface, and the
//! applications that use it. As a node it is the endpoint, with the
//! applications polled whenever anything happens to it.

use scps_node::{InterfaceId, Node};
use scps_proto::Endpoint;
use scps_proto::time::Instant;

use crate::world::App;

pub struct Host {
    endpoint: Endpoint,
    apps: Vec<Box<dyn App>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("endpoint", &self.endpoint)
            .field("apps", &self.apps.len())
            .finish()
    }
}

impl Host {
    pub fn new(endpoint: Endpoint) -> Host {
        Host {
            endpoint,
            apps: Vec::new(),
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    pub fn add_app(&mut self, app: Box<dyn App>) {
        self.apps.push(app);
    }
}

impl Node for Host {
    fn interface_count(&self) -> usize {
        self.endpoint.interface_count()
    }

    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]) {
        Node::handle_packet(&mut self.endpoint, now, interface, packet);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        Node::poll_transmit(&mut self.endpoint, now, buf)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.apps
            .iter()
            .filter_map(|app| app.next_wake())
            .chain(self.endpoint.poll_timeout())
            .min()
    }

    /// A driver calls this after every packet it hands in and at every
    /// wake-up, so the applications see every change of their
    /// connections here.
    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint.handle_timeout(now);
        for app in &mut self.apps {
            app.poll(now, &mut self.endpoint);
        }
        // Applications watch connection state; the event queue is for
        // drivers that sleep on it, so it is emptied here.
        while self.endpoint.poll_event().is_some() {}
    }
}
