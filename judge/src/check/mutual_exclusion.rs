//! Mutual exclusion: at no instant of true time do two different clients
//! each hold the same lock in their own view ([`super::holds`]), unless
//! both hold it shared (two readers of a read-write lock). A reader
//! beside a writer is an overlap like any other: the reader may see the
//! writer's half-done work.
//!
//! "At the same instant" is decided in the history's order, which is true
//! time with ties broken by the order things happened in the simulator: two
//! holds overlap when one began (its acquire completed) before the other
//! ended (its release was invoked, its check failed, it crashed, its own
//! validity ran out before the other's acquire completed). So two
//! holds that meet within the same simulated microsecond still count when
//! the second began before the first ended; their overlap then lasts 0 ms.
//!
//! # Ordering
//!
//! This is the real-time rule of [`super::order`] applied to holds. A hold
//! is the inner part of the client's operations: it begins when the
//! acquire *completes* and ends when the release is *invoked*, the stretch
//! in which the client certainly acts as holder, whenever the server
//! granted or freed the key within those operations. An overlap is proven
//! by one client's acquire completing before the other's release was
//! invoked; an acquire that completes while the holder's release is in
//! flight is not an overlap, even if the server granted it before the old
//! key was deleted (a lock node's own record, the `server` events, could
//! show that order; this checker judges the clients' view).

use super::Check;
use super::holds::{Hold, holds};
use model::history::History;
use serde::{Deserialize, Serialize};

/// How much mutual exclusion was broken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MutexDamage {
    /// Sum, over every pair of overlapping holds (same lock, different
    /// clients), of the true time both held, in ms. Three clients holding
    /// together for 1 ms count 3 ms (three pairs).
    pub overlap_ms: f64,
    /// Number of pairs of overlapping holds (same lock, different clients).
    pub overlap_pairs: u64,
}

/// One pair of overlapping holds: `first` began before `second`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The hold that began first.
    pub first: Hold,
    /// The hold that began while `first` was still held.
    pub second: Hold,
    /// True time both held, µs.
    pub overlap_us: u64,
}

impl Overlap {
    /// The events that prove it: the acquires that began both holds and
    /// the events that ended them (if any: a hold that lasted to the end of
    /// the history or until its own validity ran out has none), ascending.
    pub fn witness(&self) -> Vec<usize> {
        let mut w = vec![self.first.start, self.second.start];
        w.extend(self.first.end);
        w.extend(self.second.end);
        w.sort_unstable();
        w.dedup();
        w
    }

    /// True time span both held, µs: from the second's start to the earlier end.
    pub fn span_us(&self) -> (u64, u64) {
        let from = self.second.start_us;
        (from, from + self.overlap_us)
    }
}

/// Every pair of overlapping holds, ordered by the start of the later one
/// (then of the earlier one).
pub fn overlaps(history: &History) -> Vec<Overlap> {
    let all = holds(history);
    let mut found = Vec::new();
    for (j, second) in all.iter().enumerate() {
        for first in &all[..j] {
            if first.lock == second.lock
                && first.client != second.client
                && !(first.shared && second.shared)
                && second.start < first.end_pos
            {
                let end = first.end_us.min(second.end_us);
                found.push(Overlap {
                    first: first.clone(),
                    second: second.clone(),
                    overlap_us: end.saturating_sub(second.start_us),
                });
            }
        }
    }
    found.sort_by_key(|o| (o.second.start, o.first.start));
    found
}

/// Checks mutual exclusion. The witness is the first overlapping pair in
/// history order (see [`Overlap::witness`]).
pub fn check(history: &History) -> (Check, MutexDamage) {
    let found = overlaps(history);
    let damage = MutexDamage {
        overlap_ms: found.iter().map(|o| o.overlap_us).sum::<u64>() as f64 / 1000.0,
        overlap_pairs: found.len() as u64,
    };
    let check = match found.first() {
        None => Check::Valid,
        Some(o) => Check::invalid(
            o.witness(),
            format!(
                "clients {} and {} both held lock {:?}{} from {} for {} (acquired at events {} and {})",
                o.first.client,
                o.second.client,
                o.first.lock,
                modes(&o.first, &o.second),
                fmt_ms(o.second.start_us),
                fmt_ms(o.overlap_us),
                o.first.start,
                o.second.start,
            ),
        ),
    };
    (check, damage)
}

/// How the two held it, when one of them was a reader: ` (client 2
/// shared, client 1 exclusive)`; nothing when both held it exclusive.
fn modes(first: &Hold, second: &Hold) -> String {
    let mode = |h: &Hold| if h.shared { "shared" } else { "exclusive" };
    if first.shared || second.shared {
        format!(
            " (client {} {}, client {} {})",
            first.client,
            mode(first),
            second.client,
            mode(second)
        )
    } else {
        String::new()
    }
}

/// µs as a human-readable ms figure (`12.5 ms`).
pub(crate) fn fmt_ms(us: u64) -> String {
    format!("{} ms", us as f64 / 1000.0)
}
