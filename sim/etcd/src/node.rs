//! One etcd member in its cluster: its Raft, its state machine
//! ([`Member`]), and the requests waiting on the log.
//!
//! # How a request runs
//!
//! - A write (`Put`, `DeleteRange`, a `Txn` that writes, `Compact`) and a
//!   lease's grant or revoke are *proposed*: the member appends them to
//!   the Raft log (a follower forwards them to its leader), every member
//!   applies them in log order once a majority holds them, and the
//!   proposing member answers its caller when it applies the entry
//!   itself. A write that no majority takes answers "etcdserver: request
//!   timed out" after [`REQUEST_TIMEOUT`], as etcd does.
//! - A read is linearizable unless it asks to be `serializable`: the
//!   member first learns the leader's commit index through Raft's
//!   ReadIndex (the leader confirms it still leads with a round of
//!   heartbeats), waits until it has applied that far, then reads its
//!   own store. A serializable read answers from the member's store at
//!   once, stale on a member that lags or is cut off.
//! - Only the leader counts a lease's time. A follower forwards
//!   keep-alives and `LeaseTimeToLive` to it; the leader revokes an
//!   expired lease by proposing the revoke. When a member becomes leader,
//!   it gives every lease its TTL and 1 s more from the moment it applies
//!   the first entry of its term (etcd's lessor promotion), since it
//!   cannot know how long the old leader had counted.
//!
//! # What outlives a crash
//!
//! The node lives outside its simulated host, as etcd's data directory
//! outlives its process: the Raft log and vote, and the applied store and
//! leases (etcd syncs each to disk before it answers or sends). What a
//! restart loses is what a process loses: its role, the requests it was
//! serving, and its leases' clocks (counted again from the promotion of
//! whichever member leads next).

use crate::command::{InternalRequest, LeaseCall, LeaseReply, PeerBody, PeerMessage};
use crate::errors;
use crate::member::{self, Identity, Member};
use crate::raft::{self, Config, ProposeError, Raft, Role};
use etcdproto::etcdserverpb::*;
use prost::Message as _;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, oneshot, watch};
use tokio::time::{Duration, Instant};
use tonic::Status;

/// One Raft tick (etcd's `--heartbeat-interval`, 100 ms by default).
pub const TICK_MS: u64 = 100;

/// Ticks without a leader's word before a follower stands for election
/// (etcd's `--election-timeout` of 1 s, in ticks); Raft draws each
/// timeout between this and twice this.
pub const ELECTION_TICKS: u32 = 10;

/// How long a member works on a request before it gives up: etcd's
/// request timeout, 5 s and two election timeouts.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(7);

/// How long a linearizable read waits for its read index before asking
/// again (a datagram may be lost).
const READ_RETRY: Duration = Duration::from_millis(500);

/// How long a forwarded lease call waits for the leader's reply before
/// it is sent again.
const LEASE_CALL_RETRY: Duration = Duration::from_millis(100);

/// How long a lease call waits before asking again when the leader's
/// lessor is not yet promoted (etcd's server sleeps 50 ms between its
/// tries when the lessor answers "not primary").
const NOT_PRIMARY_RETRY: Duration = Duration::from_millis(50);

/// How often the leader looks for expired leases, in ticks (etcd's
/// lessor looks every 500 ms).
const REVOKE_CHECK_TICKS: u64 = crate::lease::REVOKE_CHECK_MS / TICK_MS;

/// The port members talk to each other on.
pub const PEER_PORT: u16 = 2380;

/// The largest datagram between members.
const MAX_DATAGRAM: usize = 1 << 16;

/// Where one member sits in its cluster.
#[derive(Debug, Clone)]
pub struct Place {
    /// Its Raft ID, 1 to the cluster's size.
    pub raft_id: u64,
    /// How many voting members the cluster has.
    pub size: u64,
    /// Where each other member listens for its peers, by Raft ID: a
    /// machine name (turmoil resolves it) and a port.
    pub peers: BTreeMap<u64, (String, u16)>,
    /// Where its election timeouts come from.
    pub seed: u64,
    /// Whether it stands for election on its first tick after its first
    /// start, so that a fresh cluster's first leader is known (real mode
    /// moves the leadership of real members there before a run).
    pub first_leader: bool,
}

