//! One statement for one session under the server's lock: transaction
//! control, autocommit (a statement outside BEGIN is its own transaction),
//! the named lock functions, and the lock table's INSERT, UPDATE, DELETE
//! and SELECT. A statement either completes, or fails or finds a lock held
//! and leaves no trace: it runs against the state and [`run`] puts the
//! state back as it was.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::change::ReleaseReason;
use crate::core::{ConnId, Db, State};
use crate::error::MyError;
use crate::sql::{ColumnDef, Expr, Stmt};
use crate::table::{Column, RowId, Table, Type};
use crate::value::{Value, datetime};

/// How long a statement waits for a row lock (MariaDB's default
/// `innodb_lock_wait_timeout`).
pub(crate) const LOCK_WAIT_TIMEOUT: Duration = Duration::from_secs(50);

/// A completed statement's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// A result set: column names and whether each holds integers, rows.
    Rows {
        columns: Vec<(String, bool)>,
        rows: Vec<Vec<Value>>,
    },
    /// An OK packet with the affected row count.
    Done { affected: u64 },
}

/// What running a statement came to.
#[derive(Debug)]
pub(crate) enum Step {
    Done(Result<Outcome, MyError>),
    /// A lock is held by another session: try again after the next
    /// change, or once this long has passed (`None`: no limit).
    Blocked(Option<Duration>),
}

enum Fail {
    Error(MyError),
    Blocked(Option<Duration>),
}

impl From<MyError> for Fail {
    fn from(e: MyError) -> Fail {
        Fail::Error(e)
    }
}

type R<T> = Result<T, Fail>;

/// Runs `stmt` for session `id`, `elapsed` after it was first tried.
pub(crate) fn run(state: &mut State, id: ConnId, stmt: &Stmt, elapsed: Duration) -> Step {
    let before = state.db.clone();
    let now = datetime(state.now_ms());
    let mut cx = Cx {
        db: &mut state.db,
        id,
        elapsed,
        now,
    };
    match cx.statement(stmt) {
        Ok(out) => {
            state.report();
            Step::Done(Ok(out))
        }
        Err(fail) => {
            state.db = before;
            match fail {
                Fail::Error(e) => Step::Done(Err(e)),
                Fail::Blocked(d) => Step::Blocked(d),
            }
        }
    }
}

struct Cx<'a> {
    db: &'a mut Db,
    id: ConnId,
    elapsed: Duration,
    now: String,
}

/// Rows by identity, in the order they are read.
type Rows = Vec<(RowId, Vec<Value>)>;

/// A row being read: its table's columns and its values.
type Row<'r> = Option<(&'r [Column], &'r [Value])>;

