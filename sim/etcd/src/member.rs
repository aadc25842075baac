//! One etcd member: its store, its leases and its watchers, behind one
//! lock, and the rules etcd 3.4 applies to each request.
//!
//! Every request runs to the end under the lock, so requests are
//! linearizable, as a single member's are; a write that changes keys
//! tells the watchers before the lock is let go, so a watcher never misses
//! an event between its history and its live feed.

use crate::errors;
use crate::keys::KeyRange;
use crate::lease::Lessor;
use crate::mvcc::{Store, WriteTxn};
use etcdproto::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use etcdproto::etcdserverpb::request_op::Request;
use etcdproto::etcdserverpb::response_op::Response;
use etcdproto::etcdserverpb::*;
use etcdproto::mvccpb::{Event, KeyValue};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::Status;

/// The most operations one transaction may hold (etcd's `--max-txn-ops`).
pub const MAX_TXN_OPS: usize = 128;

/// The etcd version the member answers as.
pub const VERSION: &str = "3.4.23";

/// Events of one revision, for one watcher.
pub type Batch = (i64, Vec<Event>);

/// A member's fixed identity, as its headers show it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The cluster's ID.
    pub cluster_id: u64,
    /// This member's ID.
    pub member_id: u64,
    /// Its name (`--name`).
    pub name: String,
}

impl Identity {
    /// The identity of the member with Raft ID `raft_id` in a cluster of
    /// `size`: a member alone is etcd's `default`; the members of a larger
    /// cluster are `etcd-0`, `etcd-1`, ..., with IDs of their own.
    pub fn of_member(raft_id: u64, size: u64) -> Identity {
        let alone = Identity::default();
        if size <= 1 {
            return alone;
        }
        Identity {
            member_id: alone.member_id.wrapping_add(raft_id.wrapping_mul(0x1_0001)),
            name: format!("etcd-{}", raft_id.saturating_sub(1)),
            ..alone
        }
    }
}

impl Default for Identity {
    fn default() -> Self {
        // Any fixed numbers will do; these are etcd's for a member named
        // `default` on its default URLs.
        Identity {
            cluster_id: 0xcdf8_1869_2e23_9f35,
            member_id: 0x8e9e_05c5_2164_694d,
            name: "default".into(),
        }
    }
}

struct Watcher {
    range: KeyRange,
    tx: mpsc::UnboundedSender<Batch>,
}

/// Told of every change to a key: the event, and whether a lease's
/// expiry caused it (rather than a request).
pub type Observer = Arc<dyn Fn(&Event, bool) + Send + Sync>;

struct State {
    observer: Option<Observer>,
    store: Store,
    lessor: Lessor,
    watchers: BTreeMap<u64, Watcher>,
    next_watcher: u64,
    raft_term: u64,
}

/// A handle on one member; clones share it.
#[derive(Clone)]
pub struct Member {
    id: Identity,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member").field("id", &self.id).finish()
    }
}

impl Default for Member {
    fn default() -> Self {
        Member::new(Identity::default())
    }
}

/// A new subscription: the events it missed, and its live feed.
#[derive(Debug)]
pub struct Subscription {
    /// Its key, to [`Member::unsubscribe`] with.
    pub key: u64,
    /// Events from its start revision up to now.
    pub history: Vec<Event>,
    /// Events from now on, a revision at a time.
    pub feed: mpsc::UnboundedReceiver<Batch>,
}

impl Member {
    /// A member with an empty store.
    pub fn new(id: Identity) -> Member {
        // etcd's server-chosen lease IDs carry the member ID's low 16 bits
        // in their top bits, then a count; these do too, so that they look
        // like etcd's in etcdctl's output.
        let first_lease = ((id.member_id & 0x7fff) << 48 | 0x7ba1_c3e2_a100) as i64;
        Member {
            state: Arc::new(Mutex::new(State {
                observer: None,
                store: Store::new(),
                lessor: Lessor::new(first_lease),
                watchers: BTreeMap::new(),
                next_watcher: 0,
                raft_term: 2,
            })),
            id,
        }
    }

