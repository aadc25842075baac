//! The operation every history format is read into: Jepsen's.
//!
//! A Jepsen history is a list of operations. A client *process* invokes an
//! operation (`invoke`) and later completes it: `ok` (it took effect),
//! `fail` (it did not) or `info` (it may have either: a timeout, a crash).
//! A process whose operation ended `info` is never used again; the client
//! goes on as a new process. Other actors (Jepsen's `nemesis`, which
//! injects faults) have names instead of numbers.
//!
//! Values are kept as JSON values whatever the source: EDN keywords become
//! strings without the colon, lists, vectors and sets become arrays, maps
//! become objects keyed by their keys' text, `nil` is `null`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Who performed an operation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Process {
    /// A client process, by number.
    Client(u64),
    /// A named actor: Jepsen's `nemesis`, or locklab's own records
    /// (`locklab`) in an exported history.
    Named(String),
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(n) => write!(f, "{n}"),
            Process::Named(name) => f.write_str(name),
        }
    }
}

/// Where an operation stands: Jepsen's `:type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpType {
    /// The process began the operation.
    Invoke,
    /// It took effect.
    Ok,
    /// It did not take effect.
    Fail,
    /// It may or may not have taken effect; the process is not used again.
    Info,
}

impl OpType {
    /// The name Jepsen gives it.
    pub fn name(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }

    /// The type named `name` (`invoke`, `ok`, `fail`, `info`).
    pub fn from_name(name: &str) -> Option<OpType> {
        match name {
            "invoke" => Some(OpType::Invoke),
            "ok" => Some(OpType::Ok),
            "fail" => Some(OpType::Fail),
            "info" => Some(OpType::Info),
            _ => None,
        }
    }

    /// Whether it ends an operation (`ok`, `fail`, `info`).
    pub fn is_completion(self) -> bool {
        self != OpType::Invoke
    }
}

/// One operation of a history, as read from any format.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// Who performed it.
    pub process: Process,
    /// `invoke`, `ok`, `fail` or `info`.
    pub kind: OpType,
    /// The function: `acquire`, `release`, `write`, `add`, `read`, or a
    /// nemesis's own (`start-partition`...).
    pub f: String,
    /// Its value (`null` when it has none).
    pub value: Value,
    /// When it happened, ns, on the clock of the process that recorded it.
    pub time_ns: Option<u64>,
    /// How far that clock may be from true time, ns: the reading is within
    /// `time_ns ± clock_bound_ns`. 0 when the history says nothing (one
    /// clock, as in Jepsen's histories).
    pub clock_bound_ns: u64,
    /// Its position as the history numbers it (Jepsen's `:index`), or its
    /// position in the file, from 0, when the history has none.
    pub index: u64,
    /// Every further field, by name without a colon (`lock`, `token`,
    /// `fence`...).
    pub fields: BTreeMap<String, Value>,
    /// The line of the file it was read from, from 1 (for errors).
    pub line: usize,
}

impl Op {
    /// A further field, if present and not `null`.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }

    /// Whether a client process performed it.
    pub fn is_client(&self) -> bool {
        matches!(self.process, Process::Client(_))
    }
}
