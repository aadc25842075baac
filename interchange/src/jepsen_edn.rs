//! Jepsen's histories as EDN: one operation map a line (`history.edn` in
//! a test's store), or one vector or list of maps. An operation may be
//! written as a record, `#jepsen.history.Op{...}`; the tag is dropped.
//!
//! EDN values become JSON values: `nil` → `null`, keywords and symbols →
//! their names without the colon, lists, vectors and sets → arrays, maps
//! → objects keyed by the key's text, a tagged value → the value tagged.
//! Integers beyond 64 bits are refused. Keys of an operation: `:process`,
//! `:type`, `:f`, `:value`, `:time`, `:index`, `:clock-bound`; any other
//! is kept as a field by its name without the colon.

use crate::edn::{EdnError, Reader};
use crate::error::BadHistory;
use crate::op::Op;
use crate::record::op_from_record;
use serde_json::Value;

/// Reads the operations of the EDN history `text` (from `file`, named in
/// errors), in file order; each keeps the line its map starts on.
pub fn read_edn(file: &str, text: &str) -> Result<Vec<Op>, BadHistory> {
    let bad = |e: EdnError| BadHistory::at(file, e.line, e.expected, e.found);
    let mut reader = Reader::new(text);
    let mut forms = Vec::new();
    if let Some(close) = reader.open_sequence().map_err(bad)? {
        while !reader.close(close).map_err(bad)? {
            forms.push(reader.next_form().map_err(bad)?);
        }
        if !reader.at_end().map_err(bad)? {
            return Err(BadHistory::at(
                file,
                reader.line(),
                "nothing after the history's closing bracket",
                "more text",
            ));
        }
    } else {
        while !reader.at_end().map_err(bad)? {
            forms.push(reader.next_form().map_err(bad)?);
        }
    }
    forms
        .into_iter()
        .enumerate()
        .map(|(position, (line, form))| match form {
            Value::Object(map) => op_from_record(file, line, position, map),
            other => Err(BadHistory::at(
                file,
                line,
                "an operation map {:process ..., :type ..., :f ...}",
                other.to_string(),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{OpType, Process};
    use serde_json::json;

    #[test]
    fn one_map_a_line_reads_with_records_sets_and_comments() {
        let text = "; a Jepsen history\n\
            {:process 0, :type :invoke, :f :acquire, :value nil, :time 10, :index 0, :lock \"l\"}\n\
            #jepsen.history.Op{:process 0, :type :ok, :f :acquire, :value #{1}, :time 20, :index 1, :clock-bound 5}\n\
            {:process :nemesis, :type :info, :f :start-partition, :value [:n1 :n2]}\n";
        let ops = read_edn("h.edn", text).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0].process, Process::Client(0));
        assert_eq!(ops[0].kind, OpType::Invoke);
        assert_eq!(ops[0].f, "acquire");
        assert_eq!(ops[0].line, 2);
        assert_eq!(ops[0].field("lock"), Some(&json!("l")));
        assert_eq!(ops[1].value, json!([1]));
        assert_eq!(ops[1].clock_bound_ns, 5);
        assert!(ops[1].fields.is_empty());
        assert_eq!(ops[2].process, Process::Named("nemesis".into()));
        assert_eq!(ops[2].value, json!(["n1", "n2"]));
        assert_eq!(
            ops[2].index, 2,
            "a missing index is the position in the file"
        );
    }

    #[test]
    fn a_store_history_with_nemesis_maps_sets_and_lists_reads_and_is_well_formed() {
        // As Jepsen's store writes it: keys in any order, the nemesis's
        // values maps of node names to sets, lists of nodes, keywords.
        let text = r#"{:type :info, :f :start-partition, :value {"n1" #{"n2" "n3"}, "n2" #{"n1"}}, :time 100, :process :nemesis, :source :generator}
{:type :invoke, :f :write, :value 5, :time 200, :process 3, :source :generator}
{:type :info, :f :kill, :value ("n1" "n2"), :time 250, :process :nemesis, :source :generator}
{:type :info, :f :write, :value 5, :time 300, :process 3, :source :generator, :error [:timeout "no reply"]}
{:type :invoke, :f :read, :value nil, :time 400, :process 8, :source :generator}
{:type :ok, :f :read, :value 5, :time 500, :process 8, :source :generator}
{:type :info, :f :stop-partition, :value :network-healed, :time 600, :process :nemesis}
"#;
        let ops =
            crate::format::read("history.edn", text, crate::format::Format::JepsenEdn).unwrap();
        assert_eq!(ops.len(), 7);
        assert_eq!(ops[0].value, json!({"n1": ["n2", "n3"], "n2": ["n1"]}));
        assert_eq!(ops[2].value, json!(["n1", "n2"]));
        assert_eq!(ops[3].kind, OpType::Info);
        assert_eq!(ops[3].field("error"), Some(&json!(["timeout", "no reply"])));
        assert_eq!(ops[3].field("source"), Some(&json!("generator")));
        assert_eq!(ops[6].value, json!("network-healed"));
    }

    #[test]
    fn one_vector_of_maps_reads_with_each_maps_line() {
        let text =
            "[{:process 1, :type :invoke, :f :read}\n {:process 1, :type :ok, :f :read, :value 3}]";
        let ops = read_edn("h.edn", text).unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[1].line, 2);
        assert_eq!(ops[1].value, json!(3));
    }

    #[test]
    fn an_operation_without_a_type_is_refused_at_its_line() {
        let text = "{:process 0, :type :invoke, :f :read}\n{:process 0,\n :f :read}";
        let err = read_edn("h.edn", text).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.expected.contains("type"), "{err}");
    }

    #[test]
    fn an_unclosed_map_is_refused() {
        let err = read_edn("h.edn", "{:process 0, :type :invoke").unwrap_err();
        assert!(err.expected.contains("'}'"), "{err}");
    }

    #[test]
    fn a_negative_process_is_refused() {
        let err = read_edn("h.edn", "{:process -1, :type :invoke, :f :read}").unwrap_err();
        assert!(err.expected.contains("process"), "{err}");
    }

    #[test]
    fn something_after_the_vector_is_refused() {
        let err = read_edn("h.edn", "[]\n{:process 0}").unwrap_err();
        assert_eq!(err.line, 2);
    }
}
