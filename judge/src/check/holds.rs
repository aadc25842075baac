//! Who held which lock when, each client in its own view.
//!
//! This is "holding, as the client sees it" (defined in `docs/ladder.md`),
//! computed from a history: a client holds a lock from the `complete` of an `acquire` whose
//! outcome is `ok` until the `invoke` of the `release` that brings its hold
//! count back to 0. A second successful acquire by the same client on the
//! same lock while it holds it is a nested acquire (the count goes up), not
//! a second holder. Holding also ends at a failed validity `check`, at a
//! `crash` of the client (phase `start` or `instant`), and at the end of the
//! history. A failed or unknown acquire gives no holding; a pause does not
//! end holding (a paused client notices nothing).
//!
//! A hold is shared when the acquire that began it was granted shared (a
//! reader of a read-write lock), exclusive otherwise.
//!
//! A rung that tracks its own validity (Redlock) records `valid_for_us` on
//! its successful acquire (or extend): the client's own view of its lease,
//! so holding ends then at the latest. Such a hold ends just before the
//! first event at or after that instant.
//!
//! # Ordering
//!
//! A hold is bounded by one client's own events, which come in program
//! order, so no order between clients is assumed here. It begins at a
//! *completion* and ends at an *invoke* (or a crash, a failed check, the
//! client's own deadline): the part of the client's life in which it
//! certainly acts as holder. Checkers that compare holds of different
//! clients ([`super::mutual_exclusion`]) thereby compare a completion with
//! an invoke, the real-time rule of [`super::order`].

use model::fault::FaultKind;
use model::history::{Event, EventKind, History, Op, Outcome, Phase};
use std::collections::BTreeMap;

/// Why a hold ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HoldEnd {
    /// The client began the release that brought its count to 0.
    Release,
    /// The client's validity check found the lease lost.
    CheckFailed,
    /// The client crashed.
    Crash,
    /// The validity the client computed itself (`valid_for_us`) ran out.
    ValidityExpired,
    /// The history ended while the client still held the lock.
    HistoryEnd,
}

/// One interval during which a client held a lock in its own view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The client.
    pub client: usize,
    /// The lock (key).
    pub lock: String,
    /// Index of the acquire `complete` that began the hold.
    pub start: usize,
    /// Time of `start`, µs.
    pub start_us: u64,
    /// Index of the event that ended it; `None` when its validity ran out
    /// or the history ended first.
    pub end: Option<usize>,
    /// Where it ended in the history's order: it covers the events with
    /// index in `start..end_pos` (`end_pos` is the ending event's index, the
    /// first event at or after the validity ran out, or the history's
    /// length).
    pub end_pos: usize,
    /// Time it ended, µs.
    pub end_us: u64,
    /// What ended it.
    pub ended_by: HoldEnd,
    /// Whether it was granted shared, beside other shared holders.
    pub shared: bool,
}

impl Hold {
    /// Whether the client held the lock just after event `i` happened (the
    /// start event counts, the end event does not).
    pub fn covers(&self, i: usize) -> bool {
        self.start <= i && i < self.end_pos
    }
}

/// Whether `event` is a crash of a client (phase `start` or `instant`);
/// returns that client.
pub fn crashed_client(event: &Event) -> Option<usize> {
    match &event.kind {
        EventKind::Fault {
            fault,
            target,
            phase,
            ..
        } if *fault == FaultKind::Crash && matches!(phase, Phase::Start | Phase::Instant) => {
            target.client()
        }
        _ => None,
    }
}

/// The state of a hold in progress.
#[derive(Debug, Clone, Copy)]
struct Open {
    depth: u32,
    start: usize,
    start_us: u64,
    /// When the client's own validity runs out, µs.
    deadline: Option<u64>,
    /// Granted shared.
    shared: bool,
}

/// Every hold in `history`, ordered by the index of the event that began it.
pub fn holds(history: &History) -> Vec<Hold> {
    let mut ledger = Ledger::default();
    for event in history.events() {
        ledger.expire_before(event);
        match &event.kind {
            EventKind::Complete {
                client,
                op: op @ (Op::Acquire | Op::Extend),
                lock,
                outcome: Outcome::Ok,
                valid_for_us,
                shared,
                ..
            } => {
                let grant = Grant {
                    op: *op,
                    valid_for_us: *valid_for_us,
                    shared: *shared,
                };
                ledger.granted(event, (*client, lock.clone()), grant)
            }
            EventKind::Invoke {
                client,
                op: Op::Release,
                lock,
                ..
            } => ledger.released(event, (*client, lock.clone())),
            EventKind::Complete {
                client,
                op: Op::Check,
                lock,
                outcome: Outcome::Fail,
                ..
            } => ledger.close_at(event, (*client, lock.clone()), HoldEnd::CheckFailed),
            EventKind::Fault { .. } => {
                if let Some(c) = crashed_client(event) {
                    ledger.crashed(event, c);
                }
            }
            _ => {}
        }
    }
    ledger.history_ended(history)
}

