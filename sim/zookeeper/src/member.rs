//! A server as a member of an ensemble: its ZAB core ([`crate::zab`]),
//! driven on the server's tick and by datagrams from its peers, and the
//! client requests that wait on it.
//!
//! # How a request runs
//!
//! - A **write** (and a new session's createSession, and a closeSession)
//!   goes to the leader: the leader proposes it through ZAB, a follower
//!   forwards it to the leader over the peer link first. Every member
//!   applies committed transactions in zxid order, fires its own clients'
//!   watches and tells its observers; the member the client is connected
//!   to answers it when it has applied the transaction itself.
//! - A **read** is answered from the member's own tree, at once: a
//!   follower may lag its leader, as in ZooKeeper.
//! - **`sync`** goes through [`Zab::sync`]: the answer waits until this
//!   member has applied everything the leader had proposed when the sync
//!   reached it, so a read after it sees every write acknowledged before.
//!
//! # Sessions
//!
//! Every member knows every session (createSession and closeSession are
//! transactions), but only the leader counts their time, as ZooKeeper's
//! leader runs the session tracker: each member notes the sessions its
//! clients touch and, at every tick, a follower sends them to its leader
//! (ZooKeeper's `LearnerSessionTracker`, sent with its pings). A session
//! expires on the leader's clock, as a closeSession through ZAB; a new
//! leader gives every session its full timeout from when it takes office,
//! since it cannot know how long its predecessor had counted.
//!
//! A client that resumes its session on a follower waits, as in
//! ZooKeeper, for the leader to **revalidate** it: the leader checks the
//! session on its own clock, records this member as the session's owner,
//! and answers with how far it had committed. The follower completes the
//! handshake once it has applied that far, as the answer would reach it
//! behind those commits on ZooKeeper's ordered link. A write forwarded by
//! a member that no longer owns its session (one sent before the client
//! moved, and held on the way) fails with `SessionMoved` instead of being
//! applied, as ZooKeeper's leader refuses it: otherwise a client that
//! looked for its node from its new server, and created it again, would
//! find the old create landing behind it.
//!
//! # Serving
//!
//! A member serves clients only while [`Zab::is_serving`]: a follower in
//! sync with its leader, a leader that a quorum follows. When its role
//! changes or it stops serving, it closes its client connections (each
//! client moves along its server list, its session intact) and refuses
//! new ones; the requests under way are dropped unanswered.
//!
//! # What outlives a crash
//!
//! The [`Server`] lives outside its simulated host, as
//! ZooKeeper's data directory outlives its process: the tree as applied,
//! the sessions, and ZAB's [`Durable`](crate::zab::Durable) (the log and
//! epochs). A restart loses the role, the connections and the requests
//! under way, and starts a new election.
//!
//! # What it simplifies
//!
//! - **The log holds requests, not prepped transactions.** ZooKeeper's
//!   leader preps each write against its tree and its outstanding changes
//!   and logs the transaction; here the leader orders the request (with
//!   its session and the leader's wall-clock time) and every member preps
//!   it at apply. Prep is a pure function of the tree at that zxid, so
//!   every member derives the transaction ZooKeeper's leader would have.
//! - **A forwarded write is sent once.** Datagrams may be lost; a lost
//!   one leaves its client unanswered until the member drops its clients
//!   (a lost leader) or the client gives up, as a broken connection would
//!   in ZooKeeper.
//! - Members talk over turmoil's UDP only: an ensemble runs on turmoil,
//!   `serve_tcp` serves standalone servers.
//!
//! # Use
//!
//! Build one [`Server::member`](crate::Server::member) per machine, keep
//! it outside the host (it is what survives a crash) and serve it with
//! [`serve_sim`](crate::serve_sim), as a standalone server is served:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use simzk::{CLIENT_PORT, Config, Place, Server, serve_sim};
//!
//! let hosts = ["zk1", "zk2", "zk3"];
//! let mut sim = turmoil::Builder::new()
//!     .simulation_duration(Duration::from_secs(30))
//!     .rng_seed(7)
//!     .build();
//! let servers: Vec<Server> = (1..=3)
//!     .map(|id| {
//!         let config = Config::new(Arc::new(|| 0));
//!         let server = Server::member(config, Place::of(id, &hosts, 7));
//!         let s = server.clone();
//!         sim.host(hosts[id as usize - 1], move || serve_sim(s.clone(), CLIENT_PORT));
//!         server
//!     })
//!     .collect();
//! let watch = servers.clone();
//! sim.client("wait", async move {
//!     while !watch.iter().all(Server::is_serving) {
//!         tokio::time::sleep(Duration::from_millis(100)).await;
//!     }
//!     Ok(())
//! });
//! sim.run().unwrap();
//! let leaders = servers.iter().filter(|s| s.role() == Some(simzk::zab::Role::Leading));
//! assert_eq!(leaders.count(), 1);
//! ```

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;

