//! clientv3's `concurrency.Mutex`, over gRPC.
//!
//! A waiter puts `<prefix><lease in hex>` on its session's lease; the key
//! under the prefix with the lowest create revision holds the lock. A
//! waiter that is not first waits for every key created before its own to
//! be deleted, watching the newest of them at a time, so that each
//! release wakes one waiter, not all.
//!
//! etcd 3.4's version stops there: once its predecessors are gone, it
//! holds the lock. If its own lease expired while it waited (it was
//! paused, or cut off), its own key is gone too, a later waiter may
//! already hold the lock, and it is told it holds it as well (the
//! expired-waiter bug, docs/ladder.md section 14). 3.5 reads its own key
//! once more and fails with "session expired" if the key is gone
//! ([`Recheck::OwnKey`]).

use crate::error::LockError;
use crate::etcd::status_error;
use crate::lock::Wakeups;
use etcdproto::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use etcdproto::etcdserverpb::kv_client::KvClient;
use etcdproto::etcdserverpb::range_request::{SortOrder, SortTarget};
use etcdproto::etcdserverpb::request_op::Request;
use etcdproto::etcdserverpb::response_op::Response;
use etcdproto::etcdserverpb::watch_client::WatchClient;
use etcdproto::etcdserverpb::watch_request::RequestUnion;
use etcdproto::etcdserverpb::*;
use etcdproto::mvccpb::KeyValue;
use etcdproto::mvccpb::event::EventType;
use futures::StreamExt;
use std::time::Duration;
use tonic::transport::Channel;

/// Whether a waiter re-reads its own key once its predecessors are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// etcd 3.4's clientv3: no re-read.
    No,
    /// etcd 3.5's: re-read, and fail with "session expired" if it is gone.
    OwnKey,
}

/// A held mutex: the key that holds it and the revision it was created at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// `<prefix><lease in hex>`.
    pub key: String,
    /// The key's create revision: it only grows, so it is a fencing token.
    pub create_revision: i64,
    /// The revision of the header the lock was granted with (what
    /// `etcdctl lock` shows as `ETCD_LOCK_REV`; in 3.4 two holders can get
    /// the same one, so it is no fencing token).
    pub header_revision: i64,
}

fn op(r: Request) -> RequestOp {
    RequestOp { request: Some(r) }
}

fn oldest_under(prefix: &str) -> RangeRequest {
    RangeRequest {
        key: prefix.as_bytes().to_vec(),
        range_end: etcdproto::prefix_end(prefix.as_bytes()),
        limit: 1,
        sort_order: SortOrder::Ascend as i32,
        sort_target: SortTarget::Create as i32,
        ..RangeRequest::default()
    }
}

fn range_kvs(responses: &[ResponseOp], i: usize) -> Vec<KeyValue> {
    match responses.get(i).and_then(|r| r.response.as_ref()) {
        Some(Response::ResponseRange(r)) => r.kvs.clone(),
        _ => Vec::new(),
    }
}

/// Takes the mutex `prefix` (ending in `/`) with `lease`; `rpc_timeout`
/// bounds each request, not the wait. Dropped while waiting, it leaves
/// its key for the caller to delete ([`unlock`]): the key is returned in
/// the error's place only on success.
pub async fn lock(
    channel: &Channel,
    prefix: &str,
    lease: i64,
    recheck: Recheck,
    rpc_timeout: Duration,
    wakeups: &Wakeups,
) -> Result<Held, LockError> {
    let my_key = format!("{prefix}{lease:x}");
    let mut kv = KvClient::new(channel.clone());
    let txn = TxnRequest {
        compare: vec![Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Create as i32,
            key: my_key.clone().into_bytes(),
            target_union: Some(TargetUnion::CreateRevision(0)),
            range_end: Vec::new(),
        }],
        success: vec![
            op(Request::RequestPut(PutRequest {
                key: my_key.clone().into_bytes(),
                lease,
                ..PutRequest::default()
            })),
            op(Request::RequestRange(oldest_under(prefix))),
        ],
        failure: vec![
            op(Request::RequestRange(RangeRequest {
                key: my_key.clone().into_bytes(),
                ..RangeRequest::default()
            })),
            op(Request::RequestRange(oldest_under(prefix))),
        ],
    };
    let resp = timed(rpc_timeout, "Txn", kv.txn(txn)).await?;
    let header_revision = resp.header.map_or(0, |h| h.revision);
    let my_rev = if resp.succeeded {
        header_revision
    } else {
        range_kvs(&resp.responses, 0)
            .first()
            .map_or(header_revision, |kv| kv.create_revision)
    };
    let owner = range_kvs(&resp.responses, 1);
    if owner.is_empty() || owner[0].create_revision == my_rev {
        return Ok(Held {
            key: my_key,
            create_revision: my_rev,
            header_revision,
        });
    }
    let header_revision = wait_deletes(channel, prefix, my_rev - 1, rpc_timeout, wakeups).await?;
    if recheck == Recheck::OwnKey {
        let mine = timed(
            rpc_timeout,
            "Range",
            kv.range(RangeRequest {
                key: my_key.clone().into_bytes(),
                ..RangeRequest::default()
            }),
        )
        .await?;
        if mine.kvs.is_empty() {
            return Err(LockError::Etcd {
                message: "mutex: session is expired".into(),
                transient: false,
            });
        }
    }
    Ok(Held {
        key: my_key,
        create_revision: my_rev,
        header_revision,
    })
}

