//! The guarded resource: the sources' inventory (every sale reads the
//! stock, decrements it, writes it back), optionally fenced (the store
//! rejects a write whose token is lower than one it has seen).
//!
//! Inventory: each accepted write (`complete` of `write`, outcome `ok`) is
//! one sale. `lost updates = accepted sales − (initial − final)` and
//! `oversold = max(0, accepted sales − initial)`; either above 0 is a
//! violation. Two accepted writes of the same value by different clients
//! also prove a lost update on their own (the stock only goes down, so
//! both sales read the same stock): the witness is then the two reads
//! and the two writes.
//!
//! Fenced: additionally, an accepted write whose token is lower than the
//! token of an earlier accepted operation (an `ok` read or write carrying a
//! `fence`) is a stale write accepted, and two accepted writes by different
//! clients with the same token are a repeated token; either is a violation.
//! Reads count as "seen" because a write that lands between a newer
//! holder's read and its write loses that holder's update, whatever the
//! store checks.
//!
//! Without a `final` event the lost updates cannot be counted: the result
//! is unknown unless another proof (same value written twice, stale or
//! repeated token) already shows a violation.

use super::Check;
use crate::history::{EventKind, History, Op, Outcome};
pub use crate::resource::{ResourceKind, ResourceSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The damage to the resource (`null` where not measured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceDamage {
    /// Accepted sales − (initial − final), at least 0; `null` without a
    /// `final` event or without a resource.
    pub lost_updates: Option<i64>,
    /// max(0, accepted sales − initial); `null` without a resource.
    pub oversold: Option<i64>,
    /// Fenced: accepted writes whose token was lower than one already seen.
    pub stale_writes_accepted: Option<u64>,
    /// Fenced: accepted writes that reused a token another client's
    /// accepted write had used.
    pub repeated_tokens: Option<u64>,
}

/// A sale's write that the store accepted.
#[derive(Debug, Clone, Copy)]
struct Accepted {
    client: usize,
    /// Index of the write's `complete`.
    at: usize,
    /// The client's last read before it, if any.
    read: Option<usize>,
}

/// Checks the resource against `spec`.
pub fn check(history: &History, spec: &ResourceSpec) -> (Check, ResourceDamage) {
    let fenced = spec.kind == ResourceKind::Fenced;
    let mut last_read: BTreeMap<usize, usize> = BTreeMap::new();
    let mut by_value: BTreeMap<i64, Accepted> = BTreeMap::new();
    let mut duplicate: Option<(Accepted, Accepted, i64)> = None;
    let mut accepted: i64 = 0;
    let mut exceeded_at: Option<usize> = None;
    let mut final_value: Option<(usize, i64)> = None;
    // Fencing: highest token seen on an accepted op, and who used it.
    let mut highest: Option<(u64, usize)> = None;
    let mut writer_of_token: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let (mut stale, mut repeated) = (0u64, 0u64);
    let mut stale_proof: Option<(usize, usize, u64, u64)> = None;
    let mut repeated_proof: Option<(usize, usize, u64)> = None;

    for event in history.events() {
        match &event.kind {
            EventKind::Complete {
                client,
                op: Op::Read,
                outcome: Outcome::Ok,
                fence,
                ..
            } => {
                last_read.insert(*client, event.i);
                if let (true, Some(token)) = (fenced, fence)
                    && highest.is_none_or(|(t, _)| *token > t)
                {
                    highest = Some((*token, event.i));
                }
            }
            EventKind::Complete {
                client,
                op: Op::Write,
                outcome: Outcome::Ok,
                fence,
                value,
                ..
            } => {
                accepted += 1;
                if accepted > spec.stock {
                    exceeded_at.get_or_insert(event.i);
                }
                let this = Accepted {
                    client: *client,
                    at: event.i,
                    read: last_read.get(client).copied(),
                };
                if let Some(v) = value {
                    match by_value.get(v) {
                        Some(first) if first.client != *client => {
                            if duplicate.is_none() {
                                duplicate = Some((*first, this, *v));
                            }
                        }
                        Some(_) => {}
                        None => {
                            by_value.insert(*v, this);
                        }
                    }
                }
                if let (true, Some(token)) = (fenced, fence) {
                    if let Some((high, at)) = highest
                        && *token < high
                    {
                        stale += 1;
                        stale_proof.get_or_insert((at, event.i, high, *token));
                    }
                    match writer_of_token.get(token) {
                        Some(&(other, at)) if other != *client => {
                            repeated += 1;
                            repeated_proof.get_or_insert((at, event.i, *token));
                        }
                        Some(_) => {}
                        None => {
                            writer_of_token.insert(*token, (*client, event.i));
                        }
                    }
                    if highest.is_none_or(|(t, _)| *token > t) {
                        highest = Some((*token, event.i));
                    }
                }
            }
            EventKind::Final { value } => final_value = Some((event.i, *value)),
            _ => {}
        }
    }

    let lost = final_value.map(|(_, f)| (accepted - (spec.stock - f)).max(0));
    let oversold = (accepted - spec.stock).max(0);
    let damage = ResourceDamage {
        lost_updates: lost,
        oversold: Some(oversold),
        stale_writes_accepted: fenced.then_some(stale),
        repeated_tokens: fenced.then_some(repeated),
    };

    let check = if let Some((high_at, at, high, token)) = stale_proof {
        Check::invalid(
            vec![high_at, at],
            format!(
                "stale write accepted: event {at} wrote with token {token} after event \
                 {high_at} had used token {high} ({stale} stale write(s) accepted)"
            ),
        )
    } else if let Some((first, second, token)) = repeated_proof {
        Check::invalid(
            vec![first, second],
            format!(
                "repeated token: events {first} and {second} (different clients) both \
                 wrote with token {token}"
            ),
        )
    } else if let Some((a, b, v)) = duplicate {
        let mut witness: Vec<usize> = vec![a.at, b.at];
        witness.extend(a.read);
        witness.extend(b.read);
        Check::invalid(
            witness,
            format!(
                "lost update: clients {} and {} both sold from the same stock and wrote {v} \
                 (events {} and {})",
                a.client, b.client, a.at, b.at
            ),
        )
    } else if let Some(at) = exceeded_at {
        let mut witness = vec![at];
        witness.extend(final_value.map(|(i, _)| i));
        Check::invalid(
            witness,
            format!(
                "oversold: {accepted} sales accepted from a stock of {} (event {at} was \
                 sale {}); {oversold} oversold",
                spec.stock,
                spec.stock + 1
            ),
        )
    } else if let Some((final_at, final_stock)) = final_value {
        let lost = lost.unwrap_or(0);
        if lost > 0 {
            Check::invalid(
                vec![final_at],
                format!(
                    "{accepted} sales accepted but the stock went from {} to {final_stock}: \
                     {lost} update(s) lost",
                    spec.stock
                ),
            )
        } else {
            Check::Valid
        }
    } else {
        Check::unknown("no final event: the store's final value was not recorded")
    };
    (check, damage)
}
