//! Running one statement for one session, under the server's lock. A
//! statement either completes (a result or an error, and any warnings) or
//! finds a lock held by another session and changes nothing: it is
//! [`Step::Blocked`] and runs again after the next change. Outside a
//! transaction block each statement is its own transaction, committed
//! when it completes and rolled back when it fails.

use crate::advisory::{AdvisoryKey, Attempt, Scope};
use crate::change::{Change, ReleaseReason};
use crate::core::{Pid, State, Txn};
use crate::error::{PgError, in_failed_transaction, no_such_column, no_such_table};
use crate::replication::WalChange;
use crate::sql::{BinOp, ColumnDef, Expr, OnConflict, SelectItem, Statement};
use crate::table::{RowId, Table, Write, record, visible};
use crate::value::{ColumnType, Value, parse_timestamp};

/// What running a statement came to.
#[derive(Debug)]
pub(crate) enum Step {
    /// It ran (or failed).
    Done(Reply),
    /// It waits for a lock another session holds; nothing changed.
    Blocked,
}

/// A completed statement's answer.
#[derive(Debug)]
pub(crate) struct Reply {
    /// Notices before the answer: (severity, notice).
    pub(crate) notices: Vec<(&'static str, PgError)>,
    /// The result, or the error.
    pub(crate) outcome: Result<Output, PgError>,
}

/// A statement's result.
#[derive(Debug)]
pub(crate) enum Output {
    /// A command tag only (`INSERT 0 1`, `BEGIN`).
    Tag(String),
    /// Rows: a SELECT's, or what RETURNING asked of the rows written.
    Rows {
        /// Names and types.
        columns: Vec<(String, ColumnType)>,
        /// The rows.
        rows: Vec<Vec<Value>>,
        /// `SELECT n`, `INSERT 0 n` and so on.
        tag: String,
    },
}

/// Why a statement did not complete.
enum Fail {
    Error(PgError),
    Blocked,
}

impl From<PgError> for Fail {
    fn from(e: PgError) -> Fail {
        Fail::Error(e)
    }
}

/// The transaction status ReadyForQuery reports for `pid`: `I`, `T` or
/// `E`.
pub(crate) fn txn_status(state: &State, pid: Pid) -> u8 {
    match state.sessions.get(&pid).and_then(|s| s.txn.as_ref()) {
        Some(t) if t.failed => b'E',
        Some(_) => b'T',
        None => b'I',
    }
}

/// Runs `statement` for session `pid`.
pub(crate) fn execute(state: &mut State, pid: Pid, statement: &Statement) -> Step {
    let mut notices = Vec::new();
    let Some(session) = state.sessions.get_mut(&pid) else {
        return Step::Done(Reply {
            notices,
            outcome: Err(PgError::new("57P01", "terminating connection".into())),
        });
    };
    let open = session.txn.as_ref().map(|t| t.failed);
    let tag = |t: &str| Ok(Output::Tag(t.into()));
    let outcome = match (statement, open) {
        (Statement::Begin { start }, None) => {
            let started_us = state.now_us();
            if let Some(s) = state.sessions.get_mut(&pid) {
                s.txn = Some(new_txn(started_us));
            }
            tag(if *start { "START TRANSACTION" } else { "BEGIN" })
        }
        (Statement::Begin { start }, Some(false)) => {
            notices.push((
                "WARNING",
                PgError::new("25001", "there is already a transaction in progress".into()),
            ));
            tag(if *start { "START TRANSACTION" } else { "BEGIN" })
        }
        (Statement::Commit | Statement::Rollback, None) => {
            notices.push((
                "WARNING",
                PgError::new("25P01", "there is no transaction in progress".into()),
            ));
            tag(if *statement == Statement::Commit {
                "COMMIT"
            } else {
                "ROLLBACK"
            })
        }
        (Statement::Commit, Some(false)) => {
            state.end_txn(pid, true);
            tag("COMMIT")
        }
        // COMMIT of a failed transaction rolls it back, and says so.
        (Statement::Commit | Statement::Rollback, Some(_)) => {
            state.end_txn(pid, false);
            tag("ROLLBACK")
        }
        (_, Some(true)) => Err(in_failed_transaction()),
        (_, open) => {
            let implicit = open.is_none();
            if implicit {
                let started_us = state.now_us();
                if let Some(s) = state.sessions.get_mut(&pid) {
                    s.txn = Some(new_txn(started_us));
                }
            }
            // A statement blocked halfway (the second row of an INSERT)
            // must leave no trace: it runs again from the start.
            let saved_locks = state.row_locks.clone();
            let saved_writes = state
                .sessions
                .get(&pid)
                .and_then(|s| s.txn.as_ref())
                .map(|t| t.writes.clone());
            let result = run(state, pid, statement, &mut notices);
            match result {
                Err(Fail::Blocked) => {
                    state.row_locks = saved_locks;
                    if let Some(s) = state.sessions.get_mut(&pid) {
                        if implicit {
                            // No transaction to end: it did nothing.
                            s.txn = None;
                        } else if let (Some(t), Some(w)) = (s.txn.as_mut(), saved_writes) {
                            t.writes = w;
                        }
                    }
                    return Step::Blocked;
                }
                Ok(out) => {
                    if implicit {
                        state.end_txn(pid, true);
                    }
                    Ok(out)
                }
                Err(Fail::Error(e)) => {
                    if implicit {
                        state.end_txn(pid, false);
                    } else if let Some(t) =
                        state.sessions.get_mut(&pid).and_then(|s| s.txn.as_mut())
                    {
                        t.failed = true;
                    }
                    Err(e)
                }
            }
        }
    };
    Step::Done(Reply { notices, outcome })
}

fn new_txn(started_us: i64) -> Txn {
    Txn {
        failed: false,
        started_us,
        writes: Default::default(),
    }
}

/// What expressions are evaluated with.
struct Env<'a> {
    state: &'a mut State,
    pid: Pid,
    notices: &'a mut Vec<(&'static str, PgError)>,
    /// The row ON CONFLICT DO UPDATE did not insert (`excluded`).
    excluded: Option<Vec<Value>>,
}

