//! Rungs defined in a file: a lock's scripts (or single commands), what
//! their KEYS and ARGV carry, what each reply means, on one node or on N
//! independent nodes with a quorum, its wait strategy and its renewal,
//! run by one generic lock ([`ScriptedLock`]) that implements [`Lock`]
//! like the ladder's rungs. The format is documented by example in
//! `rungs/README.md`; the ladder's `lua-release`, `reentrant`, `watchdog`
//! and `redlock` are written in it in `rungs/`.
//!
//! Loading is strict: an unknown field, a wrong type, a value with no
//! meaning, an outcome an operation does not have, or a placeholder no
//! value fills is an error naming the file, line and column.
//! [`RungFile::scripts`] hands each Lua script and its first line to a
//! caller that can compile Lua (the simulator does), so that a syntax
//! error too is reported at its line in the file.

mod reply;
mod scripted;

pub use reply::{Capture, Captured, Pattern};
pub use scripted::ScriptedLock;

use crate::lock::{Lock, WaitStrategy};
use crate::registry::{RegisterError, Registration};
use crate::{Rung, UnknownRung};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

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
    fn outcomes(self) -> (&'static [Outcome], usize) {
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

/// One argument: literal text with placeholders filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Value(Placeholder),
}

/// A value an argument can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `{key}`: the lock's key.
    Key,
    /// `{token}`: the owner mark (see [`OwnerMark`]).
    Token,
    /// `{owner}`: the owner's `client:task` id.
    Owner,
    /// `{ttl_ms}`: the TTL in whole ms (at least 1).
    TtlMs,
    /// `{channel}`: the lock's release channel (pub/sub wake-up).
    Channel,
}

const PLACEHOLDERS: [(&str, Placeholder); 5] = [
    ("key", Placeholder::Key),
    ("token", Placeholder::Token),
    ("owner", Placeholder::Owner),
    ("ttl_ms", Placeholder::TtlMs),
    ("channel", Placeholder::Channel),
];

/// The values of one call.
pub struct Values<'a> {
    /// The lock's key.
    pub key: &'a str,
    /// The owner mark.
    pub token: &'a str,
    /// The owner's id.
    pub owner: &'a str,
    /// The TTL.
    pub ttl: Duration,
}

impl Arg {
    fn parse(text: &str) -> Result<Arg, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                literal.push('{');
                rest = after;
            } else if let Some(after) = rest.strip_prefix("}}") {
                literal.push('}');
                rest = after;
            } else if c == '{' {
                let end = rest.find('}').ok_or_else(|| {
                    format!("{text:?}: `{{` without `}}`; write `{{{{` for a literal brace")
                })?;
                let name = &rest[1..end];
                let value = PLACEHOLDERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| {
                        format!(
                            "{text:?}: unknown placeholder {{{name}}}; expected one of {}, or `{{{{` for a literal brace",
                            PLACEHOLDERS
                                .iter()
                                .map(|(n, _)| format!("{{{n}}}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?;
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Value(value));
                rest = &rest[end + 1..];
            } else if c == '}' {
                return Err(format!(
                    "{text:?}: `}}` without `{{`; write `}}}}` for a literal brace"
                ));
            } else {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if !literal.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Arg(pieces))
    }

    /// Whether it carries `value`.
    pub fn uses(&self, value: Placeholder) -> bool {
        self.0.contains(&Piece::Value(value))
    }

    /// The argument with its placeholders filled in.
    pub fn fill(&self, values: &Values<'_>) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Value(Placeholder::Key) => out.push_str(values.key),
                Piece::Value(Placeholder::Token) => out.push_str(values.token),
                Piece::Value(Placeholder::Owner) => out.push_str(values.owner),
                Piece::Value(Placeholder::TtlMs) => {
                    out.push_str(&crate::rungs::common::ttl_ms(values.ttl).to_string())
                }
                Piece::Value(Placeholder::Channel) => {
                    out.push_str(&crate::notify::channel(values.key))
                }
            }
        }
        out
    }
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

// ----- the file as written -----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    id: Spanned<String>,
    #[serde(default)]
    plays: Option<Spanned<String>>,
    #[serde(default)]
    fixes: String,
    #[serde(default)]
    flaw: String,
    token: OwnerMark,
    #[serde(default)]
    nodes: Option<Spanned<RawNodes>>,
    #[serde(default)]
    wait: Option<Spanned<RawWait>>,
    #[serde(default)]
    renewal: Option<Spanned<RawRenewal>>,
    acquire: Spanned<RawOperation>,
    release: Spanned<RawOperation>,
    #[serde(default)]
    extend: Option<Spanned<RawOperation>>,
    #[serde(default)]
    reclaim: Option<Spanned<RawOperation>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodes {
    kind: NodesKind,
    #[serde(default)]
    quorum: Option<Spanned<RawQuorum>>,
    #[serde(default)]
    drift_factor: Option<Spanned<f64>>,
    #[serde(default)]
    drift_ms: Option<u64>,
}

