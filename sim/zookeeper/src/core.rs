//! The server's state and what it does with each message: the handshake,
//! requests (writes go through [`crate::prep`] and [`crate::apply`], reads
//! look at the tree), session expiry, and the frames each connection is
//! sent. Everything happens under one lock, one message at a time, as
//! ZooKeeper's single request pipeline orders them; connections
//! ([`crate::conn`]) only move frames.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Notify, mpsc};
use zkproto::codes::{ErrorCode, KeeperState, OpCode, perms, xid};
use zkproto::jute::{Buffer, Jute, Reader, encode};
use zkproto::records::{
    AddWatchRequest, AuthPacket, CheckVersionRequest, ConnectRequest, ConnectResponse,
    Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, DeleteRequest, ErrorResponse,
    GetAclResponse, GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse,
    GetDataResponse, GetEphemeralsResponse, MultiHeader, PathRequest, PathWatchRequest,
    RemoveWatchesRequest, ReplyHeader, RequestHeader, SetAclRequest, SetDataRequest, SetWatches,
    SetWatches2, StatResponse, WatcherEvent, WhoAmIResponse,
};

use crate::apply::{Applied, Change, apply};
use crate::auth::AuthIds;
use crate::member::{Member, Place};
use crate::prep::{Write, check_acl, prep};
use crate::session::{Sessions, password};
use crate::tree::Tree;
use crate::txn::{Txn, TxnKind};
use crate::watch::{ConnId, Mode, Notice, Watches};
use crate::zab::Role;

