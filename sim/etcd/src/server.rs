//! Serving a member: the gRPC server on a real TCP listener or on
//! turmoil's simulated network, beside the member's Raft driver.

use crate::lock::Recheck;
use crate::node::{self, Node, Transport};
use crate::service::Services;
use etcdproto::etcdserverpb::cluster_server::ClusterServer;
use etcdproto::etcdserverpb::kv_server::KvServer;
use etcdproto::etcdserverpb::lease_server::LeaseServer;
use etcdproto::etcdserverpb::maintenance_server::MaintenanceServer;
use etcdproto::etcdserverpb::watch_server::WatchServer;
use etcdproto::v3lockpb::lock_server::LockServer;
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

/// Serves a member alone (`node`, a cluster of one) on a real TCP
/// listener until the listener fails.
pub async fn serve_tcp(
    node: Node,
    listener: tokio::net::TcpListener,
    recheck: Recheck,
) -> Result<(), tonic::transport::Error> {
    let url = match listener.local_addr() {
        Ok(a) => format!("http://{a}"),
        Err(_) => String::new(),
    };
    let driver = tokio::spawn(node::drive(node.clone(), Transport::Alone));
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let result = router(Services::new(node, url, recheck))
        .serve_with_incoming(incoming)
        .await;
    driver.abort();
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

/// Serves `node` on turmoil's network at `port` of the current host, and
/// talks to its peers on [`node::PEER_PORT`]: a turmoil host's body. The
/// node lives outside the host, so it survives the host's crash with
/// whatever it had committed (etcd fsyncs every write before answering).
pub async fn serve_sim(node: Node, port: u16, recheck: Recheck) -> turmoil::Result {
    let transport = if node.place().peers.is_empty() {
        Transport::Alone
    } else {
        let socket = turmoil::net::UdpSocket::bind(("0.0.0.0", node::PEER_PORT)).await?;
        let mut peers = std::collections::BTreeMap::new();
        for (raft_id, (machine, port)) in &node.place().peers {
            peers.insert(*raft_id, (turmoil::lookup(machine.as_str()), *port).into());
        }
        Transport::Sim { socket, peers }
    };
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let incoming = futures::stream::unfold(listener, |l| async move {
        let next = l.accept().await.map(|(s, _)| SimStream(s));
        Some((next, l))
    });
    let driver = tokio::spawn(node::drive(node.clone(), transport));
    let served = router(Services::new(
        node,
        format!("http://0.0.0.0:{port}"),
        recheck,
    ))
    .serve_with_incoming(incoming)
    .await;
    driver.abort();
    served.map_err(|e| e.to_string().into())
}
