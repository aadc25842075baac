//! Jepsen's histories as JSON, as elle-cli reads them: one operation
//! object a line, or one array of objects. Keys as in EDN without the
//! colon: `process` (a number, or a name such as `"nemesis"`), `type`
//! (`"invoke"`, `"ok"`, `"fail"`, `"info"`), `f`, `value`, `time` (ns),
//! `index`, `clock-bound` (ns) and any further ones.

use crate::error::BadHistory;
use crate::op::Op;
use crate::record::{json_objects, op_from_record};

/// Reads the operations of the JSON history `text` (from `file`, named in
/// errors), in file order; each keeps the line its object starts on.
pub fn read_json(file: &str, text: &str) -> Result<Vec<Op>, BadHistory> {
    json_objects(file, text)?
        .into_iter()
        .enumerate()
        .map(|(position, (line, object))| op_from_record(file, line, position, object))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{OpType, Process};
    use serde_json::json;

    #[test]
    fn json_lines_and_a_json_array_read_the_same_operations() {
        let lines = "{\"process\": 0, \"type\": \"invoke\", \"f\": \"acquire\", \"lock\": \"l\", \"time\": 5}\n\
                     {\"process\": 0, \"type\": \"ok\", \"f\": \"acquire\", \"fence\": 3, \"clock-bound\": 7, \"time\": 9}\n";
        let array = format!("[\n{}]", lines.trim_end().replace('\n', ",\n"));
        let from_lines = read_json("h.json", lines).unwrap();
        let from_array = read_json("h.json", &array).unwrap();
        assert_eq!(from_lines.len(), 2);
        assert_eq!(from_lines[1].kind, OpType::Ok);
        assert_eq!(from_lines[1].field("fence"), Some(&json!(3)));
        assert_eq!(from_lines[1].clock_bound_ns, 7);
        assert_eq!(from_array[0].line, 2);
        assert_eq!(from_array[1].line, 3);
        let strip = |ops: Vec<Op>| {
            ops.into_iter()
                .map(|op| Op { line: 0, ..op })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(from_lines), strip(from_array));
    }

    #[test]
    fn a_named_process_reads_as_a_name() {
        let ops = read_json(
            "h.json",
            r#"{"process": "nemesis", "type": "info", "f": "kill"}"#,
        )
        .unwrap();
        assert_eq!(ops[0].process, Process::Named("nemesis".into()));
    }

    #[test]
    fn a_broken_line_is_refused_at_that_line() {
        let text = "{\"process\": 0, \"type\": \"invoke\", \"f\": \"read\"}\n{\"process\": 0, \"type\": \n";
        let err = read_json("h.json", text).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }

    #[test]
    fn a_type_that_is_not_jepsens_is_refused() {
        let err =
            read_json("h.json", r#"{"process": 0, "type": "done", "f": "read"}"#).unwrap_err();
        assert!(err.expected.contains("invoke, ok, fail or info"), "{err}");
    }

    #[test]
    fn a_missing_comma_in_the_array_is_refused_at_its_line() {
        let text = "[{\"process\": 0, \"type\": \"invoke\", \"f\": \"read\"}\n {\"process\": 0, \"type\": \"ok\", \"f\": \"read\"}]";
        let err = read_json("h.json", text).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }
}
