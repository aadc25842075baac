//! Ground truth: what a node did to its keys, stamped with true time.
//!
//! A scenario engine attaches an [`EventSink`] to a node (see
//! [`crate::NodeHandle::set_sink`]) and learns each time a key is written
//! (created, overwritten, or its TTL changed), expires or is deleted, with
//! the true simulated time. That is how a checker knows when a node granted,
//! expired or deleted a lock key, whatever the clients believed.

use std::sync::Arc;
use std::time::Duration;

/// A stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
    /// A hash, its fields in the order they were first set: Redis keeps a
    /// small hash (a listpack) that way, so `HKEYS` and `HGETALL` list
    /// them in that order. (A hash past 128 fields or with a value over 64
    /// bytes becomes a hash table in Redis, listed in an order of its
    /// own; the node keeps insertion order, which is deterministic.)
    Hash(indexmap::IndexMap<Vec<u8>, Vec<u8>>),
    /// A list, head first.
    List(std::collections::VecDeque<Vec<u8>>),
    /// A set, its members in the order they were added (the set commands
    /// choose the order they list them in, as Redis's encodings do).
    Set(indexmap::IndexSet<Vec<u8>>),
    /// A sorted set.
    ZSet(crate::sorted_set::SortedSet),
}

impl Value {
    /// The name `TYPE` answers.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }
}

/// Why a key changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A client's command or script on this node.
    Client,
    /// A change streamed from this node's master.
    Replication,
    /// State recovered from disk at a restart.
    Restore,
}

/// What happened to a key.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The key was created or overwritten, or its deadline changed. Carries
    /// the new value and absolute deadline (node wall-clock ms), if any.
    Written {
        /// The value now stored.
        value: Value,
        /// Absolute expiry deadline, node wall-clock ms.
        deadline_ms: Option<i64>,
        /// Who caused the change.
        origin: Origin,
    },
    /// The key expired (lazily on access or in the active expiry cycle).
    Expired {
        /// The deadline it passed (node wall-clock ms).
        deadline_ms: i64,
    },
    /// The key was deleted (DEL, FLUSHALL, a script, or replication).
    Deleted {
        /// Who caused the deletion.
        origin: Origin,
    },
}

/// One ground-truth event.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEvent {
    /// True simulated time since the simulation started.
    pub at: Duration,
    /// The node's wall clock at that moment (ms).
    pub node_wall_ms: i64,
    /// The node's name.
    pub node: Arc<str>,
    /// The key.
    pub key: Vec<u8>,
    /// What happened.
    pub kind: EventKind,
}

/// Receives a node's ground-truth events, in order.
pub trait EventSink: Send + Sync {
    /// Called once per event, synchronously, while the node executes.
    fn record(&self, event: &NodeEvent);
}

impl<F: Fn(&NodeEvent) + Send + Sync> EventSink for F {
    fn record(&self, event: &NodeEvent) {
        self(event)
    }
}