use zkproto::codes::{ErrorCode, OpCode};
use zkproto::jute::Reader;

use crate::core::{CONTAINER_SWEEP_MS, Config, Server, State, decode_write};
use crate::prep::{Write, prep};
use crate::txn::{Txn, TxnKind};
use crate::watch::ConnId;
use crate::zab::{self, Message, Role, Zab};

/// The port members talk to each other on (ZooKeeper's quorum port).
pub const PEER_PORT: u16 = 2888;

/// The largest datagram between members.
const MAX_DATAGRAM: usize = 1 << 16;

/// Where one member sits in its ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its id (ZooKeeper's `myid`), non-zero; the top byte of the session
    /// ids it gives out.
    pub id: u64,
    /// Every other member, by id: a machine name (turmoil resolves it) and
    /// its peer port.
    pub peers: BTreeMap<u64, (String, u16)>,
    /// Where its election jitter comes from.
    pub seed: u64,
}

impl Place {
    /// Member `id` of an ensemble whose members are on the machines
    /// `hosts` (member `i + 1` on `hosts[i]`), each on [`PEER_PORT`].
    pub fn of(id: u64, hosts: &[&str], seed: u64) -> Place {
        let peers = hosts
            .iter()
            .enumerate()
            .map(|(i, host)| (i as u64 + 1, (host.to_string(), PEER_PORT)))
            .filter(|(peer, _)| *peer != id)
            .collect();
        Place { id, peers, seed }
    }

    /// Every voter's id, this one's included.
    pub fn voters(&self) -> Vec<u64> {
        let mut voters: Vec<u64> = self.peers.keys().copied().collect();
        voters.push(self.id);
        voters.sort_unstable();
        voters.dedup();
        voters
    }
}

/// A client request waiting for its transaction to be applied here.
#[derive(Debug)]
enum Pending {
    /// A write: answered as [`State::answer_write`] answers.
    Write { conn: ConnId, xid: i32, op: OpCode },
    /// A new session's connect.
    Connect {
        conn: ConnId,
        timeout_ms: i32,
        read_only: Option<bool>,
    },
    /// A closeSession: answered, then the connection closes.
    Close { conn: ConnId, xid: i32 },
}

/// A member's volatile and durable ensemble state, kept in the server's
/// [`State`].
pub(crate) struct Member {
    place: Place,
    zab_config: zab::Config,
    /// The core; its [`Durable`](crate::zab::Durable) survives restarts.
    pub(crate) zab: Zab,
    /// Starts of this member: request ids of one start never meet
    /// another's.
    incarnation: u64,
    next_request: u64,
    pending: BTreeMap<u64, Pending>,
    /// Syncs under way: their connection, xid and answer body.
    syncs: BTreeMap<u64, (ConnId, i32, Vec<u8>)>,
    /// Resumed sessions waiting for the leader's revalidation, by id.
    resumes: BTreeMap<u64, Resume>,
    /// The leader's record of which member each session's client is
    /// connected to (ZooKeeper's session owner).
    owners: BTreeMap<i64, u64>,
    /// Sessions this member's clients touched since the last tick, with
    /// their timeouts.
    pub(crate) touched: BTreeMap<i64, i32>,
    /// Datagrams to send, by member id.
    outbox: Vec<(u64, Vec<u8>)>,
}

