//! Knossos's mutex, judged by linearizability.
//!
//! The model is Knossos's `knossos.model/mutex`: a lock that is either
//! free or held, with no owner. `acquire` takes a free lock and is
//! inconsistent on a held one; `release` frees a held lock and is
//! inconsistent on a free one. Anyone may release. A history is valid
//! when it is *linearizable* against that model: some order of the
//! operations that took effect, consistent with real time, has acquires
//! and releases alternate, starting from a free lock.
//!
//! # Which operations took effect, and when
//!
//! - `ok`: took effect once, at some instant between its invoke and its
//!   completion.
//! - `fail`: did not take effect; it is left out.
//! - `info` (and an invoke the history never completes): may have taken
//!   effect, at any instant after its invoke (the request may still be in
//!   flight when the history ends), or not at all. The search takes it
//!   only where it explains the rest, so an `info` acquire can account for
//!   a later release, and need not have happened where it would get in
//!   the way.
//!
//! Only client processes' `acquire` and `release` (also spelled `lock`
//! and `unlock`) are judged; other functions and named processes (a
//! nemesis) are ignored.
//!
//! # The search
//!
//! A just-in-time linearization search sweeps the history in order,
//! keeping every *configuration* still possible: whether the lock is
//! held, which pending `ok` operations have already taken effect, and how
//! many `info` acquires and releases were used. An invoke makes an
//! operation pending; at an `ok` completion every surviving configuration
//! must have linearized that operation, by then at the latest. A
//! configuration that had not linearizes it now, preceded if need be by
//! one pending operation of the other kind (a held lock must first be
//! released for the completing acquire). Longer detours need not be
//! tried: every configuration they lead to can still be reached from
//! the short one, since each operation in the detour is still pending
//! and can be linearized later in an order alternating from the new
//! state. Configurations that agree on everything collapse into one.
//!
//! `info` operations are counted, not tracked one by one. Two `info`
//! acquires that have both been invoked are interchangeable: the model
//! has no owner, so they have the same effect, and neither has a deadline
//! (they never complete), so whichever is used now, the other remains
//! available for any later moment. What a configuration needs is how many
//! of each kind it has used. Among configurations with the same lock
//! state and the same linearized `ok` operations, the numbers of `info`
//! acquires and releases used differ by the same amount (the lock state
//! fixes acquires minus releases), so the one that used fewer of both can
//! reach every configuration the other can (by linearizing the missing
//! pairs); it alone is kept. This keeps the count exact and the set of
//! configurations small however many operations crash.
//!
//! The set of configurations is bounded ([`MAX_CONFIGURATIONS`]): a
//! history concurrent enough to exceed it is `unknown`, never a hang.

use crate::op::{Op, OpType};
use judge::check::Check;
use std::collections::{BTreeMap, BTreeSet};

/// The most configurations [`check_mutex`] keeps at once before it gives
/// up with `unknown`.
pub const MAX_CONFIGURATIONS: usize = 10_000;

/// The model's two operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Acquire,
    Release,
}

impl Kind {
    fn of(f: &str) -> Option<Kind> {
        match f {
            "acquire" | "lock" => Some(Kind::Acquire),
            "release" | "unlock" => Some(Kind::Release),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Acquire => "acquire",
            Kind::Release => "release",
        }
    }

    /// Whether it may be applied to the lock in this state.
    fn applies_to(self, locked: bool) -> bool {
        match self {
            Kind::Acquire => !locked,
            Kind::Release => locked,
        }
    }

    fn other(self) -> Kind {
        match self {
            Kind::Acquire => Kind::Release,
            Kind::Release => Kind::Acquire,
        }
    }

