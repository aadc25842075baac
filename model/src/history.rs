//! The history of a run: every operation's invoke and completion, every
//! fault, and the servers' own record of lock keys, in the order they
//! happened, stamped with true simulated time.
//!
//! Written as JSON Lines, one [`Event`] per line. The fields are part of
//! locklab's interface (the checkers read them, `replay` compares them byte
//! for byte, users grep them), so they carry a schema version:
//! [`SCHEMA_VERSION`] is written in every `verdict.json`, and any change to
//! the fields below bumps it.
//!
//! | field | meaning |
//! |---|---|
//! | `i` | position in the history, from 0 |
//! | `at_us` | true simulated time in µs since the run began |
//! | `type` | `invoke`, `complete`, `fault`, `server`, `final` or `wakeups` |
//! | `client` | client index (invoke/complete) |
//! | `op` | `acquire`, `release`, `extend`, `check`, `read`, `write` |
//! | `n` | which operation (lock cycle) of that client, from 1 |
//! | `outcome` | `ok`, `fail` or `unknown` (complete) |
//! | `token`, `fence`, `depth`, `valid_for_us`, `value`, `error` | what the completion carried |
//! | `shared` | an acquire asked for (invoke) or was granted (complete) the lock shared, as a reader; absent when exclusive |
//! | `count` | the run's wake-ups of waiting clients (wakeups) |

use crate::fault::FaultKind;
use crate::host::{BadHost, Host};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

/// Version of the event fields below; bump on any change.
pub const SCHEMA_VERSION: u32 = 3;

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the history.
    pub i: usize,
    /// True simulated time, µs since the run began.
    pub at_us: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What an operation was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// Acquire the lock.
    Acquire,
    /// Release the lock.
    Release,
    /// Extend the lease.
    Extend,
    /// The holder's validity check before a resource write.
    Check,
    /// Read the guarded resource.
    Read,
    /// Write the guarded resource.
    Write,
}

/// How an operation ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// It did what was asked.
    Ok,
    /// It definitely did not.
    Fail,
    /// It may or may not have (a timeout, a broken connection).
    Unknown,
}

/// The kinds of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum EventKind {
    /// A client began an operation.
    Invoke {
        /// Client index.
        client: usize,
        /// The operation.
        op: Op,
        /// The lock (key) it concerns.
        lock: String,
        /// Which lock cycle of this client, from 1.
        n: u32,
        /// For writes: the value written; for a fenced write, also its token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
        /// Acquires: the client asked for the lock shared (as a reader).
        #[serde(default, skip_serializing_if = "is_false")]
        shared: bool,
    },
    /// A client's operation ended.
    Complete {
        /// Client index.
        client: usize,
        /// The operation.
        op: Op,
        /// The lock (key) it concerns.
        lock: String,
        /// Which lock cycle of this client, from 1.
        n: u32,
        /// How it ended.
        outcome: Outcome,
        /// The lease token (acquire, release, extend).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
        /// The fencing token, when the lease has one; on resource
        /// operations, the token the client sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fence: Option<u64>,
        /// Reentrant rungs: the hold count after this operation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        depth: Option<u32>,
        /// Rungs that track their own validity (Redlock): how much longer,
        /// from this completion, the holder believes its lease is valid, µs.
        /// Holding in its own view ends then at the latest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        valid_for_us: Option<u64>,
        /// Reads: the value seen; writes: the value written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Acquires: the lock was granted shared, beside other shared
        /// holders; a rung with no read mode grants it exclusive.
        #[serde(default, skip_serializing_if = "is_false")]
        shared: bool,
    },
    /// A fault began or ended.
    Fault {
        /// The fault's kind as named in scenario files (`pause`, `crash`, ...).
        fault: FaultKind,
        /// What it hit: a host (`client-1`, `redis-0`) or the two sides of
        /// a link fault (`client-0,client-1|redis-0`).
        target: FaultTarget,
        /// `start`, `end` or `instant`.
        phase: Phase,
        /// Its parameters, for people reading the history.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
    /// A node's own record of a lock key.
    Server {
        /// The node.
        node: Host,
        /// `set`, `expired` or `deleted`.
        what: KeyChange,
        /// The key.
        key: String,
        /// The value (set).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// The guarded resource's final state, read when the run ended.
    Final {
        /// The stock (inventory) or register value left.
        value: i64,
    },
    /// How many times the lock code woke a waiting client to look at a
    /// taken lock again, over the whole run and every client: each retry
    /// of a polling wait, each watch response of an etcd waiter. Read
    /// when the run ended.
    Wakeups {
        /// The wake-ups counted.
        count: u64,
    },
}

/// Serde's test for leaving a `false` flag out of a line.
fn is_false(flag: &bool) -> bool {
    !flag
}

/// Where a fault event stands in the fault's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// The fault began and lasts until its `end`.
    Start,
    /// The fault ended (healed, restarted, promoted).
    End,
    /// The fault happened at one instant and has no duration.
    Instant,
}