impl Place {
    /// The one member of a cluster of one.
    pub fn alone() -> Place {
        Place {
            raft_id: 1,
            size: 1,
            peers: BTreeMap::new(),
            seed: 0,
            first_leader: true,
        }
    }
}

/// What applying an entry answers its proposer.
enum Applied {
    Txn(TxnResponse),
    Grant(LeaseGrantResponse),
    Revoke(LeaseRevokeResponse),
    Compact(CompactionResponse),
}

type Answer = Result<Applied, Status>;

/// Requests and calls waiting on the log or on a peer.
#[derive(Default)]
struct Waiting {
    /// Proposals, by request ID: answered when this member applies them.
    proposals: BTreeMap<u64, oneshot::Sender<Answer>>,
    /// Linearizable reads, by context: answered with the read index.
    reads: BTreeMap<Vec<u8>, oneshot::Sender<u64>>,
    /// Lease calls forwarded to the leader, by call ID.
    lease_calls: BTreeMap<u64, oneshot::Sender<LeaseReply>>,
    /// Lease calls and replies to send, with their Raft ID.
    outbox: Vec<(u64, PeerMessage)>,
    /// Leases whose revoke the leader proposed, and when.
    revoking: BTreeMap<i64, Instant>,
}

struct Inner {
    member: Member,
    place: Place,
    raft: Mutex<Raft>,
    waiting: Mutex<Waiting>,
    /// Set when Raft has work for the driver (a proposal, a read).
    work: Notify,
    /// The index this member has applied up to.
    applied: watch::Sender<u64>,
    /// The leader's Raft ID as this member knows it (0: none).
    leader: watch::Sender<u64>,
    /// Whether this member's lessor counts leases' time: from its
    /// promotion until it learns it no longer leads.
    primary: AtomicBool,
    /// Starts of the member: request IDs of one start never meet
    /// another's, so an entry proposed before a crash answers nobody
    /// after it.
    incarnation: AtomicU64,
    requests: AtomicU64,
    started: AtomicBool,
}

/// A handle on one member of a cluster; clones share it.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("member", &self.inner.member)
            .field("raft_id", &self.inner.place.raft_id)
            .finish()
    }
}

impl Node {
    /// A member of a cluster, serving `member`'s store at `place`.
    pub fn new(member: Member, place: Place) -> Node {
        let config = Config {
            id: place.raft_id,
            voters: (1..=place.size).collect(),
            election_ticks: ELECTION_TICKS,
            heartbeat_ticks: 1,
            check_quorum: true,
            seed: place.seed ^ place.raft_id.rotate_left(32),
        };
        Node {
            inner: Arc::new(Inner {
                member,
                raft: Mutex::new(Raft::new(config)),
                place,
                waiting: Mutex::new(Waiting::default()),
                work: Notify::new(),
                applied: watch::Sender::new(0),
                leader: watch::Sender::new(0),
                primary: AtomicBool::new(false),
                incarnation: AtomicU64::new(0),
                requests: AtomicU64::new(0),
                started: AtomicBool::new(false),
            }),
        }
    }

    /// A cluster of one: `member` alone, its own leader.
    pub fn alone(member: Member) -> Node {
        Node::new(member, Place::alone())
    }

    /// Its state machine.
    pub fn member(&self) -> &Member {
        &self.inner.member
    }

    /// Where it sits in its cluster.
    pub fn place(&self) -> &Place {
        &self.inner.place
    }

    /// Whether it leads its cluster, as far as it knows.
    pub fn is_leader(&self) -> bool {
        self.raft().role() == Role::Leader
    }

