//! What the server reports to its observers: the ground truth a checker
//! compares a lock design's claims against. Named lock ownership changes
//! as they happen; row writes only when their transaction commits, since
//! only then are they real to anyone else.

use crate::core::ConnId;
use crate::value::Value;

/// One change, in the order the server made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Connection `id` now holds the named lock `name` (it did not before).
    LockGranted {
        /// The lock's name.
        name: String,
        /// The holder's connection id.
        id: ConnId,
    },
    /// Connection `id` no longer holds `name`.
    LockReleased {
        /// The lock's name.
        name: String,
        /// The connection id that held it.
        id: ConnId,
        /// Why.
        why: ReleaseReason,
    },
    /// A committed write to a row.
    RowCommitted {
        /// The table.
        table: String,
        /// Insert, update or delete.
        kind: RowChange,
        /// The row's primary (or first unique) column's value, if any.
        key: Option<Value>,
        /// The row after the write (before it, for a delete), by column.
        values: Vec<(String, Value)>,
    },
}

/// Why a named lock was let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    /// `RELEASE_LOCK` took its last level.
    ReleaseLock,
    /// `RELEASE_ALL_LOCKS()`.
    ReleaseAll,
    /// Its session ended: the connection closed or the server went down.
    SessionEnded,
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
