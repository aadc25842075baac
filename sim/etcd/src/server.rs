//! Serving a member: the gRPC server on a real TCP listener or on
//! turmoil's simulated network, and the loop that revokes expired leases.

use crate::lease::REVOKE_CHECK_MS;
use crate::lock::Recheck;
use crate::member::Member;
use crate::service::Services;
use etcdproto::etcdserverpb::cluster_server::ClusterServer;
use etcdproto::etcdserverpb::kv_server::KvServer;
use etcdproto::etcdserverpb::lease_server::LeaseServer;
use etcdproto::etcdserverpb::maintenance_server::MaintenanceServer;
use etcdproto::etcdserverpb::watch_server::WatchServer;
use etcdproto::v3lockpb::lock_server::LockServer;
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

/// A turmoil TCP stream as tonic's server wants it.
struct SimStream(turmoil::net::TcpStream);

impl tonic::transport::server::Connected for SimStream {
    type ConnectInfo = ();

    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl tokio::io::AsyncRead for SimStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for SimStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// Serves `member` on turmoil's network at `port` of the current host: a
/// turmoil host's body. The member lives outside the host, so it survives
/// the host's crash with whatever it had committed (etcd fsyncs every
/// write before answering).
pub async fn serve_sim(member: Member, port: u16, recheck: Recheck) -> turmoil::Result {
    // A member that (re)starts becomes leader: like etcd's lessor on
    // promotion, it gives every lease its TTL and 1 s more, since it
    // cannot know how long the lease ran before (and its clock restarted
    // with its host).
    member.refresh_leases();
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let incoming = futures::stream::unfold(listener, |l| async move {
        let next = l.accept().await.map(|(s, _)| SimStream(s));
        Some((next, l))
    });
    let revoker = tokio::spawn(revoke_loop(member.clone()));
    let served = router(Services::new(
        member,
        format!("http://0.0.0.0:{port}"),
        recheck,
    ))
    .serve_with_incoming(incoming)
    .await;
    revoker.abort();
    served.map_err(|e| e.to_string().into())
}
