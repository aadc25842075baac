//! How a simulated client reaches a node: by name, through turmoil's
//! network, with a socket that stands still while the client is paused.

use crate::directory::Directory;
use crate::freeze::{Freeze, FrozenStream, LinkHolds};
use crate::host::Host;
use locks::{BoxFuture, Dialer};
use std::sync::Arc;

/// The port every simulated node listens on.
pub const REDIS_PORT: u16 = 6379;

/// Dials a node by name (`redis-0`, `store`, or `master`, which failover
/// re-points), as a client process paused by `freeze`.
pub struct SimDialer {
    host: Host,
    directory: Arc<Directory>,
    freeze: Arc<Freeze>,
    links: Option<Arc<LinkHolds>>,
}

impl SimDialer {
    /// A dialer for `host`, resolving aliases such as `master` through
    /// `directory` at every dial.
    pub fn new(host: Host, directory: Arc<Directory>, freeze: Arc<Freeze>) -> Self {
        SimDialer {
            host,
            directory,
            freeze,
            links: None,
        }
    }

    /// The same, with the one-way holds of the client's links applied.
    pub fn with_links(mut self, links: Arc<LinkHolds>) -> Self {
        self.links = Some(links);
        self
    }
}

impl Dialer for SimDialer {
    type Stream = FrozenStream<turmoil::net::TcpStream>;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<Self::Stream>> {
        let resolved = self.directory.resolve(self.host);
        let link = self
            .links
            .as_ref()
            .map(|l| l.gates(resolved))
            .unwrap_or_default();
        let host = resolved.to_string();
        let freeze = self.freeze.clone();
        Box::pin(async move {
            freeze.wait().await;
            let stream = turmoil::net::TcpStream::connect((host.as_str(), REDIS_PORT)).await?;
            Ok(FrozenStream::new(stream, freeze, link))
        })
    }
}