impl Member {
    /// A member at `place`, with an empty history.
    pub(crate) fn new(config: &Config, place: Place) -> Member {
        let zab_config = zab::Config {
            tick_ms: config.tick_ms.max(1),
            ..zab::Config::new(place.id, &place.voters(), place.seed ^ place.id)
        };
        Member {
            zab: Zab::new(zab_config.clone()),
            zab_config,
            place,
            incarnation: 0,
            next_request: 0,
            pending: BTreeMap::new(),
            syncs: BTreeMap::new(),
            resumes: BTreeMap::new(),
            owners: BTreeMap::new(),
            touched: BTreeMap::new(),
            outbox: Vec::new(),
        }
    }

    /// A new start: ZAB back from its durable state, Looking; everything
    /// volatile forgotten.
    pub(crate) fn restart(&mut self) {
        self.zab = Zab::restart(self.zab.durable().clone(), self.zab_config.clone());
        self.incarnation += 1;
        self.pending.clear();
        self.syncs.clear();
        self.resumes.clear();
        self.owners.clear();
        self.touched.clear();
        self.outbox.clear();
    }

    /// The leader's session-owner check (ZooKeeper's `checkSession`): a
    /// createSession makes its member the owner; any other write from a
    /// member that does not own its session becomes `SessionMoved`. A
    /// session without a recorded owner (under a new leader) takes the
    /// first member it hears from, as ZooKeeper's does.
    fn check_owner(&mut self, request: &mut Request) {
        if request.origin == 0 {
            return;
        }
        let from = member_of(request.origin);
        match OpCode::from_code(request.op) {
            Some(OpCode::CreateSession) => {
                self.owners.insert(request.session, from);
            }
            Some(OpCode::CloseSession) => {}
            _ => {
                let owner = *self.owners.entry(request.session).or_insert(from);
                if owner != from {
                    request.op = MOVED_OP;
                }
            }
        }
    }

    /// Asks the leader to revalidate resume `id` (sent again each tick
    /// until it answers: datagrams may be lost).
    fn send_revalidate(&mut self, leader: u64, id: u64) {
        let Some(resume) = self.resumes.get(&id) else {
            return;
        };
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(&resume.session.to_be_bytes());
        body.extend_from_slice(&resume.timeout_ms.to_be_bytes());
        let datagram = envelope(TAG_REVALIDATE, self.place.id, &body);
        self.outbox.push((leader, datagram));
    }

    /// A request id no other request of this ensemble has: the member's
    /// id, its start, a counter.
    fn next_id(&mut self) -> u64 {
        self.next_request += 1;
        (self.place.id << 56) | ((self.incarnation & 0xffff) << 40) | self.next_request
    }

    /// Whether a request id is one of this member's.
    fn is_mine(&self, origin: u64) -> bool {
        origin != 0 && member_of(origin) == self.place.id
    }
}

/// The `N` bytes of `body` from `at`, if it has them (for a big-endian
/// number of a peer's datagram).
fn be_bytes<const N: usize>(body: &[u8], at: usize) -> Option<[u8; N]> {
    body.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// The member a request id came from.
fn member_of(origin: u64) -> u64 {
    origin >> 56
}

/// A resumed session's handshake, waiting on the leader.
#[derive(Debug)]
struct Resume {
    conn: ConnId,
    session: i64,
    timeout_ms: i32,
    read_only: Option<bool>,
    /// The leader's committed zxid when it revalidated the session; `None`
    /// until it answers.
    applied_by: Option<u64>,
}

// ----- What members send each other -----

const TAG_ZAB: u8 = 0;
const TAG_FORWARD: u8 = 1;
const TAG_TOUCH: u8 = 2;
const TAG_REVALIDATE: u8 = 3;
const TAG_REVALIDATED: u8 = 4;

/// The op a leader logs in place of a write whose session moved to
/// another member: applied everywhere as a `SessionMoved` error.
const MOVED_OP: i32 = i32::MIN;

/// A request on its way to the leader or in the log: who asked (0: the
/// server itself), for which session, and the request's op and record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    origin: u64,
    session: i64,
    op: i32,
    body: Vec<u8>,
}

impl Request {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.origin.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.op.to_be_bytes());
        out.extend_from_slice(&self.body);
    }

    fn take(bytes: &[u8]) -> Option<Request> {
        let origin = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
        let session = i64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
        let op = i32::from_be_bytes(bytes.get(16..20)?.try_into().ok()?);
        Some(Request {
            origin,
            session,
            op,
            body: bytes[20..].to_vec(),
        })
    }
}

