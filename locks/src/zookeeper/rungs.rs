//! The ZooKeeper rungs, as [`Lock`]s. Each lock keeps one session (a
//! [`ZkClient`]), opened on its first acquire with the lock's TTL as the
//! session timeout, reused across cycles and opened again once it has
//! expired; a lock on `resource` is made of the children of
//! `/locklab/<resource>`.
//!
//! # `zk-recipe`: the lock recipe of ZooKeeper's documentation, without a GUID
//! Create `<parent>/lock-` EPHEMERAL_SEQUENTIAL; list the children
//! (no watch); the lowest sequence holds; otherwise `exists` with a watch
//! on the node just below your own, wait for it to fire, and look again.
//! Release deletes the node.
//! Fixes: no TTL to guess (the session's pings keep the node while the
//! holder lives; its expiry deletes it) and no polling: a release wakes
//! one waiter.
//! Flaw: a create whose reply was lost with its connection may have made
//! the node; creating again leaves that orphan of its own live session
//! ahead of the new node, and the client waits behind itself (and everyone
//! behind it) until its session ends. It never looks at its session
//! either: a holder whose session expired while it was paused goes on
//! believing it holds the lock.
//! Shown by: `zk-lost-create-reply` (and `zk-holder-paused`).
//!
//! # `zk-herd`: the recipe with every waiter watching the parent
//! Each waiter lists the children with a watch on the parent, so every
//! change to the children (any waiter's arrival or departure, any
//! release) wakes every waiter, who all list the children again: the herd
//! effect the recipe was written to avoid.
//! Fixes: nothing; it is the recipe's foil. Flaw: N waiters pay about N
//! wake-ups per hand-off, and the recipe's flaws stay.
//! Shown by: `zk-herd`.
//!
//! # `curator-mutex`: Curator 5.4's `InterProcessMutex`
//! Protected mode names each node `_c_<uuid>-lock-`: after a connection
//! loss during the create, it lists the children, finds its own node by
//! the UUID, and keeps it only if its `ephemeralOwner` is the current
//! session (a node of an expired session is about to be deleted: it is
//! deleted and created again). A waiter watches its predecessor with
//! `getData`; parents are containers; every operation is retried through
//! connection loss with exponential backoff; an acquire gives up at its
//! timeout and deletes its node. It also does what Curator asks its users
//! to do: watch the connection state, and stop writing when SUSPENDED
//! (Disconnected) or LOST (Expired).
//! Fixes: the orphan of a lost create reply; a holder cut off from the
//! server stops writing once its connection notices.
//! Flaw: a holder paused past its session timeout resumes with its
//! connection still CONNECTED (nothing has run to notice), so it writes,
//! while the server has deleted its node and another holds the lock.
//! Shown by: `zk-holder-paused`.
//!
//! # `zk-fenced`: `curator-mutex` plus a fencing token
//! The token is the `czxid` of the holder's own node (from `create2`'s
//! stat): zxids only grow, so the resource can refuse a write from a
//! holder whose node is gone. Flaw: it needs a resource that checks
//! tokens. Shown by: nothing breaks it within its assumptions
//! (`zk-holder-paused` is safe).

