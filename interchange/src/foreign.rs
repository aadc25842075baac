//! A history recorded outside locklab, read into locklab's own history so
//! that locklab's checkers judge it as they judge a simulated run.
//!
//! Each client operation whose function locklab knows (`acquire`,
//! `release`, `extend`, `check`, `read`, `write`, and a lock-set's `add`,
//! drawn as a write) becomes an `invoke` and a `complete` event:
//!
//! | Jepsen | locklab |
//! |---|---|
//! | `:process` 3 | client 3 |
//! | `:type` `:ok` / `:fail` / `:info` | outcome `ok` / `fail` / `unknown` |
//! | `:lock` (absent: `lock`) | the lock |
//! | `:token` | the lease token |
//! | `:fence` (on the completion, else its invoke) | the fencing token |
//! | `:value` (an integer) | the value written or read |
//! | `:time` (ns) | `at_us` |
//!
//! The lock cycle `n` counts the process's acquires (from 1), which is all
//! locklab's pairing of an invoke with its completion needs: a process runs
//! one operation at a time. Operations of other functions and of named
//! processes (a nemesis's) are not judged; their count is reported, so
//! nothing is left out silently.

use crate::error::BadHistory;
use crate::op::{Op, OpType, Process};
use model::history::{EventKind, History, Op as LockOp, Outcome};
use serde_json::Value;
use std::collections::BTreeMap;

/// The lock an operation concerns when it names none.
pub const DEFAULT_LOCK: &str = "lock";

/// A foreign history as locklab's: the events, where each came from, and
/// what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The history locklab's checkers read.
    pub history: History,
    /// For each event, the position in the operations it came from.
    pub origin: Vec<usize>,
    /// For each operation, the event it became, if any.
    pub event_of: Vec<Option<usize>>,
    /// Operations not judged, counted by who and what: `nemesis
    /// start-partition` → 2.
    pub left_out: BTreeMap<String, usize>,
}

/// The locklab operation of a Jepsen function, if locklab knows it.
fn lock_op(f: &str) -> Option<LockOp> {
    match f {
        "acquire" | "lock" => Some(LockOp::Acquire),
        "release" | "unlock" => Some(LockOp::Release),
        "extend" | "renew" => Some(LockOp::Extend),
        "check" => Some(LockOp::Check),
        "read" => Some(LockOp::Read),
        "write" | "add" => Some(LockOp::Write),
        _ => None,
    }
}

/// A further field as text (a token may be a string or a number).
fn text_field(op: &Op, name: &str) -> Option<String> {
    match op.field(name)? {
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// An unsigned further field; anything else is refused at its line.
fn u64_field(file: &str, op: &Op, name: &str) -> Result<Option<u64>, BadHistory> {
    match op.field(name) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            BadHistory::at(
                file,
                op.line,
                format!("`{name}` as a whole number of at least 0"),
                v.to_string(),
            )
        }),
    }
}

/// A further field that fits in 32 bits (a hold count); anything else is
/// refused at its line.
fn u32_field(file: &str, op: &Op, name: &str) -> Result<Option<u32>, BadHistory> {
    match u64_field(file, op, name)? {
        None => Ok(None),
        Some(n) => u32::try_from(n).map(Some).map_err(|_| {
            BadHistory::at(file, op.line, format!("`{name}` below 2^32"), n.to_string())
        }),
    }
}

/// The value as an integer, when it is one (a lock-set's read of a set
/// or a nil value has none).
fn int_value(op: &Op) -> Option<i64> {
    op.value.as_i64()
}

