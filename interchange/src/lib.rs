//! Lock histories exchanged with other tools.
//!
//! locklab judges its own histories; people with a lock have histories of
//! their own: a Jepsen test's, a production log's, a library's test
//! harness's. This crate reads them into one shape, [`op::Op`] (Jepsen's
//! operation: a process, `invoke`/`ok`/`fail`/`info`, a function, a value,
//! a time), judges them with a model, and writes locklab's own histories
//! out in Jepsen's format, so that Knossos or elle-cli can check what
//! locklab found.
//!
//! - [`op`]: the operation every format is read into;
//! - [`error`]: a history that is not well formed, by line;
//! - [`models`]: models that judge operations directly (Knossos's mutex,
//!   Jepsen's lock-guarded set).

pub mod error;
pub mod models;
pub mod op;
