//! Tables: their columns and unique keys, the committed rows (durable
//! across a host crash, as InnoDB's redo log keeps them), and a
//! transaction's writes laid over them.

use std::collections::BTreeMap;

use crate::value::Value;

/// A row's identity inside its table, in insertion order.
pub(crate) type RowId = u64;

/// A column's type, as far as this server tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    /// INT, BIGINT, TINYINT, ...
    Int,
    /// VARCHAR, TEXT, CHAR.
    Text,
    /// DATETIME, TIMESTAMP: text in MariaDB's form.
    DateTime,
}

/// A column.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) ty: Type,
    pub(crate) not_null: bool,
    /// The unique key on this column alone: `PRIMARY` or the column's
    /// name, as MariaDB names the index.
    pub(crate) key: Option<String>,
}

/// A table.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: BTreeMap<RowId, Vec<Value>>,
}

/// A transaction's writes: the new row, or `None` for a deleted one.
pub(crate) type WriteSet = BTreeMap<(String, RowId), Option<Vec<Value>>>;

impl Table {
    /// The rows `writes` sees in table `name`: the committed ones with its
    /// own writes over them.
    pub(crate) fn visible(&self, name: &str, writes: &WriteSet) -> BTreeMap<RowId, Vec<Value>> {
        let mut rows = self.rows.clone();
        for ((t, id), w) in writes {
            if t != name {
                continue;
            }
            match w {
                Some(v) => rows.insert(*id, v.clone()),
                None => rows.remove(id),
            };
        }
        rows
    }

    /// The value of the row's primary (or first unique) column.
    pub(crate) fn key_of(&self, row: &[Value]) -> Option<Value> {
        let i = self
            .columns
            .iter()
            .position(|c| c.key.as_deref() == Some("PRIMARY"))
            .or_else(|| self.columns.iter().position(|c| c.key.is_some()))?;
        row.get(i).cloned()
    }
}
