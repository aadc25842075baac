//! The node's sixteen databases (`SELECT 0` to `SELECT 15`, Redis's
//! default `databases 16`).
//!
//! Each database is a [`Keyspace`] of its own, with its own change log; the
//! node's clock and its replica mode (hiding expired keys without deleting
//! them) apply to all of them at once, so they are set here. The commit path
//! drains the changes of every database, tagged with its index, after each
//! command or script.

use crate::commands::errors::syntax_error;
use crate::commands::is_option;
use crate::handle::NodeHandle;
use crate::keyspace::{Change, Keyspace};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// How many databases a node has (Redis's `databases` default).
pub(crate) const DATABASES: usize = 16;

/// The node's databases, by index.
#[derive(Debug)]
pub(crate) struct Databases {
    dbs: Vec<Keyspace>,
}

impl Default for Databases {
    fn default() -> Self {
        Databases {
            dbs: (0..DATABASES).map(|_| Keyspace::new()).collect(),
        }
    }
}

impl Databases {
    /// Sixteen empty databases whose random draws are seeded from `name`
    /// (the node's) and their index, so a run replays the same picks.
    pub(crate) fn seeded(name: &str) -> Databases {
        Databases {
            dbs: (0..DATABASES)
                .map(|i| Keyspace::seeded(&format!("{name}/{i}")))
                .collect(),
        }
    }

    /// Database `index` (the caller checked the range: see [`db_index`]).
    pub(crate) fn db(&self, index: usize) -> &Keyspace {
        &self.dbs[index]
    }

    /// Database `index`, for commands.
    pub(crate) fn db_mut(&mut self, index: usize) -> &mut Keyspace {
        &mut self.dbs[index]
    }

    /// Two different databases at once (`MOVE`, `COPY ... DB`).
    pub(crate) fn pair_mut(&mut self, a: usize, b: usize) -> (&mut Keyspace, &mut Keyspace) {
        debug_assert_ne!(a, b);
        if a < b {
            let (lo, hi) = self.dbs.split_at_mut(b);
            (&mut lo[a], &mut hi[0])
        } else {
            let (lo, hi) = self.dbs.split_at_mut(a);
            (&mut hi[0], &mut lo[b])
        }
    }

    /// Every database with its index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &Keyspace)> {
        self.dbs.iter().enumerate()
    }

    /// Every database with its index, for modification.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut Keyspace)> {
        self.dbs.iter_mut().enumerate()
    }

    /// Freezes every database's clock at `now_ms` (node wall-clock ms).
    pub(crate) fn set_now(&mut self, now_ms: i64) {
        for db in &mut self.dbs {
            db.now_ms = now_ms;
        }
    }

    /// The time commands are judged against (the same in every database).
    pub(crate) fn now_ms(&self) -> i64 {
        self.dbs[0].now_ms
    }

    /// Replica mode for every database: expired keys are hidden, never
    /// deleted (the master's deletion comes through replication).
    pub(crate) fn set_hide_only(&mut self, hide_only: bool) {
        for db in &mut self.dbs {
            db.hide_only = hide_only;
        }
    }

    /// Whether any database has changes not yet committed.
    pub(crate) fn has_changes(&self) -> bool {
        self.dbs.iter().any(Keyspace::has_changes)
    }

    /// Drops every uncommitted change (a script stopped by a shutdown).
    pub(crate) fn discard_changes(&mut self) {
        for db in &mut self.dbs {
            db.take_changes();
        }
    }

    /// `SWAPDB a b`: the two databases trade their keys. Every key of
    /// either is recorded as changed in both, so replication, persistence
    /// and `WATCH` see the swap as the writes it amounts to.
    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let keys = |ks: &Keyspace| ks.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        let touched: Vec<Vec<u8>> = keys(&self.dbs[a])
            .into_iter()
            .chain(keys(&self.dbs[b]))
            .collect();
        // The change logs are empty here (each command commits its own), but
        // keep them with their databases anyway.
        let (x, y) = self.pair_mut(a, b);
        std::mem::swap(x, y);
        std::mem::swap(&mut x.now_ms, &mut y.now_ms);
        for k in touched {
            for db in [a, b] {
                let ks = &mut self.dbs[db];
                if ks.peek(&k).is_some() {
                    ks.mark_written(&k);
                } else {
                    ks.record_deleted(&k);
                }
            }
        }
    }

    /// Takes every database's changes since the last call, by index.
    pub(crate) fn take_changes(&mut self) -> Vec<(usize, Vec<Change>)> {
        self.dbs
            .iter_mut()
            .enumerate()
            .filter(|(_, db)| db.has_changes())
            .map(|(i, db)| (i, db.take_changes()))
            .collect()
    }
}

