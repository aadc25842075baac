//! Where things are in a scenario file: the file read as a TOML document
//! whose every key and value is [`Spanned`], so that an error is placed
//! by the document's structure, never by searching the text.

use super::path::{FieldPath, Step};
use locks::rungfile::line_column;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

/// A scenario text and its spanned document (recovered as far as possible
/// when the text is not valid TOML, so that a syntax error can be placed
/// too).
pub(crate) struct Document<'t> {
    text: &'t str,
    root: DeTable<'t>,
    valid: bool,
}

/// A place in the text: 1-based line and column.
pub(crate) type Place = (usize, usize);

impl<'t> Document<'t> {
    /// Reads `text`; never fails.
    pub(crate) fn new(text: &'t str) -> Document<'t> {
        let (root, errors) = DeTable::parse_recoverable(text);
        Document {
            text,
            root: root.into_inner(),
            valid: errors.is_empty(),
        }
    }

    /// Whether the text is valid TOML (else the document is what could be
    /// recovered of it).
    pub(crate) fn is_valid(&self) -> bool {
        self.valid
    }

    /// The top-level table.
    pub(crate) fn root(&self) -> &DeTable<'t> {
        &self.root
    }

    /// The line and column of byte `offset`.
    pub(crate) fn place(&self, offset: usize) -> Place {
        line_column(self.text, offset)
    }

    /// Where the field at `path` is given: the deepest part of the path the
    /// file has (a key, or the header of a table), `None` when it has not
    /// even the first. `rungs` is also found as `variants`.
    pub(crate) fn position(&self, path: &FieldPath) -> Option<Place> {
        let mut table = Some(&self.root);
        let mut value: Option<&Spanned<DeValue<'t>>> = None;
        let mut found = None;
        for (depth, step) in path.steps().iter().enumerate() {
            let next = match (step, value.map(Spanned::get_ref)) {
                (Step::Key(key), _) => table.and_then(|table| {
                    let old = (depth == 0 && key == "rungs").then_some("variants");
                    entry(table, key)
                        .or_else(|| old.and_then(|o| entry(table, o)))
                        .map(|(k, v)| (k.span().start.min(v.span().start), v))
                }),
                (Step::Index(i), Some(DeValue::Array(items))) => {
                    items.get(*i).map(|v| (v.span().start, v))
                }
                (Step::Index(_), _) => None,
            };
            let Some((start, v)) = next else { break };
            found = Some(start);
            value = Some(v);
            table = v.get_ref().as_table();
        }
        found.map(|start| self.place(start))
    }

    /// The field whose key or value covers byte `offset`, as a path: a
    /// table's header names the table (without array indices, as a header
    /// does), an array of plain values the array. When no field covers it
    /// (a key the document dropped, such as a duplicate, or text that is
    /// no key at all), the key `span` covers, or else the key given last
    /// before it, inside the table whose header comes last before it.
    pub(crate) fn path_at(&self, offset: usize, span: Range<usize>) -> Option<FieldPath> {
        if let Some((path, header)) = covering(&self.root, offset, FieldPath::default()) {
            return Some(if header { path.without_indices() } else { path });
        }
        let in_header = self.text.get(..span.start)?.trim_end().ends_with('[');
        let key = self.text.get(span)?.trim();
        let is_key = !key.is_empty() && key.chars().all(is_bare_key_char);
        if in_header {
            // A header names its table from the top.
            return is_key.then(|| FieldPath::parse(key)).flatten();
        }
        let (table_path, table) = last_header_before(&self.root, offset, FieldPath::default())
            .map_or((FieldPath::default(), &self.root), |(path, _, table)| {
                (path, table)
            });
        let key = match is_key {
            true => key,
            false => last_key_before(table, offset)?,
        };
        Some(table_path.then(key))
    }

    /// For an error about field `key` placed at the header of a table (a
    /// table's fields checked together), where `key` is given in that
    /// table.
    pub(crate) fn key_under_header(&self, offset: usize, key: &str) -> Option<Place> {
        let table = header_at(&self.root, offset)?;
        entry(table, key).map(|(k, _)| self.place(k.span().start))
    }
}

