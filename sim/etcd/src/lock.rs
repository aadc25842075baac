//! The Lock service as etcd 3.4 serves it: the server runs clientv3's
//! `concurrency.Mutex` on the caller's lease.
//!
//! The caller's key is `<name>/<lease in hex>`, created with the lease;
//! the key with the lowest create revision under `<name>/` holds the
//! lock, and a waiter waits until every key created before its own is
//! deleted. In 3.4 it then answers "locked" without looking at its own
//! key again: if the caller's lease expired while it waited, its key is
//! gone and someone else may hold the lock, yet it is told it holds it
//! too. 3.5 re-reads its own key after the wait and answers "session
//! expired" instead; [`Recheck`] chooses which.

use crate::keys::KeyRange;
use crate::node::Node;
use etcdproto::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use etcdproto::etcdserverpb::range_request::{SortOrder, SortTarget};
use etcdproto::etcdserverpb::request_op::Request;
use etcdproto::etcdserverpb::response_op::Response;
use etcdproto::etcdserverpb::*;
use etcdproto::mvccpb::event::EventType;
use tonic::Status;

/// Whether a waiter re-reads its own key once its predecessors are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// etcd 3.4: no re-read (the lock bug).
    No,
    /// etcd 3.5 and later: re-read, and fail if the key is gone.
    OwnKey,
}

/// The error 3.5 answers when the waiter's key is gone.
pub fn session_expired() -> Status {
    Status::new(tonic::Code::Unknown, "mutex: session is expired")
}

/// `Lock`: returns the header of the last read and the caller's key.
pub async fn lock(
    node: &Node,
    name: &[u8],
    lease: i64,
    recheck: Recheck,
) -> Result<(ResponseHeader, Vec<u8>), Status> {
    let mut prefix = name.to_vec();
    prefix.push(b'/');
    let mut my_key = prefix.clone();
    my_key.extend_from_slice(format!("{lease:x}").as_bytes());
    let resp = node
        .txn(&TxnRequest {
            compare: vec![Compare {
                result: CompareResult::Equal as i32,
                target: CompareTarget::Create as i32,
                key: my_key.clone(),
                target_union: Some(TargetUnion::CreateRevision(0)),
                range_end: Vec::new(),
            }],
            success: vec![
                op(Request::RequestPut(PutRequest {
                    key: my_key.clone(),
                    lease,
                    ..PutRequest::default()
                })),
                op(Request::RequestRange(first_created(&prefix))),
            ],
            failure: vec![
                op(Request::RequestRange(RangeRequest {
                    key: my_key.clone(),
                    ..RangeRequest::default()
                })),
                op(Request::RequestRange(first_created(&prefix))),
            ],
        })
        .await?;
    let header = resp.header.unwrap_or_default();
    let mut my_rev = header.revision;
    if !resp.succeeded {
        my_rev = range_kvs(&resp.responses, 0)
            .first()
            .map_or(my_rev, |kv| kv.create_revision);
    }
    let owner = range_kvs(&resp.responses, 1);
    if owner.is_empty() || owner[0].create_revision == my_rev {
        return Ok((header, my_key));
    }
    // From here the key is ours to delete if the caller goes away.
    let guard = DeleteOnDrop {
        node: node.clone(),
        key: Some(my_key.clone()),
    };
    let header = wait_deletes(node, &prefix, my_rev - 1).await?;
    if recheck == Recheck::OwnKey {
        let mine = node
            .range(&RangeRequest {
                key: my_key.clone(),
                ..RangeRequest::default()
            })
            .await?;
        if mine.kvs.is_empty() {
            return Err(session_expired());
        }
    }
    guard.keep();
    Ok((header, my_key))
}

fn op(r: Request) -> RequestOp {
    RequestOp { request: Some(r) }
}

/// The oldest key under `prefix` (clientv3's `WithFirstCreate`).
fn first_created(prefix: &[u8]) -> RangeRequest {
    RangeRequest {
        key: prefix.to_vec(),
        range_end: etcdproto::prefix_end(prefix),
        limit: 1,
        sort_order: SortOrder::Ascend as i32,
        sort_target: SortTarget::Create as i32,
        ..RangeRequest::default()
    }
}

fn range_kvs(responses: &[ResponseOp], i: usize) -> Vec<etcdproto::mvccpb::KeyValue> {
    match responses.get(i).and_then(|r| r.response.as_ref()) {
        Some(Response::ResponseRange(r)) => r.kvs.clone(),
        _ => Vec::new(),
    }
}

/// Waits until no key under `prefix` created at or before `max_create`
/// is left, one predecessor at a time, newest first (clientv3's
/// `waitDeletes`).
async fn wait_deletes(
    node: &Node,
    prefix: &[u8],
    max_create: i64,
) -> Result<ResponseHeader, Status> {
    loop {
        let resp = node
            .range(&RangeRequest {
                key: prefix.to_vec(),
                range_end: etcdproto::prefix_end(prefix),
                limit: 1,
                sort_order: SortOrder::Descend as i32,
                sort_target: SortTarget::Create as i32,
                max_create_revision: max_create,
                ..RangeRequest::default()
            })
            .await?;
        let header = resp.header.unwrap_or_default();
        let Some(last) = resp.kvs.first() else {
            return Ok(header);
        };
        wait_delete(node.member(), &last.key, header.revision).await?;
    }
}

/// Waits for a DELETE of `key` at revision `from` or later.
async fn wait_delete(member: &crate::member::Member, key: &[u8], from: i64) -> Result<(), Status> {
    let is_delete = |e: &etcdproto::mvccpb::Event| e.r#type == EventType::Delete as i32;
    let mut sub = member
        .subscribe(KeyRange::One(key.to_vec()), from)
        .map_err(|_| crate::errors::compacted())?;
    let key_id = sub.key;
    let found = sub.history.iter().any(is_delete);
    let result = if found {
        Ok(())
    } else {
        loop {
            match sub.feed.recv().await {
                Some((_, events)) if events.iter().any(is_delete) => break Ok(()),
                Some(_) => continue,
                None => break Err(Status::unavailable("the member stopped")),
            }
        }
    };
    member.unsubscribe(key_id);
    result
}

/// Deletes a waiter's key if the wait is abandoned (the caller went away
/// or the wait failed), as clientv3's `Lock` does on error.
struct DeleteOnDrop {
    node: Node,
    key: Option<Vec<u8>>,
}

impl DeleteOnDrop {
    fn keep(mut self) {
        self.key = None;
    }
}

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // The delete goes through the log, which takes a while: it
            // runs on after the abandoned wait.
            let node = self.node.clone();
            tokio::spawn(async move {
                let delete = DeleteRangeRequest {
                    key,
                    ..DeleteRangeRequest::default()
                };
                let _ = node.delete_range(&delete).await;
            });
        }
    }
}
