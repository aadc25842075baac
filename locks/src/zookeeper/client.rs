//! A ZooKeeper client session, as the Java client's `ClientCnxn` keeps
//! one, over any [`Dialer`].
//!
//! A session outlives connections. The client opens it with a handshake
//! (`ConnectRequest`: protocol version 0, the last zxid it saw, the
//! session timeout it asks for, the session's id and password, not
//! read-only) and the server answers with the timeout it grants. From
//! then on:
//!
//! - the client expects to hear from the server at least every *read
//!   timeout*, two thirds of the negotiated session timeout; it pings when
//!   it has sent nothing for half the read timeout, so a healthy idle
//!   connection always hears a ping's reply in time;
//! - a connection that hears nothing for the read timeout is dropped.
//!   Every request in flight on it fails with `ConnectionLoss`: the server
//!   may or may not have applied it, so the caller cannot tell (a create
//!   that "failed" may have made its node);
//! - the client then dials the next server in its list and resumes the
//!   same session with its id and password, sending `setWatches` for the
//!   watches it still holds, so that whatever changed while it was away
//!   fires them;
//! - the server alone decides when a session has expired: after a whole
//!   session timeout without hearing from it. The client learns it only
//!   when it reconnects and is answered with a timeout of 0. From then on
//!   every call fails with `SessionExpired`, for good: ephemeral nodes of
//!   that session are gone, and a new session is a new client.
//!
//! Requests carry increasing xids and the server answers them in order;
//! a reply that does not answer the oldest request in flight breaks the
//! connection, as it does in Java. Watches are one-shot: set by
//! `exists`, `getData` or `getChildren`, they are delivered (xid -1
//! notifications) to the caller that set them, who holds a [`Watch`].
//!
//! The session's state is a [`tokio::sync::watch`] channel
//! ([`ZkClient::state`]), which a lock reads as Curator's connection
//! state: `SyncConnected` (CONNECTED), `Disconnected` (SUSPENDED),
//! `Expired` (LOST).
//!
//! Time is `tokio::time` throughout (the simulator's time in turmoil).
//! A stop-the-world pause freezes the client's streams, so its pings
//! stop like a paused JVM's; its timers go on, so that a paused client
//! finds its connection gone when it resumes, as a JVM would one
//! instant later.

use crate::conn::Dialer;
use crate::error::LockError;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use zkproto::codes::xid;
use zkproto::frame::MAX_FRAME;
use zkproto::records::{
    ConnectRequest, ConnectResponse, Create2Response, CreateRequest, CreateResponse, DeleteRequest,
    GetChildren2Response, GetChildrenResponse, GetDataResponse, PathWatchRequest, ReplyHeader,
    RequestHeader, SetWatches, Stat, StatResponse, WatcherEvent, open_acl_unsafe,
};
use zkproto::{
    Buffer, CreateMode, ErrorCode, EventType, Jute, KeeperState, OpCode, decode, encode,
};

/// A session's state, as the client sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Not connected yet, or between connections: requests wait for the
    /// next connection or fail with `ConnectionLoss` (Curator: SUSPENDED).
    Disconnected,
    /// Connected, the session live (Curator: CONNECTED, RECONNECTED).
    SyncConnected,
    /// The server said the session expired: every call fails with
    /// `SessionExpired` (Curator: LOST).
    Expired,
    /// Closed by [`ZkClient::close`].
    Closed,
}

/// A failed ZooKeeper call: ZooKeeper's error code and what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} ({op} {path})", code.name())]
pub struct ZkError {
    /// The error, as the server or the client names it.
    pub code: ErrorCode,
    /// The operation.
    pub op: &'static str,
    /// The path it was about (empty for session-wide calls).
    pub path: String,
}

impl ZkError {
    fn new(code: ErrorCode, op: &'static str, path: &str) -> ZkError {
        ZkError {
            code,
            op,
            path: path.to_string(),
        }
    }

    /// Whether the same call may succeed later: the connection was lost
    /// or the request timed out (its outcome is unknown), or the server was
    /// too busy. An expired session, a missing node or an existing one
    /// are answers.
    pub fn transient(&self) -> bool {
        matches!(
            self.code,
            ErrorCode::ConnectionLoss
                | ErrorCode::OperationTimeout
                | ErrorCode::RequestTimeout
                | ErrorCode::ThrottledOp
        )
    }

    /// Whether this is `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code == code
    }
}

impl From<ZkError> for LockError {
    fn from(e: ZkError) -> LockError {
        LockError::ZooKeeper {
            transient: e.transient(),
            message: e.to_string(),
        }
    }
}

/// Timeouts of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZkConfig {
    /// The session timeout asked for; the server grants one within its
    /// bounds (2 to 20 ticks by default).
    pub session_timeout: Duration,
    /// How long a call waits for its reply (queued while disconnected,
    /// then in flight) before it fails with `RequestTimeout`. An answer
    /// that late also drops the connection, as Java's
    /// `zookeeper.request.timeout` does.
    pub request_timeout: Duration,
}

impl ZkConfig {
    /// A session of `session_timeout`, each request bounded by it too.
    pub fn new(session_timeout: Duration) -> ZkConfig {
        ZkConfig {
            session_timeout,
            request_timeout: session_timeout,
        }
    }
}

/// A watch notification, or the end of the session that set the watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened to the node; [`EventType::None`] when the session
    /// ended (expired or closed) before the node changed.
    pub kind: EventType,
    /// The session's state when it was delivered.
    pub state: KeeperState,
    /// The node the watch was set on.
    pub path: String,
}

