//! Time as a history gives it: one clock, or each client's own clock with
//! a bound on how far it may be from true time.
//!
//! locklab's checkers order operations by real time: one proves it took
//! effect before another only if it completed before the other was
//! invoked. With clocks that may be off by up to a bound, a reading `t`
//! means some true time in `t ± bound`. Placing every invoke at its
//! earliest (`t − bound`) and every completion at its latest (`t + bound`)
//! widens each operation to every true time it may have spanned: an order
//! that holds between widened operations holds whatever the clocks' true
//! errors were. Judging both the recorded times and the widened ones
//! tells where the bound decided ([`crate::judging`]).

use crate::error::BadHistory;
use crate::export::is_header;
use crate::op::{Op, OpType, Process};
use std::collections::BTreeMap;

/// Whether any operation's clock has a bound above 0.
pub fn has_clock_bounds(ops: &[Op]) -> bool {
    ops.iter().any(|op| op.clock_bound_ns > 0)
}

/// `ops` in real-time order: sorted by time, ties (and operations of
/// one clock) in the file's order. With `widen`, each invoke is placed at
/// its earliest possible true time and each completion at its latest.
/// Operations without a time keep the file's order only when none has
/// one; a history that times some operations and not others is refused
/// at the first untimed one (an exported history's header, which is no
/// operation, stays first).
pub fn in_time_order(file: &str, ops: &[Op], widen: bool) -> Result<Vec<Op>, BadHistory> {
    let timed = ops.iter().filter(|op| op.time_ns.is_some()).count();
    if timed == 0 {
        return Ok(ops.to_vec());
    }
    // An exported history's header is no operation and has no time; it
    // stays first.
    let untimed = ops.iter().find(|op| op.time_ns.is_none() && !is_header(op));
    if let Some(untimed) = untimed {
        return Err(BadHistory::at(
            file,
            untimed.line,
            "a `time`, as the history's other operations have",
            "none",
        ));
    }
    // A process's own operations come in program order on one clock, so
    // widening never moves an invoke before the same process's previous
    // completion: the true times keep that order too.
    let mut last_completion_ns: BTreeMap<&Process, u64> = BTreeMap::new();
    let mut placed = Vec::with_capacity(ops.len());
    for op in ops {
        let mut op_placed = op.clone();
        if widen && let Some(t) = op.time_ns {
            let mut at = placed_time_ns(t, op.kind, op.clock_bound_ns);
            if op.kind == OpType::Invoke {
                at = at.max(last_completion_ns.get(&op.process).copied().unwrap_or(0));
            } else {
                last_completion_ns.insert(&op.process, at);
            }
            op_placed.time_ns = Some(at);
        }
        placed.push(op_placed);
    }
    // A stable sort: equal times keep the order the history recorded.
    placed.sort_by_key(|op| op.time_ns.unwrap_or(0));
    Ok(placed)
}

/// Where a reading `time_ns` of an operation of `kind` is placed when
/// widened by its clock's `bound_ns`.
fn placed_time_ns(time_ns: u64, kind: OpType, bound_ns: u64) -> u64 {
    if kind == OpType::Invoke {
        time_ns.saturating_sub(bound_ns)
    } else {
        time_ns.saturating_add(bound_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn op(process: u64, kind: OpType, time_ns: u64, bound_ns: u64, line: usize) -> Op {
        Op {
            process: Process::Client(process),
            kind,
            f: "acquire".into(),
            value: Value::Null,
            time_ns: Some(time_ns),
            clock_bound_ns: bound_ns,
            index: line as u64,
            fields: Default::default(),
            line,
        }
    }

    #[test]
    fn widening_moves_invokes_earlier_and_completions_later_by_their_bound() {
        let ops = [op(0, OpType::Invoke, 10, 3, 1), op(0, OpType::Ok, 20, 3, 2)];
        let placed = in_time_order("f", &ops, true).unwrap();
        let times: Vec<_> = placed.iter().map(|o| o.time_ns.unwrap()).collect();
        assert_eq!(times, [7, 23]);
    }

    #[test]
    fn widening_never_puts_a_process_invoke_before_its_own_previous_completion() {
        // The release is invoked 1 ns after the acquire completed, on a
        // clock 5 ns off: widened, it would come 9 ns before it.
        let ops = [
            op(0, OpType::Invoke, 10, 5, 1),
            op(0, OpType::Ok, 20, 5, 2),
            op(0, OpType::Invoke, 21, 5, 3),
            op(0, OpType::Ok, 30, 5, 4),
        ];
        let placed = in_time_order("f", &ops, true).unwrap();
        let lines: Vec<_> = placed.iter().map(|o| o.line).collect();
        assert_eq!(lines, [1, 2, 3, 4]);
        assert_eq!(placed[2].time_ns, Some(25), "at the completion, not before");
    }

    #[test]
    fn operations_are_ordered_by_time_and_ties_keep_the_files_order() {
        let ops = [
            op(1, OpType::Invoke, 5, 0, 1),
            op(0, OpType::Invoke, 3, 0, 2),
            op(2, OpType::Invoke, 5, 0, 3),
        ];
        let placed = in_time_order("f", &ops, false).unwrap();
        let lines: Vec<_> = placed.iter().map(|o| o.line).collect();
        assert_eq!(lines, [2, 1, 3]);
    }

    #[test]
    fn a_history_that_times_some_operations_and_not_others_is_refused_at_the_first_untimed() {
        let mut untimed = op(1, OpType::Invoke, 0, 0, 2);
        untimed.time_ns = None;
        let ops = [op(0, OpType::Invoke, 5, 0, 1), untimed];
        let err = in_time_order("log.jsonl", &ops, false).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("log.jsonl line 2"), "{err}");
    }
}
