//! Locks on a database: the locks teams build on the PostgreSQL or the
//! MySQL (MariaDB) they already run, over each one's own wire protocol.
//!
//! A database offers locks of two kinds, and they fail differently:
//!
//! - **rows**: a row under a unique key is a lock anyone can see; it is
//!   committed, so it outlives the connection that made it, the server's
//!   restarts and a failover (up to the replication lag). That is its
//!   strength and its flaw: a holder that dies leaves its row, and an
//!   expiry column to reap it brings back every lease problem;
//! - **session locks** (PostgreSQL's `pg_advisory_lock` and friends,
//!   MariaDB's `GET_LOCK`): kept in the server's memory, owned by a
//!   *session*, never written to disk or replicated. They go when the
//!   session ends, which frees a dead holder's lock at once, and also
//!   frees a live holder's lock the moment its connection dies, with no
//!   lease to warn it.
//!
//! - [`session`]: one connection as the rungs use it (statements as
//!   text, a bound on each reply, the answers as text), whatever the
//!   database;
//! - [`postgres`]: a session on PostgreSQL (tokio-postgres);
//! - [`mysql`]: a session on MySQL or MariaDB (`mysqlproto`'s client
//!   half);
//! - [`pool`]: a connection pool, as an application process shares one
//!   among its callers;
//! - [`rungs`]: the database rungs (`db-unique-row`,
//!   `db-unique-row-expiry`, `pg-advisory`, `pg-advisory-pooled`,
//!   `pg-advisory-xact`,
//!   `mysql-get-lock`, `db-fenced`) as [`Lock`](crate::Lock)s.

pub mod mysql;
pub mod pool;
pub mod postgres;
pub mod rungs;
pub mod session;