/// Server settings.
#[derive(Clone)]
pub struct Config {
    /// ZooKeeper's `tickTime`: sessions expire on tick boundaries.
    pub tick_ms: u64,
    /// The shortest session timeout granted; `None`: 2 ticks.
    pub min_session_timeout_ms: Option<u64>,
    /// The longest session timeout granted; `None`: 20 ticks.
    pub max_session_timeout_ms: Option<u64>,
    /// The wall clock a node's ctime and mtime are read from, ms since the
    /// epoch.
    pub wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl Config {
    /// ZooKeeper's defaults (a 500 ms tick), with `wall_clock_ms` for times.
    pub fn new(wall_clock_ms: Arc<dyn Fn() -> i64 + Send + Sync>) -> Config {
        Config {
            tick_ms: 500,
            min_session_timeout_ms: None,
            max_session_timeout_ms: None,
            wall_clock_ms,
        }
    }

    /// The shortest timeout granted.
    pub fn min_timeout_ms(&self) -> u64 {
        self.min_session_timeout_ms.unwrap_or(2 * self.tick_ms)
    }

    /// The longest timeout granted.
    pub fn max_timeout_ms(&self) -> u64 {
        self.max_session_timeout_ms.unwrap_or(20 * self.tick_ms)
    }

    /// The timeout a client asking for `asked_ms` gets.
    pub fn negotiate(&self, asked_ms: i32) -> i32 {
        let asked = asked_ms.max(0) as u64;
        asked.clamp(
            self.min_timeout_ms(),
            self.max_timeout_ms().max(self.min_timeout_ms()),
        ) as i32
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("tick_ms", &self.tick_ms)
            .field("min_session_timeout_ms", &self.min_session_timeout_ms)
            .field("max_session_timeout_ms", &self.max_session_timeout_ms)
            .finish_non_exhaustive()
    }
}

/// What a connection's writer is given.
#[derive(Debug)]
pub(crate) enum Outbound {
    /// A frame's body to send.
    Frame(Vec<u8>),
    /// Send nothing more: close.
    Close,
}

/// A connection as the server knows it.
pub(crate) struct Conn {
    pub(crate) tx: mpsc::UnboundedSender<Outbound>,
    /// Its session, once the handshake is done.
    pub(crate) session: Option<i64>,
    /// The timeout it negotiated (each of its packets touches the session
    /// with it).
    pub(crate) timeout_ms: i32,
    /// Who it is, as `whoAmI` says: its `ip`, then any `digest` user it
    /// added.
    auth: AuthIds,
    /// Whether its new session is on its way through the ensemble: its
    /// frames wait unread until the connect is answered.
    pub(crate) handshaking: bool,
}

/// How often empty containers are swept (`znode.container.checkIntervalMs`).
pub(crate) const CONTAINER_SWEEP_MS: u64 = 60_000;

type Observer = Arc<dyn Fn(&Change) + Send + Sync>;

pub(crate) struct State {
    pub(crate) config: Config,
    pub(crate) tree: Tree,
    pub(crate) sessions: Sessions,
    pub(crate) watches: Watches,
    pub(crate) conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    observers: Vec<Observer>,
    /// When the server last started serving: session deadlines count from
    /// it.
    clock_base: Option<tokio::time::Instant>,
    /// When the container sweep runs next (ms on that clock).
    pub(crate) next_sweep_ms: u64,
    /// Its place in an ensemble, its ZAB core and the requests waiting on
    /// it; `None` for a standalone server.
    pub(crate) member: Option<Member>,
}

/// The server's state: its tree, sessions and zxid. Clone = same server.
/// Outlives its host's crashes (ZooKeeper syncs its log before it
/// replies).
#[derive(Clone)]
pub struct Server {
    state: Arc<Mutex<State>>,
    /// Wakes an ensemble member's driver when a request left it messages
    /// to send.
    pub(crate) work: Arc<Notify>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Server")
            .field("last_zxid", &state.tree.last_zxid)
            .field("connections", &state.conns.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A fresh server: the tree of a new ZooKeeper 3.8, no sessions,
    /// zxid 0.
    pub fn new(config: Config) -> Server {
        let sessions = Sessions::new(config.tick_ms);
        Server::with(config, sessions, None)
    }

    /// A member of an ensemble at `place`, with an empty history: served
    /// by the same [`crate::serve_sim`], which then also runs its ZAB on
    /// [`crate::member::PEER_PORT`] (see [`crate::member`]).
    pub fn member(config: Config, place: Place) -> Server {
        let sessions = Sessions::for_server(config.tick_ms, place.id as i64);
        let member = Member::new(&config, place);
        Server::with(config, sessions, Some(member))
    }

    fn with(config: Config, sessions: Sessions, member: Option<Member>) -> Server {
        Server {
            work: Arc::new(Notify::new()),
            state: Arc::new(Mutex::new(State {
                config,
                tree: Tree::new(),
                sessions,
                watches: Watches::default(),
                conns: BTreeMap::new(),
                next_conn: 1,
                observers: Vec::new(),
                clock_base: None,
                next_sweep_ms: CONTAINER_SWEEP_MS,
                member,
            })),
        }
    }

    /// Whether it is a member of an ensemble.
    pub fn is_member(&self) -> bool {
        self.lock().member.is_some()
    }

    /// Tells a member that member `peer`'s process died on a machine that
    /// stayed up, so the connections to it were reset
    /// ([`Zab::peer_reset`](crate::zab::Zab::peer_reset)); nothing for a
    /// standalone server.
    pub fn peer_reset(&self, peer: u64) {
        let mut state = self.lock();
        if let Some(member) = state.member.as_mut() {
            member.zab.peer_reset(peer);
            drop(state);
            self.work.notify_one();
        }
    }

    /// Its ZAB role, if a member of an ensemble.
    pub fn role(&self) -> Option<Role> {
        self.lock().member.as_ref().map(|m| m.zab.role())
    }

    /// Whether it serves clients: always when standalone; a member while
    /// ZAB says it is in sync with a leader a quorum follows.
    pub fn is_serving(&self) -> bool {
        self.lock()
            .member
            .as_ref()
            .is_none_or(|m| m.zab.is_serving())
    }

    /// Calls `observer` once for every change applied to a node (in zxid
    /// order).
    pub fn observe(&self, observer: Arc<dyn Fn(&Change) + Send + Sync>) {
        self.lock().observers.push(observer);
    }

    /// The zxid of the last transaction applied.
    pub fn last_zxid(&self) -> i64 {
        self.lock().tree.last_zxid
    }

    /// A copy of the tree as it is now.
    pub fn tree(&self) -> Tree {
        self.lock().tree.clone()
    }

    /// The ids of the live sessions.
    pub fn session_ids(&self) -> Vec<i64> {
        self.lock().sessions.ids()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take the server down with it: the
        // state is only changed by whole transactions.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts (or restarts) serving: connections from before are gone,
    /// every session gets its full timeout from now. Returns the tick.
    pub(crate) fn start_serving(&self) -> std::time::Duration {
        let mut state = self.lock();
        state.clock_base = Some(tokio::time::Instant::now());
        state.sessions.restart(0);
        state.next_sweep_ms = CONTAINER_SWEEP_MS;
        for (_, conn) in std::mem::take(&mut state.conns) {
            let _ = conn.tx.send(Outbound::Close);
        }
        let State { watches, .. } = &mut *state;
        *watches = Watches::default();
        if let Some(member) = &mut state.member {
            member.restart();
        }
        std::time::Duration::from_millis(state.config.tick_ms.max(1))
    }

    /// Registers a new connection.
    pub(crate) fn open_conn(&self, peer_ip: String) -> (ConnId, mpsc::UnboundedReceiver<Outbound>) {
        let mut state = self.lock();
        let (tx, rx) = mpsc::unbounded_channel();
        let id = state.next_conn;
        state.next_conn += 1;
        state.conns.insert(
            id,
            Conn {
                tx,
                session: None,
                timeout_ms: 0,
                auth: AuthIds::from_peer(peer_ip),
                handshaking: false,
            },
        );
        (id, rx)
    }

    /// Forgets a connection that ended, and its watches; its session lives
    /// on until it expires.
    pub(crate) fn close_conn(&self, conn: ConnId) {
        let mut state = self.lock();
        state.conns.remove(&conn);
        state.watches.remove_conn(conn);
    }

    /// Handles one frame from `conn`; false when the connection is to be
    /// closed (whatever was queued for it is still sent).
    pub(crate) fn handle_frame(&self, conn: ConnId, frame: &[u8]) -> bool {
        let mut state = self.lock();
        let Some(entry) = state.conns.get(&conn) else {
            return false;
        };
        if state.member.as_ref().is_some_and(|m| !m.zab.is_serving()) {
            // A member out of its ensemble serves nobody: ZooKeeper closes
            // the connection and the client tries its next server.
            state.close(conn);
            return false;
        }
        let keep = match entry.session {
            None if entry.handshaking => true,
            None => state.handshake(conn, frame),
            Some(session) => state.request(conn, session, frame),
        };
        if state.member.is_some() {
            state.member_ready();
            self.work.notify_one();
        }
        keep
    }

    /// Expires the sessions whose deadline has come.
    pub(crate) fn tick(&self) {
        let mut state = self.lock();
        if state.member.is_some() {
            // A member's driver ticks it (see `crate::member`).
            return;
        }
        let now = state.now_ms();
        for session in state.sessions.expire(now) {
            state.commit(session, &Write::CloseSession { by_expiry: true });
        }
        // ZooKeeper's ContainerManager: every minute, each container that
        // has had children and has none is deleted (by session 0; a child
        // created in between makes it a failed write).
        if now >= state.next_sweep_ms {
            state.next_sweep_ms = now - now % CONTAINER_SWEEP_MS + CONTAINER_SWEEP_MS;
            for path in state.tree.empty_containers() {
                state.commit(0, &Write::DeleteContainer { path });
            }
        }
    }
}

impl State {
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock_base
            .map_or(0, |base| base.elapsed().as_millis() as u64)
    }

    pub(crate) fn send(&self, conn: ConnId, body: Vec<u8>) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.tx.send(Outbound::Frame(body));
        }
    }