/// Deletes a mutex's key: the release.
pub async fn unlock(channel: &Channel, key: &str, rpc_timeout: Duration) -> Result<(), LockError> {
    let mut kv = KvClient::new(channel.clone());
    timed(
        rpc_timeout,
        "DeleteRange",
        kv.delete_range(DeleteRangeRequest {
            key: key.as_bytes().to_vec(),
            ..DeleteRangeRequest::default()
        }),
    )
    .await
    .map(|_| ())
}

async fn timed<T>(
    timeout: Duration,
    what: &str,
    call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, LockError> {
    match tokio::time::timeout(timeout, call).await {
        Err(_) => Err(LockError::Etcd {
            message: format!("{what} timed out"),
            transient: true,
        }),
        Ok(r) => r.map(tonic::Response::into_inner).map_err(status_error),
    }
}

/// Waits until no key under `prefix` created at or before `max_create`
/// is left (clientv3's `waitDeletes`); returns the revision it saw last.
async fn wait_deletes(
    channel: &Channel,
    prefix: &str,
    max_create: i64,
    rpc_timeout: Duration,
    wakeups: &Wakeups,
) -> Result<i64, LockError> {
    let mut kv = KvClient::new(channel.clone());
    loop {
        let newest = RangeRequest {
            key: prefix.as_bytes().to_vec(),
            range_end: etcdproto::prefix_end(prefix.as_bytes()),
            limit: 1,
            sort_order: SortOrder::Descend as i32,
            sort_target: SortTarget::Create as i32,
            max_create_revision: max_create,
            ..RangeRequest::default()
        };
        let resp = timed(rpc_timeout, "Range", kv.range(newest)).await?;
        let rev = resp.header.map_or(0, |h| h.revision);
        let Some(last) = resp.kvs.first() else {
            return Ok(rev);
        };
        wait_delete(channel, &last.key, rev, wakeups).await?;
    }
}

/// Watches `key` from revision `from` until it is deleted; each response
/// that carries events is one wake-up of this waiter.
async fn wait_delete(
    channel: &Channel,
    key: &[u8],
    from: i64,
    wakeups: &Wakeups,
) -> Result<(), LockError> {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let create = WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
            key: key.to_vec(),
            start_revision: from,
            ..WatchCreateRequest::default()
        })),
    };
    tx.unbounded_send(create).map_err(|_| LockError::Etcd {
        message: "watch stream closed".into(),
        transient: true,
    })?;
    let mut events = WatchClient::new(channel.clone())
        .watch(rx)
        .await
        .map_err(status_error)?
        .into_inner();
    while let Some(resp) = events.next().await {
        let resp = resp.map_err(status_error)?;
        if resp.canceled {
            return Err(LockError::Etcd {
                message: format!("watch canceled: {}", resp.cancel_reason),
                transient: true,
            });
        }
        if !resp.events.is_empty() {
            wakeups.add();
        }
        if resp
            .events
            .iter()
            .any(|e| e.r#type == EventType::Delete as i32)
        {
            return Ok(());
        }
    }
    Err(LockError::Etcd {
        message: "watch stream ended".into(),
        transient: true,
    })
}