impl Env<'_> {
    fn txn(&mut self) -> &mut Txn {
        self.state
            .sessions
            .get_mut(&self.pid)
            .and_then(|s| s.txn.as_mut())
            .expect("a statement runs in a transaction")
    }

    fn table(&self, name: &str, at: usize) -> Result<Table, PgError> {
        self.state
            .tables
            .get(name)
            .cloned()
            .ok_or_else(|| no_such_table(name, at))
    }

    /// The rows of `name` this session sees, with the ids of those
    /// `filter` keeps.
    fn matching(
        &mut self,
        name: &str,
        table: &Table,
        filter: &Option<Expr>,
    ) -> Result<Vec<(RowId, Vec<Value>)>, Fail> {
        let rows = visible(name, table, &self.txn().writes);
        let mut out = Vec::new();
        for (id, row) in rows {
            let keep = match filter {
                Some(f) => eval(self, f, &table.columns, &row)? == Value::Bool(true),
                None => true,
            };
            if keep {
                out.push((id, row));
            }
        }
        Ok(out)
    }

    /// Locks rows `ids` of `name` for this transaction, or is blocked
    /// (taking none) if another holds any of them.
    fn lock_rows(&mut self, name: &str, ids: &[RowId]) -> Result<(), Fail> {
        let pid = self.pid;
        let busy = ids.iter().any(|id| {
            self.state
                .row_locks
                .get(&(name.to_string(), *id))
                .is_some_and(|p| *p != pid)
        });
        if busy {
            return Err(Fail::Blocked);
        }
        for id in ids {
            self.state.row_locks.insert((name.to_string(), *id), pid);
        }
        Ok(())
    }
}