/// A logged transaction: the leader's wall-clock time, then the request.
fn encode_entry(time_ms: i64, request: &Request) -> Vec<u8> {
    let mut out = time_ms.to_be_bytes().to_vec();
    request.put(&mut out);
    out
}

fn decode_entry(bytes: &[u8]) -> Option<(i64, Request)> {
    let time_ms = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    Some((time_ms, Request::take(&bytes[8..])?))
}

fn envelope(tag: u8, from: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + body.len());
    out.push(tag);
    out.extend_from_slice(&from.to_be_bytes());
    out.extend_from_slice(body);
    out
}

// ----- The member's work, under the server's lock -----

impl State {
    fn member_mut(&mut self) -> &mut Member {
        self.member.as_mut().expect("an ensemble member")
    }

    /// Hands `request` to the leader: proposed here when this member
    /// leads, forwarded otherwise. False when there is no serving leader.
    fn submit(&mut self, mut request: Request) -> bool {
        let time_ms = (self.config.wall_clock_ms)();
        let member = self.member_mut();
        if member.zab.role() == Role::Leading {
            member.check_owner(&mut request);
            return member.zab.propose(encode_entry(time_ms, &request)).is_ok();
        }
        let Some(leader) = member.zab.leader() else {
            return false;
        };
        let mut body = Vec::new();
        request.put(&mut body);
        let datagram = envelope(TAG_FORWARD, member.place.id, &body);
        member.outbox.push((leader, datagram));
        true
    }

    /// A client's write (`body`: its record): sent to the leader, answered
    /// when applied here.
    pub(crate) fn member_write(
        &mut self,
        conn: ConnId,
        session: i64,
        xid: i32,
        op: OpCode,
        body: &[u8],
    ) {
        let member = self.member_mut();
        let origin = member.next_id();
        member
            .pending
            .insert(origin, Pending::Write { conn, xid, op });
        let request = Request {
            origin,
            session,
            op: op.code(),
            body: body.to_vec(),
        };
        if !self.submit(request) {
            self.member_mut().pending.remove(&origin);
            self.close(conn);
        }
    }

