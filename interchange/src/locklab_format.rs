//! locklab's own `history.jsonl` (one [`Event`] a line, see
//! [`model::history`]), read as Jepsen operations through the same
//! mapping as the export ([`crate::export`]), so one code path converts.
//!
//! The file has no header: the processes are numbered with `clients` =
//! one more than the highest client index ([`client_count`]); give that
//! number to [`crate::export::to_history`] to read the events back.

use crate::error::BadHistory;
use crate::export::events_to_ops;
use crate::op::Op;
use model::history::{Event, EventKind, History};

/// Reads locklab's `history.jsonl` strictly (every line one event), as
/// Jepsen operations; each keeps its line.
pub fn read_locklab(file: &str, text: &str) -> Result<Vec<Op>, BadHistory> {
    let history = read_history(file, text)?;
    Ok(events_to_ops(history.events(), client_count(&history)))
}

/// Reads locklab's `history.jsonl` strictly into its history; the error
/// names the line that is not an event.
pub fn read_history(file: &str, text: &str) -> Result<History, BadHistory> {
    let mut events = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let event: Event = serde_json::from_str(line).map_err(|e| {
            BadHistory::at(
                file,
                n + 1,
                "a locklab history event {\"i\", \"at_us\", \"type\", ...}",
                e.to_string(),
            )
        })?;
        events.push(event);
    }
    Ok(events.into_iter().collect())
}

/// One more than the highest client index of the history (0 without
/// clients): the `clients` its processes are numbered with.
pub fn client_count(history: &History) -> usize {
    history
        .events()
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Invoke { client, .. } | EventKind::Complete { client, .. } => {
                Some(client + 1)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::to_history;
    use crate::op::{OpType, Process};

    const TWO_CLIENTS: &str = r#"{"i":0,"at_us":10,"type":"invoke","client":1,"op":"acquire","lock":"l","n":1}
{"i":1,"at_us":20,"type":"complete","client":1,"op":"acquire","lock":"l","n":1,"outcome":"unknown","error":"timeout"}
{"i":2,"at_us":30,"type":"invoke","client":1,"op":"acquire","lock":"l","n":2}
{"i":3,"at_us":40,"type":"final","value":7}
"#;

    #[test]
    fn a_client_after_an_unknown_outcome_is_a_new_process() {
        let ops = read_locklab("history.jsonl", TWO_CLIENTS).unwrap();
        assert_eq!(ops[1].kind, OpType::Info);
        assert_eq!(ops[0].process, Process::Client(1));
        assert_eq!(
            ops[2].process,
            Process::Client(3),
            "client 1 + 1 × 2 clients"
        );
        assert_eq!(ops[3].line, 4);
    }

    #[test]
    fn the_ops_read_back_into_the_same_history() {
        let history = read_history("history.jsonl", TWO_CLIENTS).unwrap();
        let ops = read_locklab("history.jsonl", TWO_CLIENTS).unwrap();
        assert_eq!(
            to_history(&ops, Some(client_count(&history))).unwrap(),
            history
        );
    }

    #[test]
    fn a_line_that_is_not_an_event_is_refused_at_that_line() {
        let text = format!("{TWO_CLIENTS}{{\"i\":4,\"at_us\":50,\"type\":\"lunch\"}}\n");
        let err = read_locklab("history.jsonl", &text).unwrap_err();
        assert_eq!(err.line, 5, "{err}");
    }
}
