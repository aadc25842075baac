//! Real-time order between operations: what one operation can prove about
//! another.
//!
//! An operation is an `invoke` and the `complete` that ends it. The client
//! records the invoke before its request leaves and the completion after
//! the reply arrives, so the moment the operation took effect (on the
//! store, on a lock node) lies somewhere between the two. Hence the rule
//! the checkers share, as Jepsen's checkers do: **an operation is known to
//! have taken effect before another only if it completed before the other
//! was invoked**. Operations that overlap in time may have taken effect in
//! either order, and prove nothing about each other's order.
//!
//! "Before" is history order (true time, ties broken by the order things
//! happened inside the simulator): `a` precedes `b` when `a`'s completion
//! has a lower index than `b`'s invoke.
//!
//! An invoke is matched to its completion by client, operation, lock and
//! cycle `n`: the completion ends the latest invoke of the same key that
//! has not been ended yet (a client runs one operation of a kind at a time,
//! so the latest is the one). A completion whose invoke is missing (a
//! history cut or edited by hand) is taken as invoked at the start of the
//! history: nothing is proven to precede it.
//!
//! On the simulator the store could record the order in which it executed
//! requests, which would settle some overlapping pairs too; the checkers do
//! not use such a record today and judge by real time alone.

use model::history::{Event, EventKind, History, Op};
use std::collections::BTreeMap;

/// One completed operation: its completion and where it was invoked.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    /// Index of its `invoke` in the history; 0 when none was recorded.
    pub invoked: usize,
    /// Its `complete` event.
    pub complete: &'a Event,
}

impl Operation<'_> {
    /// Index of its `complete`.
    pub fn completed(&self) -> usize {
        self.complete.i
    }

    /// Whether this operation is known to have taken effect before
    /// `other`: it completed before `other` was invoked.
    pub fn precedes(&self, other: &Operation<'_>) -> bool {
        self.completed() < other.invoked
    }
}

/// Every completed operation of `history`, in the order of completion,
/// each paired with its invoke.
pub fn operations(history: &History) -> Vec<Operation<'_>> {
    let mut pending: BTreeMap<(usize, Op, &str, u32), usize> = BTreeMap::new();
    let mut done = Vec::new();
    for event in history.events() {
        match &event.kind {
            EventKind::Invoke {
                client,
                op,
                lock,
                n,
                ..
            } => {
                pending.insert((*client, *op, lock.as_str(), *n), event.i);
            }
            EventKind::Complete {
                client,
                op,
                lock,
                n,
                ..
            } => {
                let invoked = pending
                    .remove(&(*client, *op, lock.as_str(), *n))
                    .unwrap_or(0);
                done.push(Operation {
                    invoked,
                    complete: event,
                });
            }
            _ => {}
        }
    }
    done
}
