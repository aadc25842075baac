//! A gRPC channel to one etcd member over any [`Dialer`]'s streams.
//!
//! tonic dials for itself only over real TCP; inside turmoil the stream
//! must come from the simulated network (and, for a paused client, be
//! frozen with it). So the channel takes its connections from a
//! [`Dialer`], lazily: it dials on its first request and dials again after
//! the connection breaks.

use crate::conn::Dialer;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// How long dialing a member may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);

/// A channel whose connections `dialer` makes.
pub fn channel<D: Dialer>(dialer: Arc<D>) -> Channel {
    let connector = tower::service_fn(move |_: Uri| {
        let dialer = dialer.clone();
        async move { dialer.dial().await.map(TokioIo::new) }
    });
    // The URI only names the authority gRPC sends; the dialer decides
    // where the bytes go.
    Endpoint::from_static("http://etcd")
        .connect_timeout(CONNECT_TIMEOUT)
        .connect_with_connector_lazy(connector)
}
