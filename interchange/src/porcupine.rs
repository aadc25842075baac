//! Porcupine's histories: its `[]Operation` written as JSON by Go's
//! `encoding/json`, one array (or one object a line), each
//!
//! ```json
//! {"ClientId": 0, "Input": {"f": "acquire", "lock": "l"}, "Call": 100,
//!  "Output": {"ok": true, "fence": 7}, "Return": 250}
//! ```
//!
//! with Go's field names and nothing else (an unknown field is refused at
//! its line). `ClientId` is optional, as in Porcupine (0 when absent);
//! `Call` and `Return` are ns, whole numbers ≥ 0, `Call` ≤ `Return`.
//!
//! The lock shape: `Input` is an object with `f` (`acquire`, `release`,
//! `extend`, `write`, `read`...) and any further fields (`lock`, `value`,
//! `fence`, `token`...); `Output` is an object with `ok` (`true`: it took
//! effect, `false`: it did not) and any further fields, or `null` or
//! absent for an unknown outcome (a timeout). Porcupine itself has no
//! unknown outcome: its users give such an operation a return at the end
//! of time, `Return` = 9223372036854775807 (Go's `math.MaxInt64`), and an
//! output their model accepts whatever the state; that `Return` also
//! reads as an unknown outcome here, whatever the `Output`.
//!
//! Each operation becomes an `invoke` at `Call` (value: `Input.value`) and
//! a completion at `Return` (`ok`, `fail`, or `info` when unknown; value:
//! `Output.value`, else `Input.value`; fields: the input's, then the
//! output's), all sorted by time; at one instant, a client's completion
//! comes before its own next call, and other calls come before other
//! completions (Porcupine's rule: operations touching at an instant
//! overlap). The process is the `ClientId`; a client's operations must not
//! overlap, except after an unknown outcome: Jepsen never reuses a process
//! whose outcome is unknown, so the client's later operations get fresh
//! process numbers, counting up from one above the highest `ClientId`, in
//! the order of their calls.

use crate::error::BadHistory;
use crate::op::{Op, OpType, Process};
use crate::record::json_objects;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The `Return` Porcupine's users give an operation that never returned.
pub const NEVER_RETURNED: i64 = i64::MAX;

/// Go's field names of Porcupine's `Operation`.
const FIELDS: [&str; 5] = ["ClientId", "Input", "Call", "Output", "Return"];

/// One `Operation`, read.
struct Operation {
    line: usize,
    client: u64,
    f: String,
    input: Map<String, Value>,
    call_ns: u64,
    /// `None`: unknown outcome.
    output: Option<(bool, Map<String, Value>)>,
    return_ns: u64,
}

/// Reads Porcupine's operations in `text` (from `file`, named in errors)
/// as Jepsen operations, sorted by time and numbered from 0.
pub fn read_porcupine(file: &str, text: &str) -> Result<Vec<Op>, BadHistory> {
    let mut operations = json_objects(file, text)?
        .into_iter()
        .map(|(line, object)| operation(file, line, object))
        .collect::<Result<Vec<_>, _>>()?;
    operations.sort_by_key(|op| op.call_ns);
    let processes = number_processes(file, &operations)?;
    let calls: HashSet<(u64, u64)> = operations
        .iter()
        .zip(&processes)
        .map(|(op, &p)| (p, op.call_ns))
        .collect();
    // (time, rank, sequence): rank 0 = a completion before its client's
    // next call, 1 = a call, 2 = any other completion.
    let mut keyed = Vec::with_capacity(operations.len() * 2);
    for (seq, (op, &process)) in operations.iter().zip(&processes).enumerate() {
        let (invoke, completion) = ops_of(op, process);
        keyed.push(((op.call_ns, 1, seq), invoke));
        let before_next_call = op.output.is_some()
            && op.call_ns < op.return_ns
            && calls.contains(&(process, op.return_ns));
        keyed.push((
            (op.return_ns, if before_next_call { 0 } else { 2 }, seq),
            completion,
        ));
    }
    keyed.sort_by_key(|(key, _)| *key);
    Ok(keyed
        .into_iter()
        .enumerate()
        .map(|(index, (_, op))| Op {
            index: index as u64,
            ..op
        })
        .collect())
}

