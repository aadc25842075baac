//! A history judged against a model: which checkers run, on what, and
//! the verdict they give together.
//!
//! | model | judged by | valid when |
//! |---|---|---|
//! | `mutex` | linearizability against Knossos's mutex ([`crate::models::mutex`]) | acquires and releases alternate in some order real time allows |
//! | `owner-mutex` | locklab's mutual-exclusion checker | no two clients hold the lock at one instant, each hold as its client saw it |
//! | `fenced-writes` | locklab's fenced-resource checker | the resource accepted every token only above any it had accepted |
//! | `lock-set` | Jepsen's set checker ([`crate::models::lock_set`]) | every element added `ok` is in the final read |
//!
//! A history that declares its own claims (a locklab history exported
//! with its check header: the guarded resource, the liveness bound) is
//! judged by every checker a simulated run of it was, so the verdict and
//! witness are the run's own. A history with clocks that may be off
//! ([`crate::clock`]) is judged twice, by its recorded times and with
//! every operation widened by its clock's bound; where the two disagree,
//! that checker's result is `unknown`, naming the bound.

use crate::clock::{has_clock_bounds, in_time_order};
use crate::error::BadHistory;
use crate::export::{is_header, to_history};
use crate::foreign::{Converted, convert};
use crate::op::Op;
use judge::check::{self, Check, CheckConfig, Checker};
use model::cut_short::CutShort;
use model::history::History;
use model::resource::ResourceSpec;
use model::verdict::Verdict;
use std::time::Duration;

/// What a history is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Model {
    /// Knossos's mutex: acquire and release alternate; no owner.
    Mutex,
    /// A mutex that knows who holds: no two clients hold at once.
    OwnerMutex,
    /// A resource that accepts a token only above any it has accepted.
    FencedWrites,
    /// Jepsen's lock-guarded set: no element added `ok` is lost.
    LockSet,
}

impl Model {
    /// Every model, in the order above.
    pub const ALL: [Model; 4] = [
        Model::Mutex,
        Model::OwnerMutex,
        Model::FencedWrites,
        Model::LockSet,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Model::Mutex => "mutex",
            Model::OwnerMutex => "owner-mutex",
            Model::FencedWrites => "fenced-writes",
            Model::LockSet => "lock-set",
        }
    }

    /// The model named `name`.
    pub fn from_name(name: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What a history claims beyond its operations: the checks locklab runs
/// on a simulated run of it (from an exported history's header, or given
/// on the command line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// The guarded resource, when the history's writes sell its stock.
    pub resource: Option<ResourceSpec>,
    /// How soon after the faults heal some client must acquire; `None`:
    /// liveness is not judged.
    pub liveness_bound: Option<Duration>,
    /// The run was cut short (the verdict is then `unknown`).
    pub cut_short: Option<CutShort>,
}

/// One checker's result in a judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedCheck {
    /// The checker's name (`mutual-exclusion`, `resource`, `liveness`,
    /// `linearizable-mutex`, `lock-set`).
    pub name: String,
    /// Its result; a witness names events of [`Judgement::history`].
    pub check: Check,
    /// Whether it judges safety (an invalid result is a violation) rather
    /// than liveness (a deadlock).
    pub safety: bool,
    /// Reported for information only: it does not decide the verdict.
    pub informational: bool,
}

/// A history judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The model.
    pub model: Model,
    /// The operations as judged, in real-time order by their recorded
    /// times.
    pub ops: Vec<Op>,
    /// Those operations as locklab's history (what the timeline draws).
    pub converted: Converted,
    /// Every checker's result.
    pub checks: Vec<NamedCheck>,
    /// The damage figures, by name (`null`: not measured).
    pub damage: serde_json::Map<String, serde_json::Value>,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the clocks' bound was taken into account.
    pub clock_bounded: bool,
    /// What it was judged with beyond its operations.
    pub claims: Claims,
}

impl Judgement {
    /// locklab's history of the judged operations.
    pub fn history(&self) -> &History {
        &self.converted.history
    }

    /// The history's own number (Jepsen's `:index`) of event `i`.
    pub fn source_index(&self, i: usize) -> Option<u64> {
        let pos = *self.converted.origin.get(i)?;
        Some(self.ops.get(pos)?.index)
    }