    /// Who this member is.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another request cannot leave the state half-written:
        // each request checks everything before it writes.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn header_at(&self, st: &State, revision: i64) -> ResponseHeader {
        ResponseHeader {
            cluster_id: self.id.cluster_id,
            member_id: self.id.member_id,
            revision,
            raft_term: st.raft_term,
        }
    }

    /// A header at the current revision.
    pub fn header(&self) -> ResponseHeader {
        let st = self.lock();
        self.header_at(&st, st.store.revision())
    }

    /// The current revision.
    pub fn revision(&self) -> i64 {
        self.lock().store.revision()
    }

    /// `Range`.
    pub fn range(&self, req: &RangeRequest) -> Result<RangeResponse, Status> {
        if req.key.is_empty() {
            return Err(errors::empty_key());
        }
        let st = self.lock();
        let at = st.store.read_revision(req.revision)?;
        let r = st.store.range(req, at);
        Ok(RangeResponse {
            header: Some(self.header_at(&st, st.store.revision())),
            kvs: r.kvs,
            more: r.more,
            count: r.count,
        })
    }

    /// `Put`.
    pub fn put(&self, req: &PutRequest) -> Result<PutResponse, Status> {
        put_response(self.txn(&put_txn(req))?)
    }

    /// `DeleteRange`.
    pub fn delete_range(&self, req: &DeleteRangeRequest) -> Result<DeleteRangeResponse, Status> {
        delete_response(self.txn(&delete_txn(req))?)
    }

    /// `Txn`: compares on the state before it, then one branch's
    /// operations at one revision.
    pub fn txn(&self, req: &TxnRequest) -> Result<TxnResponse, Status> {
        check_txn(req)?;
        let mut guard = self.lock();
        let st = &mut *guard;
        check_branch(&st.store, &st.lessor, req)?;
        let mut w = st.store.write();
        let (succeeded, responses) = apply_txn(&mut w, req);
        let events = w.commit();
        self.after_write(st, &events);
        Ok(TxnResponse {
            header: Some(self.header_at(st, st.store.revision())),
            succeeded,
            responses,
        })
    }

    /// `Compact`.
    pub fn compact(&self, req: &CompactionRequest) -> Result<CompactionResponse, Status> {
        let mut st = self.lock();
        st.store.compact(req.revision)?;
        Ok(CompactionResponse {
            header: Some(self.header_at(&st, st.store.revision())),
        })
    }

    /// Tells `observer` of every change to a key from now on.
    pub fn observe(&self, observer: Observer) {
        self.lock().observer = Some(observer);
    }

    /// Moves leases and watchers along after a write.
    fn after_write(&self, st: &mut State, events: &[Event]) {
        self.after_change(st, events, false);
    }

    fn after_change(&self, st: &mut State, events: &[Event], expiry: bool) {
        if events.is_empty() {
            return;
        }
        if let Some(observer) = &st.observer {
            for e in events {
                observer(e, expiry);
            }
        }
        for e in events {
            let kv = e.kv.as_ref();
            if let Some(prev) = &e.prev_kv
                && prev.lease != 0
            {
                st.lessor.detach(prev.lease, &prev.key);
            }
            if let Some(kv) = kv
                && kv.lease != 0
                && kv.create_revision != 0
            {
                st.lessor.attach(kv.lease, &kv.key);
            }
        }
        let rev = st.store.revision();
        st.watchers.retain(|_, w| {
            let mine: Vec<Event> = events
                .iter()
                .filter(|e| e.kv.as_ref().is_some_and(|kv| w.range.contains(&kv.key)))
                .cloned()
                .collect();
            mine.is_empty() || w.tx.send((rev, mine)).is_ok()
        });
    }

    /// `LeaseGrant`.
    pub fn lease_grant(&self, req: &LeaseGrantRequest) -> Result<LeaseGrantResponse, Status> {
        let mut st = self.lock();
        let (id, ttl) = st.lessor.grant(req.id, req.ttl, Instant::now())?;
        Ok(LeaseGrantResponse {
            header: Some(self.header_at(&st, st.store.revision())),
            id,
            ttl,
            error: String::new(),
        })
    }

    /// `LeaseRevoke`: the lease goes, and its keys with it, in one write.
    pub fn lease_revoke(&self, id: i64) -> Result<LeaseRevokeResponse, Status> {
        self.revoke(id, false)
    }

    /// Revokes a lease, because a client asked or because its time ran
    /// out (`expiry`: the observer is told so).
    pub fn revoke(&self, id: i64, expiry: bool) -> Result<LeaseRevokeResponse, Status> {
        let mut guard = self.lock();
        let st = &mut *guard;
        self.revoke_locked(st, id, expiry)?;
        Ok(LeaseRevokeResponse {
            header: Some(self.header_at(st, st.store.revision())),
        })
    }

    fn revoke_locked(&self, st: &mut State, id: i64, expiry: bool) -> Result<(), Status> {
        let keys = st.lessor.revoke(id)?;
        let mut w = st.store.write();
        for key in keys {
            w.delete_range(&DeleteRangeRequest {
                key,
                ..DeleteRangeRequest::default()
            });
        }
        let events = w.commit();
        self.after_change(st, &events, expiry);
        Ok(())
    }

    /// The IDs of leases whose time is up at `now`, which the leader
    /// revokes through the log.
    pub fn expired_leases(&self, now: Instant) -> Vec<i64> {
        self.lock().lessor.expired(now)
    }

    /// An ID for a new lease, chosen by this member (its bits on top).
    pub fn fresh_lease_id(&self) -> i64 {
        self.lock().lessor.fresh_id()
    }

    /// Sets the Raft term its headers show.
    pub fn set_raft_term(&self, term: u64) {
        self.lock().raft_term = term;
    }

    /// One keep-alive: the lease's TTL, or 0 if it is gone.
    pub fn lease_keep_alive(&self, id: i64) -> LeaseKeepAliveResponse {
        let mut st = self.lock();
        let ttl = st.lessor.renew(id, Instant::now()).unwrap_or(0);
        LeaseKeepAliveResponse {
            header: Some(self.header_at(&st, st.store.revision())),
            id,
            ttl,
        }
    }

    /// `LeaseTimeToLive`: TTL -1 for a lease that does not exist.
    pub fn lease_time_to_live(&self, req: &LeaseTimeToLiveRequest) -> LeaseTimeToLiveResponse {
        let st = self.lock();
        let header = Some(self.header_at(&st, st.store.revision()));
        match st.lessor.get(req.id) {
            Some(l) => LeaseTimeToLiveResponse {
                header,
                id: req.id,
                ttl: l.remaining_s(Instant::now()),
                granted_ttl: l.granted_ttl_s,
                keys: if req.keys {
                    l.keys.iter().cloned().collect()
                } else {
                    Vec::new()
                },
            },
            None => LeaseTimeToLiveResponse {
                header,
                id: req.id,
                ttl: -1,
                ..LeaseTimeToLiveResponse::default()
            },
        }
    }

    /// `LeaseLeases`.
    pub fn lease_leases(&self) -> LeaseLeasesResponse {
        let st = self.lock();
        LeaseLeasesResponse {
            header: Some(self.header_at(&st, st.store.revision())),
            leases: st
                .lessor
                .ids()
                .into_iter()
                .map(|id| LeaseStatus { id })
                .collect(),
        }
    }

    /// Gives every lease its TTL plus the promotion's extension from now
    /// (a leader's promotion).
    pub fn refresh_leases(&self) {
        self.lock().lessor.refresh_all(Instant::now());
    }

    /// Watches `range` from revision `start` (0: the next write).
    /// `Err(compacted revision)` if history from `start` is gone.
    pub fn subscribe(&self, range: KeyRange, start: i64) -> Result<Subscription, i64> {
        let mut st = self.lock();
        let history = if start > 0 {
            st.store
                .events_since(start)
                .ok_or(st.store.compacted())?
                .into_iter()
                .filter(|e| e.kv.as_ref().is_some_and(|kv| range.contains(&kv.key)))
                .collect()
        } else {
            Vec::new()
        };
        let (tx, feed) = mpsc::unbounded_channel();
        let key = st.next_watcher;
        st.next_watcher += 1;
        st.watchers.insert(key, Watcher { range, tx });
        Ok(Subscription { key, history, feed })
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, key: u64) {
        self.lock().watchers.remove(&key);
    }

    /// `Status`.
    pub fn status(&self) -> StatusResponse {
        let st = self.lock();
        let rev = st.store.revision();
        StatusResponse {
            header: Some(self.header_at(&st, rev)),
            version: VERSION.into(),
            db_size: 20_480,
            leader: self.id.member_id,
            raft_index: rev as u64 + 3,
            raft_term: st.raft_term,
            raft_applied_index: rev as u64 + 3,
            errors: Vec::new(),
            db_size_in_use: 20_480,
            is_learner: false,
        }
    }

    /// `MemberList`: this member alone, at `client_url`.
    pub fn member_list(&self, client_url: &str) -> MemberListResponse {
        let st = self.lock();
        MemberListResponse {
            header: Some(self.header_at(&st, st.store.revision())),
            members: vec![etcdproto::etcdserverpb::Member {
                id: self.id.member_id,
                name: self.id.name.clone(),
                peer_ur_ls: vec!["http://localhost:2380".into()],
                client_ur_ls: vec![client_url.into()],
                is_learner: false,
            }],
        }
    }
}