fn operation(
    file: &str,
    line: usize,
    mut object: Map<String, Value>,
) -> Result<Operation, BadHistory> {
    let bad = |expected: &str, found: String| BadHistory::at(file, line, expected, found);
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(
            "only Porcupine's fields ClientId, Input, Call, Output, Return",
            format!("a field {unknown:?}"),
        ));
    }
    let client = match object.remove("ClientId") {
        None => 0,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
        Some(other) => {
            return Err(bad(
                "a ClientId that is a whole number ≥ 0",
                other.to_string(),
            ));
        }
    };
    let time = |object: &mut Map<String, Value>, name: &str| match object.remove(name) {
        Some(Value::Number(n)) if n.as_i64().is_some_and(|t| t >= 0) => Ok(n.as_i64().unwrap_or(0)),
        Some(other) => Err(bad(
            &format!("a {name} time, a whole number ≥ 0 (ns)"),
            other.to_string(),
        )),
        None => Err(bad(&format!("a {name} time"), "none".into())),
    };
    let call = time(&mut object, "Call")?;
    let ret = time(&mut object, "Return")?;
    if call > ret {
        return Err(bad(
            &format!("a Return no earlier than the Call {call}"),
            ret.to_string(),
        ));
    }
    let mut input = match object.remove("Input") {
        Some(Value::Object(input)) => input,
        Some(other) => return Err(bad("an Input object {\"f\": ..., ...}", other.to_string())),
        None => return Err(bad("an Input", "none".into())),
    };
    let f = match input.remove("f") {
        Some(Value::String(f)) if !f.is_empty() => f,
        Some(other) => return Err(bad("an Input's f that is a name", other.to_string())),
        None => {
            return Err(bad(
                "an Input's f (acquire, release, write, ...)",
                "none".into(),
            ));
        }
    };
    let output = match object.remove("Output") {
        None | Some(Value::Null) => None,
        Some(Value::Object(mut output)) => match output.remove("ok") {
            Some(Value::Bool(ok)) => Some((ok, output)),
            Some(other) => {
                return Err(bad(
                    "an Output's ok that is true or false",
                    other.to_string(),
                ));
            }
            None => return Err(bad("an Output's ok (true or false)", "none".into())),
        },
        Some(other) => {
            return Err(bad(
                "an Output object {\"ok\": ...} or null",
                other.to_string(),
            ));
        }
    };
    Ok(Operation {
        line,
        client,
        f,
        input,
        call_ns: call as u64,
        output: if ret == NEVER_RETURNED { None } else { output },
        return_ns: ret as u64,
    })
}

/// Each operation's process (operations in call order): its client's,
/// until an unknown outcome moves the client to a fresh one.
fn number_processes(file: &str, operations: &[Operation]) -> Result<Vec<u64>, BadHistory> {
    let mut next_fresh = operations
        .iter()
        .map(|op| op.client)
        .max()
        .map_or(0, |m| m.saturating_add(1));
    // Per client: its current process, and when its last operation returned.
    let mut clients: HashMap<u64, (u64, Option<(u64, usize)>)> = HashMap::new();
    let mut processes = Vec::with_capacity(operations.len());
    for op in operations {
        let (process, busy_until) = clients.entry(op.client).or_insert((op.client, None));
        if let Some((return_ns, line)) = *busy_until
            && op.call_ns < return_ns
        {
            return Err(BadHistory::at(
                file,
                op.line,
                format!(
                    "ClientId {}'s operations one after another: its operation at line {line} returned at {return_ns}",
                    op.client
                ),
                format!("a Call at {}", op.call_ns),
            ));
        }
        processes.push(*process);
        if op.output.is_some() {
            *busy_until = Some((op.return_ns, op.line));
        } else {
            *process = next_fresh;
            next_fresh = next_fresh.saturating_add(1);
            *busy_until = None;
        }
    }
    Ok(processes)
}

