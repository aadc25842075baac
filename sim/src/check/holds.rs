//! Who held which lock when, each client in its own view.
//!
//! This is LADDER.md's "holding, as the client sees it", computed from a
//! history: a client holds a lock from the `complete` of an `acquire` whose
//! outcome is `ok` until the `invoke` of the `release` that brings its hold
//! count back to 0. A second successful acquire by the same client on the
//! same lock while it holds it is a nested acquire (the count goes up), not
//! a second holder. Holding also ends at a failed validity `check`, at a
//! `crash` of the client (phase `start` or `instant`), and at the end of the
//! history. A failed or unknown acquire gives no holding; a pause does not
//! end holding (a paused client notices nothing).

use crate::history::{Event, EventKind, History, Op, Outcome};
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
    /// Index of the event that ended it; `None` when the history ended first.
    pub end: Option<usize>,
    /// Time it ended, µs (the history's end when `end` is `None`).
    pub end_us: u64,
    /// What ended it.
    pub ended_by: HoldEnd,
}

impl Hold {
    /// The end as a position in the history's order (past every event when
    /// the history ended first).
    pub fn end_pos(&self) -> usize {
        self.end.unwrap_or(usize::MAX)
    }

    /// Whether the client held the lock just after event `i` happened (the
    /// start event counts, the end event does not).
    pub fn covers(&self, i: usize) -> bool {
        self.start <= i && i < self.end_pos()
    }
}

/// The client index named by a fault target `client-<i>`, if it is one
/// (`client-0->redis-0` is a link, not a client).
pub fn client_of_target(target: &str) -> Option<usize> {
    target.strip_prefix("client-")?.parse().ok()
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
        } if fault == "crash" && (phase == "start" || phase == "instant") => {
            client_of_target(target)
        }
        _ => None,
    }
}

/// Every hold in `history`, ordered by the index of the event that began it.
pub fn holds(history: &History) -> Vec<Hold> {
    // (client, lock) -> (depth, start index, start time)
    let mut open: BTreeMap<(usize, String), (u32, usize, u64)> = BTreeMap::new();
    let mut done = Vec::new();
    let close = |done: &mut Vec<Hold>,
                 key: (usize, String),
                 (_, start, start_us): (u32, usize, u64),
                 end: Option<usize>,
                 end_us: u64,
                 ended_by: HoldEnd| {
        done.push(Hold {
            client: key.0,
            lock: key.1,
            start,
            start_us,
            end,
            end_us,
            ended_by,
        });
    };
    for event in history.events() {
        match &event.kind {
            EventKind::Complete {
                client,
                op: Op::Acquire,
                lock,
                outcome: Outcome::Ok,
                ..
            } => {
                let entry = open
                    .entry((*client, lock.clone()))
                    .or_insert((0, event.i, event.at_us));
                entry.0 += 1;
            }
            EventKind::Invoke {
                client,
                op: Op::Release,
                lock,
                ..
            } => {
                let key = (*client, lock.clone());
                if let Some(state) = open.get_mut(&key) {
                    state.0 -= 1;
                    if state.0 == 0 {
                        let state = *state;
                        open.remove(&key);
                        close(
                            &mut done,
                            key,
                            state,
                            Some(event.i),
                            event.at_us,
                            HoldEnd::Release,
                        );
                    }
                }
            }
            EventKind::Complete {
                client,
                op: Op::Check,
                lock,
                outcome: Outcome::Fail,
                ..
            } => {
                let key = (*client, lock.clone());
                if let Some(state) = open.remove(&key) {
                    close(
                        &mut done,
                        key,
                        state,
                        Some(event.i),
                        event.at_us,
                        HoldEnd::CheckFailed,
                    );
                }
            }
            EventKind::Fault { .. } => {
                if let Some(c) = crashed_client(event) {
                    let keys: Vec<_> = open
                        .range((c, String::new())..)
                        .map(|(k, _)| k.clone())
                        .take_while(|k| k.0 == c)
                        .collect();
                    for key in keys {
                        if let Some(state) = open.remove(&key) {
                            close(
                                &mut done,
                                key,
                                state,
                                Some(event.i),
                                event.at_us,
                                HoldEnd::Crash,
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let end_us = history.end_us();
    for (key, state) in std::mem::take(&mut open) {
        close(&mut done, key, state, None, end_us, HoldEnd::HistoryEnd);
    }
    done.sort_by(|a, b| (a.start, a.client).cmp(&(b.start, b.client)));
    done
}