/// A one-shot watch set by a read: fires once, on the first change of the
/// kind it watches, or when the session ends.
#[derive(Debug)]
pub struct Watch {
    path: String,
    rx: oneshot::Receiver<WatchedEvent>,
}

impl Watch {
    /// Waits for the watch to fire. A session that ends first (expired,
    /// closed, or its client dropped) fires it with [`EventType::None`].
    pub async fn fired(self) -> WatchedEvent {
        match self.rx.await {
            Ok(event) => event,
            Err(_) => WatchedEvent {
                kind: EventType::None,
                state: KeeperState::Expired,
                path: self.path,
            },
        }
    }
}

/// Which kind of watch a read leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum WatchOn {
    /// `exists`: a data watch on a node that exists, an exist watch on
    /// one that does not.
    Exists,
    /// `getData`: a data watch (only if the node exists).
    Data,
    /// `getChildren`: a child watch (only if the node exists).
    Children,
}

/// The three tables of the Java client's `ZKWatchManager`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Table {
    Data,
    Exist,
    Child,
}

/// One request on its way to the driver.
struct Call {
    op: OpCode,
    path: String,
    body: Vec<u8>,
    watch: Option<(WatchOn, oneshot::Sender<WatchedEvent>)>,
    reply: oneshot::Sender<Result<Vec<u8>, ErrorCode>>,
    /// When the caller gives up on it.
    deadline: Instant,
}

enum Command {
    Call(Call),
    Close(oneshot::Sender<()>),
}

/// What the handle and the driver share.
#[derive(Debug)]
struct Shared {
    session_id: AtomicI64,
    negotiated_ms: AtomicI64,
}

/// A ZooKeeper session over a list of servers. Clones share the session;
/// the session's driver task ends when [`close`](ZkClient::close) is
/// called, when the session expires, or when every clone is dropped (the
/// session then expires on the server, as an abandoned Java client's
/// does).
#[derive(Clone)]
pub struct ZkClient {
    commands: mpsc::UnboundedSender<Command>,
    state: watch::Receiver<SessionState>,
    shared: Arc<Shared>,
    config: ZkConfig,
}

impl std::fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkClient")
            .field("session_id", &format_args!("{:#x}", self.session_id()))
            .field("state", &*self.state.borrow())
            .finish_non_exhaustive()
    }
}

impl ZkClient {
    /// Opens a session on the first of `servers` that answers, moving along
    /// the list as Java's `StaticHostProvider` does; waits at most the
    /// session timeout for it. Fails with `ConnectionLoss` (transient)
    /// when no server answered in time.
    pub async fn connect<D: Dialer>(
        servers: Vec<D>,
        config: ZkConfig,
    ) -> Result<ZkClient, ZkError> {
        if servers.is_empty() {
            return Err(ZkError::new(
                ErrorCode::BadArguments,
                "connect",
                "no servers",
            ));
        }
        let (commands, rx) = mpsc::unbounded_channel();
        let (state_tx, mut state) = watch::channel(SessionState::Disconnected);
        let shared = Arc::new(Shared {
            session_id: AtomicI64::new(0),
            negotiated_ms: AtomicI64::new(0),
        });
        let driver = Driver::new(servers, config, rx, state_tx, shared.clone());
        tokio::spawn(driver.run());
        let up = tokio::time::timeout(
            config.session_timeout,
            state.wait_for(|s| *s != SessionState::Disconnected),
        )
        .await;
        match up.map(|s| s.map(|s| *s)) {
            Ok(Ok(SessionState::SyncConnected)) => Ok(ZkClient {
                commands,
                state,
                shared,
                config,
            }),
            // The driver sees the handle dropped and stops.
            _ => Err(ZkError::new(ErrorCode::ConnectionLoss, "connect", "")),
        }
    }

    /// The session's state, to read or to wait on.
    pub fn state(&self) -> watch::Receiver<SessionState> {
        self.state.clone()
    }

