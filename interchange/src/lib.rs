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
//! - [`mod@format`]: the formats by name, and reading a file (size-limited,
//!   UTF-8, checked well formed);
//! - [`jepsen_edn`]: Jepsen's EDN histories (`history.edn`);
//! - [`jepsen_json`]: Jepsen's histories as JSON (elle-cli's; users' own
//!   logs, `docs/check.md`);
//! - [`porcupine`]: Porcupine's operations, with a lock's inputs and
//!   outputs;
//! - [`locklab_format`]: locklab's own `history.jsonl`;
//! - [`export`]: locklab's histories as Jepsen operations, EDN or JSON,
//!   and back, exactly;
//! - [`wellformed`]: Jepsen's rules for a history (one operation at a time
//!   per process, none after an `info`, time forward);
//! - [`clock`]: real-time order, and clocks with a bound on their error;
//! - [`foreign`]: operations recorded elsewhere as locklab's own history,
//!   for its checkers;
//! - [`models`]: models that judge operations directly (Knossos's mutex,
//!   Jepsen's lock-guarded set);
//! - [`judging`]: the four models, and a history's verdict under one;
//! - [`checking`]: one history as `locklab check` takes it, read and
//!   judged.

pub mod checking;
pub mod clock;
mod edn;
pub mod error;
pub mod export;
pub mod foreign;
pub mod format;
pub mod jepsen_edn;
pub mod jepsen_json;
pub mod judging;
pub mod locklab_format;
pub mod models;
pub mod op;
pub mod porcupine;
mod record;
pub mod wellformed;

pub use record::CLOCK_BOUND_KEY;
