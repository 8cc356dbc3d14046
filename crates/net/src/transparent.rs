//! Transparent addressing on a real path (docs/gateway.md): a
//! listener that answers as whichever address a client dialled, within
//! the prefixes it is given. With [`Net::connect_from`] it is what a
//! transparent gateway's link side needs; the kernel's routes (or policy
//! routing) steer those prefixes into the endpoint's path.

use std::sync::Arc;

use scps_proto::{IpPrefix, TransparentListenerId};

use crate::error::NetError;
use crate::net::Net;
use crate::shared::Shared;
use crate::stream::{Stream, accept_next};

impl Net {
    /// Accepts connections to any address in `prefixes` on `port` (every
    /// port for `None`), each answered as the address its SYN was sent to:
    /// [`Stream::local_addr`] is that address. The prefixes must lie within
    /// those the endpoint may act as ([`scps_proto::EndpointConfig::transparent`]).
    pub fn listen_transparent(
        &self,
        prefixes: &[IpPrefix],
        port: Option<u16>,
    ) -> Result<TransparentListener, NetError> {
        let id = self
            .shared()
            .lock()
            .endpoint
            .listen_transparent(prefixes, port, None)?;
        Ok(TransparentListener {
            shared: self.shared().clone(),
            id,
            prefixes: prefixes.to_vec(),
            port,
        })
    }
}

/// Connections made to any address of some prefixes; see
/// [`Net::listen_transparent`]. Dropping it stops listening; connections
/// already accepted go on.
#[derive(Debug)]
pub struct TransparentListener {
    shared: Arc<Shared>,
    id: TransparentListenerId,
    prefixes: Vec<IpPrefix>,
    port: Option<u16>,
}

impl TransparentListener {
    pub fn prefixes(&self) -> &[IpPrefix] {
        &self.prefixes
    }

    /// The port it listens on, or `None` for every port.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Lets `chooser` pick the configuration of each connection taken
    /// from now on (a gateway's routes).
    pub fn choose_configs(&self, chooser: Arc<dyn scps_proto::ConfigChooser>) {
        self.shared.lock().endpoint.choose_configs(self.id, chooser);
    }

    /// The next established connection; its local address is the one the
    /// client dialled.
    pub async fn accept(&self) -> Result<Stream, NetError> {
        let id = self.id;
        accept_next(&self.shared, |endpoint| {
            endpoint.accept_transparent(id).map(|(handle, _)| handle)
        })
        .await
    }
}

impl Drop for TransparentListener {
    fn drop(&mut self) {
        self.shared.lock().endpoint.unlisten_transparent(self.id);
    }
}
