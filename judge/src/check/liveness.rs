//! Liveness: once the faults heal, the lock can be taken again.
//!
//! Let H be the time the last fault healed: the latest end of a fault span
//! or instant fault ([`super::faults`]; 0 without faults). A fault that
//! starts and never ends means the faults never heal; nothing is then
//! claimed (valid, with `healed_at_ms` null). For each lock, if clients still wanted it
//! after H (an acquire in flight at H, or invoked at or after H; an acquire
//! of a client that crashed meanwhile does not count), some client must
//! acquire it (an acquire `complete` with outcome `ok` at or after H)
//! within `bound` of H, or of the first such invoke when that is later.
//! Otherwise it is a deadlock; if the history ends before that deadline and
//! nobody acquired, it is unknown (too short to tell).
//!
//! Each mode that was wanted must make progress: a client that asked for
//! the lock exclusive (a writer) waits for an exclusive grant, and readers
//! taking the lock shared do not count for it; a client that asked for it
//! shared is served by any grant. A writer that readers keep out for
//! longer than the bound is a deadlock too (starved, in the usual word).
//!
//! Independently, a holder blocked on itself (an acquire that fails while
//! the same client already holds that lock: a nested acquire on a
//! non-reentrant rung) is a deadlock.
//!
//! The bound must leave room for a legitimate holder to finish (critical
//! section plus TTL): acquiring is the only progress this checker sees.
//!
//! # Ordering
//!
//! Liveness orders operations against the heal, not against each other,
//! and in history order (true time). A lock is proven wanted after the
//! heal by an acquire invoked at or after it, or invoked before it and not
//! completed by it. Progress is an `ok` *completion* at or after the heal:
//! the client can use the lock from its completion on, so an acquire in
//! flight at the heal that completes after it counts, even if the server
//! granted it before. A self-block compares one client's own operations,
//! which come in program order: the nested acquire failed while the hold
//! lasted, and since a client starts no acquire while another of its own
//! is in flight, it was also invoked within the hold.

use super::Check;
use super::faults::last_heal;
use super::holds::{Hold, crashed_client, holds};
use super::mutual_exclusion::fmt_ms;
use model::history::{Event, EventKind, History, Op, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long the lock stayed unusable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LivenessDamage {
    /// When the last fault healed, ms (0 without faults); `null` when a
    /// fault never ended.
    pub healed_at_ms: Option<f64>,
    /// Time from the heal to the first successful acquire after it, ms
    /// (the largest over locks that were wanted); `null` when it never came
    /// or nobody wanted the lock.
    pub recovery_ms: Option<f64>,
}

/// Checks liveness with the given bound.
pub fn check(history: &History, bound: Duration) -> (Check, LivenessDamage) {
    let bound_us = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
    let events = history.events();
    let mut damage = LivenessDamage::default();

    let all_holds = holds(history);
    if let Some(check) = blocked_on_itself(events, &all_holds) {
        damage.healed_at_ms = last_heal(history).map(|(h, _)| h as f64 / 1000.0);
        return (check, damage);
    }

    let Some((heal, last_heal)) = last_heal(history) else {
        return (Check::Valid, damage);
    };
    damage.healed_at_ms = Some(heal as f64 / 1000.0);

    let (wanted, first_ok) = wanted_after_heal(events, heal, last_heal);
    let any_shared = events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Invoke { shared: true, .. }));

    let end = history.end_us();
    let mut unknown: Option<String> = None;
    let mut deadlock: Option<Check> = None;
    let mut recovery: Option<u64> = None;
    let mut never = false;
    for (&(lock, exclusive), &(since, waiter)) in &wanted {
        let deadline = since.max(heal).saturating_add(bound_us);
        let ok = first_ok.get(&(lock, exclusive)).copied();
        // Modes are named only in a history that has readers.
        let mode = match (any_shared, exclusive) {
            (false, _) => "",
            (true, true) => " exclusive",
            (true, false) => " shared",
        };
        match ok {
            Some((at, _)) => recovery = recovery.max(Some(at - heal)),
            None => never = true,
        }
        if ok.is_some_and(|(at, _)| at <= deadline) {
            continue;
        }
        if ok.is_none() && end < deadline {
            unknown.get_or_insert_with(|| {
                format!(
                    "the history ends at {} before lock {lock:?} was due (by {}), and nobody \
                     had acquired it{mode}",
                    fmt_ms(end),
                    fmt_ms(deadline)
                )
            });
            continue;
        }
        if deadlock.is_none() {
            let mut witness = vec![waiter];
            witness.extend(last_heal);
            // Who took the lock last before it got stuck.
            witness.extend(
                all_holds
                    .iter()
                    .filter(|h| h.lock == lock && h.start_us <= since.max(heal))
                    .map(|h| h.start)
                    .max(),
            );
            let when = match ok {
                Some((at, i)) => format!("only at {} (event {i})", fmt_ms(at)),
                None => "never".to_string(),
            };
            deadlock = Some(Check::invalid(
                witness,
                format!(
                    "deadlock: lock {lock:?} was wanted{mode} from {} (event {waiter}) after the \
                     faults healed at {}, due within {}, and was acquired{mode} {when}",
                    fmt_ms(since),
                    fmt_ms(heal),
                    fmt_ms(bound_us)
                ),
            ));
        }
    }
    damage.recovery_ms = if never {
        None
    } else {
        recovery.map(|r| r as f64 / 1000.0)
    };
    let check = deadlock.unwrap_or_else(|| unknown.map_or(Check::Valid, Check::unknown));
    (check, damage)
}

