//! Rungs defined in a file: a lock's scripts (or single commands), what
//! their KEYS and ARGV carry, what each reply means, on one node or on N
//! independent nodes with a quorum, its wait strategy and its renewal,
//! run by one generic lock ([`ScriptedLock`]) that implements
//! [`Lock`](crate::lock::Lock) like the ladder's rungs. The format is
//! documented by example in `rungs/README.md`; the ladder's `lua-release`,
//! `reentrant`, `watchdog` and `redlock` are written in it in `rungs/`.
//!
//! Loading is strict: an unknown field, a wrong type, a value with no
//! meaning, an outcome an operation does not have, or a placeholder no
//! value fills is an error naming the file, line and column.
//! [`RungFile::scripts`] hands each Lua script and its first line to a
//! caller that can compile Lua (the simulator does), so that a syntax
//! error too is reported at its line in the file.

mod arg;
mod checker;
mod format;
mod parse;
mod raw;
mod register;
mod reply;
mod scripted;

pub use arg::{Arg, Placeholder, Values};
pub use format::{
    Call, Drift, Interval, Nodes, Operation, OperationKind, Outcome, OwnerMark, Quorum,
};
pub use reply::{Capture, Captured, Pattern};
pub use scripted::ScriptedLock;

use crate::lock::WaitStrategy;
use std::sync::Arc;

/// The largest rung file read: far more than any lock's scripts.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The longest time a rung file may set (wait intervals, renewal
/// interval, drift): one hour, as for every time in a scenario.
pub const MAX_SETTING_MS: u64 = 3_600_000;

/// A rung file, read and checked.
#[derive(Debug, Clone)]
pub struct RungFile {
    /// The rung's id.
    pub id: String,
    /// The file it came from, as named in errors.
    pub file: String,
    /// The file's text.
    pub text: Arc<str>,
    /// The ladder rung whose part it takes in scenarios.
    pub plays: Option<&'static str>,
    /// What it fixes, for listings.
    pub fixes: String,
    /// Its known flaw, for listings.
    pub flaw: String,
    /// What the lock stores as its owner mark.
    pub token: OwnerMark,
    /// One node, or several independent ones.
    pub nodes: Nodes,
    /// Its own wait strategy; `None`: the one it is configured with.
    pub wait: Option<WaitStrategy>,
    /// How often a held lease is renewed, if it is.
    pub renewal: Option<Interval>,
    /// Takes the lock.
    pub acquire: Operation,
    /// Gives it back.
    pub release: Operation,
    /// Re-arms its TTL (and the renewal's tick).
    pub extend: Option<Operation>,
    /// Recognises this acquire's own grant whose reply was lost.
    pub reclaim: Option<Operation>,
}

/// A Lua script of a rung file and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSource {
    /// The operation it belongs to.
    pub operation: &'static str,
    /// The script.
    pub text: String,
    /// The file line of its first line.
    pub first_line: usize,
}

/// An error in a rung file, at a place in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}{message}", place = place(*line, *column))]
pub struct RungFileError {
    /// The file, as named.
    pub file: String,
    /// Its line (1-based; 0 when the error has no place).
    pub line: usize,
    /// Its column (1-based; 0 when unknown).
    pub column: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

fn place(line: usize, column: usize) -> String {
    match (line, column) {
        (0, _) => String::new(),
        (l, 0) => format!("line {l}: "),
        (l, c) => format!("line {l}, column {c}: "),
    }
}

/// 1-based line and column of a byte offset into a TOML text (rung files'
/// and scenario files' errors both point there).
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