    /// A new session: its createSession goes to the leader; the connect is
    /// answered when it is applied here.
    pub(crate) fn member_connect(
        &mut self,
        conn: ConnId,
        timeout_ms: i32,
        read_only: Option<bool>,
    ) -> bool {
        let id = self.sessions.reserve_id();
        let member = self.member_mut();
        let origin = member.next_id();
        member.pending.insert(
            origin,
            Pending::Connect {
                conn,
                timeout_ms,
                read_only,
            },
        );
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.handshaking = true;
        }
        let request = Request {
            origin,
            session: id,
            op: OpCode::CreateSession.code(),
            body: timeout_ms.to_be_bytes().to_vec(),
        };
        if self.submit(request) {
            true
        } else {
            self.member_mut().pending.remove(&origin);
            self.close(conn);
            false
        }
    }

    /// A client's closeSession: answered when applied here.
    pub(crate) fn member_close(&mut self, conn: ConnId, session: i64, xid: i32) {
        let member = self.member_mut();
        let origin = member.next_id();
        member.pending.insert(origin, Pending::Close { conn, xid });
        let request = Request {
            origin,
            session,
            op: OpCode::CloseSession.code(),
            body: vec![0],
        };
        if !self.submit(request) {
            self.member_mut().pending.remove(&origin);
            self.close(conn);
        }
    }

    /// A client resuming `session` here: a leader checks it on its own
    /// clock, takes note of the owner and answers at once; a follower asks
    /// its leader and answers once revalidated and caught up (see the
    /// module docs). False when the connection is to be closed.
    pub(crate) fn member_resume(
        &mut self,
        conn: ConnId,
        session: i64,
        timeout_ms: i32,
        read_only: Option<bool>,
    ) -> bool {
        let role = self.member_mut().zab.role();
        if role == Role::Leading {
            let now = self.now_ms();
            let alive = self.sessions.touch(session, timeout_ms, now);
            if alive {
                let member = self.member_mut();
                let me = member.place.id;
                member.owners.insert(session, me);
                member.touched.insert(session, timeout_ms);
            }
            return self.answer_connect(conn, alive.then_some(session), timeout_ms, read_only);
        }
        let member = self.member_mut();
        let Some(leader) = member.zab.leader() else {
            self.close(conn);
            return false;
        };
        let id = member.next_id();
        member.resumes.insert(
            id,
            Resume {
                conn,
                session,
                timeout_ms,
                read_only,
                applied_by: None,
            },
        );
        member.send_revalidate(leader, id);
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.handshaking = true;
        }
        true
    }

    /// The leader's revalidation of a session a follower's client resumed:
    /// alive on the leader's clock (and then owned by that follower), and
    /// how far the leader had committed.
    fn revalidate(&mut self, from: u64, body: &[u8]) {
        let (Some(id), Some(session), Some(timeout_ms)) = (
            be_bytes(body, 0).map(u64::from_be_bytes),
            be_bytes(body, 8).map(i64::from_be_bytes),
            be_bytes(body, 16).map(i32::from_be_bytes),
        ) else {
            return;
        };
        let now = self.now_ms();
        let alive = self.sessions.touch(session, timeout_ms, now);
        let member = self.member_mut();
        if alive {
            member.owners.insert(session, from);
        }
        let mut reply = id.to_be_bytes().to_vec();
        reply.push(u8::from(alive));
        reply.extend_from_slice(&member.zab.durable().committed.to_be_bytes());
        let datagram = envelope(TAG_REVALIDATED, member.place.id, &reply);
        member.outbox.push((from, datagram));
    }

    /// The leader's answer to a revalidation: a dead session is refused at
    /// once, a live one waits until this member applied what the leader
    /// had committed.
    fn revalidated(&mut self, body: &[u8]) {
        let (Some(id), Some(&alive), Some(committed)) = (
            be_bytes(body, 0).map(u64::from_be_bytes),
            body.get(8),
            be_bytes(body, 9).map(u64::from_be_bytes),
        ) else {
            return;
        };
        let member = self.member_mut();
        let Some(resume) = member.resumes.get_mut(&id) else {
            return;
        };
        if alive == 1 {
            resume.applied_by.get_or_insert(committed);
        } else if let Some(resume) = member.resumes.remove(&id) {
            self.answer_connect(resume.conn, None, resume.timeout_ms, resume.read_only);
        }
    }

    /// Completes the revalidated handshakes this member has caught up for.
    fn finish_resumes(&mut self) {
        let member = self.member_mut();
        let applied = member.zab.durable().delivered;
        let done: Vec<u64> = member
            .resumes
            .iter()
            .filter(|(_, r)| r.applied_by.is_some_and(|zxid| zxid <= applied))
            .map(|(&id, _)| id)
            .collect();
        for id in done {
            let Some(resume) = self.member_mut().resumes.remove(&id) else {
                continue;
            };
            let now = self.now_ms();
            let alive = self.sessions.touch(resume.session, resume.timeout_ms, now);
            if alive {
                self.member_mut()
                    .touched
                    .insert(resume.session, resume.timeout_ms);
            }
            let session = alive.then_some(resume.session);
            self.answer_connect(resume.conn, session, resume.timeout_ms, resume.read_only);
        }
    }

    /// A client's `sync`: answered with `body` once this member has caught
    /// up with the leader.
    pub(crate) fn member_sync(&mut self, conn: ConnId, xid: i32, body: Vec<u8>) {
        let member = self.member_mut();
        let id = member.next_id();
        if member.zab.sync(id).is_ok() {
            member.syncs.insert(id, (conn, xid, body));
        } else {
            self.close(conn);
        }
    }

    /// One tick: ZAB's, then the leader's session expiry and container
    /// sweep, or a follower's touches sent to its leader.
    fn member_tick(&mut self) {
        self.member_mut().zab.tick();
        let now = self.now_ms();
        let (role, serving) = {
            let zab = &self.member_mut().zab;
            (zab.role(), zab.is_serving())
        };
        match role {
            Role::Leading if serving => {
                for session in self.sessions.expire(now) {
                    self.submit(Request {
                        origin: 0,
                        session,
                        op: OpCode::CloseSession.code(),
                        body: vec![1],
                    });
                }
                if now >= self.next_sweep_ms {
                    self.next_sweep_ms = now - now % CONTAINER_SWEEP_MS + CONTAINER_SWEEP_MS;
                    for path in self.tree.empty_containers() {
                        self.submit(Request {
                            origin: 0,
                            session: 0,
                            op: OpCode::DeleteContainer.code(),
                            body: path.into_bytes(),
                        });
                    }
                }
            }
            Role::Following(leader) if serving => {
                // A client that gave up on its handshake is not revalidated
                // any more: a late revalidation would move its session
                // back here, away from the member it went on to.
                let conns = &self.conns;
                let member = self.member.as_mut().expect("an ensemble member");
                member.resumes.retain(|_, r| conns.contains_key(&r.conn));
                let unanswered: Vec<u64> = member
                    .resumes
                    .iter()
                    .filter(|(_, r)| r.applied_by.is_none())
                    .map(|(&id, _)| id)
                    .collect();
                for id in unanswered {
                    member.send_revalidate(leader, id);
                }
                let touched = std::mem::take(&mut member.touched);
                if !touched.is_empty() {
                    let mut body = Vec::with_capacity(12 * touched.len());
                    for (session, timeout_ms) in touched {
                        body.extend_from_slice(&session.to_be_bytes());
                        body.extend_from_slice(&timeout_ms.to_be_bytes());
                    }
                    let datagram = envelope(TAG_TOUCH, member.place.id, &body);
                    member.outbox.push((leader, datagram));
                }
            }
            _ => {}
        }
        self.member_mut().touched.clear();
        self.member_ready();
    }

    /// A datagram from a peer.
    fn member_receive(&mut self, datagram: &[u8]) {
        let (Some(&tag), Some(from)) = (
            datagram.first(),
            datagram
                .get(1..9)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes),
        ) else {
            return;
        };
        let body = &datagram[9..];
        match tag {
            TAG_ZAB => {
                if let Ok(message) = Message::decode(body) {
                    self.member_mut().zab.step(from, message);
                }
            }
            TAG_FORWARD => {
                if let Some(request) = Request::take(body)
                    && self.member_mut().zab.role() == Role::Leading
                {
                    self.submit(request);
                }
            }
            TAG_REVALIDATE
                if self.member_mut().zab.role() == Role::Leading
                    && self.member_mut().zab.is_serving() =>
            {
                self.revalidate(from, body);
            }
            TAG_REVALIDATED => self.revalidated(body),
            TAG_TOUCH if self.member_mut().zab.role() == Role::Leading => {
                let now = self.now_ms();
                for touch in body.chunks_exact(12) {
                    let (session, timeout) = touch.split_at(8);
                    let session = i64::from_be_bytes(session.try_into().unwrap_or_default());
                    let timeout = i32::from_be_bytes(timeout.try_into().unwrap_or_default());
                    self.sessions.touch(session, timeout, now);
                }
            }
            _ => {}
        }
        self.member_ready();
    }

    /// Takes what ZAB has ready: messages into the outbox, committed
    /// transactions applied in order (their waiting clients answered),
    /// clients dropped when the role changed or serving stopped, a new
    /// leader's session clocks started, syncs answered.
    pub(crate) fn member_ready(&mut self) {
        let member = self.member_mut();
        let ready = member.zab.ready();
        let me = member.place.id;
        for (to, message) in ready.messages {
            let datagram = envelope(TAG_ZAB, me, &message.encode());
            member.outbox.push((to, datagram));
        }
        for (zxid, entry) in ready.committed {
            self.apply_entry(zxid as i64, &entry);
        }
        if ready.role_changed.is_some() || ready.serving_changed == Some(false) {
            let member = self.member_mut();
            member.pending.clear();
            member.syncs.clear();
            member.resumes.clear();
            member.owners.clear();
            member.touched.clear();
            for conn in self.conns.keys() {
                self.close(*conn);
            }
        }
        let member = self.member_mut();
        if ready.serving_changed == Some(true) && member.zab.role() == Role::Leading {
            let now = self.now_ms();
            self.sessions.restart(now);
        }
        for id in ready.synced {
            if let Some((conn, xid, body)) = self.member_mut().syncs.remove(&id) {
                self.reply(conn, xid, ErrorCode::Ok, Some(body));
            }
        }
        self.finish_resumes();
    }

    /// Applies one committed entry: prepped against the tree as it stands
    /// at its zxid, applied, and answered if one of this member's clients
    /// waits on it.
    fn apply_entry(&mut self, zxid: i64, entry: &[u8]) {
        let Some((time_ms, request)) = decode_entry(entry) else {
            return;
        };
        let op = OpCode::from_code(request.op);
        let write = match op {
            Some(OpCode::CreateSession) => Some(Write::CreateSession {
                timeout_ms: request
                    .body
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, i32::from_be_bytes),
            }),
            Some(OpCode::CloseSession) => Some(Write::CloseSession {
                by_expiry: request.body.first() == Some(&1),
            }),
            Some(OpCode::DeleteContainer) => Some(Write::DeleteContainer {
                path: String::from_utf8_lossy(&request.body).into_owned(),
            }),
            Some(op) => decode_write(op, &mut Reader::new(&request.body)),
            None => None,
        };
        let kind = match &write {
            _ if request.op == MOVED_OP => TxnKind::Error {
                err: ErrorCode::SessionMoved.code(),
            },
            Some(write) => prep(&self.tree, request.session, write),
            None => TxnKind::Error {
                err: ErrorCode::MarshallingError.code(),
            },
        };
        let txn = Txn {
            zxid,
            session_id: request.session,
            time_ms,
            kind,
        };
        let applied = self.apply_txn(&txn);
        let member = self.member_mut();
        if !member.is_mine(request.origin) {
            return;
        }
        match member.pending.remove(&request.origin) {
            Some(Pending::Write { conn, .. }) if request.op == MOVED_OP => {
                // The client went on to another member, or a late
                // revalidation took its session away: ZooKeeper closes the
                // connection, and the client's next server revalidates the
                // session and owns it again.
                self.close(conn);
            }
            Some(Pending::Write { conn, xid, op }) => {
                self.answer_write(conn, xid, op, write.as_ref(), &applied);
            }
            Some(Pending::Connect {
                conn,
                timeout_ms,
                read_only,
            }) => {
                let session = (applied.err == 0).then_some(request.session);
                if let Some(id) = session {
                    self.member_mut().touched.insert(id, timeout_ms);
                }
                self.answer_connect(conn, session, timeout_ms, read_only);
            }
            Some(Pending::Close { conn, xid }) => {
                self.reply(conn, xid, ErrorCode::Ok, None);
                self.close(conn);
            }
            None => {}
        }
    }
}

