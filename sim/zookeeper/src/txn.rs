//! Transactions: what a write request becomes once checked ([`crate::prep`])
//! and what the tree applies ([`crate::apply`]), in zxid order. A failed
//! write is a transaction too ([`TxnKind::Error`]): ZooKeeper logs it and
//! it takes a zxid, which clients see in later stats.

use zkproto::records::Acl;

/// One transaction, as a leader would propose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// Its zxid.
    pub zxid: i64,
    /// The session that asked for it.
    pub session_id: i64,
    /// The leader's wall clock when it was prepared, ms since the epoch
    /// (the new ctime or mtime).
    pub time_ms: i64,
    /// What it does.
    pub kind: TxnKind,
}

/// What a transaction does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnKind {
    /// A new session.
    CreateSession {
        /// Its negotiated timeout.
        timeout_ms: i32,
    },
    /// The end of a session (closed or expired): its ephemeral nodes go.
    CloseSession {
        /// Whether the session expired rather than closed.
        by_expiry: bool,
    },
    /// A new node.
    Create {
        /// Its full path (with its sequence number).
        path: String,
        /// Its data.
        data: Option<Vec<u8>>,
        /// Its ACL.
        acl: Vec<Acl>,
        /// The owning session, `CONTAINER_OWNER`, or 0.
        ephemeral_owner: i64,
        /// The parent's stored cversion after this create.
        parent_cversion: i32,
    },
    /// A node removed.
    Delete {
        /// Its path.
        path: String,
    },
    /// New data for a node.
    SetData {
        /// Its path.
        path: String,
        /// The data.
        data: Option<Vec<u8>>,
        /// The node's version after this.
        version: i32,
    },
    /// A new ACL for a node.
    SetAcl {
        /// Its path.
        path: String,
        /// The ACL.
        acl: Vec<Acl>,
        /// Its ACL version after this.
        aversion: i32,
    },
    /// A version check inside a `multi`: changes nothing.
    Check {
        /// The node.
        path: String,
    },
    /// A failed write, logged with its error code.
    Error {
        /// The error ([`zkproto::ErrorCode`]).
        err: i32,
    },
    /// A `multi`: every operation or none. A failed one is a list of
    /// errors: 0 for the operations before the one that failed, its error,
    /// then RuntimeInconsistency for the rest.
    Multi(Vec<TxnKind>),
}