impl Cx<'_> {
    fn database(&self) -> Option<String> {
        self.db.sessions.get(&self.id)?.database.clone()
    }

    fn statement(&mut self, stmt: &Stmt) -> R<Outcome> {
        let done = |affected| Ok(Outcome::Done { affected });
        match stmt {
            Stmt::Empty => Err(MyError::empty_query().into()),
            Stmt::Begin => {
                // BEGIN inside a transaction commits it first.
                self.db.end_txn(self.id, true);
                if let Some(s) = self.db.sessions.get_mut(&self.id) {
                    s.txn = Some(BTreeMap::new());
                }
                done(0)
            }
            Stmt::Commit | Stmt::Rollback => {
                self.db.end_txn(self.id, *stmt == Stmt::Commit);
                done(0)
            }
            _ => {
                let session = self.db.sessions.get_mut(&self.id);
                let implicit = session.as_ref().is_some_and(|s| s.txn.is_none());
                if let Some(s) = session.filter(|_| implicit) {
                    s.txn = Some(BTreeMap::new());
                }
                let out = self.data(stmt)?;
                if implicit {
                    self.db.end_txn(self.id, true);
                }
                Ok(out)
            }
        }
    }

    fn data(&mut self, stmt: &Stmt) -> R<Outcome> {
        match stmt {
            Stmt::CreateTable {
                table,
                if_not_exists,
                columns,
            } => {
                self.table_name(table)?;
                // DDL commits the open transaction, as MariaDB's does.
                self.db.end_txn(self.id, true);
                if self.db.tables.contains_key(table) {
                    if *if_not_exists {
                        return Ok(Outcome::Done { affected: 0 });
                    }
                    return Err(MyError::table_exists(table).into());
                }
                self.db.tables.insert(table.clone(), new_table(columns));
                Ok(Outcome::Done { affected: 0 })
            }
            Stmt::DropTable { table, if_exists } => {
                let db = self.table_name(table)?;
                self.db.end_txn(self.id, true);
                if self.db.tables.remove(table).is_none() && !*if_exists {
                    return Err(MyError::unknown_table(&db, table).into());
                }
                self.db.row_locks.retain(|(t, _), _| t != table);
                Ok(Outcome::Done { affected: 0 })
            }
            Stmt::Insert {
                table,
                ignore,
                columns,
                rows,
            } => self.insert(table, *ignore, columns.as_deref(), rows),
            Stmt::Update {
                table,
                sets,
                filter,
            } => self.update(table, Some(sets), filter.as_ref()),
            Stmt::Delete { table, filter } => self.update(table, None, filter.as_ref()),
            Stmt::Select {
                items,
                from,
                filter,
                for_update,
            } => self.select(items, from.as_deref(), filter.as_ref(), *for_update),
            Stmt::Empty | Stmt::Begin | Stmt::Commit | Stmt::Rollback => {
                Ok(Outcome::Done { affected: 0 })
            }
        }
    }

    /// The current database, which a table statement needs.
    fn table_name(&self, _table: &str) -> R<String> {
        self.database().ok_or_else(|| MyError::no_database().into())
    }

    /// The table's columns and the rows this session sees, in primary key
    /// order (InnoDB's clustered index) or else insertion order.
    fn rows(&self, table: &str) -> R<(Vec<Column>, Rows)> {
        let db = self.table_name(table)?;
        let t = self
            .db
            .tables
            .get(table)
            .ok_or_else(|| MyError::new_unknown_table(&db, table))?;
        let empty = BTreeMap::new();
        let writes = self
            .db
            .sessions
            .get(&self.id)
            .and_then(|s| s.txn.as_ref())
            .unwrap_or(&empty);
        let mut rows: Vec<_> = t.visible(table, writes).into_iter().collect();
        if let Some(pk) = t
            .columns
            .iter()
            .position(|c| c.key.as_deref() == Some("PRIMARY"))
        {
            rows.sort_by(|a, b| a.1[pk].cmp(&b.1[pk]));
        }
        Ok((t.columns.clone(), rows))
    }

    /// Waits for a row lock, or fails once it waited
    /// [`LOCK_WAIT_TIMEOUT`].
    fn row_wait(&self) -> Fail {
        match LOCK_WAIT_TIMEOUT.checked_sub(self.elapsed) {
            Some(left) if !left.is_zero() => Fail::Blocked(Some(left)),
            _ => Fail::Error(MyError::lock_wait_timeout()),
        }
    }

    /// Takes the row locks on `ids`, or waits if another session holds one.
    fn lock_rows(&mut self, table: &str, ids: &[RowId]) -> R<()> {
        for id in ids {
            match self.db.row_locks.get(&(table.to_owned(), *id)) {
                Some(holder) if *holder != self.id => return Err(self.row_wait()),
                _ => {}
            }
        }
        for id in ids {
            self.db.row_locks.insert((table.to_owned(), *id), self.id);
        }
        Ok(())
    }

    fn write(&mut self, table: &str, row: RowId, values: Option<Vec<Value>>) {
        if let Some(w) = self
            .db
            .sessions
            .get_mut(&self.id)
            .and_then(|s| s.txn.as_mut())
        {
            w.insert((table.to_owned(), row), values);
        }
    }

    /// Checks `values` against the table's unique keys: a duplicate among
    /// the rows this session sees (other than `skip`) is 1062; one another
    /// open transaction is writing makes the statement wait for it.
    fn check_unique(
        &self,
        table: &str,
        columns: &[Column],
        visible: &[(RowId, Vec<Value>)],
        values: &[Value],
        skip: Option<RowId>,
    ) -> R<()> {
        for (i, c) in columns.iter().enumerate() {
            let Some(key) = &c.key else { continue };
            if values[i] == Value::Null {
                continue;
            }
            if visible
                .iter()
                .any(|(id, r)| Some(*id) != skip && r[i] == values[i])
            {
                let shown = values[i].text().unwrap_or_default();
                return Err(MyError::duplicate(&shown, key).into());
            }
            let pending = self.db.sessions.iter().any(|(sid, s)| {
                *sid != self.id
                    && s.txn.as_ref().is_some_and(|w| {
                        w.iter().any(|((t, _), v)| {
                            t == table && v.as_ref().is_some_and(|v| v[i] == values[i])
                        })
                    })
            });
            if pending {
                return Err(self.row_wait());
            }
        }
        Ok(())
    }

    fn insert(
        &mut self,
        table: &str,
        ignore: bool,
        names: Option<&[String]>,
        rows: &[Vec<Expr>],
    ) -> R<Outcome> {
        let (columns, mut visible) = self.rows(table)?;
        let targets: Vec<usize> = match names {
            None => (0..columns.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    columns
                        .iter()
                        .position(|c| c.name.eq_ignore_ascii_case(n))
                        .ok_or_else(|| MyError::no_column(n, "INSERT INTO"))
                })
                .collect::<Result<_, _>>()?,
        };
        let mut affected = 0;
        for exprs in rows {
            if exprs.len() != targets.len() {
                return Err(MyError::value_count().into());
            }
            let mut values = vec![Value::Null; columns.len()];
            let mut given = vec![false; columns.len()];
            for (e, &i) in exprs.iter().zip(&targets) {
                values[i] = coerce(self.eval(e, None)?, columns[i].ty);
                given[i] = true;
            }
            for (i, c) in columns.iter().enumerate() {
                if c.not_null && values[i] == Value::Null {
                    if !given[i] {
                        return Err(MyError::no_default(&c.name).into());
                    }
                    return Err(MyError::null_column(&c.name).into());
                }
            }
            match self.check_unique(table, &columns, &visible, &values, None) {
                Err(Fail::Error(e)) if ignore && e.code == 1062 => continue,
                r => r?,
            }
            let id = self.db.next_row;
            self.db.next_row += 1;
            self.lock_rows(table, &[id])?;
            self.write(table, id, Some(values.clone()));
            visible.push((id, values));
            affected += 1;
        }
        Ok(Outcome::Done { affected })
    }

    /// UPDATE (`sets`) or DELETE (no `sets`) of the rows `filter` picks.
    fn update(
        &mut self,
        table: &str,
        sets: Option<&Vec<(String, Expr)>>,
        filter: Option<&Expr>,
    ) -> R<Outcome> {
        let (columns, visible) = self.rows(table)?;
        if let Some(sets) = sets {
            for (name, e) in sets {
                if !columns.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
                    return Err(MyError::no_column(name, "SET").into());
                }
                known_columns(e, &columns, "SET")?;
            }
        }
        let picked = self.filter(&columns, &visible, filter)?;
        let ids: Vec<RowId> = picked.iter().map(|&i| visible[i].0).collect();
        self.lock_rows(table, &ids)?;
        let mut affected = 0;
        let mut now_visible = visible.clone();
        for i in picked {
            let (id, old) = &visible[i];
            let Some(sets) = sets else {
                self.write(table, *id, None);
                now_visible.retain(|(r, _)| r != id);
                affected += 1;
                continue;
            };
            let mut new = old.clone();
            for (name, e) in sets {
                let v = self.eval(e, Some((&columns, old)))?;
                if let Some(c) = columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(name))
                {
                    if columns[c].not_null && v == Value::Null {
                        return Err(MyError::null_column(&columns[c].name).into());
                    }
                    new[c] = coerce(v, columns[c].ty);
                }
            }
            if new == *old {
                continue;
            }
            self.check_unique(table, &columns, &now_visible, &new, Some(*id))?;
            if let Some(slot) = now_visible.iter_mut().find(|(r, _)| r == id) {
                slot.1 = new.clone();
            }
            self.write(table, *id, Some(new));
            affected += 1;
        }
        Ok(Outcome::Done { affected })
    }

    /// The indexes of the rows `filter` is true for.
    fn filter(
        &mut self,
        columns: &[Column],
        rows: &[(RowId, Vec<Value>)],
        filter: Option<&Expr>,
    ) -> R<Vec<usize>> {
        if let Some(f) = filter {
            known_columns(f, columns, "WHERE")?;
        }
        let mut picked = Vec::new();
        for (i, (_, row)) in rows.iter().enumerate() {
            let keep = match filter {
                None => true,
                Some(f) => self.eval(f, Some((columns, row)))?.truthy(),
            };
            if keep {
                picked.push(i);
            }
        }
        Ok(picked)
    }

    fn select(
        &mut self,
        items: &[(Expr, String)],
        from: Option<&str>,
        filter: Option<&Expr>,
        for_update: bool,
    ) -> R<Outcome> {
        let Some(table) = from else {
            if items.iter().any(|(e, _)| *e == Expr::Star) {
                return Err(MyError::no_tables_used().into());
            }
            let mut row = Vec::new();
            for (e, _) in items {
                row.push(self.eval(e, None)?);
            }
            let columns = items
                .iter()
                .zip(&row)
                .map(|((_, n), v)| (n.clone(), matches!(v, Value::Int(_))))
                .collect();
            return Ok(Outcome::Rows {
                columns,
                rows: vec![row],
            });
        };
        let (columns, visible) = self.rows(table)?;
        let picked = self.filter(&columns, &visible, filter)?;
        if for_update {
            let ids: Vec<RowId> = picked.iter().map(|&i| visible[i].0).collect();
            self.lock_rows(table, &ids)?;
        }
        if items.iter().any(|(e, _)| is_count(e)) {
            return self.count(items, &columns, &visible, &picked);
        }
        let mut names = Vec::new();
        for (e, n) in items {
            match e {
                Expr::Star => {
                    names.extend(columns.iter().map(|c| (c.name.clone(), c.ty == Type::Int)))
                }
                Expr::Col(c) => {
                    let ty = columns.iter().find(|col| col.name.eq_ignore_ascii_case(c));
                    let ty = ty.ok_or_else(|| MyError::no_column(c, "SELECT"))?.ty;
                    names.push((n.clone(), ty == Type::Int));
                }
                _ => names.push((n.clone(), false)),
            }
        }
        let mut rows = Vec::new();
        for i in picked {
            let row = &visible[i].1;
            let mut out = Vec::new();
            for (e, _) in items {
                if *e == Expr::Star {
                    out.extend(row.iter().cloned());
                } else {
                    out.push(self.eval(e, Some((&columns, row)))?);
                }
            }
            rows.push(out);
        }
        Ok(Outcome::Rows {
            columns: names,
            rows,
        })
    }

    /// A select list with COUNT: one row; COUNT(*) counts the rows picked,
    /// COUNT(e) those where `e` is not NULL, and any other item is read
    /// from the first row (NULL if none), as MariaDB does without GROUP
    /// BY.
    fn count(
        &mut self,
        items: &[(Expr, String)],
        columns: &[Column],
        visible: &[(RowId, Vec<Value>)],
        picked: &[usize],
    ) -> R<Outcome> {
        let mut names = Vec::new();
        let mut row = Vec::new();
        for (e, n) in items {
            let v = match e {
                Expr::Call(_, args) if is_count(e) => {
                    let mut count = 0;
                    for &i in picked {
                        let arg = match args.first() {
                            Some(Expr::Star) | None => Value::Int(1),
                            Some(a) => self.eval(a, Some((columns, &visible[i].1)))?,
                        };
                        count += i64::from(arg != Value::Null);
                    }
                    Value::Int(count)
                }
                Expr::Star => return Err(MyError::syntax("*").into()),
                _ => match picked.first() {
                    Some(&i) => self.eval(e, Some((columns, &visible[i].1)))?,
                    None => Value::Null,
                },
            };
            names.push((n.clone(), is_count(e) || matches!(v, Value::Int(_))));
            row.push(v);
        }
        Ok(Outcome::Rows {
            columns: names,
            rows: vec![row],
        })
    }

    fn eval(&mut self, e: &Expr, row: Row<'_>) -> R<Value> {
        Ok(match e {
            Expr::Lit(v) => v.clone(),
            Expr::Star => return Err(MyError::syntax("*").into()),
            Expr::Col(name) => {
                let found = row.and_then(|(cols, vals)| {
                    let i = cols
                        .iter()
                        .position(|c| c.name.eq_ignore_ascii_case(name))?;
                    vals.get(i).cloned()
                });
                let clause = if row.is_some() { "WHERE" } else { "SELECT" };
                found.ok_or_else(|| MyError::no_column(name, clause))?
            }
            Expr::Not(e) => match self.eval(e, row)? {
                Value::Null => Value::Null,
                v => Value::Int(i64::from(!v.truthy())),
            },
            Expr::IsNull(e, negated) => {
                Value::Int(i64::from((self.eval(e, row)? == Value::Null) != *negated))
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.eval(a, row)?, self.eval(b, row)?);
                binary(op, &a, &b)
            }
            Expr::Call(name, args) => self.call(name, args, row)?,
        })
    }

    fn call(&mut self, name: &str, args: &[Expr], row: Row<'_>) -> R<Value> {
        let lower = name.to_ascii_lowercase();
        let arity = match lower.as_str() {
            "get_lock" => 2,
            "release_lock" | "is_free_lock" | "is_used_lock" => 1,
            "release_all_locks" | "now" | "current_timestamp" | "connection_id" | "database" => 0,
            _ => return Err(MyError::no_function(self.database().as_deref(), name).into()),
        };
        if args.len() != arity && !(lower == "now" && args.len() == 1) {
            return Err(MyError::param_count(name).into());
        }
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.eval(a, row)?);
        }
        let lock_name = vals.first().and_then(Value::text);
        let int = |b: bool| Value::Int(i64::from(b));
        let mut changes = Vec::new();
        let v = match lower.as_str() {
            "get_lock" => {
                let Some(lock) = lock_name else {
                    return Ok(Value::Null);
                };
                let timeout = vals[1].as_int().unwrap_or(0);
                if timeout < 0 {
                    // MySQL waits for ever; MariaDB 10.11 answers NULL.
                    return Ok(Value::Null);
                }
                if self.db.named.get(&lock, self.id, &mut changes) {
                    Value::Int(1)
                } else {
                    let limit = Duration::from_secs(timeout.unsigned_abs());
                    match limit.checked_sub(self.elapsed) {
                        Some(left) if !left.is_zero() => return Err(Fail::Blocked(Some(left))),
                        _ => Value::Int(0),
                    }
                }
            }
            "release_lock" => match lock_name {
                None => Value::Null,
                Some(lock) => match self.db.named.release(&lock, self.id, &mut changes) {
                    Some(mine) => int(mine),
                    None => Value::Null,
                },
            },
            "is_free_lock" => match lock_name {
                None => Value::Null,
                Some(lock) => int(self.db.named.holder(&lock).is_none()),
            },
            "is_used_lock" => match lock_name.and_then(|l| self.db.named.holder(&l)) {
                Some(holder) => Value::Int(i64::from(holder)),
                None => Value::Null,
            },
            "release_all_locks" => Value::Int(self.db.named.release_all(
                self.id,
                ReleaseReason::ReleaseAll,
                &mut changes,
            )),
            "connection_id" => Value::Int(i64::from(self.id)),
            "database" => self.database().map_or(Value::Null, Value::Str),
            _ => Value::Str(self.now.clone()),
        };
        self.db.changes.extend(changes);
        Ok(v)
    }
}

