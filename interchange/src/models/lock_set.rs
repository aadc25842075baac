//! Jepsen's lock-guarded set, judged as Jepsen's `checker/set` judges it.
//!
//! In Jepsen's etcd and Consul lock-set workloads each client, holding
//! the lock, reads a shared set, adds its own element and writes the set
//! back. The history has `{:f :add, :value x}` operations and, at the end,
//! a `{:f :read}` whose completion's value is the set's elements. If the
//! lock ever let two clients hold it together, one of them wrote back a
//! set read before the other's write: the other's element is gone.
//!
//! The last `ok` read is the final read. Then, as in `checker/set`:
//!
//! - an element added `ok` and missing from the final read is *lost*: the
//!   history is invalid;
//! - an element whose add ended `info` (or never completed) may be present
//!   or not; present, it is *recovered*;
//! - an element in the final read that no add attempted is *unexpected*:
//!   invalid too;
//! - an add that `fail`ed was attempted; present in the read, it is
//!   recovered as well (the lock-set client cannot tell a failed add's
//!   write from a lost one's).
//!
//! One departure, from the real-time rule locklab's checkers share: an
//! element added `ok` is lost only if its add completed before the final
//! read was invoked. An add still in flight when the read began (or begun
//! after it) may have taken effect after the read; such elements are
//! counted as `not_yet_read`, not lost. Jepsen's workloads read only after
//! every add has finished, so on their histories the two agree.
//!
//! Elements are compared as JSON values (`3` and `"3"` differ). Other
//! functions and named processes are ignored. A history with no `ok` read
//! is `unknown`.

use crate::op::{Op, OpType, Process};
use judge::check::Check;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// How many elements an explanation names before it only counts them.
const NAMED_IN_WHY: usize = 20;

/// What the lock-guarded set lost (`null`: not measured, as without a
/// final read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockSetDamage {
    /// Distinct elements some add was invoked with.
    pub attempted: u64,
    /// Distinct elements some add of completed `ok`.
    pub acknowledged: u64,
    /// Elements added `ok` before the final read began and missing from it.
    pub lost: Option<u64>,
    /// Elements in the final read whose adds did not complete `ok`.
    pub recovered: Option<u64>,
    /// Elements in the final read that no add attempted.
    pub unexpected: Option<u64>,
    /// Elements added `ok` and missing from the final read whose adds had
    /// not completed when it began: not proven lost.
    pub not_yet_read: Option<u64>,
}

/// An element's adds, as far as the history shows them.
#[derive(Debug, Clone, Copy, Default)]
struct Element {
    /// The completion of its first `ok` add.
    acknowledged_at: Option<usize>,
}

/// The final read: positions of its invoke and completion.
#[derive(Debug, Clone, Copy)]
struct FinalRead {
    invoke: usize,
    completion: usize,
}

/// Judges `ops` (in history order, well formed) as Jepsen's set checker
/// judges a lock-set history.
pub fn check_lock_set(ops: &[Op]) -> (Check, LockSetDamage) {
    // Elements by their JSON text: a total order on any value.
    let mut elements: BTreeMap<String, Element> = BTreeMap::new();
    let mut open_invoke: BTreeMap<&Process, usize> = BTreeMap::new();
    let mut final_read: Option<FinalRead> = None;
    for (pos, op) in ops.iter().enumerate() {
        if !op.is_client() || !matches!(op.f.as_str(), "add" | "read") {
            continue;
        }
        let invoke = if op.kind == OpType::Invoke {
            open_invoke.insert(&op.process, pos);
            pos
        } else {
            // A completion without its invoke counts as invoked at the
            // start: nothing is proven to precede it.
            open_invoke.remove(&op.process).unwrap_or(0)
        };
        match (op.f.as_str(), op.kind) {
            ("add", OpType::Invoke) => {
                elements.entry(op.value.to_string()).or_default();
            }
            ("add", OpType::Ok) => {
                let element = elements.entry(op.value.to_string()).or_default();
                element.acknowledged_at.get_or_insert(pos);
            }
            ("read", OpType::Ok) => {
                final_read = Some(FinalRead {
                    invoke,
                    completion: pos,
                });
            }
            _ => {}
        }
    }
    let mut damage = LockSetDamage {
        attempted: elements.len() as u64,
        acknowledged: elements
            .values()
            .filter(|e| e.acknowledged_at.is_some())
            .count() as u64,
        ..LockSetDamage::default()
    };
    let Some(read) = final_read else {
        return (
            Check::unknown("no final read: no read completed ok"),
            damage,
        );
    };
    let read_op = &ops[read.completion];
    let Value::Array(values) = &read_op.value else {
        return (
            Check::unknown(format!(
                "the final read ({}'s, ok at index {}) has value {}, not a set of elements",
                describe_process(read_op),
                read_op.index,
                read_op.value
            )),
            damage,
        );
    };
    let read_set: BTreeMap<String, &Value> = values.iter().map(|v| (v.to_string(), v)).collect();

    let mut lost: Vec<(&String, usize)> = Vec::new();
    let mut not_yet_read = 0u64;
    let mut recovered = 0u64;
    for (text, element) in &elements {
        match (element.acknowledged_at, read_set.contains_key(text)) {
            (Some(at), false) if at < read.invoke => lost.push((text, at)),
            (Some(_), false) => not_yet_read += 1,
            (None, true) => recovered += 1,
            _ => {}
        }
    }
    lost.sort_by_key(|(_, at)| *at);
    let unexpected: Vec<&String> = read_set
        .keys()
        .filter(|text| !elements.contains_key(*text))
        .collect();
    damage.lost = Some(lost.len() as u64);
    damage.recovered = Some(recovered);
    damage.unexpected = Some(unexpected.len() as u64);
    damage.not_yet_read = Some(not_yet_read);

    if lost.is_empty() && unexpected.is_empty() {
        return (Check::Valid, damage);
    }
    let read_words = format!(
        "the final read ({}'s, invoked at index {}, ok at index {})",
        describe_process(read_op),
        ops[read.invoke].index,
        read_op.index
    );
    let mut witness = vec![read.invoke, read.completion];
    let mut parts = Vec::new();
    if !lost.is_empty() {
        witness.extend(lost.iter().map(|(_, at)| *at));
        parts.push(format!(
            "{} element(s) added ok before {read_words} began are missing from it: {} (the \
             lock let clients overlap and one wrote back a set without another's element)",
            lost.len(),
            name_some(
                lost.iter()
                    .map(|(text, at)| { format!("{text} (added ok at index {})", ops[*at].index) })
            )
        ));
    }
    if !unexpected.is_empty() {
        parts.push(format!(
            "{} element(s) in {read_words} were never added: {}",
            unexpected.len(),
            name_some(unexpected.iter().map(|text| text.to_string()))
        ));
    }
    (Check::invalid(witness, parts.join("; ")), damage)
}

/// The first [`NAMED_IN_WHY`] items, then how many more.
fn name_some(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut named: Vec<String> = items.take(NAMED_IN_WHY).collect();
    if total > NAMED_IN_WHY {
        named.push(format!("and {} more", total - NAMED_IN_WHY));
    }
    named.join(", ")
}

/// "process 3".
fn describe_process(op: &Op) -> String {
    format!("process {}", op.process)
}