    /// The session's id (what `ephemeralOwner` says of its nodes).
    pub fn session_id(&self) -> i64 {
        self.shared.session_id.load(Ordering::SeqCst)
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Duration {
        Duration::from_millis(self.shared.negotiated_ms.load(Ordering::SeqCst).max(0) as u64)
    }

    /// Whether the server said the session expired (or it was closed).
    pub fn is_expired(&self) -> bool {
        matches!(
            *self.state.borrow(),
            SessionState::Expired | SessionState::Closed
        )
    }

    /// Sends one request and waits for its reply's body.
    async fn call(
        &self,
        op: OpCode,
        path: &str,
        body: Vec<u8>,
        watch: Option<(WatchOn, oneshot::Sender<WatchedEvent>)>,
    ) -> Result<Vec<u8>, ZkError> {
        let err = |code| ZkError::new(code, op.name(), path);
        let gone = || {
            // A session that ended says so; a driver that vanished otherwise
            // (it cannot, while a handle lives) is a lost connection.
            if self.is_expired() {
                err(ErrorCode::SessionExpired)
            } else {
                err(ErrorCode::ConnectionLoss)
            }
        };
        if self.is_expired() {
            return Err(err(ErrorCode::SessionExpired));
        }
        let (reply, rx) = oneshot::channel();
        let deadline = Instant::now() + self.config.request_timeout;
        let call = Call {
            op,
            path: path.to_string(),
            body,
            watch,
            reply,
            deadline,
        };
        if self.commands.send(Command::Call(call)).is_err() {
            return Err(gone());
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Err(_) => Err(err(ErrorCode::RequestTimeout)),
            Ok(Err(_)) => Err(gone()),
            Ok(Ok(Ok(body))) => Ok(body),
            Ok(Ok(Err(code))) => Err(err(code)),
        }
    }

    async fn call_decoded<T: Jute>(
        &self,
        op: OpCode,
        path: &str,
        body: Vec<u8>,
        watch: Option<(WatchOn, oneshot::Sender<WatchedEvent>)>,
    ) -> Result<T, ZkError> {
        let reply = self.call(op, path, body, watch).await?;
        decode(&reply).map_err(|_| ZkError::new(ErrorCode::MarshallingError, op.name(), path))
    }

    /// Creates `path` (for a sequential mode, the prefix) with `data` and
    /// the open ACL; returns the path it got.
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, ZkError> {
        if mode == CreateMode::Container {
            return self.create2(path, data, mode).await.map(|(p, _)| p);
        }
        let body = create_body(path, data, mode);
        let r: CreateResponse = self.call_decoded(OpCode::Create, path, body, None).await?;
        Ok(r.path)
    }

    /// `create2`: as [`create`](ZkClient::create), and the new node's stat.
    pub async fn create2(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        // A container is made by its own operation, which answers as create2.
        let op = if mode == CreateMode::Container {
            OpCode::CreateContainer
        } else {
            OpCode::Create2
        };
        let body = create_body(path, data, mode);
        let r: Create2Response = self.call_decoded(op, path, body, None).await?;
        Ok((r.path, r.stat))
    }

    /// Deletes `path` if its version is `version` (-1: any).
    pub async fn delete(&self, path: &str, version: i32) -> Result<(), ZkError> {
        let body = encode(&DeleteRequest {
            path: path.to_string(),
            version,
        });
        self.call(OpCode::Delete, path, body, None)
            .await
            .map(|_| ())
    }

    /// A read that may leave a watch, and the watch if asked for: the
    /// driver registers it by the reply's error (an `exists` on a missing
    /// node sets one too), so the receiver is kept whatever the outcome.
    async fn read<T: Jute>(
        &self,
        op: OpCode,
        on: WatchOn,
        path: &str,
        watch: bool,
    ) -> (Result<T, ZkError>, Option<Watch>) {
        let body = encode(&PathWatchRequest {
            path: path.to_string(),
            watch,
        });
        let (tx, rx) = oneshot::channel();
        let value = self
            .call_decoded(op, path, body, watch.then_some((on, tx)))
            .await;
        (value, watch.then(|| Watch::new(path, rx)))
    }

    /// The node's stat, `None` if there is no node; with `watch`, a watch
    /// that fires when it is created, changed or deleted.
    pub async fn exists(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Option<Stat>, Option<Watch>), ZkError> {
        match self
            .read::<StatResponse>(OpCode::Exists, WatchOn::Exists, path, watch)
            .await
        {
            (Ok(r), w) => Ok((Some(r.stat), w)),
            (Err(e), w) if e.is(ErrorCode::NoNode) => Ok((None, w)),
            (Err(e), _) => Err(e),
        }
    }

    /// The node's data and stat; with `watch`, a watch that fires when its
    /// data changes or it is deleted.
    pub async fn get_data(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<((Vec<u8>, Stat), Option<Watch>), ZkError> {
        let (r, w) = self
            .read::<GetDataResponse>(OpCode::GetData, WatchOn::Data, path, watch)
            .await;
        let r = r?;
        Ok(((r.data.0.unwrap_or_default(), r.stat), w))
    }

    /// The node's children's names, in no order; with `watch`, a watch
    /// that fires when a child is created or deleted, or the node deleted.
    pub async fn get_children(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, Option<Watch>), ZkError> {
        let (r, w) = self
            .read::<GetChildrenResponse>(OpCode::GetChildren, WatchOn::Children, path, watch)
            .await;
        let r = r?;
        Ok((r.children, w))
    }

    /// As [`get_children`](ZkClient::get_children), with the node's stat.
    pub async fn get_children2(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<((Vec<String>, Stat), Option<Watch>), ZkError> {
        let (r, w) = self
            .read::<GetChildren2Response>(OpCode::GetChildren2, WatchOn::Children, path, watch)
            .await;
        let r = r?;
        Ok(((r.children, r.stat), w))
    }

    /// Ends the session: `closeSession`, then the driver stops. The
    /// server deletes the session's ephemeral nodes at once.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Close(tx)).is_ok() {
            let _ = tokio::time::timeout(self.config.request_timeout, rx).await;
        }
    }
}

impl Watch {
    fn new(path: &str, rx: oneshot::Receiver<WatchedEvent>) -> Watch {
        Watch {
            path: path.to_string(),
            rx,
        }
    }
}

fn create_body(path: &str, data: &[u8], mode: CreateMode) -> Vec<u8> {
    encode(&CreateRequest {
        path: path.to_string(),
        data: Buffer(Some(data.to_vec())),
        acl: open_acl_unsafe(),
        flags: mode.code(),
    })
}

/// A request in flight on the current connection.
struct Pending {
    xid: i32,
    call: Call,
    sent_at: Instant,
}

/// Why a connection ended.
enum Ended {
    /// Lost: dial again.
    Lost,
    /// The server said the session expired.
    Expired,
    /// Closed on purpose, or every handle dropped.
    Closed,
}

/// The session's background task: owns the servers, the connection, the
/// requests in flight and the watches.
struct Driver<D: Dialer> {
    servers: Vec<D>,
    /// The index of the server to dial next.
    next: usize,
    config: ZkConfig,
    commands: mpsc::UnboundedReceiver<Command>,
    state: watch::Sender<SessionState>,
    shared: Arc<Shared>,
    passwd: Vec<u8>,
    last_zxid: i64,
    next_xid: i32,
    negotiated: Duration,
    watches: HashMap<(Table, String), Vec<oneshot::Sender<WatchedEvent>>>,
    /// Set when `close()` asked; answered once the session is closed.
    closing: Option<oneshot::Sender<()>>,
    /// The xid closeSession went out with, until it is answered.
    close_xid: Option<i32>,
}

impl<D: Dialer> Driver<D> {
    fn new(
        servers: Vec<D>,
        config: ZkConfig,
        commands: mpsc::UnboundedReceiver<Command>,
        state: watch::Sender<SessionState>,
        shared: Arc<Shared>,
    ) -> Self {
        Driver {
            servers,
            next: 0,
            config,
            commands,
            state,
            shared,
            passwd: vec![0; 16],
            last_zxid: 0,
            next_xid: 1,
            negotiated: config.session_timeout,
            watches: HashMap::new(),
            closing: None,
            close_xid: None,
        }
    }