/// The first nested acquire that failed while its client held the lock:
/// a holder blocked on itself.
fn blocked_on_itself(events: &[Event], holds: &[Hold]) -> Option<Check> {
    for event in events {
        if let EventKind::Complete {
            client,
            op: Op::Acquire,
            lock,
            outcome: Outcome::Fail,
            ..
        } = &event.kind
            && let Some(hold) = holds
                .iter()
                .find(|h| h.client == *client && &h.lock == lock && h.covers(event.i))
        {
            let invoke = events[..event.i].iter().rev().find(|e| {
                matches!(&e.kind, EventKind::Invoke { client: c, op: Op::Acquire, lock: l, .. }
                    if c == client && l == lock)
            });
            let mut witness = vec![hold.start, event.i];
            witness.extend(invoke.map(|e| e.i));
            let check = Check::invalid(
                witness,
                format!(
                    "client {client} blocked on itself: it holds lock {lock:?} since event {} \
                     and its nested acquire failed at event {}",
                    hold.start, event.i
                ),
            );
            return Some(check);
        }
    }
    None
}

/// Per lock and need (`true`: exclusive, `false`: any grant): a time (µs)
/// and the index of the event at it.
type PerLock<'a> = BTreeMap<(&'a str, bool), (u64, usize)>;

/// Per lock and need: the first acquire that wanted it after the heal
/// (when it was wanted and the event), and the first grant that met the
/// need. An exclusive request needs an exclusive grant; a shared one is
/// met by any. In flight at the heal means invoked, not completed and not
/// cancelled by its client's crash, as of the event that healed
/// (`last_heal`).
fn wanted_after_heal(
    events: &[Event],
    heal: u64,
    last_heal: Option<usize>,
) -> (PerLock<'_>, PerLock<'_>) {
    let mut in_flight: BTreeMap<(usize, &str), (bool, usize)> = BTreeMap::new();
    let mut wanted: PerLock = BTreeMap::new();
    let mut first_ok: PerLock = BTreeMap::new();
    let mut healed = last_heal.is_none();
    for event in events {
        match &event.kind {
            EventKind::Invoke {
                client,
                op: Op::Acquire,
                lock,
                shared,
                ..
            } => {
                if healed {
                    wanted
                        .entry((lock, !shared))
                        .or_insert((event.at_us, event.i));
                } else {
                    in_flight.insert((*client, lock.as_str()), (!shared, event.i));
                }
            }
            EventKind::Complete {
                client,
                op: Op::Acquire,
                lock,
                outcome,
                shared,
                ..
            } => {
                in_flight.remove(&(*client, lock.as_str()));
                if *outcome == Outcome::Ok && healed {
                    let at = (event.at_us, event.i);
                    first_ok.entry((lock, false)).or_insert(at);
                    if !shared {
                        first_ok.entry((lock, true)).or_insert(at);
                    }
                }
            }
            EventKind::Fault { .. } => {
                if let Some(c) = crashed_client(event) {
                    in_flight.retain(|(client, _), _| *client != c);
                }
            }
            _ => {}
        }
        if Some(event.i) == last_heal {
            healed = true;
            for (&(_, lock), &(exclusive, i)) in &in_flight {
                let w = wanted.entry((lock, exclusive)).or_insert((heal, i));
                w.1 = w.1.min(i);
            }
        }
    }
    (wanted, first_ok)
}