// ----- The driver -----

impl Server {
    fn member_tick(&self) {
        self.lock().member_tick();
    }

    fn member_receive(&self, datagram: &[u8]) {
        self.lock().member_receive(datagram);
    }

    fn take_outbox(&self) -> Vec<(u64, Vec<u8>)> {
        let mut state = self.lock();
        state.member_ready();
        std::mem::take(&mut state.member_mut().outbox)
    }

    fn peers(&self) -> BTreeMap<u64, (String, u16)> {
        self.lock()
            .member
            .as_ref()
            .map(|m| m.place.peers.clone())
            .unwrap_or_default()
    }
}

/// Runs a member's ZAB for as long as its host runs: a tick every
/// `tick_ms`, datagrams from its peers on [`PEER_PORT`], and the messages
/// its clients' requests leave to send.
pub(crate) async fn drive(server: Server) -> io::Result<()> {
    let socket = turmoil::net::UdpSocket::bind(("0.0.0.0", PEER_PORT)).await?;
    let peers: BTreeMap<u64, SocketAddr> = server
        .peers()
        .into_iter()
        .map(|(id, (host, port))| (id, (turmoil::lookup(host.as_str()), port).into()))
        .collect();
    let tick = std::time::Duration::from_millis(server.lock().config.tick_ms.max(1));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + tick, tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let work = server.work.clone();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        for (to, datagram) in server.take_outbox() {
            if let Some(addr) = peers.get(&to) {
                // A datagram that cannot go is as good as lost.
                let _ = socket.send_to(&datagram, *addr).await;
            }
        }
        tokio::select! {
            _ = ticker.tick() => server.member_tick(),
            received = socket.recv_from(&mut buf) => {
                if let Ok((n, _)) = received {
                    server.member_receive(&buf[..n]);
                }
            }
            () = work.notified() => {}
        }
    }
}
