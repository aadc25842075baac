//! The hand-written Jepsen histories under `tests/histories/` are judged
//! as their first-line comments say, for the models this crate judges
//! directly (the CLI's tests judge all of them through `locklab check`).
//!
//! The files are read here by a reader of their own narrow form only (one
//! flat map per line; nil, integers, keywords, strings, sets of
//! integers), so that these tests do not depend on the crate's EDN reader.

use interchange::models::lock_set::check_lock_set;
use interchange::models::mutex::check_mutex;
use interchange::op::{Op, OpType, Process};
use judge::check::Check;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One value of the narrow form.
fn value(text: &str) -> Value {
    if text == "nil" {
        Value::Null
    } else if let Some(set) = text.strip_prefix("#{").and_then(|t| t.strip_suffix('}')) {
        Value::Array(set.split_whitespace().map(value).collect())
    } else if let Some(keyword) = text.strip_prefix(':') {
        Value::String(keyword.to_string())
    } else if let Some(string) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Value::String(string.to_string())
    } else {
        Value::from(text.parse::<i64>().expect("an integer"))
    }
}

/// The file's comment and its operations.
fn read(name: &str) -> (String, Vec<Op>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/histories")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("read the history");
    let mut lines = text.lines().enumerate();
    let (_, comment) = lines.next().expect("a first line");
    assert!(comment.starts_with("; "), "{name} begins with a comment");
    let ops = lines
        .map(|(n, line)| {
            let inner = line
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .expect("one map a line");
            let mut fields: BTreeMap<String, Value> = inner
                .split(", ")
                .map(|field| {
                    let (key, v) = field.split_once(' ').expect("a key and a value");
                    (key.trim_start_matches(':').to_string(), value(v))
                })
                .collect();
            let mut take = |key: &str| fields.remove(key).unwrap_or(Value::Null);
            let kind = take("type");
            let f = take("f");
            let value = take("value");
            let process = take("process");
            let time = take("time");
            let index = take("index");
            Op {
                process: Process::Client(process.as_u64().expect("a client process")),
                kind: OpType::from_name(kind.as_str().expect("a type")).expect("a known type"),
                f: f.as_str().expect("a function").to_string(),
                value,
                time_ns: time.as_u64(),
                clock_bound_ns: 0,
                index: index.as_u64().expect("an index"),
                fields,
                line: n + 1,
            }
        })
        .collect();
    (comment.to_string(), ops)
}

/// The `:index`es the comment names as the witness.
fn stated_witness(comment: &str) -> Vec<u64> {
    let (_, after) = comment
        .split_once("Witness: :index ")
        .expect("the comment names the witness");
    after
        .split(|c: char| !c.is_ascii_digit() && c != ' ')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(|n| n.parse().expect("an index"))
        .collect()
}

/// The witness of `check` as the history's own `:index`es.
fn witness_indices(check: &Check, ops: &[Op]) -> Vec<u64> {
    check.witness().iter().map(|&pos| ops[pos].index).collect()
}

#[test]
fn every_hand_written_history_begins_with_a_comment_and_numbers_its_operations_in_order() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the histories folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 8, "{names:?}");
    for name in names {
        let (comment, ops) = read(&name);
        let indices: Vec<u64> = ops.iter().map(|op| op.index).collect();
        assert_eq!(indices, (0..ops.len() as u64).collect::<Vec<_>>(), "{name}");
        if name.contains("invalid") {
            assert!(!stated_witness(&comment).is_empty(), "{name}");
        }
    }
}

#[test]
fn the_valid_mutex_history_is_linearizable() {
    let (_, ops) = read("mutex-valid.edn");
    assert!(ops.iter().any(|op| op.kind == OpType::Info));
    assert_eq!(check_mutex(&ops), Check::Valid);
}

#[test]
fn the_valid_mutex_history_needs_its_info_release() {
    // Turning the info release into a fail leaves process 0's second
    // acquire with the lock held.
    let (_, mut ops) = read("mutex-valid.edn");
    let info = ops
        .iter()
        .position(|op| op.kind == OpType::Info)
        .expect("an info op");
    ops[info].kind = OpType::Fail;
    assert!(check_mutex(&ops).is_invalid());
}

#[test]
fn the_invalid_mutex_history_is_refused_with_the_witness_its_comment_names() {
    let (comment, ops) = read("mutex-invalid.edn");
    let check = check_mutex(&ops);
    assert!(check.is_invalid(), "{check:?}");
    assert_eq!(witness_indices(&check, &ops), stated_witness(&comment));
}

#[test]
fn the_valid_lock_set_history_is_valid_and_recovers_its_info_add() {
    let (_, ops) = read("lock-set-valid.edn");
    let (check, damage) = check_lock_set(&ops);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.recovered, Some(1));
    assert_eq!(damage.lost, Some(0));
}

#[test]
fn the_invalid_lock_set_history_loses_one_add_with_the_witness_its_comment_names() {
    let (comment, ops) = read("lock-set-invalid.edn");
    let (check, damage) = check_lock_set(&ops);
    assert!(check.is_invalid(), "{check:?}");
    assert_eq!(damage.lost, Some(1));
    assert_eq!(witness_indices(&check, &ops), stated_witness(&comment));
}
