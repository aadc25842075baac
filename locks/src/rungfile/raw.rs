//! The file as written: what TOML deserialises, before any check.

use super::format::{Outcome, OwnerMark};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) id: Spanned<String>,
    #[serde(default)]
    pub(super) plays: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) fixes: String,
    #[serde(default)]
    pub(super) flaw: String,
    pub(super) token: OwnerMark,
    #[serde(default)]
    pub(super) nodes: Option<Spanned<RawNodes>>,
    #[serde(default)]
    pub(super) wait: Option<Spanned<RawWait>>,
    #[serde(default)]
    pub(super) renewal: Option<Spanned<RawRenewal>>,
    pub(super) acquire: Spanned<RawOperation>,
    pub(super) release: Spanned<RawOperation>,
    #[serde(default)]
    pub(super) extend: Option<Spanned<RawOperation>>,
    #[serde(default)]
    pub(super) reclaim: Option<Spanned<RawOperation>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNodes {
    pub(super) kind: NodesKind,
    #[serde(default)]
    pub(super) quorum: Option<Spanned<RawQuorum>>,
    #[serde(default)]
    pub(super) drift_factor: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) drift_ms: Option<u64>,
}

#[derive(Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(super) enum NodesKind {
    Single,
    Independent,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawQuorum {
    Count(u64),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, tag = "strategy", rename_all = "kebab-case")]
pub(super) enum RawWait {
    Fixed { interval_ms: u64 },
    Backoff { initial_ms: u64, max_ms: u64 },
    Notify { fallback_ms: u64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRenewal {
    #[serde(default)]
    pub(super) interval: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) interval_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOperation {
    #[serde(default)]
    pub(super) script: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) command: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub(super) keys: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) argv: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) granted: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub(super) taken: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub(super) released: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub(super) still_held: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub(super) not_mine: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub(super) extended: Option<Spanned<OneOrMany>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl RawOperation {
    pub(super) fn outcome(&self, outcome: Outcome) -> Option<&Spanned<OneOrMany>> {
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

pub(super) const ALL_OUTCOMES: [Outcome; 6] = [
    Outcome::Granted,
    Outcome::Taken,
    Outcome::Released,
    Outcome::StillHeld,
    Outcome::NotMine,
    Outcome::Extended,
];
