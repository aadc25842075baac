//! What the server reports to its observers: the ground truth a checker
//! compares a lock design's claims against. Advisory lock ownership changes
//! as they happen; row changes only when their transaction commits, since
//! only then are they real to anyone else.

use crate::advisory::{AdvisoryKey, Scope};
use crate::core::Pid;
use crate::value::Value;

/// One change, in the order the server made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Backend `pid` now holds `key` (it did not before).
    LockGranted {
        /// The key.
        key: AdvisoryKey,
        /// The backend.
        pid: Pid,
        /// How the hold that made it the owner was taken.
        scope: Scope,
    },
    /// Backend `pid` no longer holds `key`.
    LockReleased {
        /// The key.
        key: AdvisoryKey,
        /// The backend.
        pid: Pid,
        /// Why.
        why: ReleaseReason,
    },
    /// A committed write to a row.
    RowCommitted {
        /// The table.
        table: String,
        /// Insert, update or delete.
        kind: RowChange,
        /// The row's first unique column's value (its key), if it has one.
        key: Option<Value>,
        /// The row after the write (before it, for a delete), by column.
        values: Vec<(String, Value)>,
    },
}

/// Why an advisory lock was let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    /// `pg_advisory_unlock` or `pg_advisory_unlock_all`.
    Unlock,
    /// Its session ended: the connection closed or the server went down
    /// (a transaction-level lock too: its transaction went with it).
    SessionEnded,
    /// A transaction-level lock's transaction committed or rolled back.
    TransactionEnded,
}

/// The kind of a committed row write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowChange {
    /// INSERT
    Insert,
    /// UPDATE
    Update,
    /// DELETE
    Delete,
}