use crate::clock::BoxFuture;
use crate::conn::Dialer;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use crate::zookeeper::ROOT;
use crate::zookeeper::client::{SessionState, Watch, ZkClient, ZkConfig, ZkError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use zkproto::records::Stat;
use zkproto::{CreateMode, ErrorCode, EventType};

/// `zk-recipe`.
pub const RECIPE: Rung = Rung {
    id: "zk-recipe",
    acquire: "create <parent>/lock- EPHEMERAL_SEQUENTIAL (again after a lost reply); the lowest sequence holds; a waiter watches the node just below its own with exists",
    release: "delete its node",
    fixes: "no TTL to guess: the session keeps the node while the holder lives; a release wakes one waiter",
    flaw: "a lost create reply leaves an orphan node of its own session ahead of it: it waits behind itself until its session ends",
    shown_by: "zk-lost-create-reply",
    service: "zookeeper",
    ..Rung::OFF_LADDER
};

/// `zk-herd`.
pub const HERD: Rung = Rung {
    id: "zk-herd",
    acquire: "as zk-recipe, but every waiter lists the children with a watch on the parent",
    release: "delete its node",
    fixes: "nothing: the recipe's foil",
    flaw: "every change to the children wakes every waiter (the herd effect)",
    shown_by: "zk-herd",
    service: "zookeeper",
    ..Rung::OFF_LADDER
};

/// `curator-mutex`.
pub const CURATOR: Rung = Rung {
    id: "curator-mutex",
    acquire: "Curator's InterProcessMutex: protected-mode create of _c_<uuid>-lock- (found again by its UUID after a lost reply, kept only if its session owns it); a waiter watches its predecessor with getData",
    release: "delete its node, guaranteed: retried through connection loss, and on in the background once the call gives up, until the node or its session is gone",
    fixes: "a lost create reply leaves no orphan; a holder stops writing when its connection is SUSPENDED or LOST",
    flaw: "a holder paused past its session timeout still writes: its connection has not noticed yet",
    shown_by: "zk-holder-paused",
    service: "zookeeper",
    ..Rung::OFF_LADDER
};

/// `zk-fenced`.
pub const FENCED: Rung = Rung {
    id: "zk-fenced",
    acquire: "as curator-mutex; the fencing token is the czxid of its own node",
    release: "as curator-mutex",
    fixes: "the resource refuses a holder whose node is gone",
    flaw: "needs a resource that checks tokens",
    shown_by: "zk-holder-paused",
    fencing: true,
    service: "zookeeper",
    ..Rung::OFF_LADDER
};

/// The ZooKeeper rungs, in the order they are taught.
pub const RUNGS: [&Rung; 4] = [&RECIPE, &HERD, &CURATOR, &FENCED];

/// Curator's `ExponentialBackoffRetry`: the first pause.
const BASE_SLEEP: Duration = Duration::from_millis(100);
/// ... the longest pause.
const MAX_SLEEP: Duration = Duration::from_millis(1_000);
/// ... and the most retries of one operation.
const MAX_RETRIES: u32 = 29;

/// How a rung waits and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// The documentation's recipe: `exists` on the next lower node.
    Recipe,
    /// Every waiter watches the parent.
    Herd,
    /// Curator's `InterProcessMutex`, with its connection-state handling.
    Curator,
}

/// A dialer shared by every session a lock opens.
struct Shared<D>(Arc<D>);

impl<D: Dialer> Dialer for Shared<D> {
    type Stream = D::Stream;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<D::Stream>> {
        self.0.dial()
    }
}

/// Why a wait for the lock ended without it.
enum WaitEnd {
    /// The acquire's time ran out.
    TimedOut,
    /// Its own node is not among the children (its session expired):
    /// Curator creates a new one.
    OwnNodeGone,
    /// An error that ends the acquire.
    Failed(LockError),
}

impl From<ZkError> for WaitEnd {
    fn from(e: ZkError) -> WaitEnd {
        WaitEnd::Failed(e.into())
    }
}

/// One of the ZooKeeper rungs over a list of servers.
pub struct ZkLock<D: Dialer> {
    rung: &'static Rung,
    how: How,
    servers: Vec<Arc<D>>,
    ctx: LockContext,
    config: LockConfig,
    /// The lock's session, once opened.
    session: Mutex<Option<ZkClient>>,
    /// Serialises opening a session, so concurrent acquires share one.
    opening: tokio::sync::Mutex<()>,
    /// The session each held node was made in, by node path.
    held: Mutex<HashMap<String, i64>>,
    /// Guaranteed deletes still going on in the background, stopped with
    /// the lock.
    background_deletes: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl<D: Dialer> Drop for ZkLock<D> {
    fn drop(&mut self) {
        let tasks = self.background_deletes.get_mut();
        for task in tasks.unwrap_or_else(|p| p.into_inner()).drain(..) {
            task.abort();
        }
    }
}

impl<D: Dialer> std::fmt::Debug for ZkLock<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkLock")
            .field("rung", &self.rung.id)
            .finish_non_exhaustive()
    }
}

/// The sequence number a lock node's name ends with (`-1`: none, sorted
/// first, as Curator's `fixForSorting` leaves a name without `lock-`).
fn sequence(name: &str) -> i64 {
    zkproto::path::sequence_of(name).map_or(-1, i64::from)
}