/// A `Put` as the one-operation transaction it is applied as.
pub(crate) fn put_txn(req: &PutRequest) -> TxnRequest {
    TxnRequest {
        success: vec![RequestOp {
            request: Some(Request::RequestPut(req.clone())),
        }],
        ..TxnRequest::default()
    }
}

/// The `Put` answer inside a transaction's.
pub(crate) fn put_response(resp: TxnResponse) -> Result<PutResponse, Status> {
    match resp.responses.into_iter().next().and_then(|r| r.response) {
        Some(Response::ResponsePut(p)) => Ok(PutResponse {
            header: resp.header,
            ..p
        }),
        _ => Err(Status::internal("a put answered as something else")),
    }
}

/// A `DeleteRange` as the one-operation transaction it is applied as.
pub(crate) fn delete_txn(req: &DeleteRangeRequest) -> TxnRequest {
    TxnRequest {
        success: vec![RequestOp {
            request: Some(Request::RequestDeleteRange(req.clone())),
        }],
        ..TxnRequest::default()
    }
}

/// The `DeleteRange` answer inside a transaction's.
pub(crate) fn delete_response(resp: TxnResponse) -> Result<DeleteRangeResponse, Status> {
    match resp.responses.into_iter().next().and_then(|r| r.response) {
        Some(Response::ResponseDeleteRange(d)) => Ok(DeleteRangeResponse {
            header: resp.header,
            ..d
        }),
        _ => Err(Status::internal("a delete answered as something else")),
    }
}