    /// Whether its lessor answers lease calls: it leads and has applied
    /// its term's first entry. Before that its leases still carry the
    /// expiries it held as a follower, which nobody renewed, so it must
    /// not judge a lease by them (etcd's lessor answers "not primary").
    fn answers_leases(&self) -> bool {
        self.is_leader() && self.inner.primary.load(Ordering::SeqCst)
    }

    /// The leader's Raft ID as it knows it (0: none).
    pub fn leader(&self) -> u64 {
        self.raft().leader()
    }

    /// Its Raft term.
    pub fn term(&self) -> u64 {
        self.raft().term()
    }

    /// Hands the leadership to the member with Raft ID `to` (etcd's
    /// `move-leader`), if this member leads.
    pub fn transfer_leader(&self, to: u64) {
        self.raft().transfer_leader(to);
        self.inner.work.notify_one();
    }

    fn raft(&self) -> MutexGuard<'_, Raft> {
        // Raft's steps check before they change anything; a panic in
        // another task cannot leave it half-stepped.
        self.inner.raft.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.inner.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn next_id(&self) -> u64 {
        let n = self.inner.requests.fetch_add(1, Ordering::SeqCst) & ((1 << 40) - 1);
        let start = self.inner.incarnation.load(Ordering::SeqCst) & 0xffff;
        (self.inner.place.raft_id << 56) | (start << 40) | n
    }

    // ----- requests -----

    /// `Range`: linearizable unless `serializable`.
    pub async fn range(&self, req: &RangeRequest) -> Result<RangeResponse, Status> {
        if req.key.is_empty() {
            return Err(errors::empty_key());
        }
        if !req.serializable {
            self.read_barrier().await?;
        }
        self.member().range(req)
    }

    /// `Put`, as a one-operation transaction.
    pub async fn put(&self, req: &PutRequest) -> Result<PutResponse, Status> {
        member::put_response(self.txn(&member::put_txn(req)).await?)
    }

    /// `DeleteRange`, as a one-operation transaction.
    pub async fn delete_range(
        &self,
        req: &DeleteRangeRequest,
    ) -> Result<DeleteRangeResponse, Status> {
        member::delete_response(self.txn(&member::delete_txn(req)).await?)
    }

    /// `Txn`: a read-only one is a linearizable read, any other goes
    /// through the log.
    pub async fn txn(&self, req: &TxnRequest) -> Result<TxnResponse, Status> {
        member::check_txn(req)?;
        if member::is_read_only(req) {
            self.read_barrier().await?;
            return self.member().txn(req);
        }
        let asked = InternalRequest {
            txn: Some(req.clone()),
            ..InternalRequest::default()
        };
        match self.propose(asked).await? {
            Applied::Txn(r) => Ok(r),
            _ => Err(Status::internal("a transaction applied as something else")),
        }
    }

    /// `Compact`.
    pub async fn compact(&self, req: &CompactionRequest) -> Result<CompactionResponse, Status> {
        let asked = InternalRequest {
            compaction: Some(*req),
            ..InternalRequest::default()
        };
        match self.propose(asked).await? {
            Applied::Compact(r) => Ok(r),
            _ => Err(Status::internal("a compaction applied as something else")),
        }
    }

    /// `LeaseGrant`: this member chooses the ID when the client did not.
    pub async fn lease_grant(&self, req: &LeaseGrantRequest) -> Result<LeaseGrantResponse, Status> {
        let id = if req.id == 0 {
            self.member().fresh_lease_id()
        } else {
            req.id
        };
        let asked = InternalRequest {
            lease_grant: Some(LeaseGrantRequest { id, ttl: req.ttl }),
            ..InternalRequest::default()
        };
        match self.propose(asked).await? {
            Applied::Grant(r) => Ok(r),
            _ => Err(Status::internal("a grant applied as something else")),
        }
    }

