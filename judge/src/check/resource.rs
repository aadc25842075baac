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
//! token of an accepted operation (an `ok` read or write carrying a
//! `fence`) that completed before the write was invoked is a stale write
//! accepted, and two accepted writes by different clients with the same
//! token are a repeated token; either is a violation. Reads count as
//! "seen" because a write that lands between a newer holder's read and its
//! write loses that holder's update, whatever the store checks.
//!
//! Without a `final` event the lost updates cannot be counted: the result
//! is unknown unless another proof (same value written twice, stale or
//! repeated token) already shows a violation.
//!
//! # Ordering
//!
//! Only real-time order proves that one operation took effect before
//! another ([`super::order`]): it completed before the other was invoked.
//!
//! - **Stale write**: the higher token must have been accepted by an
//!   operation that *completed before the stale write was invoked*; only
//!   then had the store seen it before it executed the write. A write in
//!   flight while a newer holder reads or writes may have been executed
//!   first, correctly, and is not counted. The witness is the operation
//!   with the higher token and the stale write's invoke and completion.
//! - **Repeated token**: needs no order. Two clients presenting the same
//!   token is wrong whichever came first. The figure counts, per token,
//!   the accepted writes by clients other than the one that used it first,
//!   choosing among the writes that may have been first (those no other
//!   write of that token completed before) the one that makes the count
//!   smallest: it counts what is proven.
//! - **Same value written twice**: needs no order. Every write is the
//!   value its sale read minus one, so equal values mean both sales read
//!   the same stock, which no serial order of whole sales can produce.
//! - **Lost updates** and **oversold** are counts: accepted sales against
//!   the initial and final stock, which need no order so long as the
//!   `final` event (the driver's read of the store after the run) follows
//!   every accepted write, as it does when the clients finished within the
//!   run's duration. The oversold
//!   witness is the completion by which more sales had been accepted than
//!   there was stock, a fact that holds whatever the order of the sales.

use super::Check;
use super::order::{Operation, operations};
use model::history::{EventKind, History, Op, Outcome};
use model::resource::{ResourceKind, ResourceSpec};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The damage to the resource (`null` where not measured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// An operation the fenced store accepted with a token, and the highest
/// token accepted by it or any operation that completed before it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// Index of its `complete`.
    completed: usize,
    /// The highest token accepted up to and including it.
    highest: u64,
    /// Index of the completion that carried `highest`.
    highest_at: usize,
}

