//! One operation's record, as Jepsen's EDN and JSON both give it (a map
//! of `process`, `type`, `f`, `value`, `time`, `index` and further keys),
//! made into an [`Op`]; and the splitting of a JSON file into its records,
//! each with its line.

use crate::error::BadHistory;
use crate::op::{Op, OpType, Process};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The key that carries a clock's bound into [`Op::clock_bound_ns`].
pub const CLOCK_BOUND_KEY: &str = "clock-bound";

/// Makes the record at `line` of `file` into an operation; `position` is
/// its place among the file's records, from 0 (its index when it has no
/// `index` of its own).
pub(crate) fn op_from_record(
    file: &str,
    line: usize,
    position: usize,
    mut record: Map<String, Value>,
) -> Result<Op, BadHistory> {
    let bad = |expected: &str, found: String| BadHistory::at(file, line, expected, found);
    let process = match record.remove("process") {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(n) => Process::Client(n),
            None => {
                return Err(bad(
                    "a process that is a whole number ≥ 0 or a name",
                    n.to_string(),
                ));
            }
        },
        Some(Value::String(name)) if !name.is_empty() => Process::Named(name),
        Some(other) => {
            return Err(bad(
                "a process that is a whole number ≥ 0 or a name",
                other.to_string(),
            ));
        }
        None => return Err(bad("a process (key process)", "none".into())),
    };
    let kind = match record.remove("type") {
        Some(Value::String(name)) => OpType::from_name(&name)
            .ok_or_else(|| bad("a type invoke, ok, fail or info", format!("{name:?}")))?,
        Some(other) => return Err(bad("a type invoke, ok, fail or info", other.to_string())),
        None => return Err(bad("a type (key type)", "none".into())),
    };
    let f = match record.remove("f") {
        Some(Value::String(name)) if !name.is_empty() => name,
        Some(other) => return Err(bad("a function f that is a name", other.to_string())),
        None => return Err(bad("a function (key f)", "none".into())),
    };
    let value = record.remove("value").unwrap_or(Value::Null);
    let time_ns = optional_u64(&mut record, "time")
        .map_err(|found| bad("a time in ns, a whole number ≥ 0", found))?;
    let clock_bound_ns = optional_u64(&mut record, CLOCK_BOUND_KEY)
        .map_err(|found| bad("a clock-bound in ns, a whole number ≥ 0", found))?
        .unwrap_or(0);
    let index = optional_u64(&mut record, "index")
        .map_err(|found| bad("an index, a whole number ≥ 0", found))?
        .unwrap_or(position as u64);
    let fields: BTreeMap<String, Value> = record.into_iter().collect();
    Ok(Op {
        process,
        kind,
        f,
        value,
        time_ns,
        clock_bound_ns,
        index,
        fields,
        line,
    })
}

/// Takes `key` out of `record` as a whole number ≥ 0; absent or `null` is
/// `None`; anything else is an error carrying what was found.
fn optional_u64(record: &mut Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match record.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| n.to_string()),
        Some(other) => Err(other.to_string()),
    }
}

/// The line (from 1) of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The lines of offsets asked for in increasing order, each newline
/// counted once (a history may have millions of lines).
struct LineCounter<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> LineCounter<'a> {
        LineCounter {
            text,
            offset: 0,
            line: 1,
        }
    }

    /// The line of byte `pos`.
    fn at(&mut self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        if pos < self.offset {
            return line_of(self.text, pos);
        }
        self.line += self.text.as_bytes()[self.offset..pos]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.offset = pos;
        self.line
    }
}

/// A JSON object and the line it starts on.
pub(crate) type LinedObject = (usize, Map<String, Value>);

/// The JSON objects of `text`, each with the line it starts on: either
/// one array of objects, or objects one after another (one a line, as
/// JSON Lines has them). Anything else is refused at its line.
pub(crate) fn json_objects(file: &str, text: &str) -> Result<Vec<LinedObject>, BadHistory> {
    let start = skip_whitespace(text, 0);
    let mut lines = LineCounter::new(text);
    let mut records = Vec::new();
    if text[start..].starts_with('[') {
        let mut pos = skip_whitespace(text, start + 1);
        if text[pos..].starts_with(']') {
            return after_end(file, text, pos + 1).map(|()| records);
        }
        loop {
            let line = lines.at(pos);
            let (object, end) = one_object(file, text, pos, line)?;
            records.push((line, object));
            pos = skip_whitespace(text, end);
            match text[pos..].chars().next() {
                Some(',') => pos = skip_whitespace(text, pos + 1),
                Some(']') => return after_end(file, text, pos + 1).map(|()| records),
                other => {
                    return Err(BadHistory::at(
                        file,
                        line_of(text, pos),
                        "',' or ']' after an operation of the array",
                        other.map_or("the end of the file".to_string(), |c| format!("{c:?}")),
                    ));
                }
            }
        }
    }
    let mut pos = start;
    while pos < text.len() {
        let line = lines.at(pos);
        let (object, end) = one_object(file, text, pos, line)?;
        records.push((line, object));
        let next = skip_whitespace(text, end);
        if next < text.len() && end == next {
            // `{..}{..}` run together is not JSON Lines.
            return Err(BadHistory::at(
                file,
                line_of(text, next),
                "whitespace or a new line between operations",
                "another value right after one",
            ));
        }
        pos = next;
    }
    Ok(records)
}

fn skip_whitespace(text: &str, from: usize) -> usize {
    let rest = &text[from..];
    from + (rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len())
}

fn after_end(file: &str, text: &str, pos: usize) -> Result<(), BadHistory> {
    let rest = skip_whitespace(text, pos);
    if rest < text.len() {
        return Err(BadHistory::at(
            file,
            line_of(text, rest),
            "nothing after the array's closing ']'",
            snippet(&text[rest..]),
        ));
    }
    Ok(())
}

/// The JSON object starting at `pos` (on `line`), and the offset just
/// after it.
fn one_object(
    file: &str,
    text: &str,
    pos: usize,
    line: usize,
) -> Result<(Map<String, Value>, usize), BadHistory> {
    if !text[pos..].starts_with('{') {
        return Err(BadHistory::at(
            file,
            line,
            "a JSON object {...} for an operation",
            snippet(&text[pos..]),
        ));
    }
    let mut stream =
        serde_json::Deserializer::from_str(&text[pos..]).into_iter::<Map<String, Value>>();
    match stream.next() {
        Some(Ok(object)) => Ok((object, pos + stream.byte_offset())),
        Some(Err(e)) => {
            // An object cut short is reported where it began; any other
            // error where it is, without serde's position relative to the
            // object.
            let at = if e.is_eof() {
                line
            } else {
                line + e.line().saturating_sub(1)
            };
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or_default();
            Err(BadHistory::at(
                file,
                at,
                "a JSON object for an operation",
                message,
            ))
        }
        None => Err(BadHistory::at(
            file,
            line,
            "a JSON object for an operation",
            "the end of the file",
        )),
    }
}

/// The first characters of `text`, for an error.
pub(crate) fn snippet(text: &str) -> String {
    if text.is_empty() {
        return "the end of the file".into();
    }
    let head: String = text.chars().take(30).collect();
    format!("{head:?}")
}
