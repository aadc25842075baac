//! Tables: each row's committed version, and each open transaction's own
//! writes on top of it. A transaction sees the committed rows with its own
//! writes laid over them; others see its writes only once it commits (a
//! write set per transaction, READ COMMITTED as PostgreSQL's default). The
//! committed rows are the durable part: they survive a crash of the
//! server's host, as PostgreSQL's WAL keeps them.

use std::collections::BTreeMap;

use crate::change::{Change, RowChange};
use crate::sql::ColumnDef;
use crate::value::Value;

/// A row's identity within the server (PostgreSQL's ctid, roughly).
pub(crate) type RowId = u64;

/// One table: its columns and its committed rows.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) columns: Vec<ColumnDef>,
    pub(crate) rows: BTreeMap<RowId, Vec<Value>>,
}

impl Table {
    /// The index of column `name`.
    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The constraint name PostgreSQL gives column `i`'s uniqueness.
    pub(crate) fn constraint_name(&self, table: &str, i: usize) -> String {
        let c = &self.columns[i];
        if c.not_null && self.columns.iter().position(|c| c.unique && c.not_null) == Some(i) {
            format!("{table}_pkey")
        } else {
            format!("{table}_{}_key", c.name)
        }
    }

    /// Makes `write` to row `id` of this table (named `name`) committed;
    /// the change, for the observers (none for a delete of a row that is
    /// not there).
    pub(crate) fn commit(&mut self, name: String, id: RowId, write: Write) -> Option<Change> {
        let (kind, values) = match write {
            Write::Insert(v) => {
                self.rows.insert(id, v.clone());
                (RowChange::Insert, v)
            }
            Write::Update(v) => {
                self.rows.insert(id, v.clone());
                (RowChange::Update, v)
            }
            Write::Delete => (RowChange::Delete, self.rows.remove(&id)?),
        };
        Some(Change::RowCommitted {
            key: self.key_of(&values),
            values: (self.columns.iter().map(|c| c.name.clone()))
                .zip(values)
                .collect(),
            table: name,
            kind,
        })
    }

    /// The first unique column's value in `values`: the row's key.
    pub(crate) fn key_of(&self, values: &[Value]) -> Option<Value> {
        let i = self.columns.iter().position(|c| c.unique)?;
        values.get(i).cloned()
    }
}

/// A transaction's pending write to one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Write {
    /// A new row.
    Insert(Vec<Value>),
    /// A committed row's new version.
    Update(Vec<Value>),
    /// A committed row deleted.
    Delete,
}

/// A transaction's writes, by table and row.
pub(crate) type WriteSet = BTreeMap<(String, RowId), Write>;

/// The rows of `table` as a transaction with `writes` sees them, in row
/// order.
pub(crate) fn visible(
    table_name: &str,
    table: &Table,
    writes: &WriteSet,
) -> Vec<(RowId, Vec<Value>)> {
    let mut rows: BTreeMap<RowId, Vec<Value>> = table.rows.clone();
    let from = (table_name.to_string(), 0);
    let to = (table_name.to_string(), RowId::MAX);
    for ((_, id), write) in writes.range(from..=to) {
        match write {
            Write::Insert(v) | Write::Update(v) => {
                rows.insert(*id, v.clone());
            }
            Write::Delete => {
                rows.remove(id);
            }
        }
    }
    rows.into_iter().collect()
}

/// Records a write over whatever the transaction already wrote to the row.
pub(crate) fn record(writes: &mut WriteSet, table: &str, id: RowId, write: Write) {
    let key = (table.to_string(), id);
    let merged = match (writes.remove(&key), write) {
        // A row this transaction inserted stays an insert, or goes.
        (Some(Write::Insert(_)), Write::Update(v)) => Some(Write::Insert(v)),
        (Some(Write::Insert(_)), Write::Delete) => None,
        (_, w) => Some(w),
    };
    if let Some(w) = merged {
        writes.insert(key, w);
    }
}
