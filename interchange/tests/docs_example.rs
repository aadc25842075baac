//! The log of `docs/check.md` ("A log format for your own service") reads
//! as it says.

use interchange::format::{Format, read};
use interchange::op::{OpType, Process};
use serde_json::json;

#[test]
fn the_documented_service_log_is_read_and_well_formed() {
    let doc = include_str!("../../docs/check.md");
    let section = doc
        .split("## A log format for your own service")
        .nth(1)
        .expect("docs/check.md has the section");
    let log: String = section
        .lines()
        .filter(|line| line.starts_with("{\"process\""))
        .map(|line| format!("{line}\n"))
        .collect();
    let ops = read("check.md", &log, Format::JepsenJson).unwrap();
    assert_eq!(ops.len(), 5);
    assert!(
        ops.iter()
            .all(|op| op.clock_bound_ns == 500_000 && !op.fields.contains_key("clock-bound"))
    );
    assert_eq!(ops[1].field("fence"), Some(&json!(33)));
    assert_eq!(ops[3].kind, OpType::Info);
    assert_eq!(ops[4].process, Process::Client(2));
}