#[derive(Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum NodesKind {
    Single,
    Independent,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawQuorum {
    Count(u64),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, tag = "strategy", rename_all = "kebab-case")]
enum RawWait {
    Fixed { interval_ms: u64 },
    Backoff { initial_ms: u64, max_ms: u64 },
    Notify { fallback_ms: u64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRenewal {
    #[serde(default)]
    interval: Option<Spanned<String>>,
    #[serde(default)]
    interval_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperation {
    #[serde(default)]
    script: Option<Spanned<String>>,
    #[serde(default)]
    command: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    keys: Vec<Spanned<String>>,
    #[serde(default)]
    argv: Vec<Spanned<String>>,
    #[serde(default)]
    granted: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    taken: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    released: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    still_held: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    not_mine: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    extended: Option<Spanned<OneOrMany>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl RawOperation {
    fn outcome(&self, outcome: Outcome) -> Option<&Spanned<OneOrMany>> {
        match outcome {
            Outcome::Granted => self.granted.as_ref(),
            Outcome::Taken => self.taken.as_ref(),
            Outcome::Released => self.released.as_ref(),
            Outcome::StillHeld => self.still_held.as_ref(),
            Outcome::NotMine => self.not_mine.as_ref(),
            Outcome::Extended => self.extended.as_ref(),
        }
    }
}

const ALL_OUTCOMES: [Outcome; 6] = [
    Outcome::Granted,
    Outcome::Taken,
    Outcome::Released,
    Outcome::StillHeld,
    Outcome::NotMine,
    Outcome::Extended,
];

/// Checks against the text, locating each error.
struct Checker<'a> {
    text: &'a str,
    file: &'a str,
}

impl Checker<'_> {
    fn at(&self, span: std::ops::Range<usize>, message: String) -> RungFileError {
        let (line, column) = line_column(self.text, span.start);
        RungFileError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }

    fn operation(
        &self,
        kind: OperationKind,
        raw: &Spanned<RawOperation>,
    ) -> Result<Operation, RungFileError> {
        let name = kind.name();
        let op = raw.get_ref();
        let args = |list: &[Spanned<String>], field: &str| -> Result<Vec<Arg>, RungFileError> {
            list.iter()
                .map(|a| {
                    Arg::parse(a.get_ref())
                        .map_err(|e| self.at(a.span(), format!("`{name}.{field}`: {e}")))
                })
                .collect()
        };
        let call = match (&op.script, &op.command) {
            (Some(script), None) => Call::Script {
                script: Arc::new(redis::Script::new(script.get_ref())),
                keys: args(&op.keys, "keys")?,
                argv: args(&op.argv, "argv")?,
            },
            (None, Some(words)) => {
                if !op.keys.is_empty() || !op.argv.is_empty() {
                    return Err(self.at(
                        raw.span(),
                        format!("`{name}`: `keys` and `argv` belong to a `script`; a `command` carries its arguments itself"),
                    ));
                }
                if words.is_empty() {
                    return Err(self.at(
                        raw.span(),
                        format!("`{name}.command` is empty; expected a command name and its arguments, such as [\"SET\", \"{{key}}\", \"{{token}}\", \"NX\", \"PX\", \"{{ttl_ms}}\"]"),
                    ));
                }
                Call::Command(args(words, "command")?)
            }
            _ => {
                return Err(self.at(
                    raw.span(),
                    format!("`{name}`: expected exactly one of `script` (Lua) or `command` (one command)"),
                ));
            }
        };
        let (allowed, required) = kind.outcomes();
        for outcome in ALL_OUTCOMES {
            if let Some(given) = op.outcome(outcome)
                && !allowed.contains(&outcome)
            {
                return Err(self.at(
                    given.span(),
                    format!(
                        "`{name}.{}`: {name} has no such outcome; expected {}",
                        outcome.name(),
                        names(allowed)
                    ),
                ));
            }
        }
        let mut outcomes = Vec::new();
        for (i, outcome) in allowed.iter().enumerate() {
            let Some(given) = op.outcome(*outcome) else {
                if i < required {
                    return Err(self.at(
                        raw.span(),
                        format!(
                            "`{name}.{}` is missing: what {name}'s reply is when {}",
                            outcome.name(),
                            meaning(*outcome)
                        ),
                    ));
                }
                continue;
            };
            let texts: Vec<&String> = match given.get_ref() {
                OneOrMany::One(t) => vec![t],
                OneOrMany::Many(ts) => ts.iter().collect(),
            };
            if texts.is_empty() {
                return Err(self.at(
                    given.span(),
                    format!("`{name}.{}` is empty; expected a pattern", outcome.name()),
                ));
            }
            let patterns = texts
                .into_iter()
                .map(|t| {
                    Pattern::parse(t).map_err(|e| {
                        self.at(given.span(), format!("`{name}.{}`: {e}", outcome.name()))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            outcomes.push((*outcome, patterns));
        }
        Ok(Operation {
            kind,
            call,
            outcomes,
        })
    }
}

fn names(outcomes: &[Outcome]) -> String {
    outcomes
        .iter()
        .map(|o| format!("`{}`", o.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn meaning(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Granted => "the lock is granted",
        Outcome::Taken => "another owner holds the lock",
        Outcome::Released => "the lock is given back",
        Outcome::StillHeld => "a nested hold is given back",
        Outcome::NotMine => "the lock is not this owner's",
        Outcome::Extended => "the TTL is re-armed",
    }
}

impl RungFile {
    /// Reads a rung file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<RungFile, RungFileError> {
        let err = |line, column, message: String| RungFileError {
            file: file.to_string(),
            line,
            column,
            message,
        };
        if text.len() > MAX_FILE_BYTES {
            return Err(err(0, 0, "file too large: more than 1 MiB".into()));
        }
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| line_column(text, s.start));
            err(line, column, e.message().trim().to_string())
        })?;
        let check = Checker { text, file };
        let id = raw.id.get_ref().clone();
        let plays = match &raw.plays {
            None => None,
            Some(p) => Some(
                crate::ladder::built_in(p.get_ref())
                    .map(|r| r.id)
                    .ok_or_else(|| {
                        check.at(
                            p.span(),
                            format!("`plays`: {}", UnknownRung(p.get_ref().clone())),
                        )
                    })?,
            ),
        };
        let nodes = match &raw.nodes {
            None => Nodes::Single,
            Some(n) => check.nodes(n)?,
        };
        let wait = raw.wait.as_ref().map(|w| check.wait(w)).transpose()?;
        let renewal = raw.renewal.as_ref().map(|r| check.renewal(r)).transpose()?;
        let acquire = check.operation(OperationKind::Acquire, &raw.acquire)?;
        let release = check.operation(OperationKind::Release, &raw.release)?;
        let extend = raw
            .extend
            .as_ref()
            .map(|o| check.operation(OperationKind::Extend, o))
            .transpose()?;
        let reclaim = raw
            .reclaim
            .as_ref()
            .map(|o| check.operation(OperationKind::Reclaim, o))
            .transpose()?;
        let multi = matches!(nodes, Nodes::Independent { .. });
        if let (Some(r), true) = (&raw.reclaim, multi) {
            return Err(check.at(
                r.span(),
                "`reclaim`: only a single-node lock reclaims a lost grant; a failed round of independent nodes is undone on every node".into(),
            ));
        }
        if let (Some(r), true) = (&raw.reclaim, raw.token == OwnerMark::Owner) {
            return Err(check.at(
                r.span(),
                "`reclaim` needs `token = \"random\"`: with the owner's id as the mark, an acquire that finds its own mark is granted by `acquire` itself".into(),
            ));
        }
        if let (Some(r), true) = (&raw.renewal, multi) {
            return Err(check.at(
                r.span(),
                "`renewal`: only a single-node lock renews here (a multi-node lease's validity is set by its acquire)".into(),
            ));
        }
        if let (Some(r), None) = (&raw.renewal, &extend) {
            return Err(check.at(
                r.span(),
                "`renewal` needs an `[extend]` operation: each renewal runs it".into(),
            ));
        }
        let keeps = |op: &Operation, c| op.captures(Outcome::Granted, c);
        let single_only = [Some(&acquire), reclaim.as_ref()]
            .into_iter()
            .flatten()
            .any(|op| keeps(op, Capture::Depth) || keeps(op, Capture::Fence));
        if multi && single_only {
            return Err(check.at(
                raw.acquire.span(),
                "`granted`: `depth` and `fence` are kept only by a single-node lock".into(),
            ));
        }
        Ok(RungFile {
            id,
            file: file.to_string(),
            text: Arc::from(text),
            plays,
            fixes: raw.fixes,
            flaw: raw.flaw,
            token: raw.token,
            nodes,
            wait,
            renewal,
            acquire,
            release,
            extend,
            reclaim,
        })
    }

    /// Every Lua script with the file line it starts on, to be compiled
    /// by a caller that has Lua.
    pub fn scripts(&self) -> Vec<ScriptSource> {
        let raw: RawFile = match toml::from_str(&self.text) {
            Ok(raw) => raw,
            Err(_) => return Vec::new(),
        };
        let ops = [
            ("acquire", Some(&raw.acquire)),
            ("release", Some(&raw.release)),
            ("extend", raw.extend.as_ref()),
            ("reclaim", raw.reclaim.as_ref()),
        ];
        ops.into_iter()
            .filter_map(|(name, op)| {
                let script = op?.get_ref().script.as_ref()?;
                Some(ScriptSource {
                    operation: name,
                    text: script.get_ref().clone(),
                    first_line: first_content_line(&self.text, script.span()),
                })
            })
            .collect()
    }

    /// An error at `line` of this file.
    pub fn error_at(&self, line: usize, message: String) -> RungFileError {
        RungFileError {
            file: self.file.clone(),
            line,
            column: 0,
            message,
        }
    }

    /// The rung's metadata (leaked once per rung file registered: it
    /// lives as long as the process, like the ladder's).
    fn metadata(&self) -> &'static Rung {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let summary = |op: &Operation| match &op.call {
            Call::Command(_) => format!("one command ({} of {})", op.kind.name(), self.file),
            Call::Script { .. } => format!("a Lua script ({} of {})", op.kind.name(), self.file),
        };
        let any_uses = |value| {
            [
                Some(&self.acquire),
                Some(&self.release),
                self.extend.as_ref(),
            ]
            .into_iter()
            .flatten()
            .any(|op| op.uses(value))
        };
        Box::leak(Box::new(Rung {
            id: leak(self.id.clone()),
            acquire: leak(summary(&self.acquire)),
            release: leak(summary(&self.release)),
            fixes: leak(self.fixes.clone()),
            flaw: leak(self.flaw.clone()),
            shown_by: "",
            multi_node: matches!(self.nodes, Nodes::Independent { .. }),
            fencing: self.acquire.captures(Outcome::Granted, Capture::Fence),
            publishes: any_uses(Placeholder::Channel),
            reentrant: self.acquire.captures(Outcome::Granted, Capture::Depth),
            renews: self.renewal.is_some(),
            ..Rung::OFF_LADDER
        }))
    }

    /// The fewest nodes it can work on: its quorum, for a fixed one.
    pub fn min_nodes(&self) -> usize {
        match self.nodes {
            Nodes::Independent {
                quorum: Quorum::AtLeast(n),
                ..
            } => n,
            _ => 1,
        }
    }

    /// Registers the rung under its id, so that every command and
    /// scenario knows it ([`crate::register`]). The same file registered
    /// again is no change.
    pub fn register(self) -> Result<&'static Rung, RegisterError> {
        if let Some(known) = crate::registry::registered_source(&self.id, &self.text) {
            return Ok(known.rung);
        }
        let rung = self.metadata();
        let plays = self.plays;
        let text = self.text.clone();
        let min_nodes = self.min_nodes();
        let file = Arc::new(self);
        let mut registration = Registration::new(rung, move |parts| {
            Box::new(ScriptedLock::new(file.clone(), rung, parts)) as Box<dyn Lock>
        })
        .from_source(&text)
        .needing(min_nodes);
        if let Some(plays) = plays {
            registration = registration.playing(plays);
        }
        crate::registry::register(registration)?;
        Ok(rung)
    }
}

impl Checker<'_> {
    fn nodes(&self, raw: &Spanned<RawNodes>) -> Result<Nodes, RungFileError> {
        let n = raw.get_ref();
        if n.kind == NodesKind::Single {
            if n.quorum.is_some() || n.drift_factor.is_some() || n.drift_ms.is_some() {
                return Err(self.at(
                    raw.span(),
                    "`nodes`: `quorum`, `drift_factor` and `drift_ms` belong to `kind = \"independent\"`".into(),
                ));
            }
            return Ok(Nodes::Single);
        }
        let quorum = match &n.quorum {
            None => Quorum::Majority,
            Some(q) => match q.get_ref() {
                RawQuorum::Word(w) if w == "majority" => Quorum::Majority,
                RawQuorum::Count(c) if (1..=9).contains(c) => Quorum::AtLeast(*c as usize),
                _ => {
                    return Err(self.at(
                        q.span(),
                        "`nodes.quorum`: expected \"majority\" or a number of nodes from 1 to 9"
                            .into(),
                    ));
                }
            },
        };
        let (numerator, denominator) = match &n.drift_factor {
            None => (1, 100),
            Some(f) => fraction(*f.get_ref()).ok_or_else(|| {
                self.at(
                    f.span(),
                    "`nodes.drift_factor`: expected a decimal from 0 to 1 with at most 6 digits after the point, such as 0.01".into(),
                )
            })?,
        };
        let plus = n.drift_ms.unwrap_or(2);
        if plus > MAX_SETTING_MS {
            return Err(self.at(raw.span(), too_long("nodes.drift_ms")));
        }
        Ok(Nodes::Independent {
            quorum,
            drift: Drift {
                numerator,
                denominator,
                plus: Duration::from_millis(plus),
            },
        })
    }