    /// The events of every witness, ascending.
    pub fn witness_events(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self
            .checks
            .iter()
            .flat_map(|c| c.check.witness().iter().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// How a history's operations become locklab's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Recorded elsewhere: its client operations, as [`convert`] reads them.
    Foreign,
    /// Written by locklab (its `history.jsonl`, or exported in Jepsen's
    /// format): every event back exactly, faults and the servers' records
    /// too, its `clients` numbered as [`crate::export`] numbers them.
    Locklab {
        /// How many clients the run had.
        clients: usize,
    },
}

/// Judges `ops` (well formed, in the file's order) against `model`.
pub fn judge(
    file: &str,
    ops: &[Op],
    reading: Reading,
    model: Model,
    claims: &Claims,
) -> Result<Judgement, BadHistory> {
    let recorded = in_time_order(file, ops, false)?;
    let converted = convert_as(file, &recorded, reading)?;
    let (mut checks, damage) = run_checks(&recorded, &converted, model, claims);
    let clock_bounded = has_clock_bounds(ops);
    if clock_bounded {
        let widened = in_time_order(file, ops, true)?;
        let widened_converted = convert_as(file, &widened, reading)?;
        let (widened_checks, _) = run_checks(&widened, &widened_converted, model, claims);
        checks = bound_decides(
            checks,
            widened_checks,
            &recorded,
            &converted,
            &widened,
            &widened_converted,
        );
    }
    let verdict = verdict_of(&checks, claims);
    Ok(Judgement {
        model,
        ops: recorded,
        converted,
        checks,
        damage,
        verdict,
        clock_bounded,
        claims: claims.clone(),
    })
}

/// `ops` (in history order) as locklab's history, read as `reading` says.
fn convert_as(file: &str, ops: &[Op], reading: Reading) -> Result<Converted, BadHistory> {
    let Reading::Locklab { clients } = reading else {
        return convert(file, ops);
    };
    let history = to_history(ops, Some(clients)).map_err(|e| e.in_file(file))?;
    // locklab's checkers find an event by its index: each must be its
    // position among the events, as locklab writes them.
    let events = ops.iter().filter(|op| !is_header(op));
    for ((position, event), op) in history.events().iter().enumerate().zip(events) {
        if event.i != position {
            return Err(BadHistory::at(
                file,
                op.line,
                format!("index {position}, the event's position in the history"),
                format!("index {}", event.i),
            ));
        }
    }
    // Each event is the operation whose index is its own (the header,
    // which is no event, has none).
    let mut origin = vec![0; history.len()];
    let mut event_of = vec![None; ops.len()];
    for (pos, op) in ops.iter().enumerate() {
        if is_header(op) {
            continue;
        }
        let i = op.index as usize;
        if let Some(slot) = origin.get_mut(i) {
            *slot = pos;
            event_of[pos] = Some(i);
        }
    }
    Ok(Converted {
        history,
        origin,
        event_of,
        left_out: Default::default(),
    })
}

/// The verdict of a set of results, by locklab's rules: a deciding
/// safety checker invalid is a violation; else liveness invalid is a
/// deadlock; else any deciding checker unknown (or a cut-short history)
/// is unknown; else safe.
fn verdict_of(checks: &[NamedCheck], claims: &Claims) -> Verdict {
    if claims.cut_short.is_some() {
        return Verdict::Unknown;
    }
    let deciding = || checks.iter().filter(|c| !c.informational);
    if deciding().any(|c| c.safety && c.check.is_invalid()) {
        Verdict::Violated
    } else if deciding().any(|c| !c.safety && c.check.is_invalid()) {
        Verdict::Deadlock
    } else if deciding().any(|c| c.check.is_unknown()) {
        Verdict::Unknown
    } else {
        Verdict::Safe
    }
}

/// The checkers of `model` over one ordering of the operations.
fn run_checks(
    ops: &[Op],
    converted: &Converted,
    model: Model,
    claims: &Claims,
) -> (Vec<NamedCheck>, serde_json::Map<String, serde_json::Value>) {
    let history = &converted.history;
    let mut damage = serde_json::Map::new();
    let mut checks = Vec::new();
    let mut flat = |value: serde_json::Value| {
        if let serde_json::Value::Object(fields) = value {
            damage.extend(fields);
        }
    };
    match model {
        Model::Mutex => {
            let check = crate::models::mutex::check_mutex(ops);
            checks.push(named(
                "linearizable-mutex",
                on_events(check, converted),
                true,
            ));
        }
        Model::LockSet => {
            let (check, lost) = crate::models::lock_set::check_lock_set(ops);
            flat(serde_json::to_value(lost).unwrap_or_default());
            checks.push(named("lock-set", on_events(check, converted), true));
        }
        Model::OwnerMutex | Model::FencedWrites => {
            let fenced = model == Model::FencedWrites;
            let (mutual_exclusion, me_damage) = check::mutual_exclusion::check(history);
            flat(serde_json::to_value(me_damage).unwrap_or_default());
            let mut me = named(Checker::MutualExclusion.name(), mutual_exclusion, true);
            let resource = match (&claims.resource, fenced) {
                (Some(spec), _) => Some(check::resource::check(history, spec)),
                (None, true) => Some(check::resource::check_tokens(history)),
                (None, false) => None,
            };
            if let Some((resource, resource_damage)) = resource {
                flat(serde_json::to_value(resource_damage).unwrap_or_default());
                // The fenced resource's claim is about the resource: two
                // holders are then information, as on the `fenced` rung.
                me.informational = fenced;
                checks.push(me);
                checks.push(named(Checker::Resource.name(), resource, true));
            } else {
                checks.push(me);
            }
            if let Some(bound) = claims.liveness_bound {
                let (liveness, liveness_damage) = check::liveness::check(history, bound);
                flat(serde_json::to_value(liveness_damage).unwrap_or_default());
                flat(serde_json::to_value(check::waiting::measure(history)).unwrap_or_default());
                checks.push(named(Checker::Liveness.name(), liveness, false));
            }
        }
    }
    (checks, damage)
}

/// A result for the judgement.
fn named(name: &str, check: Check, safety: bool) -> NamedCheck {
    NamedCheck {
        name: name.to_string(),
        check,
        safety,
        informational: false,
    }
}

/// A model's result on operations, its witness moved onto the events
/// the operations became.
fn on_events(check: Check, converted: &Converted) -> Check {
    match check {
        Check::Invalid { witness, why } => Check::invalid(
            witness
                .iter()
                .filter_map(|&pos| converted.event_of.get(pos).copied().flatten())
                .collect(),
            why,
        ),
        other => other,
    }
}

/// Each checker's result with the clocks' bound taken into account: the
/// recorded times' result where the widened operations agree, else
/// `unknown`, saying that the bound decided and where.
fn bound_decides(
    recorded_checks: Vec<NamedCheck>,
    widened_checks: Vec<NamedCheck>,
    recorded: &[Op],
    converted: &Converted,
    widened: &[Op],
    widened_converted: &Converted,
) -> Vec<NamedCheck> {
    // The same operation in both orderings: by the file's line.
    let recorded_event_of_line = |line: usize| {
        recorded
            .iter()
            .position(|op| op.line == line)
            .and_then(|pos| converted.event_of[pos])
    };
    recorded_checks
        .into_iter()
        .zip(widened_checks)
        .map(|(by_time, by_bound)| {
            if by_time.check.name() == by_bound.check.name() {
                return NamedCheck {
                    check: match by_bound.check {
                        Check::Invalid { witness, why } => Check::invalid(
                            witness
                                .iter()
                                .filter_map(|&i| {
                                    let pos = *widened_converted.origin.get(i)?;
                                    recorded_event_of_line(widened.get(pos)?.line)
                                })
                                .collect(),
                            format!("{why} (so even with every clock off by its bound)"),
                        ),
                        _ => by_time.check,
                    },
                    ..by_time
                };
            }
            let why = format!(
                "the clocks' bound decides: by the recorded times {}{}; with every operation \
                 widened by its clock's bound, {}{}",
                by_time.check.name(),
                by_time
                    .check
                    .why()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default(),
                by_bound.check.name(),
                by_bound
                    .check
                    .why()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default(),
            );
            NamedCheck {
                check: Check::unknown(why),
                ..by_time
            }
        })
        .collect()
}

/// The claims a history exported by locklab declares for its cell: the
/// run's resource, liveness bound and cut, as [`CheckConfig`] has them.
pub fn claims_of(config: &CheckConfig) -> Claims {
    Claims {
        resource: config.resource,
        liveness_bound: Some(config.liveness_bound),
        cut_short: config.cut_short.clone(),
    }
}

/// The model a locklab cell was judged by: `fenced-writes` when its
/// resource decides safety (the `fenced` rung), else `owner-mutex`.
pub fn model_of(config: &CheckConfig) -> Model {
    if config.resource.is_some() && config.resource_decides_safety {
        Model::FencedWrites
    } else {
        Model::OwnerMutex
    }
}