/// A key of a table and its value, each with its span.
pub(crate) type Entry<'a, 't> = (&'a Spanned<DeString<'t>>, &'a Spanned<DeValue<'t>>);

/// The key and value of `key` in `table`.
pub(crate) fn entry<'a, 't>(table: &'a DeTable<'t>, key: &str) -> Option<Entry<'a, 't>> {
    table.iter().find(|(k, _)| k.get_ref() == key)
}

/// Whether a table value is written as a header (`[lock]`, `[[faults]]`):
/// its span then starts before its key.
fn is_header(key: &Spanned<DeString<'_>>, value: &Spanned<DeValue<'_>>) -> bool {
    value.span().start < key.span().start
}

/// A character of a bare (unquoted) key, or of a dotted one.
fn is_bare_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The tables nested in `value` (itself, if a table, or an array's
/// tables), each with its path below `path` and its span (its header's,
/// when written as one).
fn tables<'a, 't>(
    value: &'a Spanned<DeValue<'t>>,
    path: FieldPath,
) -> Vec<(&'a DeTable<'t>, FieldPath, Range<usize>)> {
    match value.get_ref() {
        DeValue::Table(t) => vec![(t, path, value.span())],
        DeValue::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item.get_ref() {
                DeValue::Table(t) => Some((t, path.clone().at(i), item.span())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The deepest field of `table` (at `path`) whose key or value covers
/// `offset`, and whether it was found by a table's header.
fn covering(table: &DeTable<'_>, offset: usize, path: FieldPath) -> Option<(FieldPath, bool)> {
    for (key, value) in table.iter() {
        let here = path.clone().then(key.get_ref());
        for (inner, inner_path, span) in tables(value, here.clone()) {
            if let Some(found) = covering(inner, offset, inner_path.clone()) {
                return Some(found);
            }
            if is_header(key, value) && span.contains(&offset) {
                return Some((inner_path, true));
            }
        }
        if key.span().contains(&offset) || value.span().contains(&offset) {
            return Some((here, false));
        }
    }
    None
}

/// The table whose header starts at or covers `offset`.
fn header_at<'a, 't>(table: &'a DeTable<'t>, offset: usize) -> Option<&'a DeTable<'t>> {
    table.iter().find_map(|(key, value)| {
        tables(value, FieldPath::default())
            .into_iter()
            .find_map(|(inner, _, span)| {
                let own = is_header(key, value) && span.contains(&offset);
                if own {
                    Some(inner)
                } else {
                    header_at(inner, offset)
                }
            })
    })
}

/// The table (below `path`) whose header comes last before `offset`, with
/// where its header starts.
fn last_header_before<'a, 't>(
    table: &'a DeTable<'t>,
    offset: usize,
    path: FieldPath,
) -> Option<(FieldPath, usize, &'a DeTable<'t>)> {
    let mut last: Option<(FieldPath, usize, &'a DeTable<'t>)> = None;
    for (key, value) in table.iter() {
        let here = path.clone().then(key.get_ref());
        for (inner, inner_path, span) in tables(value, here) {
            let mut candidates = Vec::new();
            if is_header(key, value) && span.start <= offset {
                candidates.push((inner_path.clone(), span.start, inner));
            }
            candidates.extend(last_header_before(inner, offset, inner_path));
            for candidate in candidates {
                if last
                    .as_ref()
                    .is_none_or(|(_, start, _)| candidate.1 > *start)
                {
                    last = Some(candidate);
                }
            }
        }
    }
    last
}

/// The key of `table` given last before `offset`.
fn last_key_before<'a>(table: &'a DeTable<'_>, offset: usize) -> Option<&'a str> {
    table
        .iter()
        .filter(|(key, _)| key.span().start < offset)
        .max_by_key(|(key, _)| key.span().start)
        .map(|(key, _)| key.get_ref().as_ref())
}