    fn wait(&self, raw: &Spanned<RawWait>) -> Result<WaitStrategy, RungFileError> {
        let ms = |field: &str, v: u64| {
            if (1..=MAX_SETTING_MS).contains(&v) {
                Ok(Duration::from_millis(v))
            } else {
                Err(self.at(
                    raw.span(),
                    format!("`wait.{field}`: expected 1 to {} ms", MAX_SETTING_MS),
                ))
            }
        };
        Ok(match *raw.get_ref() {
            RawWait::Fixed { interval_ms } => WaitStrategy::Fixed {
                interval: ms("interval_ms", interval_ms)?,
            },
            RawWait::Backoff { initial_ms, max_ms } => {
                let (initial, max) = (ms("initial_ms", initial_ms)?, ms("max_ms", max_ms)?);
                if max < initial {
                    return Err(self.at(
                        raw.span(),
                        "`wait.max_ms` is below `wait.initial_ms`".into(),
                    ));
                }
                WaitStrategy::Backoff { initial, max }
            }
            RawWait::Notify { fallback_ms } => WaitStrategy::Notify {
                fallback: ms("fallback_ms", fallback_ms)?,
            },
        })
    }

    fn renewal(&self, raw: &Spanned<RawRenewal>) -> Result<Interval, RungFileError> {
        let r = raw.get_ref();
        match (&r.interval, r.interval_ms) {
            (Some(text), None) => text
                .get_ref()
                .strip_prefix("ttl/")
                .and_then(|n| n.trim().parse::<u32>().ok())
                .filter(|n| (1..=1000).contains(n))
                .map(Interval::TtlOver)
                .ok_or_else(|| {
                    self.at(
                        text.span(),
                        "`renewal.interval`: expected \"ttl/N\" with N from 1 to 1000, such as \"ttl/3\"".into(),
                    )
                }),
            (None, Some(ms)) if (1..=MAX_SETTING_MS).contains(&ms) => {
                Ok(Interval::Fixed(Duration::from_millis(ms)))
            }
            (None, Some(_)) => Err(self.at(raw.span(), too_long("renewal.interval_ms"))),
            _ => Err(self.at(
                raw.span(),
                "`renewal`: expected exactly one of `interval = \"ttl/N\"` or `interval_ms`"
                    .into(),
            )),
        }
    }
}