/// What a successful acquire or extend carried.
struct Grant {
    op: Op,
    valid_for_us: Option<u64>,
    shared: bool,
}

/// A client and a lock: whose hold it is.
type HoldKey = (usize, String);

/// How a hold ended: [`Hold`]'s `end`, `end_pos`, `end_us` and `ended_by`.
struct End {
    event: Option<usize>,
    pos: usize,
    us: u64,
    by: HoldEnd,
}

/// The holds in progress and those ended, as the history is read.
#[derive(Default)]
struct Ledger {
    open: BTreeMap<HoldKey, Open>,
    done: Vec<Hold>,
}

impl Ledger {
    /// Ends the hold `state` of `key`.
    fn finish(&mut self, (client, lock): HoldKey, state: Open, end: End) {
        self.done.push(Hold {
            client,
            lock,
            start: state.start,
            start_us: state.start_us,
            end: end.event,
            end_pos: end.pos,
            end_us: end.us,
            ended_by: end.by,
            shared: state.shared,
        });
    }

    /// Ends the open hold of `key`, if there is one, at `event`.
    fn close_at(&mut self, event: &Event, key: HoldKey, by: HoldEnd) {
        if let Some(state) = self.open.remove(&key) {
            let end = End {
                event: Some(event.i),
                pos: event.i,
                us: event.at_us,
                by,
            };
            self.finish(key, state, end);
        }
    }

    /// Ends the holds whose own validity ran out before `event`.
    fn expire_before(&mut self, event: &Event) {
        let expired: Vec<_> = self
            .open
            .iter()
            .filter(|(_, s)| s.deadline.is_some_and(|d| d <= event.at_us))
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            if let Some(state) = self.open.remove(&key) {
                let end = End {
                    event: None,
                    pos: event.i,
                    us: state.deadline.unwrap_or(event.at_us),
                    by: HoldEnd::ValidityExpired,
                };
                self.finish(key, state, end);
            }
        }
    }

    /// A successful acquire (a hold begins, or nests) or extend (its
    /// deadline moves).
    fn granted(&mut self, event: &Event, key: HoldKey, grant: Grant) {
        let Grant {
            op,
            valid_for_us,
            shared,
        } = grant;
        // An acquire that completes with no validity left (a pause after
        // the grant spent it) gives no holding: the client knows its lease
        // is gone the moment it returns.
        let spent = valid_for_us == Some(0) && !self.open.contains_key(&key);
        if op == Op::Acquire && !spent {
            self.open.entry(key.clone()).or_insert(Open {
                depth: 0,
                start: event.i,
                start_us: event.at_us,
                deadline: None,
                shared,
            });
        }
        if let Some(state) = self.open.get_mut(&key) {
            if op == Op::Acquire {
                state.depth += 1;
            }
            if let Some(v) = valid_for_us {
                state.deadline = Some(event.at_us.saturating_add(v));
            }
        }
    }

    /// A release begins: the hold ends when its count is back to 0.
    fn released(&mut self, event: &Event, key: HoldKey) {
        if let Some(state) = self.open.get_mut(&key) {
            state.depth -= 1;
            if state.depth == 0 {
                self.close_at(event, key, HoldEnd::Release);
            }
        }
    }

    /// Client `c` crashed: every hold of its ends.
    fn crashed(&mut self, event: &Event, c: usize) {
        let keys: Vec<_> = self
            .open
            .range((c, String::new())..)
            .map(|(k, _)| k.clone())
            .take_while(|k| k.0 == c)
            .collect();
        for key in keys {
            self.close_at(event, key, HoldEnd::Crash);
        }
    }

    /// Every hold, once the history is read to its end: those still open
    /// end there (or at their own deadline, if it came first).
    fn history_ended(mut self, history: &History) -> Vec<Hold> {
        let end_us = history.end_us();
        for (key, state) in std::mem::take(&mut self.open) {
            let (us, by) = match state.deadline {
                Some(d) if d < end_us => (d, HoldEnd::ValidityExpired),
                _ => (end_us, HoldEnd::HistoryEnd),
            };
            let end = End {
                event: None,
                pos: history.len(),
                us,
                by,
            };
            self.finish(key, state, end);
        }
        self.done.sort_by_key(|h| (h.start, h.client));
        self.done
    }
}
