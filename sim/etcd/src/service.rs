//! The gRPC services, each a thin layer over [`Node`].

use crate::lock::{self, Recheck};
use crate::node::Node;
use crate::watch::WatchStream;
use etcdproto::etcdserverpb::cluster_server::Cluster;
use etcdproto::etcdserverpb::kv_server::Kv;
use etcdproto::etcdserverpb::lease_server::Lease;
use etcdproto::etcdserverpb::maintenance_server::Maintenance;
use etcdproto::etcdserverpb::watch_server::Watch;
use etcdproto::etcdserverpb::*;
use etcdproto::v3lockpb::lock_server::Lock;
use etcdproto::v3lockpb::{LockRequest, LockResponse, UnlockRequest, UnlockResponse};
use futures::{Stream, StreamExt};
use std::pin::Pin;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// A server-side stream of responses.
type Outgoing<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// Every service of one member, as one value to register.
#[derive(Debug, Clone)]
pub struct Services {
    node: Node,
    client_url: String,
    recheck: Recheck,
}

impl Services {
    /// The services of `node`, which clients reach at `client_url`
    /// (what `MemberList` reports), with `recheck` in its Lock service.
    pub fn new(node: Node, client_url: String, recheck: Recheck) -> Services {
        Services {
            node,
            client_url,
            recheck,
        }
    }
}

#[tonic::async_trait]
impl Kv for Services {
    async fn range(&self, r: Request<RangeRequest>) -> Result<Response<RangeResponse>, Status> {
        self.node.range(r.get_ref()).await.map(Response::new)
    }

    async fn put(&self, r: Request<PutRequest>) -> Result<Response<PutResponse>, Status> {
        self.node.put(r.get_ref()).await.map(Response::new)
    }

    async fn delete_range(
        &self,
        r: Request<DeleteRangeRequest>,
    ) -> Result<Response<DeleteRangeResponse>, Status> {
        self.node.delete_range(r.get_ref()).await.map(Response::new)
    }

    async fn txn(&self, r: Request<TxnRequest>) -> Result<Response<TxnResponse>, Status> {
        self.node.txn(r.get_ref()).await.map(Response::new)
    }

    async fn compact(
        &self,
        r: Request<CompactionRequest>,
    ) -> Result<Response<CompactionResponse>, Status> {
        self.node.compact(r.get_ref()).await.map(Response::new)
    }
}

#[tonic::async_trait]
impl Watch for Services {
    type WatchStream = Outgoing<WatchResponse>;

    async fn watch(
        &self,
        r: Request<Streaming<WatchRequest>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut incoming = r.into_inner();
        // etcd sends a stream's response headers with its first answer,
        // which only a first request brings about; so does this member.
        let first = incoming.next().await;
        let (tx, rx) = mpsc::unbounded_channel();
        let mut stream = WatchStream::new(self.node.member().clone(), tx);
        if let Some(Ok(req)) = first {
            stream.handle(req);
        }
        tokio::spawn(async move {
            // The watchers live as long as the client's side of the stream.
            while let Some(Ok(req)) = incoming.next().await {
                stream.handle(req);
            }
        });
        Ok(Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }
}

#[tonic::async_trait]
impl Lease for Services {
    type LeaseKeepAliveStream = Outgoing<LeaseKeepAliveResponse>;

    async fn lease_grant(
        &self,
        r: Request<LeaseGrantRequest>,
    ) -> Result<Response<LeaseGrantResponse>, Status> {
        self.node.lease_grant(r.get_ref()).await.map(Response::new)
    }

    async fn lease_revoke(
        &self,
        r: Request<LeaseRevokeRequest>,
    ) -> Result<Response<LeaseRevokeResponse>, Status> {
        self.node
            .lease_revoke(r.get_ref().id)
            .await
            .map(Response::new)
    }

    async fn lease_keep_alive(
        &self,
        r: Request<Streaming<LeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::LeaseKeepAliveStream>, Status> {
        let node = self.node.clone();
        let mut incoming = r.into_inner();
        // As etcd: the response headers come with the first answer, so a
        // client that waits for them before its first keep-alive waits
        // for ever.
        let first = incoming.next().await;
        let answers = futures::stream::iter(first)
            .chain(incoming)
            .take_while(|req| futures::future::ready(req.is_ok()))
            .then(move |req| {
                let node = node.clone();
                async move { node.lease_keep_alive(req.map(|q| q.id).unwrap_or(0)).await }
            })
            // A keep-alive that fails ends the stream with its error, as
            // etcd's does.
            .scan(false, |failed, answer| {
                let next = (!*failed).then(|| {
                    *failed = answer.is_err();
                    answer
                });
                futures::future::ready(next)
            });
        Ok(Response::new(Box::pin(answers)))
    }

    async fn lease_time_to_live(
        &self,
        r: Request<LeaseTimeToLiveRequest>,
    ) -> Result<Response<LeaseTimeToLiveResponse>, Status> {
        self.node
            .lease_time_to_live(r.get_ref())
            .await
            .map(Response::new)
    }

    async fn lease_leases(
        &self,
        _r: Request<LeaseLeasesRequest>,
    ) -> Result<Response<LeaseLeasesResponse>, Status> {
        Ok(Response::new(self.node.member().lease_leases()))
    }
}

#[tonic::async_trait]
impl Cluster for Services {
    async fn member_list(
        &self,
        _r: Request<MemberListRequest>,
    ) -> Result<Response<MemberListResponse>, Status> {
        Ok(Response::new(self.node.member_list(&self.client_url)))
    }
}

#[tonic::async_trait]
impl Maintenance for Services {
    async fn status(&self, _r: Request<StatusRequest>) -> Result<Response<StatusResponse>, Status> {
        Ok(Response::new(self.node.status()))
    }
}

/// etcd's Lock service calls the member through a client of its own and
/// hands back that client's error as a plain error: its message, with the
/// code `Unknown` ("requested lease not found" is `NotFound` from `Txn`,
/// `Unknown` from `Lock`).
fn as_lock_service_error(status: Status) -> Status {
    Status::new(tonic::Code::Unknown, status.message())
}

#[tonic::async_trait]
impl Lock for Services {
    async fn lock(&self, r: Request<LockRequest>) -> Result<Response<LockResponse>, Status> {
        let req = r.into_inner();
        let (header, key) = lock::lock(&self.node, &req.name, req.lease, self.recheck)
            .await
            .map_err(as_lock_service_error)?;
        Ok(Response::new(LockResponse {
            header: Some(header),
            key,
        }))
    }

    async fn unlock(&self, r: Request<UnlockRequest>) -> Result<Response<UnlockResponse>, Status> {
        let resp = (self.node)
            .delete_range(&DeleteRangeRequest {
                key: r.into_inner().key,
                ..DeleteRangeRequest::default()
            })
            .await
            .map_err(as_lock_service_error)?;
        Ok(Response::new(UnlockResponse {
            header: resp.header,
        }))
    }
}