fn too_long(field: &str) -> String {
    format!("`{field}`: expected 1 to {} ms", MAX_SETTING_MS)
}

/// A decimal in [0, 1] as an exact fraction with a power-of-ten
/// denominator (`0.01` is 1/100), from its shortest decimal form.
fn fraction(f: f64) -> Option<(u32, u32)> {
    if !(0.0..=1.0).contains(&f) {
        return None;
    }
    let text = format!("{f}");
    let (whole, decimals) = text.split_once('.').unwrap_or((&text, ""));
    if decimals.len() > 6 {
        return None;
    }
    let denominator = 10u32.pow(decimals.len() as u32);
    let numerator = format!("{whole}{decimals}").parse::<u32>().ok()?;
    Some((numerator, denominator))
}

/// The line a string's content starts on: a multi-line string's first
/// line break right after its opening quotes is not part of it.
fn first_content_line(text: &str, span: std::ops::Range<usize>) -> usize {
    let token = &text[span.start.min(text.len())..span.end.min(text.len())];
    let (line, _) = line_column(text, span.start);
    let multi = token.starts_with("\"\"\"") || token.starts_with("'''");
    let after_quotes = token.get(3..).unwrap_or("");
    if multi && (after_quotes.starts_with('\n') || after_quotes.starts_with("\r\n")) {
        line + 1
    } else {
        line
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