/// Whether `e` is one Curator's `RetryLoop` retries: the connection was
/// lost, the request timed out, the session moved or expired (Curator then
/// makes a new session).
fn curator_retries(e: &ZkError) -> bool {
    e.transient() || e.is(ErrorCode::SessionExpired) || e.is(ErrorCode::SessionMoved)
}

impl<D: Dialer> ZkLock<D> {
    /// The rung `id` (one of [`RUNGS`]) over `servers`; `None` for any other
    /// id or no servers.
    pub fn new(
        id: &str,
        servers: Vec<D>,
        ctx: LockContext,
        config: LockConfig,
    ) -> Option<ZkLock<D>> {
        let (rung, how) = match id {
            "zk-recipe" => (&RECIPE, How::Recipe),
            "zk-herd" => (&HERD, How::Herd),
            "curator-mutex" => (&CURATOR, How::Curator),
            "zk-fenced" => (&FENCED, How::Curator),
            _ => return None,
        };
        if servers.is_empty() {
            return None;
        }
        Some(ZkLock {
            rung,
            how,
            servers: servers.into_iter().map(Arc::new).collect(),
            ctx,
            config,
            session: Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            held: Mutex::new(HashMap::new()),
            background_deletes: Mutex::new(Vec::new()),
        })
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<ZkClient>> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session as it is, without opening one.
    fn current(&self) -> Option<ZkClient> {
        self.slot().clone()
    }

    /// The live session, opened now if there is none or it expired.
    async fn client(&self) -> Result<ZkClient, ZkError> {
        if let Some(c) = self.current().filter(|c| !c.is_expired()) {
            return Ok(c);
        }
        let _opening = self.opening.lock().await;
        if let Some(c) = self.current().filter(|c| !c.is_expired()) {
            return Ok(c);
        }
        let servers = self.servers.iter().map(|d| Shared(d.clone())).collect();
        let client = ZkClient::connect(servers, ZkConfig::new(self.config.ttl)).await?;
        *self.slot() = Some(client.clone());
        Ok(client)
    }

    fn parent(resource: &str) -> String {
        format!("{ROOT}/{resource}")
    }

    /// A random UUID (version 4) from the lock's token source, as Curator's
    /// protected mode draws one for each create.
    fn uuid(&self) -> String {
        let mut hex: Vec<char> = self.ctx.tokens.token().chars().collect();
        hex[12] = '4';
        hex[16] = ['8', '9', 'a', 'b'][hex[16].to_digit(16).unwrap_or(0) as usize % 4];
        let s: String = hex.into_iter().collect();
        format!(
            "{}-{}-{}-{}-{}",
            &s[..8],
            &s[8..12],
            &s[12..16],
            &s[16..20],
            &s[20..]
        )
    }

    /// Creates `path` and every missing ancestor of it, as `mode`;
    /// nodes already there are fine.
    async fn make_parents(client: &ZkClient, path: &str, mode: CreateMode) -> Result<(), ZkError> {
        let mut at = 0;
        while let Some(i) = path[at + 1..].find('/').map(|i| i + at + 1) {
            Self::create_if_absent(client, &path[..i], mode).await?;
            at = i;
        }
        Self::create_if_absent(client, path, mode).await
    }

    async fn create_if_absent(
        client: &ZkClient,
        path: &str,
        mode: CreateMode,
    ) -> Result<(), ZkError> {
        match client.create(path, b"", mode).await {
            Err(e) if e.is(ErrorCode::NodeExists) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Creates the lock node `<parent>/<name>` EPHEMERAL_SEQUENTIAL, making
    /// the parents (as `parents`) when missing; with `stat`, by `create2`.
    async fn create_node(
        client: &ZkClient,
        parent: &str,
        name: &str,
        parents: CreateMode,
        stat: bool,
    ) -> Result<(String, Option<Stat>), ZkError> {
        let path = format!("{parent}/{name}");
        let mut made_parents = false;
        loop {
            let created = if stat {
                client
                    .create2(&path, b"", CreateMode::EphemeralSequential)
                    .await
                    .map(|(p, s)| (p, Some(s)))
            } else {
                client
                    .create(&path, b"", CreateMode::EphemeralSequential)
                    .await
                    .map(|p| (p, None))
            };
            match created {
                Err(e) if e.is(ErrorCode::NoNode) && !made_parents => {
                    Self::make_parents(client, parent, parents).await?;
                    made_parents = true;
                }
                other => return other,
            }
        }
    }

    /// The pause before trying a step of the recipe again after a transient
    /// error, or the error once the acquire's time is up.
    async fn recipe_pause(
        &self,
        e: ZkError,
        attempt: u32,
        deadline: Instant,
    ) -> Result<(), LockError> {
        let pause = self.config.wait.pause(attempt, &self.ctx.tokens);
        if !e.transient() || Instant::now() + pause >= deadline {
            return Err(e.into());
        }
        tokio::time::sleep(pause).await;
        Ok(())
    }

    /// Curator's `ExponentialBackoffRetry`: the pause before retry number
    /// `retries` of one operation, or the error when it is not retried.
    async fn curator_pause(
        &self,
        e: ZkError,
        retries: &mut u32,
        deadline: Instant,
    ) -> Result<(), LockError> {
        if !curator_retries(&e) || *retries >= MAX_RETRIES {
            return Err(e.into());
        }
        let full = BASE_SLEEP
            .saturating_mul(1 << (*retries + 1).min(16))
            .min(MAX_SLEEP);
        let pause = BASE_SLEEP.max(self.ctx.tokens.jitter(full));
        if Instant::now() + pause >= deadline {
            return Err(e.into());
        }
        *retries += 1;
        tokio::time::sleep(pause).await;
        Ok(())
    }

    /// Waits for `watch` until `deadline`; counts the wake-up.
    async fn wait_for(&self, watch: Option<Watch>, deadline: Instant) -> Result<(), WaitEnd> {
        let Some(watch) = watch else {
            return Ok(());
        };
        match tokio::time::timeout_at(deadline, watch.fired()).await {
            Err(_) => Err(WaitEnd::TimedOut),
            Ok(event) => {
                self.ctx.wakeups.add();
                if event.kind == EventType::None {
                    // The session ended under the wait: the next call says so.
                    return Ok(());
                }
                Ok(())
            }
        }
    }

    // ---- zk-recipe and zk-herd -------------------------------------------

    /// The recipe: its node, once it holds the lock.
    async fn acquire_recipe(&self, resource: &str, deadline: Instant) -> Result<String, WaitEnd> {
        let parent = Self::parent(resource);
        let mut attempt = 0;
        let client = loop {
            match self.client().await {
                Ok(c) => break c,
                Err(e) => {
                    attempt += 1;
                    self.recipe_pause(e, attempt, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?;
                }
            }
        };
        self.ctx.point(FaultPoint::AcquireMid, resource).await;
        // Without a GUID there is no finding a node whose create reply was
        // lost: the recipe simply creates again.
        let node = loop {
            match Self::create_node(&client, &parent, "lock-", CreateMode::Persistent, false).await
            {
                Ok((node, _)) => break node,
                Err(e) => {
                    attempt += 1;
                    self.recipe_pause(e, attempt, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?;
                }
            }
        };
        match self.wait_recipe(&client, &parent, &node, deadline).await {
            Ok(()) => Ok(node),
            Err(end) => {
                // Giving up: the node must not stay in the line.
                let _ = client.delete(&node, -1).await;
                Err(end)
            }
        }
    }

    async fn wait_recipe(
        &self,
        client: &ZkClient,
        parent: &str,
        node: &str,
        deadline: Instant,
    ) -> Result<(), WaitEnd> {
        let mine = sequence(zkproto::path::name(node));
        let herd = self.how == How::Herd;
        let mut attempt = 0;
        loop {
            if Instant::now() >= deadline {
                return Err(WaitEnd::TimedOut);
            }
            let (children, parent_watch) = match client.get_children(parent, herd).await {
                Ok(listed) => listed,
                Err(e) => {
                    attempt += 1;
                    self.recipe_pause(e, attempt, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?;
                    continue;
                }
            };
            // The nodes below its own; the lowest sequence holds.
            let next_lower = children
                .iter()
                .filter(|c| sequence(c) < mine)
                .max_by_key(|c| sequence(c));
            let Some(next_lower) = next_lower else {
                return Ok(());
            };
            if herd {
                self.wait_for(parent_watch, deadline).await?;
                continue;
            }
            match client.exists(&format!("{parent}/{next_lower}"), true).await {
                // Gone between the listing and the exists: look again.
                Ok((None, _)) => {}
                Ok((Some(_), watch)) => self.wait_for(watch, deadline).await?,
                Err(e) => {
                    attempt += 1;
                    self.recipe_pause(e, attempt, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?;
                }
            }
        }
    }

    // ---- curator-mutex and zk-fenced -------------------------------------

    /// `InterProcessMutex.acquire(time)`: its node and the node's stat
    /// (fenced: from create2) once it holds the lock.
    async fn acquire_curator(
        &self,
        resource: &str,
        deadline: Instant,
    ) -> Result<(String, Option<Stat>), WaitEnd> {
        let parent = Self::parent(resource);
        let mut nonode_retries = 0;
        loop {
            let (node, stat) = self
                .protected_create(resource, &parent, deadline)
                .await
                .map_err(WaitEnd::Failed)?;
            match self.wait_curator(&parent, &node, deadline).await {
                Ok(()) => return Ok((node, stat)),
                // attemptLock: the node vanished (its session expired); the
                // retry policy allows another go with a new node.
                Err(WaitEnd::OwnNodeGone) if nonode_retries < MAX_RETRIES => {
                    nonode_retries += 1;
                }
                Err(end) => {
                    self.delete_guaranteed(&node).await.ok();
                    return Err(match end {
                        WaitEnd::OwnNodeGone => WaitEnd::Failed(
                            ZkError {
                                code: ErrorCode::NoNode,
                                op: "acquire",
                                path: node,
                            }
                            .into(),
                        ),
                        other => other,
                    });
                }
            }
        }
    }

    /// Curator's protected-mode create, retried through connection loss:
    /// after a failed try, it looks for a node with its UUID before
    /// creating again, and keeps one only if its own session owns it.
    async fn protected_create(
        &self,
        resource: &str,
        parent: &str,
        deadline: Instant,
    ) -> Result<(String, Option<Stat>), LockError> {
        let prefix = format!("_c_{}-", self.uuid());
        let name = format!("{prefix}lock-");
        let fenced = self.rung.fencing;
        let mut retries = 0;
        let mut first = true;
        self.ctx.point(FaultPoint::AcquireMid, resource).await;
        loop {
            let attempt = async {
                let client = self.client().await?;
                if !std::mem::take(&mut first)
                    && let Some(found) = Self::find_own(&client, parent, &prefix).await?
                {
                    return Ok(found);
                }
                Self::create_node(&client, parent, &name, CreateMode::Container, fenced).await
            };
            match attempt.await {
                Ok(created) => return Ok(created),
                Err(e) => self.curator_pause(e, &mut retries, deadline).await?,
            }
        }
    }

    /// Protected mode's search: the child whose name starts with this
    /// create's prefix, if the current session owns it. A node of another
    /// (expired) session is deleted: it is about to vanish with its
    /// session, and a lock believed held on it would be held by two.
    async fn find_own(
        client: &ZkClient,
        parent: &str,
        prefix: &str,
    ) -> Result<Option<(String, Option<Stat>)>, ZkError> {
        let children = match client.get_children(parent, false).await {
            Ok((children, _)) => children,
            Err(e) if e.is(ErrorCode::NoNode) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(name) = children.iter().find(|c| c.starts_with(prefix)) else {
            return Ok(None);
        };
        let path = format!("{parent}/{name}");
        match client.exists(&path, false).await? {
            (Some(stat), _) if stat.ephemeral_owner == client.session_id() => {
                Ok(Some((path, Some(stat))))
            }
            (Some(_), _) => {
                match client.delete(&path, -1).await {
                    Err(e) if !e.is(ErrorCode::NoNode) => return Err(e),
                    _ => {}
                }
                Ok(None)
            }
            (None, _) => Ok(None),
        }
    }

    /// `internalLockLoop`: list the children (sorted by sequence), hold if
    /// first, else watch the predecessor with getData and wait.
    async fn wait_curator(
        &self,
        parent: &str,
        node: &str,
        deadline: Instant,
    ) -> Result<(), WaitEnd> {
        let own = zkproto::path::name(node);
        loop {
            if Instant::now() >= deadline {
                return Err(WaitEnd::TimedOut);
            }
            let mut retries = 0;
            let mut children = loop {
                let listed = match self.client().await {
                    Ok(client) => client.get_children(parent, false).await,
                    Err(e) => Err(e),
                };
                match listed {
                    Ok((children, _)) => break children,
                    Err(e) if e.is(ErrorCode::NoNode) => return Err(WaitEnd::OwnNodeGone),
                    Err(e) => self
                        .curator_pause(e, &mut retries, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?,
                }
            };
            children.sort_by_key(|c| sequence(c));
            let Some(index) = children.iter().position(|c| c == own) else {
                return Err(WaitEnd::OwnNodeGone);
            };
            if index == 0 {
                return Ok(());
            }
            let predecessor = format!("{parent}/{}", children[index - 1]);
            let mut retries = 0;
            loop {
                let read = match self.client().await {
                    Ok(client) => client.get_data(&predecessor, true).await,
                    Err(e) => Err(e),
                };
                match read {
                    Ok((_, watch)) => {
                        self.wait_for(watch, deadline).await?;
                        break;
                    }
                    // Released between the listing and the read: look again.
                    Err(e) if e.is(ErrorCode::NoNode) => break,
                    Err(e) => self
                        .curator_pause(e, &mut retries, deadline)
                        .await
                        .map_err(WaitEnd::Failed)?,
                }
            }
        }
    }

    /// Deletes `node` as Curator's `delete().guaranteed()` does: retried
    /// through connection loss in the foreground for up to a TTL, and if
    /// that fails, on in the background until it succeeds or the session
    /// ends (Curator's failed-delete manager). Without the background
    /// part, a release cut by a server restart would leave the node of a
    /// session that outlives the restart, and its owner would wait behind
    /// it on its next acquire.
    async fn delete_guaranteed(&self, node: &str) -> Result<(), LockError> {
        let deleted = self.delete_retrying(node).await;
        if deleted.is_err() {
            self.delete_in_background(node);
        }
        deleted
    }

    /// The background half of [`Self::delete_guaranteed`]: tries again
    /// with a backoff capped at [`MAX_SLEEP`] while the error is one of a
    /// connection, and stops when the node or its session is gone.
    fn delete_in_background(&self, node: &str) {
        let Some(client) = self.current() else {
            return;
        };
        let node = node.to_string();
        let task = tokio::spawn(async move {
            let mut pause = BASE_SLEEP;
            while !client.is_expired() {
                match client.delete(&node, -1).await {
                    Err(e) if e.transient() || e.is(ErrorCode::SessionMoved) => {}
                    // Deleted, already gone, or its session ended.
                    _ => return,
                }
                tokio::time::sleep(pause).await;
                pause = pause.saturating_mul(2).min(MAX_SLEEP);
            }
        });
        let mut tasks = self
            .background_deletes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task.abort_handle());
    }

    /// Deletes `node`, retried through connection loss for up to a TTL
    /// (the foreground half of a guaranteed delete); a node already gone
    /// is fine.
    async fn delete_retrying(&self, node: &str) -> Result<(), LockError> {
        let deadline = Instant::now() + self.config.ttl;
        let mut retries = 0;
        loop {
            let deleted = match self.current().filter(|c| !c.is_expired()) {
                Some(client) => client.delete(node, -1).await,
                // The session ended: its ephemeral node is gone with it.
                None => return Ok(()),
            };
            match deleted {
                Ok(()) => return Ok(()),
                Err(e) if e.is(ErrorCode::NoNode) || e.is(ErrorCode::SessionExpired) => {
                    return Ok(());
                }
                Err(e) => self.curator_pause(e, &mut retries, deadline).await?,
            }
        }
    }

    async fn acquire_inner(&self, resource: &str, owner: &Owner) -> Result<Lease, LockError> {
        let started = self.ctx.clock.monotonic();
        let deadline = Instant::now() + self.config.max_wait;
        let taken = match self.how {
            How::Recipe | How::Herd => self
                .acquire_recipe(resource, deadline)
                .await
                .map(|node| (node, None)),
            How::Curator => self.acquire_curator(resource, deadline).await,
        };
        let (node, stat) = match taken {
            Ok(t) => t,
            Err(WaitEnd::Failed(e)) => return Err(e),
            Err(WaitEnd::TimedOut | WaitEnd::OwnNodeGone) => {
                return Err(LockError::NotAcquired {
                    resource: resource.to_string(),
                    waited: self.ctx.clock.monotonic().saturating_sub(started),
                    attempts: 1,
                });
            }
        };
        let session = self.current().map_or(0, |c| c.session_id());
        let mut lease = Lease::new(resource, node.clone(), owner, started);
        if self.rung.fencing {
            let czxid = match stat {
                Some(stat) => stat.czxid,
                None => self.own_stat(&node).await?.czxid,
            };
            lease.fence = Some(czxid as u64);
        }
        self.held().insert(node, session);
        Ok(lease)
    }

    /// The stat of a node this lock made (a fenced lock's fallback when no
    /// create2 said it).
    async fn own_stat(&self, node: &str) -> Result<Stat, LockError> {
        let client = self.client().await?;
        match client.exists(node, false).await? {
            (Some(stat), _) => Ok(stat),
            (None, _) => Err(LockError::NotHeld {
                resource: node.to_string(),
            }),
        }
    }

    async fn release_inner(&self, lease: &Lease) -> Result<(), LockError> {
        self.ctx
            .point(FaultPoint::ReleaseStart, &lease.resource)
            .await;
        let made_in = self.held().remove(&lease.token);
        let not_held = || LockError::NotHeld {
            resource: lease.resource.clone(),
        };
        // A node made in a session that has ended went with it.
        let live = self
            .current()
            .filter(|c| !c.is_expired() && Some(c.session_id()) == made_in);
        let deleted = match (live, self.how) {
            (None, _) => Err(not_held()),
            (Some(client), How::Recipe | How::Herd) => {
                match client.delete(&lease.token, -1).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.is(ErrorCode::NoNode) || e.is(ErrorCode::SessionExpired) => {
                        Err(not_held())
                    }
                    Err(e) => Err(e.into()),
                }
            }
            (Some(client), How::Curator) => {
                match client.delete(&lease.token, -1).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.is(ErrorCode::NoNode) || e.is(ErrorCode::SessionExpired) => {
                        Err(not_held())
                    }
                    // Through connection loss, as Curator's guaranteed delete.
                    Err(e) if e.transient() => {
                        let again = self.delete_guaranteed(&lease.token).await;
                        match again {
                            Ok(()) if self.current().is_some_and(|c| c.is_expired()) => {
                                Err(not_held())
                            }
                            other => other,
                        }
                    }
                    Err(e) => Err(e.into()),
                }
            }
        };
        self.ctx
            .point(FaultPoint::ReleaseMid, &lease.resource)
            .await;
        deleted
    }

    /// Curator's connection-state check: refuse at SUSPENDED (Disconnected)
    /// and LOST (Expired), and on a session other than the node's.
    fn check_connection(&self, lease: &Lease) -> Result<(), LockError> {
        let made_in = self.held().get(&lease.token).copied();
        let ok = self.current().is_some_and(|c| {
            *c.state().borrow() == SessionState::SyncConnected && Some(c.session_id()) == made_in
        });
        if ok {
            Ok(())
        } else {
            Err(LockError::NotHeld {
                resource: lease.resource.clone(),
            })
        }
    }
}

impl<D: Dialer> Lock for ZkLock<D> {
    fn rung(&self) -> &'static Rung {
        self.rung
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            // Every step is bounded by the acquire's deadline or a request
            // timeout; this bound is the last resort, and a session whose
            // state it cannot know is closed (its nodes go with it).
            let bound = self.config.max_wait + self.config.ttl * 4;
            let lease = match tokio::time::timeout(bound, self.acquire_inner(resource, owner)).await
            {
                Ok(lease) => lease?,
                Err(_) => {
                    let abandoned = self.slot().take();
                    if let Some(client) = abandoned {
                        client.close().await;
                    }
                    return Err(LockError::NotAcquired {
                        resource: resource.to_string(),
                        waited: bound,
                        attempts: 1,
                    });
                }
            };
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.release_inner(lease))
    }

    fn extend<'a>(&'a self, _lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // The session's pings keep the node; there is nothing to extend.
        Box::pin(async move {
            Err(LockError::Unsupported {
                rung: self.rung.id,
                operation: "extend (the session's pings keep the node)",
            })
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            if self.how == How::Curator {
                self.check_connection(lease)?;
            }
            // The recipe never looks at its session.
            crate::rungs::common::pass_before_write(&self.ctx, lease).await
        })
    }
}

/// The ZooKeeper rung `id` over `servers` (a connect string's servers, in
/// the order the session tries them); `None` if `id` is not a ZooKeeper
/// rung or there are no servers.
pub fn build<D: Dialer>(
    id: &str,
    servers: Vec<D>,
    ctx: LockContext,
    config: LockConfig,
) -> Option<Box<dyn Lock>> {
    ZkLock::new(id, servers, ctx, config).map(|l| Box::new(l) as Box<dyn Lock>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::conn::TcpDialer;

    fn lock(id: &str) -> Option<ZkLock<TcpDialer>> {
        let ctx = LockContext::new(Arc::new(SystemClock::new()), 7);
        ZkLock::new(
            id,
            vec![TcpDialer::new("127.0.0.1:1")],
            ctx,
            LockConfig::default(),
        )
    }

    #[test]
    fn every_zookeeper_rung_is_built_by_its_id_and_found_by_the_ladders_lookup() {
        for rung in RUNGS {
            let built = lock(rung.id).expect("builds");
            assert_eq!(built.rung().id, rung.id);
            assert_eq!(crate::ladder::rung(rung.id), Some(rung));
            assert!(crate::ladder::all_ids().contains(&rung.id));
            assert_eq!(rung.service, "zookeeper");
            let texts = [
                rung.acquire,
                rung.release,
                rung.fixes,
                rung.flaw,
                rung.shown_by,
            ];
            assert!(texts.iter().all(|t| !t.is_empty()), "{rung:?}");
        }
        assert!(lock("etcd-mutex").is_none());
        const { assert!(FENCED.fencing && !CURATOR.fencing) };
    }

    #[test]
    fn a_protected_name_carries_a_version_four_uuid_drawn_from_the_token_source() {
        let built = lock("curator-mutex").unwrap();
        let uuid = built.uuid();
        assert_eq!(uuid.len(), 36, "{uuid}");
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, vec![8, 4, 4, 4, 12]);
        assert_eq!(&uuid[14..15], "4");
        assert!("89ab".contains(&uuid[19..20]), "{uuid}");
        assert_ne!(built.uuid(), uuid, "a new one for each create");
        // The same seed draws the same UUIDs: runs replay.
        assert_eq!(lock("curator-mutex").unwrap().uuid(), uuid);
    }

    #[test]
    fn lock_nodes_sort_by_their_sequence_whatever_their_protected_prefix() {
        let mut names = [
            "_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
            "lock-0000000002",
            "_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
            "_c_11111111-0000-4000-8000-000000000000-lock-0000000001",
        ];
        names.sort_by_key(|c| sequence(c));
        let seqs: Vec<i64> = names.iter().map(|n| sequence(n)).collect();
        assert_eq!(seqs, vec![1, 2, 3, 10]);
    }

    #[test]
    fn only_connection_trouble_and_a_lost_session_are_retried_as_curator_does() {
        let e = |code| ZkError {
            code,
            op: "create",
            path: "/p".into(),
        };
        assert!(curator_retries(&e(ErrorCode::ConnectionLoss)));
        assert!(curator_retries(&e(ErrorCode::SessionExpired)));
        assert!(curator_retries(&e(ErrorCode::RequestTimeout)));
        assert!(!curator_retries(&e(ErrorCode::NoNode)));
        assert!(!curator_retries(&e(ErrorCode::NodeExists)));
        let lock_error = LockError::from(e(ErrorCode::SessionExpired));
        assert!(!lock_error.transient());
    }

    #[tokio::test]
    async fn an_acquire_with_no_server_to_reach_gives_up_within_its_wait() {
        let ctx = LockContext::new(Arc::new(SystemClock::new()), 1);
        let config = LockConfig {
            ttl: Duration::from_millis(300),
            max_wait: Duration::from_millis(500),
            ..LockConfig::default()
        };
        for rung in RUNGS {
            let built = build(
                rung.id,
                vec![TcpDialer::new("127.0.0.1:1")],
                ctx.clone(),
                config,
            )
            .unwrap();
            let started = Instant::now();
            let err = built
                .acquire("r", &Owner::new("a", 1))
                .await
                .expect_err("nothing to acquire from");
            assert!(err.transient(), "{}: {err}", rung.id);
            assert!(started.elapsed() < Duration::from_secs(3), "{}", rung.id);
        }
    }
}