    fn session_id(&self) -> i64 {
        self.shared.session_id.load(Ordering::SeqCst)
    }

    /// The read timeout: two thirds of the negotiated session timeout.
    fn read_timeout(&self) -> Duration {
        self.negotiated * 2 / 3
    }

    /// Java's connect timeout: the session timeout shared out among the
    /// servers, so one pass over the list fits in one session timeout.
    fn connect_timeout(&self) -> Duration {
        (self.negotiated / self.servers.len().max(1) as u32).max(Duration::from_millis(1))
    }

    async fn run(mut self) {
        let mut failures_in_a_row = 0usize;
        let ended = loop {
            if self.commands.is_closed() {
                break Ended::Closed;
            }
            let server = self.next;
            self.next = (self.next + 1) % self.servers.len();
            let connected = self.connect(server).await;
            let ended = match connected {
                Ok(Some(stream)) => {
                    failures_in_a_row = 0;
                    self.serve(stream).await
                }
                Ok(None) => Ended::Expired,
                Err(_) => {
                    failures_in_a_row += 1;
                    Ended::Lost
                }
            };
            match ended {
                Ended::Lost => {
                    self.state.send_replace(SessionState::Disconnected);
                    self.fail_queued(ErrorCode::ConnectionLoss);
                    if self.closing.is_some() {
                        break Ended::Closed;
                    }
                    // Java's host provider pauses a second each time it has
                    // been once around the list without a connection.
                    if failures_in_a_row > 0 && failures_in_a_row.is_multiple_of(self.servers.len())
                    {
                        self.pause(Duration::from_secs(1)).await;
                    }
                }
                other => break other,
            }
        };
        let (state, code) = match ended {
            Ended::Expired => (SessionState::Expired, ErrorCode::SessionExpired),
            _ => (SessionState::Closed, ErrorCode::SessionExpired),
        };
        self.state.send_replace(state);
        self.commands.close();
        self.fail_queued(code);
        let keeper = match state {
            SessionState::Expired => KeeperState::Expired,
            _ => KeeperState::Closed,
        };
        for ((_, path), senders) in self.watches.drain() {
            for tx in senders {
                let _ = tx.send(WatchedEvent {
                    kind: EventType::None,
                    state: keeper,
                    path: path.clone(),
                });
            }
        }
        if let Some(done) = self.closing.take() {
            let _ = done.send(());
        }
    }