/// What a node did to a watched key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyChange {
    /// The key was written (created, overwritten or its TTL changed).
    Set,
    /// The key's TTL ran out.
    Expired,
    /// The key was deleted.
    Deleted,
}

/// What a fault hit; written as text (see [`FaultTarget`]'s `Display`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum FaultTarget {
    /// One host: written as its name.
    Host(Host),
    /// The links between two sides: written `a1,a2|b1,b2`.
    Sides {
        /// One side.
        a: Vec<Host>,
        /// The other side.
        b: Vec<Host>,
    },
}

impl FaultTarget {
    /// The client it hit, when it is one client.
    pub fn client(&self) -> Option<usize> {
        match self {
            FaultTarget::Host(host) => host.client(),
            FaultTarget::Sides { .. } => None,
        }
    }
}

impl fmt::Display for FaultTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |hosts: &[Host]| {
            hosts
                .iter()
                .map(Host::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            FaultTarget::Host(host) => write!(f, "{host}"),
            FaultTarget::Sides { a, b } => write!(f, "{}|{}", join(a), join(b)),
        }
    }
}

impl FromStr for FaultTarget {
    type Err = BadHost;

    fn from_str(text: &str) -> Result<FaultTarget, BadHost> {
        let hosts = |side: &str| {
            side.split(',')
                .map(str::parse)
                .collect::<Result<Vec<Host>, _>>()
        };
        match text.split_once('|') {
            Some((a, b)) => Ok(FaultTarget::Sides {
                a: hosts(a)?,
                b: hosts(b)?,
            }),
            None => text.parse().map(FaultTarget::Host),
        }
    }
}

impl From<FaultTarget> for String {
    fn from(target: FaultTarget) -> String {
        target.to_string()
    }
}

impl TryFrom<String> for FaultTarget {
    type Error = BadHost;

    fn try_from(text: String) -> Result<FaultTarget, BadHost> {
        text.parse()
    }
}

/// An ordered, append-only history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    events: Vec<Event>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        History::default()
    }

    /// Appends an event at `at_us` and returns its index.
    pub fn push(&mut self, at_us: u64, kind: EventKind) -> usize {
        let i = self.events.len();
        self.events.push(Event { i, at_us, kind });
        i
    }

    /// The events, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Time of the last event, µs.
    pub fn end_us(&self) -> u64 {
        self.events.last().map(|e| e.at_us).unwrap_or(0)
    }

    /// Writes the history as JSON Lines.
    pub fn write_jsonl<W: Write>(&self, mut out: W) -> io::Result<()> {
        for event in &self.events {
            serde_json::to_writer(&mut out, event)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The history as one JSON Lines string.
    pub fn to_jsonl(&self) -> String {
        let mut buf = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_jsonl(&mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// Reads a history written by [`History::write_jsonl`]; the error names
    /// the line that could not be read.
    pub fn from_jsonl(text: &str) -> Result<History, String> {
        let mut events = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let event: Event = serde_json::from_str(line)
                .map_err(|e| format!("history.jsonl line {}: {e}", n + 1))?;
            events.push(event);
        }
        Ok(History { events })
    }
}

impl FromIterator<Event> for History {
    fn from_iter<T: IntoIterator<Item = Event>>(iter: T) -> Self {
        History {
            events: iter.into_iter().collect(),
        }
    }
}
