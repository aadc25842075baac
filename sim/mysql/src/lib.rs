//! A simulated MariaDB 10.11 server that speaks the MySQL wire protocol,
//! so that the `mariadb` and `mysql` command-line clients and any MySQL
//! driver using text queries work against it unchanged, on a real TCP port
//! ([`serve_tcp`]) or on turmoil's simulated network ([`serve_sim`]).
//!
//! It is not a SQL engine. It answers the statements lock designs built
//! on MySQL send, as MariaDB 10.11 answers them, and anything else with
//! MariaDB's own error.
//!
//! # What it serves
//!
//! - sessions: one per connection, with a connection id; when the
//!   connection ends, for any reason, the session ends, its transaction
//!   rolls back and its named locks go;
//! - named locks: `GET_LOCK(name, timeout)` (1, 0 after waiting `timeout`
//!   seconds of the server's clock; 0 tries; NULL for a NULL name or, as
//!   MariaDB 10.11 answers where MySQL would wait for ever, a negative
//!   timeout), `RELEASE_LOCK` (1, 0 if another
//!   session holds it, NULL if no one does), `IS_FREE_LOCK`,
//!   `IS_USED_LOCK`, `RELEASE_ALL_LOCKS()`; re-entrant with a count
//!   ([`named`]);
//! - transactions: BEGIN, START TRANSACTION, COMMIT, ROLLBACK, and
//!   autocommit: a statement outside them is its own transaction;
//! - a lock table: CREATE TABLE [IF NOT EXISTS] with integer, text and
//!   DATETIME columns, PRIMARY KEY and UNIQUE; `INSERT [IGNORE]`, UPDATE,
//!   DELETE, SELECT [FOR UPDATE] with WHERE over comparisons, AND, OR,
//!   NOT, IS NULL, `NOW()` and COUNT ([`sql`]); affected-row counts as
//!   MariaDB gives them (UPDATE counts the rows it changed);
//! - errors: MariaDB's numbers and messages for syntax (1064), unknown
//!   functions (1305), unknown tables (1146), duplicate keys (1062), row
//!   lock waits that time out (1205) and a few more ([`MyError`]).
//!
//! # The model
//!
//! All state sits under one lock in [`Server`]; a statement runs whole
//! under it or, finding a lock another session holds, changes nothing and
//! waits for the next change or its deadline. Rows a transaction writes
//! are its own until COMMIT; a statement reads what was committed when it
//! ran plus its own transaction's writes (READ COMMITTED, where InnoDB's
//! default is REPEATABLE READ: the lock designs here read with FOR UPDATE
//! or write, where the two agree). FOR UPDATE, UPDATE, DELETE and INSERT
//! lock rows until the transaction ends; an insert of a key another open
//! transaction is writing waits for it; a row lock wait fails with 1205
//! after 50 s (`innodb_lock_wait_timeout`). Observers ([`Change`]) see
//! every named lock ownership change and every committed row write: the
//! ground truth to judge a lock design by.
//!
//! # What it leaves out, and why
//!
//! What the lock designs here do not send, each an error rather than a
//! guess: joins, ORDER BY, LIMIT, subqueries, savepoints, `SET`, `SHOW`,
//! prepared statements (1295), TLS, authentication (every user and
//! password is let in), deadlock detection (row lock waits end by their
//! timeout; a GET_LOCK wait by its own), fractional GET_LOCK timeouts and
//! INTERVAL arithmetic, aggregates other than COUNT (and COUNT without
//! FROM). Named lock waiters are not queued: after a release, whichever
//! waiter runs first takes the lock. A statement that is waiting notices its client's disconnect only
//! when the wait ends (its timeout bounds it), since the connection is not
//! read meanwhile. Rows come back in primary key order (InnoDB's
//! clustered index), or insertion order without one. Strings compare
//! case-sensitively (MariaDB's default collation does not).
//!
//! # Determinism
//!
//! Time comes from `tokio::time` (turmoil's inside turmoil) and `NOW()`
//! from [`Config::wall_clock_ms`]; connection ids count up from a fixed
//! base and the handshake's scramble is derived from
//! [`Config::scramble_seed`] and the connection id; everything is kept in
//! ordered maps. The [`Server`] outlives its host: a restart keeps the
//! committed rows and ends every session, with its named locks, row locks
//! and uncommitted writes.

pub mod change;
mod conn;
pub mod core;
pub mod error;
mod exec;
pub mod named;
pub mod server;
pub mod sql;
mod table;
pub mod value;

pub use change::{Change, ReleaseReason, RowChange};
pub use core::{Config, ConnId, Server};
pub use error::MyError;
pub use server::{MYSQL_PORT, serve_sim, serve_tcp};
pub use value::Value;