/// Parses a database index as Redis's `getIntFromObjectOrReply` does (a
/// C `int`), answering the command's own `message` for anything else if it
/// has one, then checks it names one of the databases (else `ERR DB index
/// is out of range`).
fn db_arg(arg: &[u8], message: Option<&str>) -> Result<usize, Reply> {
    let n = string2ll(arg).ok_or_else(|| {
        Reply::err(message.unwrap_or("ERR value is not an integer or out of range"))
    })?;
    if i32::try_from(n).is_err() {
        return Err(Reply::err(message.unwrap_or(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        )));
    }
    usize::try_from(n)
        .ok()
        .filter(|n| *n < DATABASES)
        .ok_or_else(|| Reply::err("ERR DB index is out of range"))
}

/// A database index argument with Redis's default integer errors
/// (`SELECT`, `MOVE`, `COPY ... DB`).
pub(crate) fn db_index(arg: &[u8]) -> Result<usize, Reply> {
    db_arg(arg, None)
}

/// `FLUSHALL [ASYNC|SYNC]`: empties every database.
pub(crate) fn flushall(dbs: &mut Databases, _: usize, a: &[Vec<u8>], _: &NodeHandle) -> R {
    flush_option(a)?;
    for (_, ks) in dbs.iter_mut() {
        ks.flush();
    }
    Ok(Reply::ok())
}

/// Checks `FLUSHALL`'s and `FLUSHDB`'s optional `ASYNC`/`SYNC`.
fn flush_option(a: &[Vec<u8>]) -> Result<(), Reply> {
    match a.len() {
        1 => Ok(()),
        2 if is_option(&a[1], "sync") || is_option(&a[1], "async") => Ok(()),
        _ => Err(syntax_error()),
    }
}

/// `MOVE key db`: moves a key (with its deadline) to another database,
/// unless the target already has it.
pub(crate) fn move_key(dbs: &mut Databases, from: usize, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let to = db_index(&a[2])?;
    if to == from {
        return Err(Reply::err(
            "ERR source and destination objects are the same",
        ));
    }
    let key = &a[1];
    let (src, dst) = dbs.pair_mut(from, to);
    let Some(entry) = src.get(key).cloned() else {
        return Ok(Reply::Int(0));
    };
    if dst.exists(key) {
        return Ok(Reply::Int(0));
    }
    dst.set(key, entry.value, entry.deadline);
    src.remove(key);
    Ok(Reply::Int(1))
}

/// `COPY source destination [DB destination-db] [REPLACE]`: copies a key
/// (with its deadline) within the selected database or into another one.
/// The whole command lives here because its `DB` option needs every
/// database.
pub(crate) fn copy(dbs: &mut Databases, from: usize, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let (mut to, mut replace) = (from, false);
    let mut j = 3;
    while j < a.len() {
        if is_option(&a[j], "replace") {
            replace = true;
        } else if is_option(&a[j], "db") && j + 1 < a.len() {
            to = db_index(&a[j + 1])?;
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let (key, new_key) = (&a[1], &a[2]);
    if to == from && key == new_key {
        return Err(Reply::err(
            "ERR source and destination objects are the same",
        ));
    }
    let Some(entry) = dbs.db_mut(from).get(key).cloned() else {
        return Ok(Reply::Int(0));
    };
    let dst = dbs.db_mut(to);
    if dst.exists(new_key) {
        if !replace {
            return Ok(Reply::Int(0));
        }
        dst.remove(new_key);
    }
    dst.set(new_key, entry.value, entry.deadline);
    Ok(Reply::Int(1))
}

/// `SWAPDB index1 index2`
pub(crate) fn swapdb(dbs: &mut Databases, _: usize, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let first = db_arg(&a[1], Some("ERR invalid first DB index"));
    let second = db_arg(&a[2], Some("ERR invalid second DB index"));
    // Both are parsed before either is checked against the range.
    let not_integer = |r: &Result<usize, Reply>| matches!(r, Err(Reply::Error(e)) if e.starts_with("ERR invalid"));
    if not_integer(&first) {
        return first.map(|_| Reply::ok());
    }
    if not_integer(&second) {
        return second.map(|_| Reply::ok());
    }
    dbs.swap(first?, second?);
    Ok(Reply::ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Value;

    #[test]
    fn swapping_two_databases_moves_their_keys_and_records_both_sides() {
        let mut dbs = Databases::default();
        dbs.db_mut(0).set(b"a", Value::Str(b"1".to_vec()), None);
        dbs.take_changes();
        dbs.swap(0, 3);
        assert!(dbs.db(0).peek(b"a").is_none());
        assert!(dbs.db(3).peek(b"a").is_some());
        let changes = dbs.take_changes();
        assert_eq!(
            changes,
            vec![
                (0, vec![Change::Deleted(b"a".to_vec())]),
                (3, vec![Change::Written(b"a".to_vec())]),
            ]
        );
    }
}