/// A binary operator on two values, NULL in NULL out (but `AND` with a
/// false side is false and `OR` with a true side true).
fn binary(op: &str, a: &Value, b: &Value) -> Value {
    let int = |b: bool| Value::Int(i64::from(b));
    match op {
        "AND" => match (a, b) {
            _ if (*a != Value::Null && !a.truthy()) || (*b != Value::Null && !b.truthy()) => {
                int(false)
            }
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            _ => int(true),
        },
        "OR" => match (a, b) {
            _ if a.truthy() || b.truthy() => int(true),
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            _ => int(false),
        },
        "+" | "-" => match (a.as_int(), b.as_int()) {
            (Some(x), Some(y)) => {
                let r = if op == "+" {
                    x.checked_add(y)
                } else {
                    x.checked_sub(y)
                };
                r.map_or(Value::Null, Value::Int)
            }
            _ => Value::Null,
        },
        _ => match a.compare(b) {
            None => Value::Null,
            Some(o) => int(match op {
                "=" => o.is_eq(),
                "<>" => o.is_ne(),
                "<" => o.is_lt(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                _ => o.is_ge(),
            }),
        },
    }
}

/// Whether `e` is a call of COUNT.
fn is_count(e: &Expr) -> bool {
    matches!(e, Expr::Call(name, args) if name.eq_ignore_ascii_case("count") && args.len() == 1)
}

/// 1054 for the first column `e` names that the table does not have,
/// as MariaDB checks them before reading any row.
fn known_columns(e: &Expr, columns: &[Column], clause: &str) -> Result<(), MyError> {
    match e {
        Expr::Col(name) if !columns.iter().any(|c| c.name.eq_ignore_ascii_case(name)) => {
            Err(MyError::no_column(name, clause))
        }
        Expr::Bin(_, a, b) => {
            known_columns(a, columns, clause)?;
            known_columns(b, columns, clause)
        }
        Expr::Not(a) | Expr::IsNull(a, _) => known_columns(a, columns, clause),
        Expr::Call(_, args) => args
            .iter()
            .try_for_each(|a| known_columns(a, columns, clause)),
        _ => Ok(()),
    }
}

/// A value stored in a column of type `ty`.
fn coerce(v: Value, ty: Type) -> Value {
    match (v, ty) {
        (Value::Str(s), Type::Int) => Value::Int(Value::Str(s).as_int().unwrap_or(0)),
        (Value::Int(i), Type::Text | Type::DateTime) => Value::Str(i.to_string()),
        (v, _) => v,
    }
}

fn new_table(defs: &[ColumnDef]) -> Table {
    Table {
        columns: defs
            .iter()
            .map(|d| Column {
                name: d.name.clone(),
                ty: d.ty,
                not_null: d.not_null || d.primary,
                key: if d.primary {
                    Some("PRIMARY".into())
                } else if d.unique {
                    Some(d.name.clone())
                } else {
                    None
                },
            })
            .collect(),
        rows: BTreeMap::new(),
    }
}