/// The accepted writes that reused a token another client had used,
/// counted as [the module doc](self) says: per token, the writes of
/// clients other than the first user, with the first user chosen among
/// the writes nothing else of that token preceded so as to count least.
fn repeated_count(by_token: &BTreeMap<u64, Vec<(usize, Operation<'_>)>>) -> u64 {
    let mut count = 0;
    for writes in by_token.values() {
        let could_be_first = writes
            .iter()
            .filter(|(_, w)| !writes.iter().any(|(_, other)| other.precedes(w)));
        let first_users_writes = could_be_first
            .map(|(client, _)| writes.iter().filter(|(c, _)| c == client).count())
            .max()
            .unwrap_or(0);
        count += (writes.len() - first_users_writes) as u64;
    }
    count
}

/// Checks only the fenced store's promise: every accepted write's token
/// was higher than any the store had seen (no stale write accepted) and
/// no two clients' accepted writes used one token. For histories with no
/// stock to count (a `fenced-writes` history recorded outside locklab):
/// the sales' accounting of [`check`] is left out, so a missing `final`
/// event leaves nothing undecided.
pub fn check_tokens(history: &History) -> (Check, ResourceDamage) {
    let spec = ResourceSpec {
        kind: ResourceKind::Fenced,
        stock: i64::MAX,
    };
    let (_, fencing, _) = read_sales(history, &spec);
    let damage = ResourceDamage {
        lost_updates: None,
        oversold: None,
        stale_writes_accepted: Some(fencing.stale),
        repeated_tokens: Some(repeated_count(&fencing.writes_by_token)),
    };
    let proven = fencing.stale_proof.is_some() || fencing.repeated_proof.is_some();
    let check = if proven {
        // The token proofs come first in `verdict`'s order; the sales'
        // own proofs are not asked for.
        verdict(&Sales::default(), &fencing, None, spec.stock)
    } else {
        Check::Valid
    };
    (check, damage)
}

/// Checks the resource against `spec`.
pub fn check(history: &History, spec: &ResourceSpec) -> (Check, ResourceDamage) {
    let fenced = spec.kind == ResourceKind::Fenced;
    let (sales, fencing, final_value) = read_sales(history, spec);
    let accepted = sales.accepted;
    let lost = final_value.map(|(_, f)| (accepted - (spec.stock - f)).max(0));
    let damage = ResourceDamage {
        lost_updates: lost,
        oversold: Some((accepted - spec.stock).max(0)),
        stale_writes_accepted: fenced.then_some(fencing.stale),
        repeated_tokens: fenced.then_some(repeated_count(&fencing.writes_by_token)),
    };
    (verdict(&sales, &fencing, final_value, spec.stock), damage)
}

/// The sales and, when the resource is fenced, the tokens, as `history`
/// shows them; and the final value with its event, if recorded.
fn read_sales<'a>(
    history: &'a History,
    spec: &ResourceSpec,
) -> (Sales, Fencing<'a>, Option<(usize, i64)>) {
    let fenced = spec.kind == ResourceKind::Fenced;
    let mut sales = Sales::default();
    let mut fencing = Fencing::default();
    for op in operations(history) {
        let event = op.complete;
        let EventKind::Complete {
            client,
            op: kind @ (Op::Read | Op::Write),
            outcome: Outcome::Ok,
            fence,
            value,
            ..
        } = &event.kind
        else {
            continue;
        };
        if *kind == Op::Read {
            sales.last_read.insert(*client, event.i);
        } else {
            sales.write(*client, event.i, *value, spec.stock);
        }
        let (true, Some(token)) = (fenced, *fence) else {
            continue;
        };
        if *kind == Op::Write {
            fencing.write(*client, op, token);
        }
        fencing.seen_at(event.i, token);
    }
    let final_value = history
        .events()
        .iter()
        .rev()
        .find_map(|event| match event.kind {
            EventKind::Final { value } => Some((event.i, value)),
            _ => None,
        });
    (sales, fencing, final_value)
}

/// The sales, as the history is read: how many the store accepted, and
/// the proofs of a lost update or of overselling.
#[derive(Default)]
struct Sales {
    /// Each client's last read.
    last_read: BTreeMap<usize, usize>,
    /// The first accepted write of each value.
    by_value: BTreeMap<i64, Accepted>,
    /// The first two writes of one value by different clients.
    duplicate: Option<(Accepted, Accepted, i64)>,
    accepted: i64,
    /// The write by which more sales were accepted than there was stock.
    exceeded_at: Option<usize>,
}

impl Sales {
    /// An accepted write of `value` by `client`, completed at event `at`.
    fn write(&mut self, client: usize, at: usize, value: Option<i64>, stock: i64) {
        self.accepted += 1;
        if self.accepted > stock {
            self.exceeded_at.get_or_insert(at);
        }
        let this = Accepted {
            client,
            at,
            read: self.last_read.get(&client).copied(),
        };
        if let Some(v) = value {
            match self.by_value.get(&v) {
                Some(first) if first.client != client => {
                    if self.duplicate.is_none() {
                        self.duplicate = Some((*first, this, v));
                    }
                }
                Some(_) => {}
                None => {
                    self.by_value.insert(v, this);
                }
            }
        }
    }
}