    fn slot(self) -> usize {
        match self {
            Kind::Acquire => 0,
            Kind::Release => 1,
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Took effect within its interval.
    Ok,
    /// Did not take effect.
    Fail,
    /// `info`, or never completed: may have taken effect after its invoke.
    Uncertain,
}

/// One judged operation: an invoke and its completion, if any.
#[derive(Debug, Clone, Copy)]
struct Call {
    kind: Kind,
    /// Position of its invoke in the ops.
    invoke: usize,
    /// Position of its completion, if the history has one.
    completion: Option<usize>,
    outcome: Outcome,
}

/// What every configuration with the same lock state and the same
/// linearized pending `ok` calls shares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    locked: bool,
    /// Pending `ok` calls (by call id) already linearized, ascending.
    linearized: Vec<u32>,
}

/// The rest of a configuration: `info` calls used, and (for the
/// explanation only) the call that last changed the lock's state.
#[derive(Debug, Clone, Copy)]
struct Used {
    /// `info` acquires and releases linearized so far.
    info: [u64; 2],
    /// The call that last changed the lock's state.
    last: Option<u32>,
}

/// Judges `ops` (in history order, well formed) against Knossos's mutex,
/// keeping at most [`MAX_CONFIGURATIONS`] configurations.
pub fn check_mutex(ops: &[Op]) -> Check {
    check_mutex_bounded(ops, MAX_CONFIGURATIONS)
}

/// Judges `ops` against Knossos's mutex, keeping at most
/// `max_configurations` configurations; beyond it the result is
/// `unknown`, naming the bound.
pub fn check_mutex_bounded(ops: &[Op], max_configurations: usize) -> Check {
    let Paired { calls, call_at } = match pair_calls(ops) {
        Ok(paired) => paired,
        Err(why) => return Check::unknown(why),
    };
    let mut search = Search {
        ops,
        calls: &calls,
        configs: BTreeMap::from([(
            Key {
                locked: false,
                linearized: Vec::new(),
            },
            Used {
                info: [0, 0],
                last: None,
            },
        )]),
        pending_ok: BTreeSet::new(),
        info_invoked: [0, 0],
        latest_info: [None, None],
    };
    for (pos, call_id) in call_at.iter().enumerate() {
        let Some(id) = *call_id else { continue };
        let call = calls[id as usize];
        if pos == call.invoke {
            search.invoked(id);
        } else if call.outcome == Outcome::Ok {
            if let Some(failed) = search.completed(id) {
                return failed;
            }
            if search.configs.len() > max_configurations {
                return Check::unknown(format!(
                    "the search for an order of acquires and releases needed more than \
                     {max_configurations} configurations at index {} ({}'s {} completion); \
                     the history is too concurrent to decide within that bound",
                    ops[pos].index,
                    describe_process(&ops[pos]),
                    call.kind.name()
                ));
            }
        }
    }
    Check::Valid
}

/// The judged calls of a history.
struct Paired {
    calls: Vec<Call>,
    /// For each position of the ops, the call it belongs to.
    call_at: Vec<Option<u32>>,
}

/// Pairs each judged invoke with its process's next completion; a history
/// that is not well formed is described instead.
fn pair_calls(ops: &[Op]) -> Result<Paired, String> {
    let mut calls: Vec<Call> = Vec::new();
    let mut call_at = vec![None; ops.len()];
    let mut open: BTreeMap<&crate::op::Process, u32> = BTreeMap::new();
    for (pos, op) in ops.iter().enumerate() {
        if !op.is_client() {
            continue;
        }
        let Some(kind) = Kind::of(&op.f) else {
            continue;
        };
        let id = u32::try_from(calls.len())
            .map_err(|_| "more than 2^32 acquires and releases".to_string())?;
        if op.kind == OpType::Invoke {
            if let Some(earlier) = open.insert(&op.process, id) {
                return Err(format!(
                    "process {} invoked a {} at index {} while its {} invoked at index {} had \
                     not completed",
                    op.process,
                    kind.name(),
                    op.index,
                    calls[earlier as usize].kind.name(),
                    ops[calls[earlier as usize].invoke].index
                ));
            }
            calls.push(Call {
                kind,
                invoke: pos,
                completion: None,
                outcome: Outcome::Uncertain,
            });
            call_at[pos] = Some(id);
        } else {
            let Some(id) = open.remove(&op.process) else {
                return Err(format!(
                    "process {}'s {} completed {} at index {} without an invoke",
                    op.process,
                    kind.name(),
                    op.kind.name(),
                    op.index
                ));
            };
            let call = &mut calls[id as usize];
            call.completion = Some(pos);
            call.outcome = match op.kind {
                OpType::Ok => Outcome::Ok,
                OpType::Fail => Outcome::Fail,
                _ => Outcome::Uncertain,
            };
            call_at[pos] = Some(id);
        }
    }
    Ok(Paired { calls, call_at })
}

/// The sweep's state.
struct Search<'a> {
    ops: &'a [Op],
    calls: &'a [Call],
    /// Every configuration still possible.
    configs: BTreeMap<Key, Used>,
    /// `ok` calls invoked and not yet completed.
    pending_ok: BTreeSet<u32>,
    /// `info` (or never completed) acquires and releases invoked so far.
    info_invoked: [u64; 2],
    /// The latest such acquire and release (to name in an explanation).
    latest_info: [Option<u32>; 2],
}

