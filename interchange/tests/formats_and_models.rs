//! Every format with every model: each hand-written Jepsen history, written
//! again as Jepsen's JSON, as Porcupine's operations and (where the model's
//! operations are locklab's own) as locklab's `history.jsonl`, gets the
//! verdict it gets as EDN, with the same witness wherever the format keeps
//! Jepsen's `:index`.

use interchange::checking::judge_read;
use interchange::checking::read_history_text;
use interchange::export::write_json;
use interchange::format::Format;
use interchange::judging::{Judgement, Model};
use interchange::op::{Op, OpType, Process};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// `text` read as `format` and judged against `model`.
fn judged(file: &str, text: &str, format: Format, model: Model) -> Judgement {
    let read = read_history_text(file, text, format, None)
        .unwrap_or_else(|e| panic!("{file} as {format}: {e}\n{text}"));
    judge_read(&read, Some(model), None).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Each deciding checker's result and witness (by the history's index).
fn outcome(judgement: &Judgement) -> Vec<(String, String, Vec<u64>)> {
    judgement
        .checks
        .iter()
        .filter(|c| !c.informational)
        .map(|c| {
            let witness = c
                .check
                .witness()
                .iter()
                .filter_map(|&i| judgement.source_index(i))
                .collect();
            (c.name.clone(), c.check.name().to_string(), witness)
        })
        .collect()
}

/// The operations as Porcupine's `[]Operation`: each invoke with its
/// completion, the invoke's fields as `Input`, the completion's as
/// `Output` (`null`, returning never, for an `info`).
fn as_porcupine(ops: &[Op]) -> String {
    let mut pending: BTreeMap<u64, &Op> = BTreeMap::new();
    let mut operations = Vec::new();
    for op in ops {
        let Process::Client(process) = op.process else {
            continue;
        };
        if op.kind == OpType::Invoke {
            pending.insert(process, op);
            continue;
        }
        let invoke = pending.remove(&process).expect("well formed");
        let mut input = serde_json::Map::new();
        input.insert("f".into(), json!(invoke.f));
        if !invoke.value.is_null() {
            input.insert("value".into(), invoke.value.clone());
        }
        input.extend(invoke.fields.clone());
        let (output, returned) = if op.kind == OpType::Info {
            (Value::Null, json!(interchange::porcupine::NEVER_RETURNED))
        } else {
            let mut output = serde_json::Map::new();
            output.insert("ok".into(), json!(op.kind == OpType::Ok));
            if !op.value.is_null() {
                output.insert("value".into(), op.value.clone());
            }
            output.extend(op.fields.clone());
            (Value::Object(output), json!(op.time_ns))
        };
        // An `info` process is never reused: Porcupine names the client,
        // which goes on after an unknown outcome (a fresh number is then
        // given it on reading), so every client keeps its own number.
        operations.push(json!({
            "ClientId": process,
            "Input": input,
            "Call": invoke.time_ns,
            "Output": output,
            "Return": returned,
        }));
    }
    serde_json::to_string(&operations).unwrap()
}

/// The operations as locklab's own history, where every one of them is a
/// locklab operation (the lock-set's `add` and set-valued read are not).
fn as_locklab(file: &str, ops: &[Op]) -> String {
    interchange::foreign::convert(file, ops)
        .expect("converts")
        .history
        .to_jsonl()
}

#[test]
fn every_format_gives_each_hand_written_history_its_verdict_under_every_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    for model in Model::ALL {
        for validity in ["valid", "invalid"] {
            let name = format!("{}-{validity}.edn", model.name());
            let edn = std::fs::read_to_string(dir.join(&name)).unwrap();
            let by_edn = judged(&name, &edn, Format::JepsenEdn, model);
            let ops = by_edn.ops.clone();
            let expected = if validity == "valid" {
                model::verdict::Verdict::Safe
            } else {
                model::verdict::Verdict::Violated
            };
            assert_eq!(by_edn.verdict, expected, "{name}");

            let by_json = judged(&name, &write_json(&ops), Format::JepsenJson, model);
            assert_eq!(outcome(&by_json), outcome(&by_edn), "{name} as JSON");

            // Porcupine keeps no index: the verdict and the checker that
            // decides it must agree.
            let by_porcupine = judged(&name, &as_porcupine(&ops), Format::Porcupine, model);
            assert_eq!(by_porcupine.verdict, by_edn.verdict, "{name} as Porcupine");
            let names = |j: &Judgement| {
                outcome(j)
                    .into_iter()
                    .map(|(n, v, _)| (n, v))
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&by_porcupine), names(&by_edn), "{name} as Porcupine");

            if model != Model::LockSet {
                let by_locklab = judged(&name, &as_locklab(&name, &ops), Format::Locklab, model);
                assert_eq!(by_locklab.verdict, by_edn.verdict, "{name} as locklab's");
                assert_eq!(names(&by_locklab), names(&by_edn), "{name} as locklab's");
            }
        }
    }
}