/// The invoke and the completion of one operation.
fn ops_of(op: &Operation, process: u64) -> (Op, Op) {
    let mut fields: BTreeMap<String, Value> = op.input.clone().into_iter().collect();
    let input_value = fields.remove("value").unwrap_or(Value::Null);
    let invoke = Op {
        process: Process::Client(process),
        kind: OpType::Invoke,
        f: op.f.clone(),
        value: input_value.clone(),
        time_ns: Some(op.call_ns),
        clock_bound_ns: 0,
        index: 0,
        fields: fields.clone(),
        line: op.line,
    };
    let (kind, value) = match &op.output {
        None => (OpType::Info, input_value),
        Some((ok, output)) => {
            let mut output = output.clone();
            let value = output.remove("value").unwrap_or(input_value);
            fields.extend(output);
            (if *ok { OpType::Ok } else { OpType::Fail }, value)
        }
    };
    let completion = Op {
        kind,
        value,
        time_ns: Some(op.return_ns),
        fields,
        ..invoke.clone()
    };
    (invoke, completion)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_operation_becomes_an_invoke_and_a_completion_sorted_by_time() {
        let text = r#"[
            {"ClientId": 0, "Input": {"f": "acquire", "lock": "l"}, "Call": 0, "Output": {"ok": true, "fence": 7}, "Return": 30},
            {"ClientId": 1, "Input": {"f": "acquire", "lock": "l"}, "Call": 10, "Output": {"ok": false}, "Return": 20}
        ]"#;
        let ops = read_porcupine("p.json", text).unwrap();
        let shape: Vec<_> = ops
            .iter()
            .map(|op| (op.process.to_string(), op.kind, op.time_ns))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("0".into(), OpType::Invoke, Some(0)),
                ("1".into(), OpType::Invoke, Some(10)),
                ("1".into(), OpType::Fail, Some(20)),
                ("0".into(), OpType::Ok, Some(30)),
            ]
        );
        assert_eq!(ops[3].field("fence"), Some(&json!(7)));
        assert_eq!(ops[3].field("lock"), Some(&json!("l")));
        assert_eq!(ops[3].line, 2);
        assert_eq!(ops[3].index, 3);
    }

    #[test]
    fn an_unknown_outcome_moves_the_client_to_a_fresh_process() {
        let text = "{\"ClientId\": 4, \"Input\": {\"f\": \"acquire\"}, \"Call\": 0, \"Output\": null, \"Return\": 10}\n\
                    {\"ClientId\": 4, \"Input\": {\"f\": \"acquire\"}, \"Call\": 5, \"Return\": 9223372036854775807}\n\
                    {\"ClientId\": 4, \"Input\": {\"f\": \"release\"}, \"Call\": 20, \"Output\": {\"ok\": true}, \"Return\": 30}\n";
        let ops = read_porcupine("p.json", text).unwrap();
        let processes: Vec<_> = ops
            .iter()
            .filter(|op| op.kind == OpType::Invoke)
            .map(|op| op.process.clone())
            .collect();
        assert_eq!(
            processes,
            vec![Process::Client(4), Process::Client(5), Process::Client(6)]
        );
        assert_eq!(ops.iter().filter(|op| op.kind == OpType::Info).count(), 2);
        assert_eq!(crate::wellformed::check_well_formed("p.json", &ops), Ok(()));
    }

    #[test]
    fn a_client_completing_as_it_calls_again_stays_in_order() {
        let text = "{\"ClientId\": 0, \"Input\": {\"f\": \"acquire\"}, \"Call\": 0, \"Output\": {\"ok\": true}, \"Return\": 10}\n\
                    {\"ClientId\": 0, \"Input\": {\"f\": \"release\"}, \"Call\": 10, \"Output\": {\"ok\": true}, \"Return\": 10}\n";
        let ops = read_porcupine("p.json", text).unwrap();
        assert_eq!(crate::wellformed::check_well_formed("p.json", &ops), Ok(()));
    }

    #[test]
    fn an_unknown_field_is_refused_at_its_line() {
        let text = "{\"ClientId\": 0, \"Input\": {\"f\": \"acquire\"}, \"Call\": 0, \"Return\": 1}\n\
                    {\"ClientID\": 0, \"Input\": {\"f\": \"acquire\"}, \"Call\": 0, \"Return\": 1}\n";
        let err = read_porcupine("p.json", text).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.found.contains("ClientID"), "{err}");
    }

    #[test]
    fn overlapping_operations_of_one_client_are_refused() {
        let text = "{\"Input\": {\"f\": \"acquire\"}, \"Call\": 0, \"Output\": {\"ok\": true}, \"Return\": 10}\n\
                    {\"Input\": {\"f\": \"acquire\"}, \"Call\": 5, \"Output\": {\"ok\": true}, \"Return\": 15}\n";
        let err = read_porcupine("p.json", text).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.expected.contains("one after another"), "{err}");
    }

    #[test]
    fn a_return_before_its_call_is_refused() {
        let err = read_porcupine(
            "p.json",
            r#"{"Input": {"f": "read"}, "Call": 9, "Return": 3}"#,
        )
        .unwrap_err();
        assert!(err.expected.contains("no earlier than"), "{err}");
    }
}
