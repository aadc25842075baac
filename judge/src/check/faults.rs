//! Faults as spans of true time, from the history's `fault` events.
//!
//! A `start` opens a span; an `end` closes the open span of the same fault
//! and target, or, when there is none, the oldest open span of the same
//! fault kind (a failover starts on the old master and ends on the promoted
//! replica); an `instant` is a point. An `end` that closes nothing is kept
//! as a point too.

use model::fault::FaultKind;
use model::history::{EventKind, FaultTarget, History, Phase};

/// A fault as an interval (or an instant) of true time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpan {
    /// The fault's kind (`pause`, `crash`, ...).
    pub fault: FaultKind,
    /// What it hit (the target of its start).
    pub target: FaultTarget,
    /// Index of the event that began it (or of the instant).
    pub start: usize,
    /// When it began (or happened), µs.
    pub start_us: u64,
    /// The event that ended it and its time, µs; `None` for an instant or
    /// for a span that never ended.
    pub end: Option<(usize, u64)>,
    /// Whether it is an instant (no duration).
    pub instant: bool,
}

impl FaultSpan {
    /// Whether it started and never ended.
    pub fn never_ended(&self) -> bool {
        !self.instant && self.end.is_none()
    }

    /// When it healed, µs: its end, or its time for an instant; `None`
    /// when it never ended.
    pub fn healed_us(&self) -> Option<u64> {
        if self.instant {
            Some(self.start_us)
        } else {
            self.end.map(|(_, us)| us)
        }
    }

    /// The event that healed it (its end, or the instant itself).
    pub fn healed_by(&self) -> Option<usize> {
        if self.instant {
            Some(self.start)
        } else {
            self.end.map(|(i, _)| i)
        }
    }
}

/// Every fault in `history`, in the order it began.
pub fn fault_spans(history: &History) -> Vec<FaultSpan> {
    let mut spans: Vec<FaultSpan> = Vec::new();
    for event in history.events() {
        let EventKind::Fault {
            fault,
            target,
            phase,
            ..
        } = &event.kind
        else {
            continue;
        };
        if *phase == Phase::End {
            let open = |s: &FaultSpan| !s.instant && s.end.is_none() && s.fault == *fault;
            let which = spans
                .iter()
                .position(|s| open(s) && s.target == *target)
                .or_else(|| spans.iter().position(open));
            if let Some(k) = which {
                spans[k].end = Some((event.i, event.at_us));
                continue;
            }
        }
        spans.push(FaultSpan {
            fault: *fault,
            target: target.clone(),
            start: event.i,
            start_us: event.at_us,
            end: None,
            instant: *phase != Phase::Start,
        });
    }
    spans
}

/// When the last fault healed, µs, and the event that healed it: `(0, None)`
/// without faults; `None` when some fault never ended.
pub fn last_heal(history: &History) -> Option<(u64, Option<usize>)> {
    let spans = fault_spans(history);
    if spans.iter().any(FaultSpan::never_ended) {
        return None;
    }
    Some(
        spans
            .iter()
            .filter_map(|s| Some((s.healed_us()?, s.healed_by())))
            .max()
            .unwrap_or((0, None)),
    )
}
