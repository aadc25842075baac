//! What a rung file defines, read and checked: where the lock lives, its
//! owner mark, its renewal, and each operation's call and outcomes.

use super::arg::{Arg, Placeholder};
use super::reply::{Capture, Captured, Pattern};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// What the lock stores as its owner mark: `{token}` in a script's
/// arguments, and what its release and extend compare against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OwnerMark {
    /// A fresh random 128-bit token per acquire.
    Random,
    /// The owner's `client:task` id, the same for every acquire of one
    /// owner (reentrant locks).
    Owner,
}

/// Where the lock lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nodes {
    /// One node (the first connection it is given).
    Single,
    /// Every node it is given, independent, in one concurrent round per
    /// operation, each reply bounded by the node timeout.
    Independent {
        /// How many must grant.
        quorum: Quorum,
        /// The clock drift allowed for: `ttl × numerator / denominator +
        /// plus`, subtracted from the lease's validity.
        drift: Drift,
    },
}

/// How many independent nodes must grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    /// N/2 + 1 of the N nodes.
    Majority,
    /// At least this many.
    AtLeast(usize),
}

impl Quorum {
    /// The votes needed out of `nodes`.
    pub fn of(self, nodes: usize) -> usize {
        match self {
            Quorum::Majority => nodes / 2 + 1,
            Quorum::AtLeast(n) => n,
        }
    }
}

/// A drift allowance: a fraction of the TTL plus a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    /// The fraction's numerator.
    pub numerator: u32,
    /// The fraction's denominator.
    pub denominator: u32,
    /// The constant.
    pub plus: Duration,
}

impl Drift {
    /// The allowance for `ttl`.
    pub fn of(self, ttl: Duration) -> Duration {
        ttl * self.numerator / self.denominator + self.plus
    }
}

/// A renewal interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    /// The TTL divided by this.
    TtlOver(u32),
    /// A fixed interval.
    Fixed(Duration),
}

impl Interval {
    /// The period for `ttl`, at least 1 ms.
    pub fn period(self, ttl: Duration) -> Duration {
        match self {
            Interval::TtlOver(n) => ttl / n,
            Interval::Fixed(d) => d,
        }
        .max(Duration::from_millis(1))
    }
}

/// One operation: a call and what its replies mean.
#[derive(Debug, Clone)]
pub struct Operation {
    /// Which operation it is.
    pub kind: OperationKind,
    /// What it sends.
    pub call: Call,
    /// Its outcomes, in the order they are tried, each with its patterns.
    pub outcomes: Vec<(Outcome, Vec<Pattern>)>,
}

/// The operations a rung file can define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    /// `[acquire]`.
    Acquire,
    /// `[release]`.
    Release,
    /// `[extend]`.
    Extend,
    /// `[reclaim]`.
    Reclaim,
}

impl OperationKind {
    /// Its table's name.
    pub fn name(self) -> &'static str {
        match self {
            OperationKind::Acquire => "acquire",
            OperationKind::Release => "release",
            OperationKind::Extend => "extend",
            OperationKind::Reclaim => "reclaim",
        }
    }

    /// The outcomes it has, in the order they are tried; the first ones
    /// are required.
    pub(super) fn outcomes(self) -> (&'static [Outcome], usize) {
        match self {
            OperationKind::Acquire => (&[Outcome::Granted, Outcome::Taken], 2),
            OperationKind::Release => (
                &[Outcome::Released, Outcome::StillHeld, Outcome::NotMine],
                1,
            ),
            OperationKind::Extend => (&[Outcome::Extended, Outcome::NotMine], 2),
            OperationKind::Reclaim => (&[Outcome::Granted, Outcome::NotMine], 2),
        }
    }
}

/// What a reply means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lock is now this owner's (acquire, reclaim).
    Granted,
    /// Another owner holds it (acquire).
    Taken,
    /// The lock is given back (release).
    Released,
    /// A nested hold was given back; the owner still holds it (release).
    StillHeld,
    /// The lock is not this owner's (release, extend, reclaim).
    NotMine,
    /// The TTL is re-armed (extend).
    Extended,
}

impl Outcome {
    /// Its field name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Granted => "granted",
            Outcome::Taken => "taken",
            Outcome::Released => "released",
            Outcome::StillHeld => "still_held",
            Outcome::NotMine => "not_mine",
            Outcome::Extended => "extended",
        }
    }
}

/// What an operation sends.
#[derive(Debug, Clone)]
pub enum Call {
    /// A Lua script, sent by `EVALSHA` (loaded on `NOSCRIPT`, as every
    /// script of the ladder is).
    Script {
        /// The script.
        script: Arc<redis::Script>,
        /// Its KEYS.
        keys: Vec<Arg>,
        /// Its ARGV.
        argv: Vec<Arg>,
    },
    /// One command: its name and arguments.
    Command(Vec<Arg>),
}

impl Call {
    fn args(&self) -> impl Iterator<Item = &Arg> {
        let (a, b): (&[Arg], &[Arg]) = match self {
            Call::Script { keys, argv, .. } => (keys, argv),
            Call::Command(words) => (words, &[]),
        };
        a.iter().chain(b)
    }
}

impl Operation {
    /// Whether any argument carries `value`.
    pub fn uses(&self, value: Placeholder) -> bool {
        self.call.args().any(|a| a.uses(value))
    }

    /// Whether an outcome's pattern keeps `capture`.
    pub fn captures(&self, outcome: Outcome, capture: Capture) -> bool {
        self.outcomes
            .iter()
            .filter(|(o, _)| *o == outcome)
            .flat_map(|(_, ps)| ps)
            .any(|p| p.captures(capture))
    }

    /// What `reply` means: the first outcome with a matching pattern, and
    /// what that pattern kept.
    pub fn outcome_of(&self, reply: &redis::Value) -> Option<(Outcome, Captured)> {
        self.outcomes.iter().find_map(|(outcome, patterns)| {
            patterns.iter().find_map(|p| {
                let mut kept = Captured::default();
                p.matches(reply, &mut kept).then_some((*outcome, kept))
            })
        })
    }

    /// Its outcomes as the file gives them, for an error about a reply
    /// none of them matches.
    pub fn expected(&self) -> String {
        self.outcomes
            .iter()
            .map(|(o, ps)| {
                let ps: Vec<String> = ps.iter().map(Pattern::to_string).collect();
                format!("{} = {}", o.name(), ps.join(" | "))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
