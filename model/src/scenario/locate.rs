//! Error messages that say where: "line L, column C: `field`: what was
//! expected", placed through the spanned [`Document`].

use super::document::Document;
use super::path::FieldPath;
use super::validate::{Invalid, first_named};

/// An invalid scenario's message, placed at its field when the file gives
/// it.
pub(crate) fn placed(doc: &Document<'_>, invalid: Invalid) -> String {
    match doc.position(&invalid.at) {
        Some((line, column)) => format!("line {line}, column {column}: {}", invalid.message),
        None => invalid.message,
    }
}

/// Turns a TOML error into "line L, column C: `field`: what was
/// expected".
pub(crate) fn describe_toml_error(doc: &Document<'_>, err: &toml::de::Error) -> String {
    let mut message = err.message().trim().to_string();
    // A fault list's error names its fault (`faults[2]`) and then the
    // field: its span covers the whole list.
    if let Some(at) = fault_list_field(&message)
        && let Some((line, column)) = doc.position(&at)
    {
        return format!("line {line}, column {column}: {message}");
    }
    let Some(span) = err.span() else {
        return message;
    };
    let (mut line, mut column) = doc.place(span.start);
    // An error about a whole table (a fault's fields checked together)
    // points at its header: point at the field itself.
    if let Some(field) = unknown_field(&message)
        && let Some(place) = doc.key_under_header(span.start, field)
    {
        (line, column) = place;
    }
    // An error about a value says what was wrong with it, but not whose
    // value it is: name the field.
    let names_a_field = message.starts_with('`')
        || message.starts_with("unknown field")
        || message.starts_with("missing field");
    if !names_a_field && let Some(field) = doc.path_at(span.start, span.clone()) {
        message = format!("`{field}`: {message}");
    }
    format!("line {line}, column {column}: {message}")
}

/// The field an error of a fault list (`` `faults[2]` (pause): missing
/// field `duration_ms` ``) is about: the fault's path, then the field its
/// message names next.
fn fault_list_field(message: &str) -> Option<FieldPath> {
    let fault = FieldPath::parse(message.strip_prefix('`')?.split('`').next()?)?;
    let rest = &message[message[1..].find('`')? + 2..];
    Some(match first_named(rest) {
        Some(field) => fault.then(field),
        None => fault,
    })
}

/// `X` of ``unknown field `X`, expected ...``.
fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}
