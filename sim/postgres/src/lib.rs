//! A simulated PostgreSQL 15 server that speaks PostgreSQL's own wire
//! protocol, so that `psql` and any PostgreSQL client using simple queries
//! work against it unchanged, on a real TCP port ([`serve_tcp`]) or on
//! turmoil's simulated network ([`serve_sim`]).
//!
//! It is not a SQL engine. It answers the statements lock designs built
//! on PostgreSQL send, as PostgreSQL 15 answers them, and anything else
//! with PostgreSQL's own error.
//!
//! # What it serves
//!
//! - sessions: one backend per connection, with a pid; when the
//!   connection ends, for any reason, the session ends and its locks go;
//! - advisory locks: `pg_advisory_lock`, `pg_try_advisory_lock`,
//!   `pg_advisory_unlock`, `pg_advisory_unlock_all`,
//!   `pg_advisory_xact_lock`, `pg_try_advisory_xact_lock`, on a `bigint`
//!   key or two `integer`s; re-entrant, waiters queued first come first
//!   served ([`advisory`]);
//! - transactions: BEGIN, COMMIT, ROLLBACK, the failed-transaction state,
//!   and one implicit transaction per statement outside a block;
//! - a lock table: CREATE TABLE with `text`, `varchar`, `bigint`,
//!   `integer`, `boolean` and `timestamptz` columns, PRIMARY KEY and
//!   UNIQUE; INSERT (ON CONFLICT DO NOTHING or DO UPDATE ... WHERE, with
//!   `excluded`), UPDATE and DELETE, all three with RETURNING; SELECT (FOR UPDATE) with WHERE over
//!   comparisons, AND, OR, `now()` and `interval` arithmetic ([`sql`]);
//! - errors: PostgreSQL's SQLSTATEs and messages for unknown functions
//!   (42883), syntax (42601), unknown tables (42P01), duplicate keys
//!   (23505); 0A000 for a statement PostgreSQL has and this server does
//!   not.
//!
//! # The model
//!
//! All state sits under one lock in [`Server`]; a statement runs whole
//! under it or, finding a lock another session holds, changes nothing and
//! waits for the next change. Rows a transaction writes are
//! its own until COMMIT (READ COMMITTED: a statement sees what was
//! committed when it ran); FOR UPDATE, UPDATE and DELETE lock rows until
//! the transaction ends, and an insert of a key another open transaction
//! is writing waits for it, as PostgreSQL waits. Observers ([`Change`])
//! see every advisory lock ownership change and every committed row write:
//! the ground truth to judge a lock design by.
//!
//! # What it leaves out, and why
//!
//! What the lock designs here do not send, each an error rather than a
//! guess, so a design that needs it finds out: joins, ORDER BY, LIMIT,
//! subqueries, savepoints, shared advisory locks,
//! the extended query protocol (refused with 0A000: psql sends simple
//! queries, and drivers can, as tokio-postgres's `simple_query` does),
//! authentication other than trust, TLS, cancel requests,
//! `statement_timeout` and `lock_timeout`, and deadlock detection among
//! row locks (sessions waiting on each other's rows wait for ever; a
//! cycle of advisory lock waits fails the longest waiter with 40P01, at
//! once rather than after `deadlock_timeout`). Tables are created and
//! dropped at once, outside transactions; rows come back in insertion
//! order.
//!
//! # Determinism
//!
//! Time comes from `tokio::time` (turmoil's inside turmoil) and `now()`
//! from [`Config::wall_clock_ms`]; backend pids count up from a fixed base
//! and their cancel keys are a function of the pid; everything is kept in
//! ordered maps. The [`Server`] outlives its host: a restart keeps the
//! committed rows (PostgreSQL's WAL keeps them) and ends every session,
//! with its advisory locks and uncommitted writes.

pub mod advisory;
pub mod change;
mod conn;
pub mod core;
pub mod error;
mod exec;
pub mod replication;
pub mod server;
pub mod sql;
mod table;
pub mod value;

pub use advisory::{AdvisoryKey, Scope};
pub use change::{Change, ReleaseReason, RowChange};
pub use core::{Config, Pid, Server};
pub use server::{PG_PORT, serve_sim, serve_tcp};
pub use value::Value;