/// Whether a transaction only reads, whichever branch it takes: then it
/// is served as a read, not through the log.
pub(crate) fn is_read_only(req: &TxnRequest) -> bool {
    (req.success.iter().chain(&req.failure)).all(|op| match &op.request {
        Some(Request::RequestRange(_)) | None => true,
        Some(Request::RequestTxn(t)) => is_read_only(t),
        Some(Request::RequestPut(_)) | Some(Request::RequestDeleteRange(_)) => false,
    })
}

/// The checks etcd's gRPC layer makes before a transaction reaches the
/// store: not too many operations, no key written twice.
pub(crate) fn check_txn(req: &TxnRequest) -> Result<(), Status> {
    if req.success.len() > MAX_TXN_OPS || req.failure.len() > MAX_TXN_OPS {
        return Err(errors::too_many_ops());
    }
    for c in &req.compare {
        if c.key.is_empty() {
            return Err(errors::empty_key());
        }
    }
    for ops in [&req.success, &req.failure] {
        let mut written: Vec<KeyRange> = Vec::new();
        for op in ops.iter() {
            let range = match &op.request {
                Some(Request::RequestPut(p)) => {
                    if p.key.is_empty() {
                        return Err(errors::empty_key());
                    }
                    KeyRange::One(p.key.clone())
                }
                Some(Request::RequestDeleteRange(d)) => {
                    if d.key.is_empty() {
                        return Err(errors::empty_key());
                    }
                    KeyRange::new(&d.key, &d.range_end)
                }
                Some(Request::RequestRange(r)) => {
                    if r.key.is_empty() {
                        return Err(errors::empty_key());
                    }
                    continue;
                }
                Some(Request::RequestTxn(t)) => {
                    check_txn(t)?;
                    continue;
                }
                None => continue,
            };
            // Two puts of one key clash; a delete may overlap another
            // delete, but not a put.
            let is_put = matches!(range, KeyRange::One(_))
                && matches!(op.request, Some(Request::RequestPut(_)));
            if written
                .iter()
                .any(|w| w.overlaps(&range) && (is_put || matches!(w, KeyRange::One(_))))
            {
                return Err(errors::duplicate_key());
            }
            if is_put {
                written.push(range);
            }
        }
    }
    Ok(())
}

/// Whether a transaction's compares hold on `store` now.
fn compares_hold(store: &Store, req: &TxnRequest) -> bool {
    req.compare.iter().all(|c| compare_holds(store, c))
}

fn compare_holds(store: &Store, c: &Compare) -> bool {
    let req = RangeRequest {
        key: c.key.clone(),
        range_end: c.range_end.clone(),
        ..RangeRequest::default()
    };
    let kvs = store.range(&req, store.revision()).kvs;
    let target = CompareTarget::try_from(c.target).unwrap_or(CompareTarget::Version);
    if kvs.is_empty() {
        // A value cannot be compared on a key that does not exist; other
        // targets compare as zero.
        if target == CompareTarget::Value {
            return false;
        }
        return compare_kv(c, target, &KeyValue::default());
    }
    kvs.iter().all(|kv| compare_kv(c, target, kv))
}

