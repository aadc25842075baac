//! Old spellings a scenario file may still use: `variants` (now `rungs`),
//! a client group's `ops` (now `cycles`) and a trigger's `on.op` (now
//! `on.cycle`). They still load, with a note naming the new one.

use super::document::{Document, Entry, entry};
use toml::de::{DeTable, DeValue};

/// The notes for the old spellings the file uses, each naming the line of
/// the first use.
pub(crate) fn notes(doc: &Document<'_>) -> Vec<String> {
    let root = doc.root();
    let tables = |key: &str| -> Vec<&DeTable<'_>> {
        match entry(root, key).map(|(_, v)| v.get_ref()) {
            Some(DeValue::Array(items)) => items
                .iter()
                .filter_map(|v| v.get_ref().as_table())
                .collect(),
            _ => Vec::new(),
        }
    };
    let triggers = tables("faults")
        .into_iter()
        .filter_map(|fault| entry(fault, "on")?.1.get_ref().as_table())
        .collect::<Vec<_>>();
    let uses = [
        (entry(root, "variants"), "variants", "rungs"),
        (first_key(&tables("clients"), "ops"), "ops", "cycles"),
        (first_key(&triggers, "op"), "on.op", "on.cycle"),
    ];
    uses.into_iter()
        .filter_map(|(used, old, new)| {
            let (line, _) = doc.place(used?.0.span().start);
            Some(format!(
                "line {line}: `{old}` is the old spelling of `{new}`; it still loads"
            ))
        })
        .collect()
}

/// `key` in the first of `tables` that has it.
fn first_key<'a, 't>(tables: &[&'a DeTable<'t>], key: &str) -> Option<Entry<'a, 't>> {
    tables.iter().find_map(|table| entry(table, key))
}