    /// Sleeps, but wakes for a close (and fails calls that arrive
    /// meanwhile: there is no connection to send them on).
    async fn pause(&mut self, pause: Duration) {
        let until = Instant::now() + pause;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                command = self.commands.recv() => match command {
                    None => return,
                    Some(Command::Close(done)) => { self.closing = Some(done); return; }
                    Some(Command::Call(call)) => {
                        let _ = call.reply.send(Err(ErrorCode::ConnectionLoss));
                    }
                },
            }
        }
    }

    /// Fails every call waiting in the queue (Java's `cleanup()` of its
    /// outgoing queue) and takes note of a close.
    fn fail_queued(&mut self, code: ErrorCode) {
        while let Ok(command) = self.commands.try_recv() {
            match command {
                Command::Call(call) => {
                    let _ = call.reply.send(Err(code));
                }
                Command::Close(done) => self.closing = Some(done),
            }
        }
    }

    /// Dials `server` and shakes hands: the stream if the session lives,
    /// `None` if the server says it expired.
    async fn connect(&mut self, server: usize) -> io::Result<Option<D::Stream>> {
        let timeout = self.connect_timeout();
        let handshake = async {
            let mut stream = self.servers[server].dial().await?;
            let request = ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: self.last_zxid,
                time_out: self.config.session_timeout.as_millis() as i32,
                session_id: self.session_id(),
                passwd: Buffer(Some(self.passwd.clone())),
                read_only: Some(false),
            };
            write_frame(&mut stream, &encode(&request)).await?;
            let mut buf = Vec::new();
            let frame = loop {
                if let Some(frame) = take_frame(&mut buf)? {
                    break frame;
                }
                if stream.read_buf(&mut buf).await? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            };
            let response: ConnectResponse = decode(&frame)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            Ok::<_, io::Error>((stream, response, buf))
        };
        let (stream, response, rest) = tokio::time::timeout(timeout, handshake)
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
        if !rest.is_empty() {
            // A server sends nothing before it has answered the handshake's
            // setWatches or a request.
            return Err(io::ErrorKind::InvalidData.into());
        }
        if response.time_out <= 0 {
            return Ok(None);
        }
        self.negotiated = Duration::from_millis(response.time_out as u64);
        self.shared
            .negotiated_ms
            .store(response.time_out as i64, Ordering::SeqCst);
        self.shared
            .session_id
            .store(response.session_id, Ordering::SeqCst);
        self.passwd = response.passwd.0.unwrap_or_default();
        Ok(Some(stream))
    }

    fn xid(&mut self) -> i32 {
        let xid = self.next_xid;
        // Java's xid wraps past i32::MAX back to 1, never to the special
        // negative ones.
        self.next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    }

    /// The setWatches request for the watches still held, if any.
    fn set_watches(&self) -> Option<Vec<u8>> {
        let paths = |table| {
            let mut v: Vec<String> = self
                .watches
                .iter()
                .filter(|((t, _), senders)| *t == table && senders.iter().any(|s| !s.is_closed()))
                .map(|((_, p), _)| p.clone())
                .collect();
            v.sort();
            v
        };
        let request = SetWatches {
            relative_zxid: self.last_zxid,
            data_watches: paths(Table::Data),
            exist_watches: paths(Table::Exist),
            child_watches: paths(Table::Child),
        };
        if request.data_watches.is_empty()
            && request.exist_watches.is_empty()
            && request.child_watches.is_empty()
        {
            return None;
        }
        let mut body = encode(&RequestHeader {
            xid: xid::SET_WATCHES,
            r#type: OpCode::SetWatches.code(),
        });
        request.put(&mut body);
        Some(body)
    }

    /// Serves one connection until it ends.
    async fn serve(&mut self, stream: D::Stream) -> Ended {
        let (mut reader, mut writer) = tokio::io::split(stream);
        let read_timeout = self.read_timeout();
        let ping_every = read_timeout / 2;
        let mut pending: VecDeque<Pending> = VecDeque::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut last_recv = Instant::now();
        let mut last_send = Instant::now();
        // Watches that fell away (their holders dropped them) are forgotten
        // before they are set again.
        self.watches.retain(|_, senders| {
            senders.retain(|s| !s.is_closed());
            !senders.is_empty()
        });
        if let Some(body) = self.set_watches() {
            if self.send(&mut writer, &body, read_timeout).await.is_err() {
                return Ended::Lost;
            }
            last_send = Instant::now();
        }
        self.state.send_replace(SessionState::SyncConnected);
        let ended = loop {
            let now = Instant::now();
            let oldest = pending.front().map(|p| p.sent_at);
            let request_deadline = oldest.map(|t| t + self.config.request_timeout);
            tokio::select! {
                read = reader.read_buf(&mut buf) => {
                    match read {
                        Ok(0) | Err(_) => break Ended::Lost,
                        Ok(_) => last_recv = Instant::now(),
                    }
                    loop {
                        match take_frame(&mut buf) {
                            Err(_) => return self.lose(pending, Ended::Lost),
                            Ok(None) => break,
                            Ok(Some(frame)) => match self.receive(&frame, &mut pending) {
                                Err(()) => return self.lose(pending, Ended::Lost),
                                Ok(true) => return self.lose(pending, Ended::Closed),
                                Ok(false) => {}
                            },
                        }
                    }
                }
                command = self.commands.recv(), if self.closing.is_none() => {
                    let Some(command) = command else {
                        // Every handle dropped: stop without closing, as an
                        // abandoned client does.
                        break Ended::Closed;
                    };
                    let (xid, op, body, call) = match command {
                        Command::Call(call) => {
                            if call.reply.is_closed() || call.deadline <= now {
                                // The caller gave up before it was sent.
                                continue;
                            }
                            let xid = self.xid();
                            (xid, call.op, call.body.clone(), Some(call))
                        }
                        Command::Close(done) => {
                            self.closing = Some(done);
                            let xid = self.xid();
                            self.close_xid = Some(xid);
                            (xid, OpCode::CloseSession, Vec::new(), None)
                        }
                    };
                    let mut frame = encode(&RequestHeader { xid, r#type: op.code() });
                    frame.extend_from_slice(&body);
                    if self.send(&mut writer, &frame, read_timeout).await.is_err() {
                        if let Some(call) = call {
                            let _ = call.reply.send(Err(ErrorCode::ConnectionLoss));
                        }
                        break Ended::Lost;
                    }
                    last_send = Instant::now();
                    if let Some(call) = call {
                        pending.push_back(Pending { xid, call, sent_at: last_send });
                    }
                }
                _ = tokio::time::sleep_until(last_send + ping_every) => {
                    let ping = encode(&RequestHeader { xid: xid::PING, r#type: OpCode::Ping.code() });
                    if self.send(&mut writer, &ping, read_timeout).await.is_err() {
                        break Ended::Lost;
                    }
                    last_send = Instant::now();
                }
                _ = tokio::time::sleep_until(last_recv + read_timeout) => {
                    // Heard nothing for the read timeout: the server is gone
                    // or cut off (Java's SessionTimeoutException).
                    break Ended::Lost;
                }
                _ = sleep_until_opt(request_deadline) => {
                    // A request unanswered past the request timeout: Java
                    // gives up on the connection too.
                    break Ended::Lost;
                }
            }
        };
        self.lose(pending, ended)
    }

    /// Fails everything in flight on a connection that ended.
    fn lose(&mut self, pending: VecDeque<Pending>, ended: Ended) -> Ended {
        let code = match ended {
            Ended::Lost => ErrorCode::ConnectionLoss,
            _ => ErrorCode::SessionExpired,
        };
        for p in pending {
            let _ = p.call.reply.send(Err(code));
        }
        if matches!(ended, Ended::Lost) && self.closing.is_some() {
            return Ended::Closed;
        }
        ended
    }

    async fn send<W: AsyncWrite + Unpin>(
        &self,
        w: &mut W,
        body: &[u8],
        timeout: Duration,
    ) -> io::Result<()> {
        tokio::time::timeout(timeout, write_frame(w, body))
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
    }

    /// Handles one frame from the server: a reply, a ping's reply, a
    /// notification; `true` once closeSession is answered. An error breaks
    /// the connection.
    fn receive(&mut self, frame: &[u8], pending: &mut VecDeque<Pending>) -> Result<bool, ()> {
        if frame.len() < 16 {
            return Err(());
        }
        let header: ReplyHeader = decode(&frame[..16]).map_err(|_| ())?;
        let body = &frame[16..];
        match header.xid {
            xid::NOTIFICATION => {
                let event: WatcherEvent = decode(body).map_err(|_| ())?;
                self.notify(event);
                return Ok(false);
            }
            xid::PING | xid::SET_WATCHES | xid::AUTH => return Ok(false),
            _ => {}
        }
        if header.zxid > 0 {
            self.last_zxid = header.zxid;
        }
        if self.close_xid == Some(header.xid) && pending.is_empty() {
            return Ok(true);
        }
        let Some(p) = pending.pop_front() else {
            // An answer to nothing asked.
            return Err(());
        };
        if p.xid != header.xid {
            // Java: "Xid out of order".
            let _ = p.call.reply.send(Err(ErrorCode::ConnectionLoss));
            return Err(());
        }
        let code = ErrorCode::from_code(header.err).unwrap_or(ErrorCode::SystemError);
        if let Some((on, tx)) = p.call.watch {
            let table = match (on, code) {
                (WatchOn::Exists, ErrorCode::Ok) => Some(Table::Data),
                (WatchOn::Exists, ErrorCode::NoNode) => Some(Table::Exist),
                (WatchOn::Data, ErrorCode::Ok) => Some(Table::Data),
                (WatchOn::Children, ErrorCode::Ok) => Some(Table::Child),
                _ => None,
            };
            if let Some(table) = table {
                self.watches
                    .entry((table, p.call.path.clone()))
                    .or_default()
                    .push(tx);
            }
            // else: the watch is dropped, and its holder sees the session's
            // end if it waits (it should not: no watch was set).
        }
        let outcome = if code == ErrorCode::Ok {
            Ok(body.to_vec())
        } else {
            Err(code)
        };
        let _ = p.call.reply.send(outcome);
        Ok(false)
    }

    /// Delivers a notification to the watches it triggers (Java's
    /// `ZKWatchManager.materialize`), removing them: they are one-shot.
    fn notify(&mut self, event: WatcherEvent) {
        let Some(kind) = EventType::from_code(event.r#type) else {
            return;
        };
        let tables: &[Table] = match kind {
            EventType::NodeCreated | EventType::NodeDataChanged => &[Table::Data, Table::Exist],
            EventType::NodeChildrenChanged => &[Table::Child],
            EventType::NodeDeleted => &[Table::Data, Table::Exist, Table::Child],
            _ => &[],
        };
        for table in tables {
            if let Some(senders) = self.watches.remove(&(*table, event.path.clone())) {
                for tx in senders {
                    let _ = tx.send(WatchedEvent {
                        kind,
                        state: KeeperState::SyncConnected,
                        path: event.path.clone(),
                    });
                }
            }
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Writes one length-prefixed frame in a single write.
async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> io::Result<()> {
    zkproto::frame::write_frame(w, body).await?;
    w.flush().await
}

/// Takes one whole frame off the front of `buf`, if one is there.
fn take_frame(buf: &mut Vec<u8>) -> io::Result<Option<Vec<u8>>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 || len as usize > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len}"),
        ));
    }
    let end = 4 + len as usize;
    if buf.len() < end {
        return Ok(None);
    }
    let frame = buf[4..end].to_vec();
    buf.drain(..end);
    Ok(Some(frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::DuplexStream;

    /// Dials in memory: each dial hands the server's end to the test.
    struct DuplexDialer(mpsc::UnboundedSender<DuplexStream>);

    impl Dialer for DuplexDialer {
        type Stream = DuplexStream;

        fn dial(&self) -> crate::clock::BoxFuture<'static, io::Result<DuplexStream>> {
            let (client, server) = tokio::io::duplex(1 << 16);
            let sent = self.0.send(server);
            Box::pin(async move {
                sent.map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
                Ok(client)
            })
        }
    }

    /// The server's end of one connection: a few lines of a fake server.
    struct Fake(DuplexStream);

    impl Fake {
        async fn frame(&mut self) -> Vec<u8> {
            let read = zkproto::frame::read_frame(&mut self.0);
            tokio::time::timeout(Duration::from_secs(5), read)
                .await
                .expect("a frame in time")
                .expect("readable")
                .expect("not closed")
        }

        /// Answers the handshake with `time_out` and session 0x42.
        async fn handshake(&mut self, time_out: i32) -> ConnectRequest {
            let request: ConnectRequest = decode(&self.frame().await).unwrap();
            let response = ConnectResponse {
                protocol_version: 0,
                time_out,
                session_id: if time_out > 0 { 0x42 } else { 0 },
                passwd: Buffer(Some(vec![7; 16])),
                read_only: Some(false),
            };
            zkproto::frame::write_frame(&mut self.0, &encode(&response))
                .await
                .unwrap();
            request
        }

        /// The next request that is not a ping: its header and body.
        async fn request(&mut self) -> (RequestHeader, Vec<u8>) {
            loop {
                let frame = self.frame().await;
                let header: RequestHeader = decode(&frame[..8]).unwrap();
                if header.xid != xid::PING {
                    return (header, frame[8..].to_vec());
                }
            }
        }

        async fn reply(&mut self, xid: i32, zxid: i64, err: ErrorCode, body: &[u8]) {
            let mut frame = encode(&ReplyHeader {
                xid,
                zxid,
                err: err.code(),
            });
            frame.extend_from_slice(body);
            zkproto::frame::write_frame(&mut self.0, &frame)
                .await
                .unwrap();
        }

        async fn notify(&mut self, kind: EventType, path: &str) {
            let event = WatcherEvent {
                r#type: kind.code(),
                state: KeeperState::SyncConnected.code(),
                path: path.into(),
            };
            self.reply(xid::NOTIFICATION, -1, ErrorCode::Ok, &encode(&event))
                .await;
        }
    }

    /// A client on one in-memory server (or several, all answered by the
    /// test through `dials`).
    async fn connected(
        servers: usize,
        session_ms: u64,
    ) -> (ZkClient, Fake, mpsc::UnboundedReceiver<DuplexStream>) {
        let (tx, mut dials) = mpsc::unbounded_channel();
        let dialers = (0..servers).map(|_| DuplexDialer(tx.clone())).collect();
        let config = ZkConfig::new(Duration::from_millis(session_ms));
        let client = tokio::spawn(ZkClient::connect(dialers, config));
        let mut fake = Fake(dials.recv().await.unwrap());
        fake.handshake(session_ms as i32).await;
        let client = client.await.unwrap().expect("connected");
        (client, fake, dials)
    }

    #[tokio::test]
    async fn the_handshake_asks_for_the_session_timeout_as_a_new_session_and_takes_the_granted_one()
    {
        let (tx, mut dials) = mpsc::unbounded_channel();
        let config = ZkConfig::new(Duration::from_millis(3_000));
        let client = tokio::spawn(ZkClient::connect(vec![DuplexDialer(tx)], config));
        let mut fake = Fake(dials.recv().await.unwrap());
        let request = fake.handshake(2_000).await;
        assert_eq!(request.protocol_version, 0);
        assert_eq!(request.last_zxid_seen, 0);
        assert_eq!(request.time_out, 3_000);
        assert_eq!(request.session_id, 0);
        assert_eq!(request.passwd, Buffer(Some(vec![0; 16])));
        assert_eq!(request.read_only, Some(false));
        let client = client.await.unwrap().unwrap();
        assert_eq!(client.negotiated_timeout(), Duration::from_millis(2_000));
        assert_eq!(client.session_id(), 0x42);
        assert_eq!(*client.state().borrow(), SessionState::SyncConnected);
    }

    #[tokio::test]
    async fn requests_carry_increasing_xids_and_each_caller_gets_its_own_reply() {
        let (client, mut fake, _dials) = connected(1, 3_000).await;
        let c = client.clone();
        let create = tokio::spawn(async move {
            c.create("/a/lock-", b"", CreateMode::EphemeralSequential)
                .await
        });
        let (first, body) = fake.request().await;
        assert_eq!(first.r#type, OpCode::Create.code());
        let asked: CreateRequest = decode(&body).unwrap();
        assert_eq!(asked.flags, CreateMode::EphemeralSequential.code());
        let c = client.clone();
        let exists = tokio::spawn(async move { c.exists("/a", false).await });
        let (second, _) = fake.request().await;
        assert_eq!(second.xid, first.xid + 1);
        fake.reply(
            first.xid,
            5,
            ErrorCode::Ok,
            &encode(&CreateResponse {
                path: "/a/lock-0000000000".into(),
            }),
        )
        .await;
        fake.reply(second.xid, 5, ErrorCode::NoNode, &[]).await;
        assert_eq!(create.await.unwrap().unwrap(), "/a/lock-0000000000");
        assert_eq!(exists.await.unwrap().unwrap().0, None);
    }

    #[tokio::test]
    async fn an_idle_connection_pings_after_half_the_read_timeout() {
        // Read timeout 400 ms: a ping once 200 ms pass without a send.
        let (_client, mut fake, _dials) = connected(1, 600).await;
        let started = Instant::now();
        let frame = fake.frame().await;
        let header: RequestHeader = decode(&frame).unwrap();
        assert_eq!(header.xid, xid::PING);
        assert_eq!(header.r#type, OpCode::Ping.code());
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_millis(400),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_silent_connection_is_dropped_after_the_read_timeout_and_the_session_resumed_on_the_next_server()
     {
        let (client, mut first, mut dials) = connected(2, 600).await;
        let c = client.clone();
        let exists = tokio::spawn(async move { c.exists("/a", false).await });
        let (asked, _) = first.request().await;
        first
            .reply(
                asked.xid,
                9,
                ErrorCode::Ok,
                &encode(&StatResponse::default()),
            )
            .await;
        exists.await.unwrap().unwrap();
        let mut state = client.state();
        let c = client.clone();
        let lost = tokio::spawn(async move { c.delete("/a", -1).await });
        first.request().await;
        // Answer nothing, pings included: 400 ms later the client gives up.
        let started = Instant::now();
        let err = lost.await.unwrap().unwrap_err();
        assert_eq!(err.code, ErrorCode::ConnectionLoss);
        assert!(err.transient());
        assert!(LockError::from(err).outcome_unknown());
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(350), "{waited:?}");
        state
            .wait_for(|s| *s == SessionState::Disconnected)
            .await
            .unwrap();
        let mut second = Fake(dials.recv().await.unwrap());
        let request = second.handshake(600).await;
        assert_eq!(request.session_id, 0x42);
        assert_eq!(request.passwd, Buffer(Some(vec![7; 16])));
        assert_eq!(request.last_zxid_seen, 9);
        state
            .wait_for(|s| *s == SessionState::SyncConnected)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_reconnect_sets_again_the_watches_still_held_and_a_notification_fires_its_callers_watch_once()
     {
        let (client, mut first, mut dials) = connected(1, 3_000).await;
        let c = client.clone();
        let missing = tokio::spawn(async move { c.exists("/gone", true).await });
        let (asked, body) = first.request().await;
        let request: PathWatchRequest = decode(&body).unwrap();
        assert!(request.watch);
        first.reply(asked.xid, 11, ErrorCode::NoNode, &[]).await;
        let (stat, exist_watch) = missing.await.unwrap().unwrap();
        assert_eq!(stat, None);
        let c = client.clone();
        let data = tokio::spawn(async move { c.get_data("/b", true).await });
        let (asked, _) = first.request().await;
        let reply = GetDataResponse {
            data: Buffer(Some(b"x".to_vec())),
            stat: Stat::default(),
        };
        first
            .reply(asked.xid, 12, ErrorCode::Ok, &encode(&reply))
            .await;
        let ((bytes, _), data_watch) = data.await.unwrap().unwrap();
        assert_eq!(bytes, b"x");
        // The server goes away; the client comes back with its watches.
        drop(first);
        let mut second = Fake(dials.recv().await.unwrap());
        second.handshake(3_000).await;
        let (header, body) = second.request().await;
        assert_eq!(header.xid, xid::SET_WATCHES);
        assert_eq!(header.r#type, OpCode::SetWatches.code());
        let set: SetWatches = decode(&body).unwrap();
        assert_eq!(set.relative_zxid, 12);
        assert_eq!(set.exist_watches, vec!["/gone".to_string()]);
        assert_eq!(set.data_watches, vec!["/b".to_string()]);
        assert!(set.child_watches.is_empty());
        second.notify(EventType::NodeDeleted, "/b").await;
        second.notify(EventType::NodeCreated, "/gone").await;
        let fired = data_watch.unwrap().fired().await;
        assert_eq!(
            (fired.kind, fired.path.as_str()),
            (EventType::NodeDeleted, "/b")
        );
        let fired = exist_watch.unwrap().fired().await;
        assert_eq!(fired.kind, EventType::NodeCreated);
    }

    #[tokio::test]
    async fn a_handshake_answered_with_timeout_zero_expires_the_session_for_good() {
        let (client, mut first, mut dials) = connected(1, 3_000).await;
        let c = client.clone();
        let children = tokio::spawn(async move { c.get_children("/p", true).await });
        let (asked, _) = first.request().await;
        let reply = GetChildrenResponse {
            children: vec!["lock-0000000001".into()],
        };
        first
            .reply(asked.xid, 3, ErrorCode::Ok, &encode(&reply))
            .await;
        let (names, watch) = children.await.unwrap().unwrap();
        assert_eq!(names, vec!["lock-0000000001".to_string()]);
        drop(first);
        let mut second = Fake(dials.recv().await.unwrap());
        second.handshake(0).await;
        let mut state = client.state();
        state
            .wait_for(|s| *s == SessionState::Expired)
            .await
            .unwrap();
        let fired = watch.unwrap().fired().await;
        assert_eq!(
            (fired.kind, fired.state),
            (EventType::None, KeeperState::Expired)
        );
        let err = client.exists("/p", false).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::SessionExpired);
        assert!(!err.transient());
        assert!(client.is_expired());
    }

    #[tokio::test]
    async fn close_sends_close_session_and_later_calls_fail_as_expired() {
        let (client, mut fake, _dials) = connected(1, 3_000).await;
        let c = client.clone();
        let closing = tokio::spawn(async move { c.close().await });
        let (header, _) = fake.request().await;
        assert_eq!(header.r#type, OpCode::CloseSession.code());
        fake.reply(header.xid, 20, ErrorCode::Ok, &[]).await;
        closing.await.unwrap();
        assert_eq!(*client.state().borrow(), SessionState::Closed);
        let err = client.delete("/a", -1).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::SessionExpired);
    }

    #[tokio::test]
    async fn a_reply_out_of_order_breaks_the_connection() {
        let (client, mut fake, mut dials) = connected(1, 3_000).await;
        let c = client.clone();
        let asked = tokio::spawn(async move { c.exists("/a", false).await });
        let (header, _) = fake.request().await;
        fake.reply(header.xid + 7, 1, ErrorCode::Ok, &[]).await;
        let err = asked.await.unwrap().unwrap_err();
        assert_eq!(err.code, ErrorCode::ConnectionLoss);
        // And it dials again.
        assert!(dials.recv().await.is_some());
    }

    #[test]
    fn a_frame_is_taken_only_once_whole() {
        let mut buf = vec![0, 0, 0, 3, 1, 2];
        assert_eq!(take_frame(&mut buf).unwrap(), None);
        buf.extend_from_slice(&[3, 0, 0]);
        assert_eq!(take_frame(&mut buf).unwrap(), Some(vec![1, 2, 3]));
        assert_eq!(buf, vec![0, 0]);
        let mut bad = (-5i32).to_be_bytes().to_vec();
        assert!(take_frame(&mut bad).is_err());
    }
}