fn compare_kv(c: &Compare, target: CompareTarget, kv: &KeyValue) -> bool {
    use std::cmp::Ordering;
    let ord = match (target, &c.target_union) {
        (CompareTarget::Value, Some(TargetUnion::Value(v))) => {
            kv.value.as_slice().cmp(v.as_slice())
        }
        (CompareTarget::Value, _) => kv.value.as_slice().cmp(&[][..]),
        (CompareTarget::Version, tu) => kv.version.cmp(&int_target(tu)),
        (CompareTarget::Create, tu) => kv.create_revision.cmp(&int_target(tu)),
        (CompareTarget::Mod, tu) => kv.mod_revision.cmp(&int_target(tu)),
        (CompareTarget::Lease, tu) => kv.lease.cmp(&int_target(tu)),
    };
    match CompareResult::try_from(c.result).unwrap_or(CompareResult::Equal) {
        CompareResult::Equal => ord == Ordering::Equal,
        CompareResult::NotEqual => ord != Ordering::Equal,
        CompareResult::Greater => ord == Ordering::Greater,
        CompareResult::Less => ord == Ordering::Less,
    }
}

fn int_target(tu: &Option<TargetUnion>) -> i64 {
    match tu {
        Some(TargetUnion::Version(v))
        | Some(TargetUnion::CreateRevision(v))
        | Some(TargetUnion::ModRevision(v))
        | Some(TargetUnion::Lease(v)) => *v,
        _ => 0,
    }
}

/// Checks the branch the compares choose before anything is written, so a
/// failing request writes nothing: leases exist, `ignore_*` keys exist,
/// read revisions are readable.
fn check_branch(store: &Store, lessor: &Lessor, req: &TxnRequest) -> Result<(), Status> {
    let ops = if compares_hold(store, req) {
        &req.success
    } else {
        &req.failure
    };
    for op in ops {
        match &op.request {
            Some(Request::RequestPut(p)) => check_put(store, lessor, p)?,
            Some(Request::RequestRange(r)) => {
                store.read_revision(r.revision)?;
            }
            Some(Request::RequestTxn(t)) => check_branch(store, lessor, t)?,
            Some(Request::RequestDeleteRange(_)) | None => {}
        }
    }
    Ok(())
}

fn check_put(store: &Store, lessor: &Lessor, p: &PutRequest) -> Result<(), Status> {
    if p.ignore_value && !p.value.is_empty() {
        return Err(errors::value_provided());
    }
    if p.ignore_lease && p.lease != 0 {
        return Err(errors::lease_provided());
    }
    if (p.ignore_value || p.ignore_lease) && store.get(&p.key).is_none() {
        return Err(errors::key_not_found());
    }
    if p.lease != 0 && !lessor.exists(p.lease) {
        return Err(errors::lease_not_found());
    }
    Ok(())
}

/// Runs the chosen branch; nested transactions choose their own.
fn apply_txn(w: &mut WriteTxn<'_>, req: &TxnRequest) -> (bool, Vec<ResponseOp>) {
    let succeeded = compares_hold(w.store(), req);
    let ops = if succeeded {
        &req.success
    } else {
        &req.failure
    };
    let responses = ops
        .iter()
        .map(|op| ResponseOp {
            response: op.request.as_ref().map(|r| apply_op(w, r)),
        })
        .collect();
    (succeeded, responses)
}

fn apply_op(w: &mut WriteTxn<'_>, op: &Request) -> Response {
    let header = |rev: i64| {
        Some(ResponseHeader {
            revision: rev,
            ..ResponseHeader::default()
        })
    };
    match op {
        Request::RequestRange(r) => {
            let at = if r.revision > 0 {
                r.revision
            } else {
                w.read_revision()
            };
            let rr = w.store().range(r, at);
            Response::ResponseRange(RangeResponse {
                header: header(w.read_revision()),
                kvs: rr.kvs,
                more: rr.more,
                count: rr.count,
            })
        }
        Request::RequestPut(p) => {
            let prev = w.put(p);
            Response::ResponsePut(PutResponse {
                header: header(w.read_revision()),
                prev_kv: if p.prev_kv { prev } else { None },
            })
        }
        Request::RequestDeleteRange(d) => {
            let gone = w.delete_range(d);
            Response::ResponseDeleteRange(DeleteRangeResponse {
                header: header(w.read_revision()),
                deleted: gone.len() as i64,
                prev_kvs: if d.prev_kv { gone } else { Vec::new() },
            })
        }
        Request::RequestTxn(t) => {
            let (succeeded, responses) = apply_txn(w, t);
            Response::ResponseTxn(TxnResponse {
                header: header(w.read_revision()),
                succeeded,
                responses,
            })
        }
    }
}