/// Converts `ops` (in history order, well formed) into locklab's history.
pub fn convert(file: &str, ops: &[Op]) -> Result<Converted, BadHistory> {
    let mut history = History::new();
    let mut origin = Vec::new();
    let mut event_of = vec![None; ops.len()];
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    // Per process: its cycle count, and its pending invoke's fence.
    let mut cycles: BTreeMap<u64, u32> = BTreeMap::new();
    let mut invoke_fence: BTreeMap<u64, Option<u64>> = BTreeMap::new();
    for (pos, op) in ops.iter().enumerate() {
        let (Process::Client(process), Some(kind)) = (&op.process, lock_op(&op.f)) else {
            *left_out
                .entry(format!("{} {}", op.process, op.f))
                .or_default() += 1;
            continue;
        };
        let client = usize::try_from(*process)
            .map_err(|_| BadHistory::at(file, op.line, "a process number", process.to_string()))?;
        let lock = text_field(op, "lock").unwrap_or_else(|| DEFAULT_LOCK.to_string());
        let at_us = op.time_ns.unwrap_or(0) / 1_000;
        let shared = op.field("shared").and_then(Value::as_bool).unwrap_or(false);
        let event = if op.kind == OpType::Invoke {
            let n = cycles.entry(*process).or_insert(0);
            if kind == LockOp::Acquire || *n == 0 {
                *n += 1;
            }
            invoke_fence.insert(*process, u64_field(file, op, "fence")?);
            EventKind::Invoke {
                client,
                op: kind,
                lock,
                n: *n,
                value: int_value(op),
                shared,
            }
        } else {
            let n = cycles.get(process).copied().unwrap_or(1);
            let fence = match u64_field(file, op, "fence")? {
                Some(fence) => Some(fence),
                None => invoke_fence.get(process).copied().flatten(),
            };
            EventKind::Complete {
                client,
                op: kind,
                lock,
                n,
                outcome: match op.kind {
                    OpType::Ok => Outcome::Ok,
                    OpType::Fail => Outcome::Fail,
                    _ => Outcome::Unknown,
                },
                token: text_field(op, "token"),
                fence,
                depth: u32_field(file, op, "depth")?,
                valid_for_us: u64_field(file, op, "valid-for-us")?,
                value: int_value(op),
                error: text_field(op, "error"),
                shared,
            }
        };
        event_of[pos] = Some(history.push(at_us, event));
        origin.push(pos);
    }
    Ok(Converted {
        history,
        origin,
        event_of,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(process: u64, kind: OpType, f: &str, fields: Value, line: usize) -> Op {
        Op {
            process: Process::Client(process),
            kind,
            f: f.into(),
            value: Value::Null,
            time_ns: Some(line as u64 * 1_000),
            clock_bound_ns: 0,
            index: line as u64,
            fields: serde_json::from_value(fields).unwrap(),
            line,
        }
    }

    #[test]
    fn a_write_takes_its_fence_from_its_invoke_when_its_completion_has_none() {
        let ops = [
            op(0, OpType::Invoke, "write", json!({"fence": 7}), 1),
            op(0, OpType::Ok, "write", json!({}), 2),
        ];
        let converted = convert("f", &ops).unwrap();
        let EventKind::Complete { fence, lock, .. } = &converted.history.events()[1].kind else {
            panic!("a completion");
        };
        assert_eq!(*fence, Some(7));
        assert_eq!(lock, DEFAULT_LOCK);
    }

    #[test]
    fn a_nemesis_and_unknown_functions_are_left_out_and_counted() {
        let mut nemesis = op(0, OpType::Info, "start-partition", json!({}), 1);
        nemesis.process = Process::Named("nemesis".into());
        let ops = [
            nemesis,
            op(0, OpType::Invoke, "cas", json!({}), 2),
            op(0, OpType::Ok, "cas", json!({}), 3),
            op(0, OpType::Invoke, "acquire", json!({}), 4),
        ];
        let converted = convert("f", &ops).unwrap();
        assert_eq!(converted.history.len(), 1);
        assert_eq!(converted.origin, [3]);
        assert_eq!(converted.event_of, [None, None, None, Some(0)]);
        assert_eq!(converted.left_out["nemesis start-partition"], 1);
        assert_eq!(converted.left_out["0 cas"], 2);
    }

    #[test]
    fn a_depth_beyond_32_bits_is_refused_at_its_line() {
        let ops = [
            op(0, OpType::Invoke, "acquire", json!({}), 1),
            op(0, OpType::Ok, "acquire", json!({"depth": 1u64 << 40}), 2),
        ];
        let err = convert("f", &ops).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.expected.contains("depth"), "{err}");
    }
}