fn run(
    state: &mut State,
    pid: Pid,
    statement: &Statement,
    notices: &mut Vec<(&'static str, PgError)>,
) -> Result<Output, Fail> {
    let mut env = Env {
        state,
        pid,
        notices,
        excluded: None,
    };
    let env = &mut env;
    if env.state.recovery.is_some()
        && let Some(what) = writes(statement)
    {
        return Err(PgError::new(
            "25006",
            format!("cannot execute {what} in a read-only transaction"),
        )
        .into());
    }
    match statement {
        Statement::Select {
            items,
            from,
            filter,
            for_update,
        } => {
            let (columns_def, rows) = match from {
                None => (Vec::new(), vec![(0, Vec::new())]),
                Some((name, at)) => {
                    let table = env.table(name, *at)?;
                    let rows = env.matching(name, &table, filter)?;
                    if *for_update {
                        let ids: Vec<RowId> = rows.iter().map(|(id, _)| *id).collect();
                        env.lock_rows(name, &ids)?;
                    }
                    (table.columns, rows)
                }
            };
            if from.is_none() && filter.is_some() {
                return Err(
                    PgError::new("0A000", "WHERE without FROM is not supported".into()).into(),
                );
            }
            let rows: Vec<Vec<Value>> = rows.into_iter().map(|(_, r)| r).collect();
            let (columns, out) = project(env, items, &columns_def, &rows)?;
            let tag = format!("SELECT {}", out.len());
            Ok(Output::Rows {
                columns,
                rows: out,
                tag,
            })
        }
        Statement::CreateTable {
            name,
            if_not_exists,
            columns,
        } => {
            if env.state.tables.contains_key(name) {
                if *if_not_exists {
                    env.notices.push((
                        "NOTICE",
                        PgError::new(
                            "42P07",
                            format!("relation \"{name}\" already exists, skipping"),
                        ),
                    ));
                    return Ok(Output::Tag("CREATE TABLE".into()));
                }
                return Err(
                    PgError::new("42P07", format!("relation \"{name}\" already exists")).into(),
                );
            }
            let table = Table {
                columns: columns.clone(),
                rows: Default::default(),
            };
            env.state.tables.insert(name.clone(), table);
            env.state.wal.log(WalChange::CreateTable {
                name: name.clone(),
                columns: columns.clone(),
            });
            Ok(Output::Tag("CREATE TABLE".into()))
        }
        Statement::DropTable { name, if_exists } => {
            if env.state.tables.remove(&name.0).is_none() {
                if *if_exists {
                    env.notices.push((
                        "NOTICE",
                        PgError::new(
                            "00000",
                            format!("table \"{}\" does not exist, skipping", name.0),
                        ),
                    ));
                } else {
                    return Err(PgError::new(
                        "42P01",
                        format!("table \"{}\" does not exist", name.0),
                    )
                    .into());
                }
            } else {
                env.state.wal.log(WalChange::DropTable {
                    name: name.0.clone(),
                });
            }
            Ok(Output::Tag("DROP TABLE".into()))
        }
        Statement::Insert {
            table: (name, at),
            columns,
            rows,
            on_conflict,
            returning,
        } => {
            let table = env.table(name, *at)?;
            let targets: Vec<usize> = if columns.is_empty() {
                (0..table.columns.len()).collect()
            } else {
                columns
                    .iter()
                    .map(|c| {
                        table.column(c).ok_or_else(|| {
                            PgError::new(
                                "42703",
                                format!("column \"{c}\" of relation \"{name}\" does not exist"),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?
            };
            let mut inserted = Vec::new();
            for row in rows {
                if row.len() > targets.len() {
                    return Err(PgError::new(
                        "42601",
                        "INSERT has more expressions than target columns".into(),
                    )
                    .into());
                }
                let mut values = vec![Value::Null; table.columns.len()];
                for (expr, &i) in row.iter().zip(&targets) {
                    let v = eval(env, expr, &[], &[])?;
                    values[i] = coerce(v, &table.columns[i])?;
                }
                check_not_null(name, &table, &values)?;
                let id = env.state.next_row;
                match (check_unique(env, name, &table, id, &values), on_conflict) {
                    (Err(Fail::Error(e)), Some(on_conflict)) if e.code == "23505" => {
                        if let OnConflict::Update { sets, filter } = on_conflict
                            && let Some(row) = upsert(env, name, &table, values, sets, filter)?
                        {
                            inserted.push(row);
                        }
                        continue;
                    }
                    (other, _) => other?,
                }
                env.state.next_row += 1;
                env.lock_rows(name, &[id])?;
                record(
                    &mut env.txn().writes,
                    name,
                    id,
                    Write::Insert(values.clone()),
                );
                inserted.push(values);
            }
            let tag = format!("INSERT 0 {}", inserted.len());
            answer(env, returning, &table.columns, &inserted, tag)
        }
        Statement::Update {
            table: (name, at),
            sets,
            filter,
            returning,
        } => {
            let table = env.table(name, *at)?;
            let targets: Vec<(usize, &Expr)> = sets
                .iter()
                .map(|(c, e)| {
                    table
                        .column(c)
                        .map(|i| (i, e))
                        .ok_or_else(|| no_such_column(c))
                })
                .collect::<Result<_, _>>()?;
            let rows = env.matching(name, &table, filter)?;
            let ids: Vec<RowId> = rows.iter().map(|(id, _)| *id).collect();
            env.lock_rows(name, &ids)?;
            let mut updated = Vec::new();
            for (id, row) in &rows {
                let mut values = row.clone();
                for (i, expr) in &targets {
                    let v = eval(env, expr, &table.columns, row)?;
                    values[*i] = coerce(v, &table.columns[*i])?;
                }
                check_not_null(name, &table, &values)?;
                check_unique(env, name, &table, *id, &values)?;
                updated.push((*id, values));
            }
            let tag = format!("UPDATE {}", updated.len());
            let mut written = Vec::new();
            for (id, values) in updated {
                record(
                    &mut env.txn().writes,
                    name,
                    id,
                    Write::Update(values.clone()),
                );
                written.push(values);
            }
            answer(env, returning, &table.columns, &written, tag)
        }
        Statement::Delete {
            table: (name, at),
            filter,
            returning,
        } => {
            let table = env.table(name, *at)?;
            let rows = env.matching(name, &table, filter)?;
            let ids: Vec<RowId> = rows.iter().map(|(id, _)| *id).collect();
            env.lock_rows(name, &ids)?;
            for id in &ids {
                record(&mut env.txn().writes, name, *id, Write::Delete);
            }
            let old: Vec<Vec<Value>> = rows.into_iter().map(|(_, r)| r).collect();
            let tag = format!("DELETE {}", old.len());
            answer(env, returning, &table.columns, &old, tag)
        }
        Statement::Unsupported(what) => Err(PgError::new(
            "0A000",
            format!("{what} is not supported by this simulated server"),
        )
        .into()),
        Statement::Begin { .. } | Statement::Commit | Statement::Rollback => {
            unreachable!("transaction control is handled by execute")
        }
    }
}

/// ON CONFLICT DO UPDATE: the row already there with `values`' key is
/// locked and, if `filter` holds of it, updated by `sets`; the new row
/// (`None` if the filter said no).
/// What PostgreSQL calls `statement` when a standby refuses it, if it
/// writes.
fn writes(statement: &Statement) -> Option<&'static str> {
    Some(match statement {
        Statement::Select {
            for_update: true, ..
        } => "SELECT FOR UPDATE",
        Statement::CreateTable { .. } => "CREATE TABLE",
        Statement::DropTable { .. } => "DROP TABLE",
        Statement::Insert { .. } => "INSERT",
        Statement::Update { .. } => "UPDATE",
        Statement::Delete { .. } => "DELETE",
        _ => return None,
    })
}

fn upsert(
    env: &mut Env,
    name: &str,
    table: &Table,
    values: Vec<Value>,
    sets: &[(String, Expr)],
    filter: &Option<Expr>,
) -> Result<Option<Vec<Value>>, Fail> {
    let rows = visible(name, table, &env.txn().writes);
    let clash = rows.into_iter().find(|(_, row)| {
        table
            .columns
            .iter()
            .enumerate()
            .any(|(i, c)| c.unique && row[i] != Value::Null && row[i] == values[i])
    });
    let Some((id, old)) = clash else {
        return Ok(None);
    };
    env.lock_rows(name, &[id])?;
    env.excluded = Some(values);
    let result = (|| {
        if let Some(f) = filter
            && eval(env, f, &table.columns, &old)? != Value::Bool(true)
        {
            return Ok(None);
        }
        let mut new = old.clone();
        for (col, expr) in sets {
            let i = table.column(col).ok_or_else(|| no_such_column(col))?;
            let v = eval(env, expr, &table.columns, &old)?;
            new[i] = coerce(v, &table.columns[i])?;
        }
        check_not_null(name, table, &new)?;
        check_unique(env, name, table, id, &new)?;
        record(&mut env.txn().writes, name, id, Write::Update(new.clone()));
        Ok(Some(new))
    })();
    env.excluded = None;
    result
}

/// A write's answer: its tag alone, or with the rows RETURNING asks for.
fn answer(
    env: &mut Env,
    returning: &[SelectItem],
    columns_def: &[ColumnDef],
    rows: &[Vec<Value>],
    tag: String,
) -> Result<Output, Fail> {
    if returning.is_empty() {
        return Ok(Output::Tag(tag));
    }
    let (columns, rows) = project(env, returning, columns_def, rows)?;
    Ok(Output::Rows { columns, rows, tag })
}

/// The columns and values `items` make of `rows` (of a table with
/// `columns_def`, or none).
#[allow(clippy::type_complexity)]
fn project(
    env: &mut Env,
    items: &[SelectItem],
    columns_def: &[ColumnDef],
    rows: &[Vec<Value>],
) -> Result<(Vec<(String, ColumnType)>, Vec<Vec<Value>>), Fail> {
    let mut columns = Vec::new();
    for item in items {
        match item {
            SelectItem::Star => {
                if columns_def.is_empty() {
                    return Err(PgError::new(
                        "42601",
                        "SELECT * with no tables specified is not valid".into(),
                    )
                    .into());
                }
                columns.extend(columns_def.iter().map(|c| (c.name.clone(), c.column_type)));
            }
            SelectItem::Expr(e, alias) => {
                let name = alias.clone().unwrap_or_else(|| match e {
                    Expr::Column(c, _) => c.clone(),
                    Expr::Call { name, .. } => name.clone(),
                    _ => "?column?".into(),
                });
                columns.push((name, infer_type(e, columns_def)?));
            }
        }
    }
    let mut out = Vec::new();
    for row in rows {
        let mut values = Vec::new();
        for item in items {
            match item {
                SelectItem::Star => values.extend(row.iter().cloned()),
                SelectItem::Expr(e, _) => values.push(eval(env, e, columns_def, row)?),
            }
        }
        out.push(values);
    }
    Ok((columns, out))
}

fn check_not_null(name: &str, table: &Table, values: &[Value]) -> Result<(), PgError> {
    for (c, v) in table.columns.iter().zip(values) {
        if c.not_null && *v == Value::Null {
            let shown: Vec<String> = values
                .iter()
                .map(|v| v.to_text().unwrap_or_else(|| "null".into()))
                .collect();
            return Err(PgError::new(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{name}\" violates not-null constraint",
                    c.name
                ),
            )
            .detail(format!("Failing row contains ({}).", shown.join(", "))));
        }
    }
    Ok(())
}

/// Whether row `id` with `values` may exist: 23505 if a row this session
/// sees has the same value in a unique column; blocked if another open
/// transaction is writing such a row (PostgreSQL waits for it to end).
fn check_unique(
    env: &mut Env,
    name: &str,
    table: &Table,
    id: RowId,
    values: &[Value],
) -> Result<(), Fail> {
    let pid = env.pid;
    let mine = visible(name, table, &env.txn().writes);
    for (i, col) in table.columns.iter().enumerate() {
        if !col.unique || values[i] == Value::Null {
            continue;
        }
        for (other, row) in &mine {
            if *other != id && row[i] == values[i] {
                let locked_by_other = env
                    .state
                    .row_locks
                    .get(&(name.to_string(), *other))
                    .is_some_and(|p| *p != pid);
                if locked_by_other {
                    return Err(Fail::Blocked);
                }
                let shown = values[i].to_text().unwrap_or_default();
                return Err(PgError::new(
                    "23505",
                    format!(
                        "duplicate key value violates unique constraint \"{}\"",
                        table.constraint_name(name, i)
                    ),
                )
                .detail(format!("Key ({})=({shown}) already exists.", col.name))
                .into());
            }
        }
        let pending_elsewhere = env.state.sessions.iter().any(|(p, s)| {
            *p != pid
                && s.txn.as_ref().is_some_and(|t| {
                    t.writes.iter().any(|((tn, other), w)| {
                        tn == name
                            && *other != id
                            && matches!(w, Write::Insert(v) | Write::Update(v) if v[i] == values[i])
                    })
                })
        });
        if pending_elsewhere {
            return Err(Fail::Blocked);
        }
    }
    Ok(())
}

/// `v` as a value of `column`'s type, as an assignment casts it.
fn coerce(v: Value, column: &ColumnDef) -> Result<Value, PgError> {
    to_type(v, column.column_type)
}

fn to_type(v: Value, t: ColumnType) -> Result<Value, PgError> {
    let bad = |s: &str| {
        PgError::new(
            "22P02",
            format!("invalid input syntax for type {}: \"{s}\"", t.name()),
        )
    };
    Ok(match (v, t) {
        (Value::Null, _) => Value::Null,
        (Value::Int(n), ColumnType::Int4) if i32::try_from(n).is_err() => {
            return Err(PgError::new("22003", "integer out of range".into()));
        }
        (Value::Text(s), ColumnType::Int8 | ColumnType::Int4) => {
            let n: i64 = s.trim().parse().map_err(|_| bad(&s))?;
            to_type(Value::Int(n), t)?
        }
        (Value::Text(s), ColumnType::Timestamptz) => {
            Value::Timestamp(parse_timestamp(&s).ok_or_else(|| {
                PgError::new(
                    "22007",
                    format!("invalid input syntax for type timestamp with time zone: \"{s}\""),
                )
            })?)
        }
        (Value::Text(s), ColumnType::Bool) => match s.trim().to_lowercase().as_str() {
            "t" | "true" | "yes" | "on" | "1" => Value::Bool(true),
            "f" | "false" | "no" | "off" | "0" => Value::Bool(false),
            _ => return Err(bad(&s)),
        },
        (v @ Value::Int(_), ColumnType::Text | ColumnType::Varchar) => {
            Value::Text(v.to_text().unwrap_or_default())
        }
        (v, _) => v,
    })
}

/// The type of `expr`'s values, for the RowDescription sent before them.
fn infer_type(expr: &Expr, columns: &[ColumnDef]) -> Result<ColumnType, PgError> {
    Ok(match expr {
        Expr::Literal(Value::Int(n)) if i32::try_from(*n).is_ok() => ColumnType::Int4,
        Expr::Literal(Value::Int(_)) => ColumnType::Int8,
        Expr::Literal(Value::Bool(_)) => ColumnType::Bool,
        Expr::Literal(_) | Expr::Interval(_) => ColumnType::Text,
        Expr::Column(c, at) | Expr::Excluded(c, at) => {
            columns
                .iter()
                .find(|d| d.name == *c)
                .ok_or_else(|| no_such_column(c).at(*at))?
                .column_type
        }
        Expr::Call { name, .. } => match name.as_str() {
            "now" => ColumnType::Timestamptz,
            "pg_backend_pid" => ColumnType::Int4,
            "pg_advisory_lock" | "pg_advisory_xact_lock" | "pg_advisory_unlock_all" => {
                ColumnType::Void
            }
            _ => ColumnType::Bool,
        },
        Expr::Binary(a, BinOp::Add | BinOp::Sub, b) => {
            let (ta, tb) = (infer_type(a, columns)?, infer_type(b, columns)?);
            if ta == ColumnType::Timestamptz || tb == ColumnType::Timestamptz {
                ColumnType::Timestamptz
            } else if ta == ColumnType::Int8 || tb == ColumnType::Int8 {
                ColumnType::Int8
            } else {
                ta
            }
        }
        Expr::Binary(..) | Expr::Not(_) | Expr::IsNull(..) => ColumnType::Bool,
    })
}

/// The name PostgreSQL gives an argument's type in "function f(...) does
/// not exist".
fn arg_type_name(expr: &Expr, columns: &[ColumnDef]) -> &'static str {
    match expr {
        Expr::Literal(Value::Text(_)) | Expr::Literal(Value::Null) => "unknown",
        Expr::Interval(_) => "interval",
        other => infer_type(other, columns).map_or("unknown", |t| t.name()),
    }
}

fn eval(env: &mut Env, expr: &Expr, columns: &[ColumnDef], row: &[Value]) -> Result<Value, Fail> {
    Ok(match expr {
        Expr::Literal(v) => v.clone(),
        Expr::Interval(us) => Value::Int(*us),
        Expr::Column(c, at) => {
            let i = columns
                .iter()
                .position(|d| d.name == *c)
                .ok_or_else(|| no_such_column(c).at(*at))?;
            row[i].clone()
        }
        Expr::Excluded(c, at) => {
            let i = columns.iter().position(|d| d.name == *c);
            match (i, &env.excluded) {
                (Some(i), Some(ex)) => ex[i].clone(),
                _ => return Err(no_such_column(&format!("excluded.{c}")).at(*at).into()),
            }
        }
        Expr::Not(e) => match eval(env, e, columns, row)? {
            Value::Bool(b) => Value::Bool(!b),
            _ => Value::Null,
        },
        Expr::IsNull(e, want_null) => {
            Value::Bool((eval(env, e, columns, row)? == Value::Null) == *want_null)
        }
        Expr::Binary(a, op, b) => {
            let is_interval = matches!(**b, Expr::Interval(_));
            let (va, vb) = (eval(env, a, columns, row)?, eval(env, b, columns, row)?);
            binary(va, *op, vb, is_interval)?
        }
        Expr::Call { name, args, at } => call(env, name, args, *at, columns, row)?,
    })
}

fn binary(a: Value, op: BinOp, b: Value, b_is_interval: bool) -> Result<Value, PgError> {
    use Value::{Bool, Int, Null, Text, Timestamp};
    match op {
        BinOp::And => {
            return Ok(match (a, b) {
                (Bool(false), _) | (_, Bool(false)) => Bool(false),
                (Bool(true), Bool(true)) => Bool(true),
                _ => Null,
            });
        }
        BinOp::Or => {
            return Ok(match (a, b) {
                (Bool(true), _) | (_, Bool(true)) => Bool(true),
                (Bool(false), Bool(false)) => Bool(false),
                _ => Null,
            });
        }
        _ => {}
    }
    if a == Null || b == Null {
        return Ok(Null);
    }
    // An untyped literal takes the other side's type, as PostgreSQL
    // resolves `unknown`.
    let (a, b) = match (a, b) {
        (Text(s), Int(n)) => (to_type(Text(s), ColumnType::Int8)?, Int(n)),
        (Int(n), Text(s)) => (Int(n), to_type(Text(s), ColumnType::Int8)?),
        (Text(s), Timestamp(t)) => (to_type(Text(s), ColumnType::Timestamptz)?, Timestamp(t)),
        (Timestamp(t), Text(s)) => (Timestamp(t), to_type(Text(s), ColumnType::Timestamptz)?),
        (Text(s), Bool(v)) => (to_type(Text(s), ColumnType::Bool)?, Bool(v)),
        (Bool(v), Text(s)) => (Bool(v), to_type(Text(s), ColumnType::Bool)?),
        pair => pair,
    };
    let overflow = || PgError::new("22003", "bigint out of range".into());
    Ok(match (op, a, b) {
        (BinOp::Add, Int(x), Int(y)) if !b_is_interval => {
            Int(x.checked_add(y).ok_or_else(overflow)?)
        }
        (BinOp::Sub, Int(x), Int(y)) if !b_is_interval => {
            Int(x.checked_sub(y).ok_or_else(overflow)?)
        }
        (BinOp::Add, Timestamp(t), Int(us)) if b_is_interval => Timestamp(t.saturating_add(us)),
        (BinOp::Sub, Timestamp(t), Int(us)) if b_is_interval => Timestamp(t.saturating_sub(us)),
        (op @ (BinOp::Add | BinOp::Sub), a, b) => {
            return Err(PgError::new(
                "42883",
                format!(
                    "operator does not exist: {} {} {}",
                    type_word(&a),
                    if op == BinOp::Add { "+" } else { "-" },
                    type_word(&b)
                ),
            )
            .hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
        }
        (op, a, b) => {
            if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
                return Err(PgError::new(
                    "42883",
                    format!("operator does not exist: {} {} {}", type_word(&a), op_text(op), type_word(&b)),
                )
                .hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
            }
            let ord = a.cmp(&b);
            Bool(match op {
                BinOp::Eq => ord.is_eq(),
                BinOp::Ne => ord.is_ne(),
                BinOp::Lt => ord.is_lt(),
                BinOp::Le => ord.is_le(),
                BinOp::Gt => ord.is_gt(),
                _ => ord.is_ge(),
            })
        }
    })
}

fn type_word(v: &Value) -> &'static str {
    match v {
        Value::Int(_) => "bigint",
        Value::Text(_) => "text",
        Value::Bool(_) => "boolean",
        Value::Timestamp(_) => "timestamp with time zone",
        Value::Null | Value::Void => "unknown",
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Eq => "=",
        BinOp::Ne => "<>",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::And => "AND",
        BinOp::Or => "OR",
    }
}

/// A function call: the advisory lock functions, `now()`,
/// `pg_backend_pid()`; anything else does not exist.
fn call(
    env: &mut Env,
    name: &str,
    args: &[Expr],
    at: usize,
    columns: &[ColumnDef],
    row: &[Value],
) -> Result<Value, Fail> {
    let missing = || {
        let types: Vec<&str> = args.iter().map(|a| arg_type_name(a, columns)).collect();
        Fail::Error(
            PgError::new("42883", format!("function {name}({}) does not exist", types.join(", ")))
                .hint("No function matches the given name and argument types. You might need to add explicit type casts.")
                .at(at),
        )
    };
    let pid = env.pid;
    match (name, args.len()) {
        ("now", 0) => return Ok(Value::Timestamp(env.txn().started_us)),
        ("pg_backend_pid", 0) => return Ok(Value::Int(i64::from(pid))),
        ("pg_is_in_recovery", 0) => return Ok(Value::Bool(env.state.recovery.is_some())),
        ("pg_advisory_unlock_all", 0) => {
            let released = env.state.advisory.release_all(pid, Scope::Session);
            env.state
                .report_releases(pid, released, ReleaseReason::Unlock);
            return Ok(Value::Void);
        }
        _ => {}
    }
    let scope_of = |f: &str| match f {
        "pg_advisory_lock" | "pg_try_advisory_lock" | "pg_advisory_unlock" => Some(Scope::Session),
        "pg_advisory_xact_lock" | "pg_try_advisory_xact_lock" => Some(Scope::Transaction),
        _ => None,
    };
    let Some(scope) = scope_of(name) else {
        if name.starts_with("pg_") && name.contains("advisory") && name.contains("shared") {
            return Err(PgError::new(
                "0A000",
                format!("{name} (shared advisory locks) is not supported"),
            )
            .into());
        }
        // PostgreSQL has these: "does not exist" would mislead.
        if KNOWN_FUNCTIONS.split_whitespace().any(|f| f == name) {
            return Err(PgError::new(
                "0A000",
                format!("function {name} is not supported by this simulated server"),
            )
            .at(at)
            .into());
        }
        return Err(missing());
    };
    // The key: one bigint, or two integers.
    let mut values = Vec::new();
    for a in args {
        values.push(eval(env, a, columns, row)?);
    }
    if values.contains(&Value::Null) {
        // The functions are strict: NULL in, NULL out.
        return Ok(Value::Null);
    }
    let key = match values.as_slice() {
        [v] => match to_type(v.clone(), ColumnType::Int8)? {
            Value::Int(n) => AdvisoryKey::Big(n),
            _ => return Err(missing()),
        },
        [a, b] => {
            let types = (
                arg_type_name(&args[0], columns),
                arg_type_name(&args[1], columns),
            );
            match (
                to_type(a.clone(), ColumnType::Int4)?,
                to_type(b.clone(), ColumnType::Int4)?,
                types,
            ) {
                (Value::Int(x), Value::Int(y), ("integer" | "unknown", "integer" | "unknown")) => {
                    AdvisoryKey::Pair(x as i32, y as i32)
                }
                _ => return Err(missing()),
            }
        }
        _ => return Err(missing()),
    };
    match name {
        "pg_advisory_unlock" => match env.state.advisory.unlock(key, pid) {
            Some(released) => {
                if released.freed {
                    env.state
                        .report_releases(pid, vec![(key, released)], ReleaseReason::Unlock);
                }
                Ok(Value::Bool(true))
            }
            None => {
                env.notices.push((
                    "WARNING",
                    PgError::new("01000", "you don't own a lock of type ExclusiveLock".into()),
                ));
                Ok(Value::Bool(false))
            }
        },
        "pg_try_advisory_lock" | "pg_try_advisory_xact_lock" => {
            let got = take(env, key, scope);
            Ok(Value::Bool(got))
        }
        _ => {
            let handed = env
                .state
                .sessions
                .get_mut(&pid)
                .is_some_and(|s| s.handed.remove(&key));
            if handed {
                return Ok(Value::Void);
            }
            let deadlocked = env
                .state
                .sessions
                .get_mut(&pid)
                .is_some_and(|s| std::mem::take(&mut s.deadlocked));
            if deadlocked {
                env.state.advisory.forget_waiter(pid);
                return Err(PgError::new("40P01", "deadlock detected".into())
                    .hint("See server log for query details.")
                    .into());
            }
            if env.state.advisory.is_waiting(key, pid) {
                return Err(Fail::Blocked);
            }
            if take(env, key, scope) {
                return Ok(Value::Void);
            }
            env.state.advisory.enqueue(key, pid, scope);
            if let Some(victim) = env.state.advisory.deadlock_victim(key, pid)
                && let Some(s) = env.state.sessions.get_mut(&victim)
            {
                s.deadlocked = true;
                env.state.wake = true;
            }
            Err(Fail::Blocked)
        }
    }
}

/// Tries to take `key` for the session, reporting a new owner.
fn take(env: &mut Env, key: AdvisoryKey, scope: Scope) -> bool {
    match env.state.advisory.try_lock(key, env.pid, scope) {
        Attempt::Granted { first } => {
            if first {
                env.state.emit(Change::LockGranted {
                    key,
                    pid: env.pid,
                    scope,
                });
            }
            true
        }
        Attempt::Busy => false,
    }
}

/// PostgreSQL functions a lock design might call that this server does not
/// serve.
const KNOWN_FUNCTIONS: &str = "pg_sleep pg_sleep_for pg_sleep_until version current_user \
    current_database session_user txid_current pg_current_xact_id clock_timestamp \
    statement_timestamp transaction_timestamp pg_cancel_backend pg_terminate_backend \
    random gen_random_uuid count max min coalesce";