impl Search<'_> {
    /// Call `id` was invoked.
    fn invoked(&mut self, id: u32) {
        let call = self.calls[id as usize];
        match call.outcome {
            Outcome::Fail => {}
            Outcome::Ok => {
                self.pending_ok.insert(id);
            }
            Outcome::Uncertain => {
                self.info_invoked[call.kind.slot()] += 1;
                self.latest_info[call.kind.slot()] = Some(id);
            }
        }
    }

    /// `ok` call `id` completed: keep the configurations that linearize
    /// it by now. Returns the violation when none can.
    fn completed(&mut self, id: u32) -> Option<Check> {
        let kind = self.calls[id as usize].kind;
        let before = std::mem::take(&mut self.configs);
        let mut after: BTreeMap<Key, Used> = BTreeMap::new();
        for (key, used) in &before {
            if let Ok(found) = key.linearized.binary_search(&id) {
                let mut key = key.clone();
                key.linearized.remove(found);
                keep(&mut after, key, *used);
                continue;
            }
            if kind.applies_to(key.locked) {
                let key = Key {
                    locked: !key.locked,
                    linearized: key.linearized.clone(),
                };
                keep(
                    &mut after,
                    key,
                    Used {
                        last: Some(id),
                        ..*used
                    },
                );
                continue;
            }
            // The lock is in the wrong state: one operation of the other
            // kind must come first, then this one; the state ends as it
            // was. Each pending `ok` one is a separate choice...
            let other = kind.other();
            for &q in &self.pending_ok {
                if q == id
                    || self.calls[q as usize].kind != other
                    || key.linearized.binary_search(&q).is_ok()
                {
                    continue;
                }
                let mut linearized = key.linearized.clone();
                if let Err(at) = linearized.binary_search(&q) {
                    linearized.insert(at, q);
                }
                let key = Key {
                    locked: key.locked,
                    linearized,
                };
                keep(
                    &mut after,
                    key,
                    Used {
                        last: Some(id),
                        ..*used
                    },
                );
            }
            // ...and any unused `info` one is the same choice.
            if used.info[other.slot()] < self.info_invoked[other.slot()] {
                let mut info = used.info;
                info[other.slot()] += 1;
                keep(
                    &mut after,
                    key.clone(),
                    Used {
                        info,
                        last: Some(id),
                    },
                );
            }
        }
        self.pending_ok.remove(&id);
        if after.is_empty() {
            return Some(self.explain(id, &before));
        }
        self.configs = after;
        None
    }

    /// Why `ok` call `id` could not be linearized from any of `configs`.
    fn explain(&self, id: u32, configs: &BTreeMap<Key, Used>) -> Check {
        let call = self.calls[id as usize];
        let completion = call.completion.unwrap_or(call.invoke);
        let op = &self.ops[completion];
        // Every configuration had the lock in the wrong state and nothing
        // of the other kind left to change it; name the latest call that
        // left it so in any of them.
        let last = configs.values().filter_map(|u| u.last).max();
        let mut witness = vec![call.invoke, completion];
        let state = match call.kind {
            Kind::Acquire => "held",
            Kind::Release => "free",
        };
        let needed = call.kind.other().name();
        let why = match last {
            Some(last_id) => {
                let last_call = self.calls[last_id as usize];
                witness.push(last_call.invoke);
                witness.extend(last_call.completion);
                format!(
                    "{}'s {} completed ok at index {} while the lock was {state} since {} and \
                     no {needed} could come between",
                    describe_process(op),
                    call.kind.name(),
                    op.index,
                    self.describe_call(last_call)
                )
            }
            None => format!(
                "{}'s {} completed ok at index {} while the lock was {state}: no acquire can \
                 have taken it before",
                describe_process(op),
                call.kind.name(),
                op.index
            ),
        };
        Check::invalid(witness, why)
    }

    /// A call in words: "process 1's acquire (invoked at index 37, ok at
    /// index 39)".
    fn describe_call(&self, call: Call) -> String {
        let invoke = &self.ops[call.invoke];
        let end = match call.completion {
            Some(c) => {
                let completion = &self.ops[c];
                format!("{} at index {}", completion.kind.name(), completion.index)
            }
            None => "never completed".to_string(),
        };
        let maybe = if call.outcome == Outcome::Uncertain {
            ", which may have taken effect"
        } else {
            ""
        };
        format!(
            "{}'s {} (invoked at index {}, {end}{maybe})",
            describe_process(invoke),
            call.kind.name(),
            invoke.index
        )
    }
}

/// "process 3".
fn describe_process(op: &Op) -> String {
    format!("process {}", op.process)
}

/// Adds a configuration, keeping, for one key, the one that used fewer
/// `info` calls (it can reach everything the other can).
fn keep(configs: &mut BTreeMap<Key, Used>, key: Key, used: Used) {
    configs
        .entry(key)
        .and_modify(|kept| {
            if used.info[0] < kept.info[0] {
                *kept = used;
            }
        })
        .or_insert(used);
}