    pub(crate) fn close(&self, conn: ConnId) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.tx.send(Outbound::Close);
        }
    }

    pub(crate) fn reply(&self, conn: ConnId, xid: i32, err: ErrorCode, body: Option<Vec<u8>>) {
        self.reply_at(conn, xid, self.tree.last_zxid, err, body);
    }

    fn reply_at(&self, conn: ConnId, xid: i32, zxid: i64, err: ErrorCode, body: Option<Vec<u8>>) {
        let mut out = encode(&ReplyHeader {
            xid,
            zxid,
            err: err.code(),
        });
        if err == ErrorCode::Ok
            && let Some(body) = body
        {
            out.extend_from_slice(&body);
        }
        self.send(conn, out);
    }

    fn notify(&self, notice: &Notice) {
        let mut out = encode(&ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: 0,
        });
        WatcherEvent {
            r#type: notice.event.code(),
            state: KeeperState::SyncConnected.code(),
            path: notice.path.clone(),
        }
        .put(&mut out);
        self.send(notice.conn, out);
    }

    /// Prepares, applies and publishes one write from `session`: the
    /// watches it fires are sent before any reply to it.
    fn commit(&mut self, session: i64, write: &Write) -> Applied {
        let kind = prep(&self.tree, session, write);
        let txn = Txn {
            zxid: self.tree.last_zxid + 1,
            session_id: session,
            time_ms: (self.config.wall_clock_ms)(),
            kind,
        };
        self.apply_txn(&txn)
    }

    /// Applies one transaction and publishes it: sessions opened and
    /// closed (a closed session's connections with it), watches fired,
    /// observers told.
    pub(crate) fn apply_txn(&mut self, txn: &Txn) -> Applied {
        let session = txn.session_id;
        let applied = apply(&mut self.tree, txn);
        if let TxnKind::CreateSession { timeout_ms } = txn.kind {
            // A standalone server tracks it already; an ensemble's members
            // learn of it here.
            let now = self.now_ms();
            self.sessions.insert(session, timeout_ms, now);
        }
        if let TxnKind::CloseSession { .. } = txn.kind {
            self.sessions.remove(session);
            let conns: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, c)| c.session == Some(session))
                .map(|(id, _)| *id)
                .collect();
            for conn in conns {
                self.close(conn);
            }
        }
        for trigger in &applied.triggers {
            for notice in self.watches.fire(trigger) {
                self.notify(&notice);
            }
        }
        for change in &applied.changes {
            for observer in &self.observers {
                observer(change);
            }
        }
        applied
    }

    /// The first frame of a connection: a `ConnectRequest`.
    fn handshake(&mut self, conn: ConnId, frame: &[u8]) -> bool {
        let Ok(request) = ConnectRequest::take(&mut Reader::new(frame)) else {
            self.close(conn);
            return false;
        };
        // A client that has seen more than this server must find another.
        if request.last_zxid_seen > self.tree.last_zxid {
            self.close(conn);
            return false;
        }
        let timeout_ms = self.config.negotiate(request.time_out);
        let now = self.now_ms();
        let read_only = request.read_only.map(|_| false);
        if request.session_id == 0 && self.member.is_some() {
            // An ensemble's new session is a transaction through the
            // leader: the connect is answered when it is applied here.
            return self.member_connect(conn, timeout_ms, read_only);
        }
        let session = if request.session_id == 0 {
            let id = self.sessions.create(timeout_ms, now);
            self.commit(id, &Write::CreateSession { timeout_ms });
            Some(id)
        } else {
            let id = request.session_id;
            // ZooKeeper closes the session's other connections before it
            // checks the password.
            let others: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(c, e)| **c != conn && e.session == Some(id))
                .map(|(c, _)| *c)
                .collect();
            for other in others {
                self.close(other);
                self.conns.remove(&other);
                self.watches.remove_conn(other);
            }
            let password_ok = request.passwd.bytes() == password(id).as_slice();
            if password_ok && self.member.is_some() {
                // An ensemble member asks its leader, which owns the
                // sessions' clocks and takes note of the move.
                return self.member_resume(conn, id, timeout_ms, read_only);
            }
            let valid = password_ok && self.sessions.touch(id, timeout_ms, now);
            valid.then_some(id)
        };
        if let (Some(id), Some(member)) = (session, &mut self.member) {
            member.touched.insert(id, timeout_ms);
        }
        self.answer_connect(conn, session, timeout_ms, read_only)
    }

    /// Answers a connect: the session, or ZooKeeper's timeout-0 refusal
    /// (and a close). False when the connection is to be closed.
    pub(crate) fn answer_connect(
        &mut self,
        conn: ConnId,
        session: Option<i64>,
        timeout_ms: i32,
        read_only: Option<bool>,
    ) -> bool {
        let response = match session {
            Some(id) => ConnectResponse {
                protocol_version: 0,
                time_out: timeout_ms,
                session_id: id,
                passwd: Buffer(Some(password(id))),
                read_only,
            },
            None => ConnectResponse {
                protocol_version: 0,
                time_out: 0,
                session_id: 0,
                passwd: Buffer(Some(vec![0; 16])),
                read_only,
            },
        };
        self.send(conn, encode(&response));
        match session {
            Some(id) => {
                if let Some(entry) = self.conns.get_mut(&conn) {
                    entry.session = Some(id);
                    entry.timeout_ms = timeout_ms;
                    entry.handshaking = false;
                }
                true
            }
            None => {
                self.close(conn);
                false
            }
        }
    }

    /// A request after the handshake.
    fn request(&mut self, conn: ConnId, session: i64, frame: &[u8]) -> bool {
        let mut r = Reader::new(frame);
        let Ok(header) = RequestHeader::take(&mut r) else {
            self.close(conn);
            return false;
        };
        let xid = header.xid;
        if header.r#type == OpCode::Auth.code() {
            return self.auth(conn, xid, &mut r);
        }
        let op = OpCode::from_code(header.r#type).filter(|op| is_valid(*op));
        let Some(op) = op else {
            // An unknown operation: Unimplemented, then the connection
            // closes (`UnimplementedRequestProcessor`).
            self.reply_at(conn, xid, -1, ErrorCode::Unimplemented, None);
            self.close(conn);
            return false;
        };
        let timeout_ms = self.conns.get(&conn).map_or(0, |c| c.timeout_ms);
        let now = self.now_ms();
        if !self.sessions.touch(session, timeout_ms, now) {
            // A session being closed drops its requests unanswered.
            return true;
        }
        if let Some(member) = &mut self.member {
            // The leader counts sessions' time: it hears of this at the
            // next tick.
            member.touched.insert(session, timeout_ms);
        }
        match op {
            OpCode::Ping => {
                self.reply(conn, xid::PING, ErrorCode::Ok, None);
                true
            }
            OpCode::CloseSession => {
                // This connection gets the reply before it closes: the
                // close transaction closes the session's other ones.
                if let Some(entry) = self.conns.get_mut(&conn) {
                    entry.session = None;
                }
                if self.member.is_some() {
                    self.member_close(conn, session, xid);
                    return true;
                }
                self.commit(session, &Write::CloseSession { by_expiry: false });
                self.reply(conn, xid, ErrorCode::Ok, None);
                self.close(conn);
                false
            }
            op if is_write(op) => {
                if self.member.is_some() {
                    // The leader preps it in zxid order; answered when
                    // applied here.
                    self.member_write(
                        conn,
                        session,
                        xid,
                        op,
                        &frame[frame.len() - r.remaining()..],
                    );
                    return true;
                }
                let write = decode_write(op, &mut r);
                self.write(conn, session, xid, op, write);
                true
            }
            OpCode::Sync if self.member.is_some() => {
                match PathRequest::take(&mut r) {
                    Ok(request) => self.member_sync(conn, xid, encode(&request)),
                    Err(_) => self.reply(conn, xid, ErrorCode::MarshallingError, None),
                }
                true
            }
            _ => {
                let answer = self.read(conn, session, op, &mut r);
                match answer {
                    Ok(body) => self.reply(conn, xid, ErrorCode::Ok, body),
                    Err(err) => self.reply(conn, xid, err, None),
                }
                true
            }
        }
    }

    /// A write: prep, apply, reply. `write` is `None` when its record could
    /// not be read (a MarshallingError transaction, as ZooKeeper logs).
    fn write(&mut self, conn: ConnId, session: i64, xid: i32, op: OpCode, write: Option<Write>) {
        let applied = match &write {
            Some(write) => self.commit(session, write),
            None => {
                let txn = Txn {
                    zxid: self.tree.last_zxid + 1,
                    session_id: session,
                    time_ms: (self.config.wall_clock_ms)(),
                    kind: TxnKind::Error {
                        err: ErrorCode::MarshallingError.code(),
                    },
                };
                apply(&mut self.tree, &txn)
            }
        };
        self.answer_write(conn, xid, op, write.as_ref(), &applied);
    }

    /// Answers a write once applied: its error, or its answer's body.
    pub(crate) fn answer_write(
        &self,
        conn: ConnId,
        xid: i32,
        op: OpCode,
        write: Option<&Write>,
        applied: &Applied,
    ) {
        let err = ErrorCode::from_code(applied.err).unwrap_or(ErrorCode::SystemError);
        let body = match op {
            OpCode::Create => applied
                .path
                .clone()
                .map(|path| encode(&CreateResponse { path })),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                applied.path.clone().map(|path| {
                    encode(&Create2Response {
                        path,
                        stat: applied.stat.clone().unwrap_or_default(),
                    })
                })
            }
            OpCode::SetData | OpCode::SetAcl => applied
                .stat
                .clone()
                .map(|stat| encode(&StatResponse { stat })),
            OpCode::Multi => match write {
                Some(Write::Multi(ops)) => Some(multi_response(ops, applied)),
                _ => None,
            },
            _ => None,
        };
        // A multi's errors are in its results; its header says OK.
        let err = if op == OpCode::Multi && write.is_some() {
            ErrorCode::Ok
        } else {
            err
        };
        self.reply(conn, xid, err, body);
    }

    /// A read: its answer's body, or its error.
    fn read(
        &mut self,
        conn: ConnId,
        session: i64,
        op: OpCode,
        r: &mut Reader<'_>,
    ) -> Result<Option<Vec<u8>>, ErrorCode> {
        let bad = |_| ErrorCode::MarshallingError;
        match op {
            OpCode::Exists => {
                let request = PathWatchRequest::take(r).map_err(bad)?;
                if request.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                if request.watch {
                    self.watches.add_data(&request.path, conn);
                }
                let node = self.tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
                Ok(Some(encode(&StatResponse {
                    stat: node.client_stat(),
                })))
            }
            OpCode::GetData => {
                let request = PathWatchRequest::take(r).map_err(bad)?;
                let node = self.tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
                check_acl(node, perms::READ)?;
                let body = encode(&GetDataResponse {
                    data: Buffer(node.data.clone()),
                    stat: node.client_stat(),
                });
                if request.watch {
                    self.watches.add_data(&request.path, conn);
                }
                Ok(Some(body))
            }
            OpCode::GetChildren | OpCode::GetChildren2 => {
                let request = PathWatchRequest::take(r).map_err(bad)?;
                let node = self.tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
                check_acl(node, perms::READ)?;
                let children: Vec<String> = node.children.iter().map(str::to_string).collect();
                let body = if op == OpCode::GetChildren {
                    encode(&GetChildrenResponse { children })
                } else {
                    encode(&GetChildren2Response {
                        children,
                        stat: node.client_stat(),
                    })
                };
                if request.watch {
                    self.watches.add_child(&request.path, conn);
                }
                Ok(Some(body))
            }
            OpCode::GetAcl => {
                let request = PathRequest::take(r).map_err(bad)?;
                let node = self.tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
                Ok(Some(encode(&GetAclResponse {
                    acl: node.acl.clone(),
                    stat: node.client_stat(),
                })))
            }
            OpCode::Sync => {
                let request = PathRequest::take(r).map_err(bad)?;
                Ok(Some(encode(&request)))
            }
            OpCode::GetAllChildrenNumber => {
                let request = PathRequest::take(r).map_err(bad)?;
                let node = self.tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
                check_acl(node, perms::READ)?;
                Ok(Some(encode(&GetAllChildrenNumberResponse {
                    total_number: self.tree.descendants(&request.path) as i32,
                })))
            }
            OpCode::GetEphemerals => {
                let request = PathRequest::take(r).map_err(bad)?;
                let all = matches!(request.path.trim(), "" | "/");
                let ephemerals = self
                    .tree
                    .ephemerals_of(session)
                    .into_iter()
                    .filter(|p| all || p.starts_with(&request.path))
                    .collect();
                Ok(Some(encode(&GetEphemeralsResponse { ephemerals })))
            }
            OpCode::SetWatches | OpCode::SetWatches2 => {
                let request = if op == OpCode::SetWatches {
                    let old = SetWatches::take(r).map_err(bad)?;
                    SetWatches2 {
                        relative_zxid: old.relative_zxid,
                        data_watches: old.data_watches,
                        exist_watches: old.exist_watches,
                        child_watches: old.child_watches,
                        ..SetWatches2::default()
                    }
                } else {
                    SetWatches2::take(r).map_err(bad)?
                };
                let State { watches, tree, .. } = self;
                for notice in watches.set_again(tree, &request, conn) {
                    self.notify(&notice);
                }
                Ok(None)
            }
            OpCode::CheckWatches | OpCode::RemoveWatches => {
                let request = RemoveWatchesRequest::take(r).map_err(bad)?;
                let found = if op == OpCode::CheckWatches {
                    self.watches.has(&request.path, request.r#type, conn)
                } else {
                    self.watches.remove(&request.path, request.r#type, conn)
                };
                if found {
                    Ok(None)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            OpCode::AddWatch => {
                let request = AddWatchRequest::take(r).map_err(bad)?;
                let mode = Mode::from_add_watch(request.mode).ok_or(ErrorCode::MarshallingError)?;
                self.watches.add_persistent(&request.path, conn, mode);
                Ok(Some(encode(&ErrorResponse { err: 0 })))
            }
            OpCode::WhoAmI => {
                let client_info = self.conns.get(&conn).map(|c| c.auth.client_info());
                Ok(Some(encode(&WhoAmIResponse {
                    client_info: client_info.unwrap_or_default(),
                })))
            }
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    /// An authentication packet: `digest` and `ip` are accepted (no ACL
    /// here names them); any other scheme fails and closes the connection.
    fn auth(&mut self, conn: ConnId, xid: i32, r: &mut Reader<'_>) -> bool {
        let packet = AuthPacket::take(r).unwrap_or_default();
        let scheme = packet.scheme;
        if scheme == "digest"
            && let Some(c) = self.conns.get_mut(&conn)
        {
            c.auth
                .add_digest(&String::from_utf8_lossy(packet.auth.bytes()));
        }
        if scheme == "digest" || scheme == "ip" {
            self.reply_at(conn, xid, 0, ErrorCode::Ok, None);
            true
        } else {
            self.reply_at(conn, xid, 0, ErrorCode::AuthFailed, None);
            self.close(conn);
            false
        }
    }
}

/// Whether `op` is a write: prepped into a transaction.
pub(crate) fn is_write(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTtl
            | OpCode::Delete
            | OpCode::SetData
            | OpCode::SetAcl
            | OpCode::Multi
    )
}

/// A write's record, decoded; `None` when it cannot be read (a
/// MarshallingError transaction) or `op` is not a write.
pub(crate) fn decode_write(op: OpCode, r: &mut Reader<'_>) -> Option<Write> {
    match op {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => CreateRequest::take(r)
            .ok()
            .map(|request| Write::Create { op, request }),
        OpCode::CreateTtl => CreateTtlRequest::take(r).ok().map(|t| Write::CreateTtl {
            request: CreateRequest {
                path: t.path,
                data: t.data,
                acl: t.acl,
                flags: t.flags,
            },
            ttl_ms: t.ttl,
        }),
        OpCode::Delete => DeleteRequest::take(r).ok().map(Write::Delete),
        OpCode::SetData => SetDataRequest::take(r).ok().map(Write::SetData),
        OpCode::SetAcl => SetAclRequest::take(r).ok().map(Write::SetAcl),
        OpCode::Multi => read_multi(r).map(Write::Multi),
        _ => None,
    }
}

/// A `multi`'s operations (`MultiOperationRecord`); `None` if one cannot
/// be read or is not a write.
fn read_multi(r: &mut Reader<'_>) -> Option<Vec<(OpCode, Write)>> {
    let mut ops = Vec::new();
    loop {
        let header = MultiHeader::take(r).ok()?;
        if header.done {
            return Some(ops);
        }
        let op = OpCode::from_code(header.r#type)?;
        let write = match op {
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => Write::Create {
                op,
                request: CreateRequest::take(r).ok()?,
            },
            OpCode::CreateTtl => {
                let t = CreateTtlRequest::take(r).ok()?;
                Write::CreateTtl {
                    request: CreateRequest {
                        path: t.path,
                        data: t.data,
                        acl: t.acl,
                        flags: t.flags,
                    },
                    ttl_ms: t.ttl,
                }
            }
            OpCode::Delete | OpCode::DeleteContainer => Write::Delete(DeleteRequest::take(r).ok()?),
            OpCode::SetData => Write::SetData(SetDataRequest::take(r).ok()?),
            OpCode::Check => Write::Check(CheckVersionRequest::take(r).ok()?),
            _ => return None,
        };
        ops.push((op, write));
    }
}

/// A `multi`'s answer (`MultiResponse`): a header and a record per
/// operation, then an end header. A failed multi answers an error for
/// every operation.
fn multi_response(ops: &[(OpCode, Write)], applied: &Applied) -> Vec<u8> {
    let failed = applied.multi.iter().any(|one| one.err != 0);
    let mut out = Vec::new();
    for ((op, _), one) in ops.iter().zip(&applied.multi) {
        if failed {
            MultiHeader {
                r#type: OpCode::Error.code(),
                done: false,
                err: one.err,
            }
            .put(&mut out);
            ErrorResponse { err: one.err }.put(&mut out);
            continue;
        }
        let result_type = match op {
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => OpCode::Create2,
            OpCode::DeleteContainer => OpCode::Delete,
            op => *op,
        };
        MultiHeader {
            r#type: result_type.code(),
            done: false,
            err: 0,
        }
        .put(&mut out);
        let path = one.path.clone().unwrap_or_default();
        let stat = one.stat.clone().unwrap_or_default();
        match result_type {
            OpCode::Create => CreateResponse { path }.put(&mut out),
            OpCode::Create2 => Create2Response { path, stat }.put(&mut out),
            OpCode::SetData => StatResponse { stat }.put(&mut out),
            _ => {}
        }
    }
    MultiHeader {
        r#type: -1,
        done: true,
        err: -1,
    }
    .put(&mut out);
    out
}

/// The operations ZooKeeper 3.8 accepts from a client (`Request.isValid`);
/// any other gets Unimplemented and loses its connection.
fn is_valid(op: OpCode) -> bool {
    !matches!(
        op,
        OpCode::Notification | OpCode::Auth | OpCode::Sasl | OpCode::Error
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the test's bytes.
    struct Bytes(u64);

    impl Bytes {
        fn next(&mut self) -> u8 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (self.0 >> 56) as u8
        }
    }

    fn connected(server: &Server) -> (ConnId, mpsc::UnboundedReceiver<Outbound>) {
        let (conn, rx) = server.open_conn("127.0.0.1".into());
        let hello = encode(&ConnectRequest {
            time_out: 10_000,
            passwd: Buffer(Some(vec![0; 16])),
            read_only: Some(false),
            ..ConnectRequest::default()
        });
        assert!(server.handle_frame(conn, &hello));
        (conn, rx)
    }

    #[test]
    fn random_frames_after_a_handshake_never_panic_the_server() {
        let server = Server::new(Config::new(Arc::new(|| 0)));
        let mut bytes = Bytes(7);
        for _ in 0..2_000 {
            let (conn, _rx) = connected(&server);
            // A header of a real operation, then noise.
            let op = OpCode::ALL[usize::from(bytes.next()) % OpCode::ALL.len()];
            let mut frame = encode(&RequestHeader {
                xid: 1,
                r#type: op.code(),
            });
            let len = usize::from(bytes.next() % 64);
            frame.extend((0..len).map(|_| bytes.next()));
            server.handle_frame(conn, &frame);
            server.close_conn(conn);
        }
        assert!(server.last_zxid() >= 2_000, "each handshake took a zxid");
    }

    #[test]
    fn a_client_ahead_of_the_server_is_refused_without_an_answer() {
        let server = Server::new(Config::new(Arc::new(|| 0)));
        let (conn, mut rx) = server.open_conn("127.0.0.1".into());
        let hello = encode(&ConnectRequest {
            last_zxid_seen: 5,
            time_out: 10_000,
            passwd: Buffer(Some(vec![0; 16])),
            ..ConnectRequest::default()
        });
        assert!(!server.handle_frame(conn, &hello));
        assert!(matches!(rx.try_recv(), Ok(Outbound::Close)));
        assert!(server.session_ids().is_empty());
    }
}
