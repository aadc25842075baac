//! Models that judge a history's operations directly, without turning
//! them into locklab's history first:
//!
//! - [`mutex`]: Knossos's mutex (acquire and release alternate, no
//!   owner), judged by linearizability;
//! - [`lock_set`]: Jepsen's lock-guarded set, judged as Jepsen's set
//!   checker judges it (no element added `ok` is lost).

pub mod lock_set;
pub mod mutex;