    /// `LeaseRevoke`.
    pub async fn lease_revoke(&self, id: i64) -> Result<LeaseRevokeResponse, Status> {
        let asked = InternalRequest {
            lease_revoke: Some(LeaseRevokeRequest { id }),
            ..InternalRequest::default()
        };
        match self.propose(asked).await? {
            Applied::Revoke(r) => Ok(r),
            _ => Err(Status::internal("a revoke applied as something else")),
        }
    }

    /// One keep-alive: renewed by the leader, which a follower asks.
    pub async fn lease_keep_alive(&self, id: i64) -> Result<LeaseKeepAliveResponse, Status> {
        let reply = self
            .lease_call(LeaseCall {
                lease: id,
                ..LeaseCall::default()
            })
            .await?;
        Ok(LeaseKeepAliveResponse {
            header: Some(self.member().header()),
            id,
            ttl: reply.ttl,
        })
    }

    /// `LeaseTimeToLive`: the leader's count, which a follower asks.
    pub async fn lease_time_to_live(
        &self,
        req: &LeaseTimeToLiveRequest,
    ) -> Result<LeaseTimeToLiveResponse, Status> {
        let reply = self
            .lease_call(LeaseCall {
                lease: req.id,
                time_to_live: true,
                keys: req.keys,
                ..LeaseCall::default()
            })
            .await?;
        Ok(LeaseTimeToLiveResponse {
            header: Some(self.member().header()),
            id: req.id,
            ttl: reply.ttl,
            granted_ttl: reply.granted_ttl,
            keys: reply.keys,
        })
    }

    /// `Status`, with the leader as this member knows it.
    pub fn status(&self) -> StatusResponse {
        let (leader, term) = {
            let raft = self.raft();
            (raft.leader(), raft.term())
        };
        let mut status = self.member().status();
        status.leader = if leader == 0 {
            0
        } else {
            Identity::of_member(leader, self.inner.place.size).member_id
        };
        status.raft_term = header_term(term);
        status
    }

    /// `MemberList`: every member, this one reached at `client_url`.
    pub fn member_list(&self, client_url: &str) -> MemberListResponse {
        let place = &self.inner.place;
        let mut list = self.member().member_list(client_url);
        if place.size > 1 {
            list.members = (1..=place.size)
                .map(|raft_id| {
                    let id = Identity::of_member(raft_id, place.size);
                    let (peer, client) = match place.peers.get(&raft_id) {
                        Some((machine, port)) => (
                            format!("http://{machine}:{port}"),
                            format!("http://{machine}:{}", crate::server::CLIENT_PORT),
                        ),
                        None => (
                            format!("http://localhost:{PEER_PORT}"),
                            client_url.to_string(),
                        ),
                    };
                    etcdproto::etcdserverpb::Member {
                        id: id.member_id,
                        name: id.name,
                        peer_ur_ls: vec![peer],
                        client_ur_ls: vec![client],
                        is_learner: false,
                    }
                })
                .collect();
        }
        list
    }

