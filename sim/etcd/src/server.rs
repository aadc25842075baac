//! Serving a member: the gRPC server on a real TCP listener or on
//! turmoil's simulated network, and the loop that revokes expired leases.

use crate::lease::REVOKE_CHECK_MS;
use crate::lock::Recheck;
use crate::member::Member;
use crate::pb::etcdserverpb::cluster_server::ClusterServer;
use crate::pb::etcdserverpb::kv_server::KvServer;
use crate::pb::etcdserverpb::lease_server::LeaseServer;
use crate::pb::etcdserverpb::maintenance_server::MaintenanceServer;
use crate::pb::etcdserverpb::watch_server::WatchServer;
use crate::pb::v3lockpb::lock_server::LockServer;
use crate::service::Services;
use std::time::Duration;
use tonic::transport::Server;
use tonic::transport::server::Router;

/// The port etcd serves clients on.
pub const CLIENT_PORT: u16 = 2379;

fn router(services: Services) -> Router {
    Server::builder()
        .add_service(KvServer::new(services.clone()))
        .add_service(WatchServer::new(services.clone()))
        .add_service(LeaseServer::new(services.clone()))
        .add_service(ClusterServer::new(services.clone()))
        .add_service(MaintenanceServer::new(services.clone()))
        .add_service(LockServer::new(services))
}

/// Revokes expired leases every [`REVOKE_CHECK_MS`], for as long as the
/// member runs.
pub async fn revoke_loop(member: Member) {
    loop {
        tokio::time::sleep(Duration::from_millis(REVOKE_CHECK_MS)).await;
        member.revoke_expired();
    }
}

/// Serves `member` on a real TCP listener until the listener fails.
pub async fn serve_tcp(
    member: Member,
    listener: tokio::net::TcpListener,
    recheck: Recheck,
) -> Result<(), tonic::transport::Error> {
    let url = match listener.local_addr() {
        Ok(a) => format!("http://{a}"),
        Err(_) => String::new(),
    };
    let revoker = tokio::spawn(revoke_loop(member.clone()));
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let result = router(Services::new(member, url, recheck))
        .serve_with_incoming(incoming)
        .await;
    revoker.abort();
    result
}
