//! Checkers: read a [`History`] and decide whether the run kept a lock's
//! promises, as `docs/ladder.md` defines them (holding, mutual exclusion,
//! the guarded resource, liveness).
//!
//! Each checker returns a [`Check`] (valid; invalid with a witness, the
//! indices of the events that prove it; or unknown, with the reason) and
//! measures the damage:
//!
//! - [`mutual_exclusion`]: two clients holding the same lock, each in its
//!   own view ([`holds`]), at the same instant;
//! - [`resource`]: the guarded resource's lost updates, overselling, and
//!   (fenced) stale or repeated tokens accepted;
//! - [`liveness`]: after the last fault heals, some waiting client acquires
//!   within a bound; a holder blocked on itself is a deadlock too;
//! - [`waiting`], a figure and no checker: wake-ups per hand-off.
//!
//! [`check_all`] runs them all; [`crate::verdict`] turns the results into a
//! cell's verdict and `verdict.json`.
//!
//! Every checker orders operations by real time, as Jepsen's do
//! ([`order`]): an operation proves it took effect before another only if
//! it completed before the other was invoked. Each checker's module says
//! how it applies the rule.

pub mod faults;
pub mod holds;
pub mod liveness;
pub mod mutual_exclusion;
pub mod order;
pub mod resource;
pub mod waiting;

use model::cut_short::CutShort;
use model::history::History;
use model::resource::ResourceSpec;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use liveness::LivenessDamage;
pub use mutual_exclusion::MutexDamage;
pub use resource::ResourceDamage;

/// The checkers, in the order they are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Checker {
    /// Two clients holding the same lock at once.
    MutualExclusion,
    /// Damage to the guarded resource.
    Resource,
    /// The lock can be taken again after the faults heal.
    Liveness,
}

impl Checker {
    /// The name `verdict.json` and the terminal give it.
    pub fn name(self) -> &'static str {
        match self {
            Checker::MutualExclusion => "mutual-exclusion",
            Checker::Resource => "resource",
            Checker::Liveness => "liveness",
        }
    }

    /// Whether it judges safety (mutual exclusion, the resource) rather
    /// than liveness.
    pub fn is_safety(self) -> bool {
        self != Checker::Liveness
    }
}

impl std::fmt::Display for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one checker concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// No violation.
    Valid,
    /// A violation, proven by the events at these indices (ascending).
    Invalid {
        /// Indices of the events that prove it, ascending, no repeats.
        witness: Vec<usize>,
        /// The violation in words, for people.
        why: String,
    },
    /// The history does not decide it.
    Unknown {
        /// Why it cannot be decided.
        why: String,
    },
}

impl Check {
    /// An invalid result; sorts and deduplicates the witness.
    pub fn invalid(mut witness: Vec<usize>, why: impl Into<String>) -> Check {
        witness.sort_unstable();
        witness.dedup();
        Check::Invalid {
            witness,
            why: why.into(),
        }
    }

    /// An unknown result.
    pub fn unknown(why: impl Into<String>) -> Check {
        Check::Unknown { why: why.into() }
    }

    /// `valid`, `invalid` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Check::Valid => "valid",
            Check::Invalid { .. } => "invalid",
            Check::Unknown { .. } => "unknown",
        }
    }

    /// Whether it found a violation.
    pub fn is_invalid(&self) -> bool {
        matches!(self, Check::Invalid { .. })
    }

    /// Whether it could not decide.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Check::Unknown { .. })
    }

    /// The witness (empty unless invalid).
    pub fn witness(&self) -> &[usize] {
        match self {
            Check::Invalid { witness, .. } => witness,
            _ => &[],
        }
    }

    /// The explanation (invalid or unknown), if any.
    pub fn why(&self) -> Option<&str> {
        match self {
            Check::Valid => None,
            Check::Invalid { why, .. } | Check::Unknown { why } => Some(why),
        }
    }
}

/// What the checkers need to know about the run beyond its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckConfig {
    /// The guarded resource, if the scenario has one.
    pub resource: Option<ResourceSpec>,
    /// How soon after the last fault heals (or after a client starts
    /// waiting, if later) some client must acquire.
    pub liveness_bound: Duration,
    /// Only the resource checker decides safety (the `fenced` rung, whose
    /// claim is about the resource); mutual exclusion is then information.
    pub resource_decides_safety: bool,
    /// Why the run ended before its scenario did, if it did: the history
    /// is then only the part before the cut, and the verdict `unknown`.
    pub cut_short: Option<CutShort>,
}

/// Every damage figure of a run, flat (the `damage` object of
/// `verdict.json` and of the safety matrix). `null` means "not measured".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Damage {
    /// Mutual exclusion.
    #[serde(flatten)]
    pub mutual_exclusion: MutexDamage,
    /// The guarded resource.
    #[serde(flatten)]
    pub resource: ResourceDamage,
    /// Liveness.
    #[serde(flatten)]
    pub liveness: LivenessDamage,
    /// What waiting cost (a figure, not a check).
    #[serde(flatten)]
    pub waiting: waiting::WaitingDamage,
}

/// Every checker's result and the damage: all a verdict is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResults {
    /// Mutual exclusion (information only when `resource_decides_safety`).
    pub mutual_exclusion: Check,
    /// The guarded resource; `None` when the scenario has none.
    pub resource: Option<Check>,
    /// Liveness.
    pub liveness: Check,
    /// Copied from [`CheckConfig::resource_decides_safety`].
    pub resource_decides_safety: bool,
    /// Copied from [`CheckConfig::cut_short`].
    pub cut_short: Option<CutShort>,
    /// The damage figures.
    pub damage: Damage,
}

impl CheckResults {
    /// Every checker's result, in a fixed order: mutual exclusion, the
    /// resource (when present), liveness.
    pub fn all(&self) -> Vec<(Checker, &Check)> {
        let mut all = vec![(Checker::MutualExclusion, &self.mutual_exclusion)];
        if let Some(resource) = &self.resource {
            all.push((Checker::Resource, resource));
        }
        all.push((Checker::Liveness, &self.liveness));
        all
    }

    /// Whether `checker` decides the verdict (mutual exclusion is
    /// information only when the resource decides safety).
    pub fn decides(&self, checker: Checker) -> bool {
        !(checker == Checker::MutualExclusion
            && self.resource_decides_safety
            && self.resource.is_some())
    }
}

/// Runs every checker over `history`.
pub fn check_all(history: &History, config: &CheckConfig) -> CheckResults {
    let (mutual_exclusion, mutex_damage) = mutual_exclusion::check(history);
    let (resource, resource_damage) = match &config.resource {
        Some(spec) => {
            let (check, damage) = resource::check(history, spec);
            (Some(check), damage)
        }
        None => (None, ResourceDamage::default()),
    };
    let (liveness, liveness_damage) = liveness::check(history, config.liveness_bound);
    CheckResults {
        mutual_exclusion,
        resource,
        liveness,
        resource_decides_safety: config.resource_decides_safety,
        cut_short: config.cut_short.clone(),
        damage: Damage {
            mutual_exclusion: mutex_damage,
            resource: resource_damage,
            liveness: liveness_damage,
            waiting: waiting::measure(history),
        },
    }
}
