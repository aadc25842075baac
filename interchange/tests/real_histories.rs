//! locklab's own histories, from real simulator runs (tests/data/, one
//! per feature: unknown outcomes, fencing tokens, reentrant depths,
//! Redlock's validity, faults, server records), exported and read back
//! exactly through EDN and JSON.

use interchange::export::{Header, header_of, to_history, to_ops, write_edn, write_json};
use interchange::format::{Format, read};
use interchange::jepsen_edn::read_edn;
use interchange::jepsen_json::read_json;
use interchange::locklab_format::{client_count, read_history, read_locklab};
use model::history::History;
use model::resource::ResourceSpec;
use std::path::Path;

fn histories() -> Vec<(String, History)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".history.jsonl"))
        .collect();
    found.sort();
    assert!(
        found.len() >= 6,
        "the test histories are in {}",
        dir.display()
    );
    found
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let history = read_history(&name, &text).unwrap();
            (name, history)
        })
        .collect()
}

fn header_for(name: &str, history: &History) -> Header {
    Header {
        clients: client_count(history),
        model: "mutex".into(),
        liveness_bound_ms: 5000,
        resource: Some(ResourceSpec::default()),
        resource_decides_safety: name.contains("fenced"),
        cut_short: None,
        scenario: name.split('.').next().unwrap().into(),
        rung: name.split('.').nth(1).unwrap().into(),
        seed: 1,
    }
}

#[test]
fn real_histories_read_back_exactly_through_edn_and_json() {
    for (name, history) in histories() {
        let header = header_for(&name, &history);
        let ops = to_ops(&history, &header);
        let from_edn = read_edn(&name, &write_edn(&ops)).unwrap();
        let from_json = read_json(&name, &write_json(&ops)).unwrap();
        assert_eq!(from_edn, ops, "{name} through EDN");
        assert_eq!(from_json, ops, "{name} through JSON");
        assert_eq!(header_of(&from_edn), Some(Ok(header.clone())), "{name}");
        assert_eq!(
            to_history(&from_edn, None).unwrap(),
            history,
            "{name} through EDN"
        );
        assert_eq!(
            to_history(&from_json, None).unwrap(),
            history,
            "{name} through JSON"
        );
    }
}

#[test]
fn real_histories_are_well_formed_in_every_format_they_are_written_in() {
    for (name, history) in histories() {
        let ops = to_ops(&history, &header_for(&name, &history));
        read(&name, &write_edn(&ops), Format::JepsenEdn).unwrap();
        read(&name, &write_json(&ops), Format::JepsenJson).unwrap();
        read(&name, &history.to_jsonl(), Format::Locklab).unwrap();
    }
}

#[test]
fn the_locklab_reader_gives_the_exports_operations() {
    for (name, history) in histories() {
        let header = header_for(&name, &history);
        let exported = to_ops(&history, &header);
        let read_back = read_locklab(&name, &history.to_jsonl()).unwrap();
        // The same operations but the header, each on its line of the
        // history.jsonl (one line earlier than in the export).
        let shifted: Vec<_> = exported[1..]
            .iter()
            .map(|op| interchange::op::Op {
                line: op.line - 1,
                ..op.clone()
            })
            .collect();
        assert_eq!(read_back, shifted, "{name}");
    }
}

#[test]
fn an_unknown_outcome_moves_the_client_to_a_new_process_in_the_export() {
    let (name, history) = histories()
        .into_iter()
        .find(|(name, _)| name.starts_with("etcd-holder-partitioned"))
        .unwrap();
    let ops = to_ops(&history, &header_for(&name, &history));
    let crashed = ops
        .iter()
        .position(|op| op.kind == interchange::op::OpType::Info && op.is_client())
        .unwrap();
    let process = ops[crashed].process.clone();
    assert!(
        ops[crashed + 1..].iter().all(|op| op.process != process),
        "process {process} is used after its info at line {}",
        ops[crashed].line
    );
}
