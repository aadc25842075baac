//! Locks on ZooKeeper: the documentation's lock recipe and Curator's
//! `InterProcessMutex`, over ZooKeeper's own client protocol.
//!
//! ZooKeeper offers what a lock needs without a TTL per key:
//!
//! - a *session*, kept alive by the client's pings; when the server hears
//!   nothing from it for a whole session timeout, it expires the session;
//! - *ephemeral* nodes, deleted with the session that made them, so a
//!   holder that dies frees its lock one session timeout later;
//! - *sequential* nodes, named with a counter of their parent's, so the
//!   waiters line up in the order they came;
//! - one-shot *watches*, so a waiter is told when the node ahead of it
//!   goes instead of polling;
//! - a *zxid* on every change that only grows: the `czxid` of a lock node
//!   is a fencing token for free.
//!
//! The recipe: create `<parent>/lock-` EPHEMERAL_SEQUENTIAL; list the
//! children; the lowest sequence holds; otherwise watch the node just
//! below your own and look again when it goes. Its known failure modes,
//! each shown by a rung here:
//!
//! - a session that expires under a *paused* holder: the server deletes
//!   its node and the next waiter takes the lock, while the holder,
//!   resumed, still believes it holds it and writes;
//! - a *lost create reply*: the create was applied but its reply lost with
//!   the connection, so the client cannot tell; one that simply creates
//!   again leaves an orphan node of its own session ahead of its new one,
//!   and waits behind itself until its session ends. Curator's protected
//!   mode names each node with a UUID so it can find its own;
//! - after an *expiry and a new session*, a node found by that UUID may be
//!   the old session's, about to be deleted: believing it holds the lock
//!   on it is a second holder waiting to happen. Curator checks the node's
//!   `ephemeralOwner` against its current session.
//!
//! - [`client`]: a session as the Java client keeps one (handshake,
//!   pings, read timeout, reconnect along the server list, setWatches,
//!   one-shot watches, expiry);
//! - [`rungs`]: the ZooKeeper rungs (`zk-recipe`, `zk-herd`,
//!   `curator-mutex`, `zk-fenced`) as [`Lock`](crate::Lock)s.

pub mod client;
pub mod rungs;

pub use client::{SessionState, Watch, WatchedEvent, ZkClient, ZkConfig, ZkError};

/// The node every lock lives under: a lock on `resource` is made of the
/// children of `<ROOT>/<resource>`.
pub const ROOT: &str = "/locklab";