/// The fenced store's tokens, as the history is read: the stale writes it
/// accepted and the tokens two clients wrote with.
#[derive(Default)]
struct Fencing<'a> {
    /// Every accepted operation with a token, in completion order.
    seen: Vec<Seen>,
    /// The first writer of each token: its client and write.
    writer_of_token: BTreeMap<u64, (usize, usize)>,
    writes_by_token: BTreeMap<u64, Vec<(usize, Operation<'a>)>>,
    stale: u64,
    /// The first stale write: the higher token's event, the write's
    /// invoke and completion, the higher token and the write's.
    stale_proof: Option<(usize, usize, usize, u64, u64)>,
    /// The first repeated token: the two writes and the token.
    repeated_proof: Option<(usize, usize, u64)>,
}

impl<'a> Fencing<'a> {
    /// An accepted write by `client` with `token`.
    fn write(&mut self, client: usize, op: Operation<'a>, token: u64) {
        let at = op.complete.i;
        // The highest token of the operations that completed before this
        // write was invoked: the store had seen it before it ran the
        // write. Later ones may have run after it.
        let before = self.seen.partition_point(|s| s.completed < op.invoked);
        if let Some(s) = before.checked_sub(1).map(|k| self.seen[k])
            && token < s.highest
        {
            self.stale += 1;
            self.stale_proof
                .get_or_insert((s.highest_at, op.invoked, at, s.highest, token));
        }
        match self.writer_of_token.get(&token) {
            Some(&(other, first)) if other != client => {
                self.repeated_proof.get_or_insert((first, at, token));
            }
            Some(_) => {}
            None => {
                self.writer_of_token.insert(token, (client, at));
            }
        }
        self.writes_by_token
            .entry(token)
            .or_default()
            .push((client, op));
    }

    /// An accepted operation with `token` completed at event `at`.
    fn seen_at(&mut self, at: usize, token: u64) {
        let (highest, highest_at) = match self.seen.last() {
            Some(s) if s.highest >= token => (s.highest, s.highest_at),
            _ => (token, at),
        };
        self.seen.push(Seen {
            completed: at,
            highest,
            highest_at,
        });
    }
}

/// The check's result: the first proof found, in the order of the module
/// doc's list, or the count of lost updates against the final stock.
fn verdict(
    sales: &Sales,
    fencing: &Fencing<'_>,
    final_value: Option<(usize, i64)>,
    stock: i64,
) -> Check {
    let accepted = sales.accepted;
    if let Some((high_at, invoked, at, high, token)) = fencing.stale_proof {
        let stale = fencing.stale;
        Check::invalid(
            vec![high_at, invoked, at],
            format!(
                "stale write accepted: event {at} wrote with token {token}, invoked at event \
                 {invoked} after event {high_at} had completed with token {high} ({stale} stale \
                 write(s) accepted)"
            ),
        )
    } else if let Some((first, second, token)) = fencing.repeated_proof {
        Check::invalid(
            vec![first, second],
            format!(
                "repeated token: events {first} and {second} (different clients) both \
                 wrote with token {token}"
            ),
        )
    } else if let Some((a, b, v)) = sales.duplicate {
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
    } else if let Some(at) = sales.exceeded_at {
        let oversold = (accepted - stock).max(0);
        let mut witness = vec![at];
        witness.extend(final_value.map(|(i, _)| i));
        Check::invalid(
            witness,
            format!(
                "oversold: {accepted} sales accepted from a stock of {stock}; by event {at}, \
                 {} had been accepted; {oversold} oversold",
                stock + 1
            ),
        )
    } else if let Some((final_at, final_stock)) = final_value {
        let lost = (accepted - (stock - final_stock)).max(0);
        if lost > 0 {
            Check::invalid(
                vec![final_at],
                format!(
                    "{accepted} sales accepted but the stock went from {stock} to {final_stock}: \
                     {lost} update(s) lost"
                ),
            )
        } else {
            Check::Valid
        }
    } else {
        Check::unknown("no final event: the store's final value was not recorded")
    }
}
