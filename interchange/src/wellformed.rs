//! Whether a history is well formed, as Jepsen's checkers assume: each
//! client process invokes, then completes, one operation at a time; a
//! process whose operation ended `info` is never used again; a process's
//! clock does not run backwards. Named processes (Jepsen's nemesis,
//! locklab's own records) are not held to these rules.

use crate::error::BadHistory;
use crate::op::{Op, OpType, Process};
use std::collections::HashMap;

/// What is known of one client process so far.
#[derive(Default)]
struct ProcessState<'a> {
    /// The invoke awaiting its completion.
    pending: Option<&'a Op>,
    /// The line of the `info` completion that retired the process.
    crashed_at_line: Option<usize>,
    /// The latest time the process recorded, with its line.
    last_time: Option<(u64, usize)>,
}

/// Checks the client operations of `ops` in file order; the error names
/// the first operation that breaks a rule, by line.
pub fn check_well_formed(file: &str, ops: &[Op]) -> Result<(), BadHistory> {
    let mut processes: HashMap<u64, ProcessState> = HashMap::new();
    for op in ops {
        let Process::Client(p) = op.process else {
            continue;
        };
        let bad = |expected: String, found: String| BadHistory::at(file, op.line, expected, found);
        let state = processes.entry(p).or_default();
        if let Some(line) = state.crashed_at_line {
            return Err(bad(
                format!(
                    "no operation of process {p}: it crashed (info) at line {line} and is never reused"
                ),
                format!("{} {}", op.kind.name(), op.f),
            ));
        }
        if let Some(time_ns) = op.time_ns {
            if let Some((last, line)) = state.last_time
                && time_ns < last
            {
                return Err(bad(
                    format!("a time of process {p} no earlier than {last} ns (line {line})"),
                    format!("{time_ns} ns"),
                ));
            }
            state.last_time = Some((time_ns, op.line));
        }
        match (op.kind, state.pending) {
            (OpType::Invoke, Some(invoke)) => {
                return Err(bad(
                    format!(
                        "a completion of process {p}'s {} invoked at line {}",
                        invoke.f, invoke.line
                    ),
                    format!("another invoke ({})", op.f),
                ));
            }
            (OpType::Invoke, None) => state.pending = Some(op),
            (_, None) => {
                return Err(bad(
                    format!("an invoke of process {p} before its completion"),
                    format!("{} {} with nothing pending", op.kind.name(), op.f),
                ));
            }
            (kind, Some(invoke)) => {
                if invoke.f != op.f {
                    return Err(bad(
                        format!(
                            "a completion of {} (invoked at line {})",
                            invoke.f, invoke.line
                        ),
                        format!("{} {}", kind.name(), op.f),
                    ));
                }
                state.pending = None;
                if kind == OpType::Info {
                    state.crashed_at_line = Some(op.line);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jepsen_json::read_json;

    fn check(text: &str) -> Result<(), BadHistory> {
        check_well_formed("h.json", &read_json("h.json", text).unwrap())
    }

    const INVOKE0: &str = r#"{"process":0,"type":"invoke","f":"acquire","time":1}"#;

    #[test]
    fn a_completion_with_no_invoke_is_refused_at_its_line() {
        let err = check(r#"{"process":0,"type":"ok","f":"acquire"}"#).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.expected.contains("an invoke"), "{err}");
    }

    #[test]
    fn a_second_invoke_while_one_is_pending_is_refused_at_its_line() {
        let err = check(&format!("{INVOKE0}\n{INVOKE0}")).unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn a_process_used_after_its_info_is_refused_naming_the_crash() {
        let text = format!(
            "{INVOKE0}\n{}\n{INVOKE0}",
            r#"{"process":0,"type":"info","f":"acquire","time":2}"#
        );
        let err = check(&text).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.expected
                .contains("crashed (info) at line 2 and is never reused"),
            "{err}"
        );
    }

    #[test]
    fn time_going_backwards_within_a_process_is_refused() {
        let text = format!(
            "{INVOKE0}\n{}",
            r#"{"process":0,"type":"ok","f":"acquire","time":0}"#
        );
        assert_eq!(check(&text).unwrap_err().line, 2);
    }

    #[test]
    fn a_completion_of_another_function_is_refused() {
        let text = format!(
            "{INVOKE0}\n{}",
            r#"{"process":0,"type":"ok","f":"release","time":3}"#
        );
        let err = check(&text).unwrap_err();
        assert!(err.expected.contains("completion of acquire"), "{err}");
    }

    #[test]
    fn interleaved_processes_and_the_nemesis_are_well_formed() {
        let text = format!(
            "{INVOKE0}\n{}\n{}\n{}\n{}",
            r#"{"process":1,"type":"invoke","f":"acquire","time":1}"#,
            r#"{"process":"nemesis","type":"info","f":"kill"}"#,
            r#"{"process":0,"type":"fail","f":"acquire","time":5}"#,
            r#"{"process":1,"type":"ok","f":"acquire","time":4}"#,
        );
        assert_eq!(check(&text), Ok(()));
    }
}