    /// Proposes `asked` and waits until this member applies it.
    async fn propose(&self, mut asked: InternalRequest) -> Answer {
        let id = self.next_id();
        asked.id = id;
        let data = asked.encode_to_vec();
        let (tx, rx) = oneshot::channel();
        self.waiting().proposals.insert(id, tx);
        let answer = async {
            self.until_accepted(|raft| raft.propose(data.clone())).await;
            rx.await.unwrap_or_else(|_| Err(errors::stopped()))
        };
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, answer).await;
        self.waiting().proposals.remove(&id);
        answer.unwrap_or_else(|_| Err(errors::request_timed_out()))
    }

    /// Hands Raft a proposal or a read until it takes it: with no leader
    /// known, it waits for one (the caller's timeout bounds the wait).
    async fn until_accepted(&self, mut hand: impl FnMut(&mut Raft) -> Result<(), ProposeError>) {
        let mut leader = self.inner.leader.subscribe();
        loop {
            leader.borrow_and_update();
            let taken = hand(&mut self.raft());
            if taken.is_ok() {
                self.inner.work.notify_one();
                return;
            }
            if leader.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Waits until this member has applied everything the leader had
    /// committed when the read began.
    async fn read_barrier(&self) -> Result<(), Status> {
        let context = self.next_id().to_be_bytes().to_vec();
        let (tx, mut rx) = oneshot::channel();
        self.waiting().reads.insert(context.clone(), tx);
        let read = async {
            loop {
                self.until_accepted(|raft| raft.read_index(context.clone()))
                    .await;
                match tokio::time::timeout(READ_RETRY, &mut rx).await {
                    Ok(Ok(index)) => break Ok(index),
                    Ok(Err(_)) => break Err(errors::stopped()),
                    Err(_) => continue,
                }
            }
        };
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let index = tokio::time::timeout_at(deadline, read).await;
        self.waiting().reads.remove(&context);
        let index = index.unwrap_or_else(|_| Err(errors::request_timed_out()))?;
        let mut applied = self.inner.applied.subscribe();
        match tokio::time::timeout_at(deadline, applied.wait_for(|a| *a >= index)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(errors::stopped()),
            Err(_) => Err(errors::request_timed_out()),
        }
    }

    /// A lease call: answered here by a leader, else forwarded to the
    /// leader until it answers or the request times out.
    async fn lease_call(&self, mut call: LeaseCall) -> Result<LeaseReply, Status> {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut leader_changes = self.inner.leader.subscribe();
        loop {
            let leader = {
                let raft = self.raft();
                if raft.role() == Role::Leader {
                    None
                } else {
                    Some(raft.leader())
                }
            };
            let Some(leader) = leader else {
                if self.inner.primary.load(Ordering::SeqCst) {
                    return Ok(self.answer_locally(&call));
                }
                // A leader not yet promoted: ask again shortly, as etcd's
                // server does on "not primary", never "no such lease".
                if Instant::now() + NOT_PRIMARY_RETRY >= deadline {
                    return Err(errors::request_timed_out());
                }
                tokio::time::sleep(NOT_PRIMARY_RETRY).await;
                continue;
            };
            if leader == 0 {
                leader_changes.borrow_and_update();
                match tokio::time::timeout_at(deadline, leader_changes.changed()).await {
                    Ok(Ok(())) => continue,
                    _ => return Err(errors::no_leader()),
                }
            }
            call.call = self.next_id();
            call.from = self.inner.place.raft_id;
            let (tx, rx) = oneshot::channel();
            {
                let mut waiting = self.waiting();
                waiting.lease_calls.insert(call.call, tx);
                waiting.outbox.push((
                    leader,
                    PeerMessage {
                        body: Some(PeerBody::LeaseCall(call.clone())),
                    },
                ));
            }
            self.inner.work.notify_one();
            let reply = tokio::time::timeout(LEASE_CALL_RETRY, rx).await;
            self.waiting().lease_calls.remove(&call.call);
            if let Ok(Ok(reply)) = reply {
                return Ok(reply);
            }
            if Instant::now() >= deadline {
                return Err(errors::request_timed_out());
            }
        }
    }

    /// A leader's answer to a lease call: its own lessor counts.
    fn answer_locally(&self, call: &LeaseCall) -> LeaseReply {
        let member = self.member();
        if call.time_to_live {
            let r = member.lease_time_to_live(&LeaseTimeToLiveRequest {
                id: call.lease,
                keys: call.keys,
            });
            LeaseReply {
                call: call.call,
                ttl: r.ttl,
                granted_ttl: r.granted_ttl,
                keys: r.keys,
            }
        } else {
            LeaseReply {
                call: call.call,
                ttl: member.lease_keep_alive(call.lease).ttl,
                ..LeaseReply::default()
            }
        }
    }

    // ----- the driver's side -----

    /// A start of the member's process: Raft keeps its log and vote,
    /// everything volatile starts over, and every caller of the last
    /// start is gone.
    fn restart(&self) {
        self.raft().restart();
        *self.waiting() = Waiting::default();
        self.inner.primary.store(false, Ordering::SeqCst);
        self.inner.incarnation.fetch_add(1, Ordering::SeqCst);
        self.inner.leader.send_replace(0);
    }

    /// When this start stands for election before its timeout: a member
    /// alone at once (it is the only voter, and etcd fast-forwards its
    /// ticks), the cluster's first leader on the first tick of its first
    /// start (its peers have bound their sockets by then).
    fn early_campaign(&self) -> EarlyCampaign {
        let place = &self.inner.place;
        let first = !self.inner.started.swap(true, Ordering::SeqCst);
        if place.size == 1 {
            EarlyCampaign::AtOnce
        } else if first && place.first_leader {
            EarlyCampaign::FirstTick
        } else {
            EarlyCampaign::No
        }
    }

    fn tick(&self, ticks: u64, campaign: bool) {
        let mut raft = self.raft();
        if campaign {
            raft.campaign();
        } else {
            raft.tick();
        }
        drop(raft);
        if ticks.is_multiple_of(REVOKE_CHECK_TICKS) {
            self.revoke_expired();
        }
    }

    /// The leader proposes the revoke of every lease whose time is up,
    /// again after [`REQUEST_TIMEOUT`] if it did not go through.
    fn revoke_expired(&self) {
        if !self.inner.primary.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let expired = self.member().expired_leases(now);
        if expired.is_empty() {
            return;
        }
        let mut raft = self.raft();
        let mut waiting = self.waiting();
        for id in expired {
            if (waiting.revoking.get(&id)).is_some_and(|at| now < *at + REQUEST_TIMEOUT) {
                continue;
            }
            let revoke = InternalRequest {
                lease_revoke: Some(LeaseRevokeRequest { id }),
                expired: true,
                ..InternalRequest::default()
            };
            if raft.propose(revoke.encode_to_vec()).is_ok() {
                waiting.revoking.insert(id, now);
            }
        }
    }

    /// A datagram from a peer. One that does not decode is dropped, as a
    /// lost one would be.
    fn receive(&self, bytes: &[u8]) {
        let Ok(message) = PeerMessage::decode(bytes) else {
            return;
        };
        match message.body {
            Some(PeerBody::Raft(m)) => self.raft().step(m),
            // Only a promoted leader answers; the caller asks again until
            // it finds the one that leads and has been promoted.
            Some(PeerBody::LeaseCall(call)) if self.answers_leases() => {
                let reply = self.answer_locally(&call);
                self.waiting().outbox.push((
                    call.from,
                    PeerMessage {
                        body: Some(PeerBody::LeaseReply(reply)),
                    },
                ));
            }
            Some(PeerBody::LeaseCall(_)) => {}
            Some(PeerBody::LeaseReply(reply)) => {
                if let Some(tx) = self.waiting().lease_calls.remove(&reply.call) {
                    let _ = tx.send(reply);
                }
            }
            None => {}
        }
    }

    /// Takes what Raft has ready and acts on it: applies committed
    /// entries and answers reads first, with no pause in between (a crash
    /// cannot come between taking an entry and applying it), then sends.
    fn take_ready(&self) -> Vec<(u64, PeerMessage)> {
        let (ready, role, leader, term) = {
            let mut raft = self.raft();
            let ready = raft.ready();
            (ready, raft.role(), raft.leader(), raft.term())
        };
        self.member().set_raft_term(header_term(term));
        if role != Role::Leader {
            self.inner.primary.store(false, Ordering::SeqCst);
        }
        for entry in ready.committed {
            self.apply(entry, role, term);
        }
        self.inner.leader.send_if_modified(|known| {
            let changed = *known != leader;
            *known = leader;
            changed
        });
        let mut waiting = self.waiting();
        for read in ready.read_states {
            if let Some(tx) = waiting.reads.remove(&read.context) {
                let _ = tx.send(read.index);
            }
        }
        let mut out: Vec<(u64, PeerMessage)> = (ready.messages.into_iter())
            .map(|m| {
                (
                    m.to,
                    PeerMessage {
                        body: Some(PeerBody::Raft(m)),
                    },
                )
            })
            .collect();
        out.append(&mut waiting.outbox);
        out
    }

    fn apply(&self, entry: raft::Entry, role: Role, term: u64) {
        if entry.data.is_empty() {
            // A new leader's first entry: etcd promotes its lessor when it
            // applies it.
            if role == Role::Leader && entry.term == term {
                self.member().refresh_leases();
                self.inner.primary.store(true, Ordering::SeqCst);
            }
        } else if let Ok(asked) = InternalRequest::decode(entry.data.as_slice()) {
            self.apply_request(asked);
        }
        self.inner.applied.send_replace(entry.index);
    }

    fn apply_request(&self, asked: InternalRequest) {
        let member = self.member();
        let answer = if let Some(txn) = &asked.txn {
            member.txn(txn).map(Applied::Txn)
        } else if let Some(grant) = &asked.lease_grant {
            member.lease_grant(grant).map(Applied::Grant)
        } else if let Some(revoke) = &asked.lease_revoke {
            if asked.expired {
                self.waiting().revoking.remove(&revoke.id);
            }
            (member.revoke(revoke.id, asked.expired)).map(Applied::Revoke)
        } else if let Some(compaction) = &asked.compaction {
            member.compact(compaction).map(Applied::Compact)
        } else {
            Err(Status::internal("an empty request in the log"))
        };
        if let Some(tx) = self.waiting().proposals.remove(&asked.id) {
            let _ = tx.send(answer);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EarlyCampaign {
    AtOnce,
    FirstTick,
    No,
}

/// The term a header shows for Raft's `term`: etcd bootstraps a member at
/// term 1 (its first configuration entries), so its first election is
/// term 2; this Raft has no bootstrap entries and starts at 0.
fn header_term(term: u64) -> u64 {
    term + 1
}

/// How a member reaches its peers.
pub enum Transport {
    /// A member alone: nobody to reach.
    Alone,
    /// turmoil's simulated UDP: one datagram per message, lost when a
    /// partition or a crash is in the way (Raft sends again).
    Sim {
        /// The member's socket on [`PEER_PORT`].
        socket: turmoil::net::UdpSocket,
        /// Each peer's address, by Raft ID.
        peers: BTreeMap<u64, SocketAddr>,
    },
}

impl Transport {
    async fn receive(&self, buf: &mut [u8]) -> usize {
        match self {
            Transport::Alone => std::future::pending().await,
            Transport::Sim { socket, .. } => loop {
                if let Ok((n, _)) = socket.recv_from(buf).await {
                    break n;
                }
            },
        }
    }

    async fn send(&self, to: u64, message: &PeerMessage) {
        if let Transport::Sim { socket, peers } = self
            && let Some(addr) = peers.get(&to)
        {
            // A datagram that cannot go is as good as lost.
            let _ = socket.send_to(&message.encode_to_vec(), *addr).await;
        }
    }
}

/// Runs the member's Raft for as long as its process runs: ticks,
/// datagrams from peers, and the work requests bring.
pub async fn drive(node: Node, transport: Transport) {
    node.restart();
    let early = node.early_campaign();
    if early == EarlyCampaign::AtOnce {
        node.raft().campaign();
        for (to, message) in node.take_ready() {
            transport.send(to, &message).await;
        }
    }
    let mut campaign = early == EarlyCampaign::FirstTick;
    let mut ticker = tokio::time::interval(Duration::from_millis(TICK_MS));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut ticks = 0u64;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                ticks += 1;
                node.tick(ticks, std::mem::take(&mut campaign));
            }
            n = transport.receive(&mut buf) => node.receive(&buf[..n]),
            _ = node.inner.work.notified() => {}
        }
        for (to, message) in node.take_ready() {
            transport.send(to, &message).await;
        }
    }
}
