//! The database rungs, as [`Lock`]s on PostgreSQL and on MariaDB. Each
//! lock keeps one session (one connection), opened on its first
//! statement and opened again after it is lost; a lease taken in one
//! session is not held in the next. The rung's service decides which
//! database's session it opens ([`crate::database::postgres`] or
//! [`crate::database::mysql`]); the lock code is the same.
//!
//! # `db-unique-row`: insert a row to lock, delete it to unlock
//! `INSERT INTO locklab_locks (name, owner)`: the primary key lets one
//! insert in; the others get a duplicate key (23505) and try again.
//! Release deletes the row by name.
//! Fixes: a lock with nothing but the database a team already has; the
//! row is committed, so it outlives the holder's connection and a server
//! restart. Flaw: nothing ever removes the row of a holder that died:
//! the lock is taken for ever. Shown by: `db-holder-crashes`.
//!
//! # `db-unique-row-expiry`: the row with an expiry, a reaper and an owner check
//! The row carries `expires_at` (the server's `now()` plus the TTL);
//! each attempt first reaps the lock's row if it has expired, then
//! inserts; release and extend touch the row only if it is still the
//! holder's (`owner` = its token).
//! Fixes: a dead holder's row is reaped after its TTL; a late release
//! cannot delete the next holder's row. Flaw: every lease problem of the
//! Redis ladder is back: a holder paused past its TTL is reaped, another
//! takes the lock, and the first, resumed, writes.
//! Shown by: `db-holder-paused`.
//!
//! # `pg-advisory`: a session-level advisory lock
//! `SELECT pg_try_advisory_lock(key)` until it answers `t`, where `key` is
//! [`advisory_key`] of the lock's name; release is
//! `pg_advisory_unlock(key)`. The lock belongs to the session: it is
//! re-entrant within it, and goes when the session ends.
//! Fixes: no row to leak and no TTL to guess: a holder that dies drops
//! its connection and the server frees the lock at once.
//! Flaw: that is the lease problem with no lease at all: the lock lives
//! exactly as long as the connection, so a connection that dies while
//! its holder works (a server restart, a failover, a proxy or pooler
//! cutting it) frees the lock under a holder that goes on writing.
//! Shown by: `db-restart-under-holder`.
//!
//! # `pg-advisory-pooled`: the advisory lock through a connection pool
//! The same statements as `pg-advisory`, each run on a connection checked
//! out of the process's [`SessionPool`] for that statement alone and
//! handed back after it, as an application runs them with sqlx's
//! `pool.execute`, ActiveRecord or node-postgres' `pool.query`. The
//! process's callers (its request handlers, its tasks) share the pool.
//! Fixes: nothing over `pg-advisory`: it is `pg-advisory` as an
//! application with a pool writes it, and the way libraries have shipped
//! it. Flaw: the lock belongs to the connection, and the connection goes
//! back to the pool still holding it: the next caller in the process to
//! be handed that connection re-enters a lock it never took (`t`, as the
//! lock is re-entrant within a session), and a release may run on a
//! connection that does not hold it (`f`) and leave the lock held for
//! ever by an idle connection. Shown by: `db-pooled-connection-handed-on`.
//!
//! # `pg-advisory-xact`: a transaction-level advisory lock
//! `BEGIN; SELECT pg_try_advisory_xact_lock(key)`: held until the
//! transaction ends; release is `COMMIT` (a failed attempt rolls back).
//! Fixes: the lock cannot outlive its transaction, so no unlock can be
//! forgotten and no connection handed on still holds it.
//! Flaw: the connection's death ends the transaction and the lock with
//! it, as for `pg-advisory`. Shown by: `db-restart-under-holder`.
//!
//! # `mysql-get-lock`: MariaDB's named lock
//! `SELECT GET_LOCK(name, 0)` until it answers 1 (0: another session
//! holds it; NULL or an error is an error), where `name` is
//! [`mysql_lock_name`] of the lock's name; release is
//! `SELECT RELEASE_LOCK(name)` (1: released; 0, another session's, or
//! NULL, no one's: not held). Like PostgreSQL's advisory lock, the named
//! lock belongs to the connection's session: re-entrant within it
//! (MariaDB 10.0 and later count the levels), and gone when the session
//! ends for any reason.
//! Fixes: a dead holder's connection closes and the lock is free at once,
//! on the MySQL a team already runs.
//! Flaw: the same as `pg-advisory`'s: the lock lives as long as the
//! connection. Shown by: `db-restart-under-holder`.
//!
//! # `db-fenced`: the row's version as a fencing token
//! One row per lock that is never deleted: acquiring sets its owner and
//! `expires_at` and adds one to its `version`, if it is free or expired
//! (`INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING version`);
//! release clears the owner if it is still the holder's. The version
//! only grows, so the resource refuses a write with a smaller one.
//! Fixes: a holder paused past its TTL is refused by the resource.
//! Flaw: it needs a resource that checks tokens.
//! Shown by: nothing breaks it within its assumptions
//! (`db-holder-paused` is safe).

use crate::clock::BoxFuture;
use crate::conn::{ConnConfig, Dialer};
use crate::database::pool::SessionPool;
use crate::database::session::{Answer, DbError, Opener, Session, literal};
use crate::database::{mysql, postgres};
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext, retry_acquire};
use std::sync::Arc;
use std::sync::Mutex;

/// The PostgreSQL lock service's name, as rungs name their service.
pub const SERVICE: &str = "postgres";

/// The MySQL (MariaDB) lock service's name, as rungs name their service:
/// the simulator picks its server by it, and [`build`] its session.
pub const MYSQL_SERVICE: &str = "mysql";

/// `db-unique-row`.
pub const UNIQUE_ROW: Rung = Rung {
    id: "db-unique-row",
    acquire: "INSERT INTO locklab_locks (name, owner) VALUES (name, token); a duplicate key (23505) means taken",
    release: "DELETE FROM locklab_locks WHERE name = name",
    fixes: "a lock on the database a team already has; the committed row outlives connections and restarts",
    flaw: "nothing removes the row of a holder that died: the lock is taken for ever",
    shown_by: "db-holder-crashes",
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// `db-unique-row-expiry`.
pub const UNIQUE_ROW_EXPIRY: Rung = Rung {
    id: "db-unique-row-expiry",
    acquire: "DELETE the lock's row if expires_at < now() (the reaper); INSERT (name, owner, now() + ttl)",
    release: "DELETE ... WHERE name = name AND owner = token",
    fixes: "a dead holder's row is reaped after its TTL; a late release cannot delete the next holder's row",
    flaw: "the lease problem is back: a holder paused past its TTL is reaped and writes beside the next one",
    shown_by: "db-holder-paused",
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// `pg-advisory`.
pub const ADVISORY: Rung = Rung {
    id: "pg-advisory",
    acquire: "SELECT pg_try_advisory_lock(key) until it answers t",
    release: "SELECT pg_advisory_unlock(key)",
    fixes: "no row to leak and no TTL to guess: a dead holder's connection closes and the lock is free at once",
    flaw: "the lock lives as long as the connection: a connection that dies under a working holder frees it",
    shown_by: "db-restart-under-holder",
    reentrant: true,
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// `pg-advisory-pooled`.
pub const ADVISORY_POOLED: Rung = Rung {
    id: "pg-advisory-pooled",
    acquire: "SELECT pg_try_advisory_lock(key) until it answers t, on a connection checked out of the process's pool for that statement",
    release: "SELECT pg_advisory_unlock(key), on whichever pooled connection is handed out",
    fixes: "nothing over pg-advisory: it is pg-advisory as an application with a connection pool writes it",
    flaw: "the connection goes back to the pool holding the lock: the next caller handed it re-enters a lock it never took",
    shown_by: "db-pooled-connection-handed-on",
    reentrant: true,
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// `pg-advisory-xact`.
pub const ADVISORY_XACT: Rung = Rung {
    id: "pg-advisory-xact",
    acquire: "BEGIN; SELECT pg_try_advisory_xact_lock(key) until it answers t (ROLLBACK between tries)",
    release: "COMMIT",
    fixes: "the lock ends with its transaction: no forgotten unlock, no connection handed on still holding it",
    flaw: "the connection's death ends the transaction, and the lock, under a working holder",
    shown_by: "db-restart-under-holder",
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// `mysql-get-lock`.
pub const MYSQL_GET_LOCK: Rung = Rung {
    id: "mysql-get-lock",
    acquire: "SELECT GET_LOCK(name, 0) until it answers 1 (0: taken; NULL: an error)",
    release: "SELECT RELEASE_LOCK(name) (0 or NULL: not held)",
    fixes: "released when the connection's session ends for any reason: a dead holder's lock goes at once",
    flaw: "the lock lives as long as the connection: a connection that dies under a working holder frees it",
    shown_by: "db-restart-under-holder",
    reentrant: true,
    service: MYSQL_SERVICE,
    ..Rung::OFF_LADDER
};

/// `db-fenced`.
pub const FENCED: Rung = Rung {
    id: "db-fenced",
    acquire: "INSERT INTO locklab_fences ... ON CONFLICT (name) DO UPDATE SET owner, expires_at, version = version + 1 WHERE free or expired RETURNING version",
    release: "UPDATE locklab_fences SET owner = NULL WHERE name = name AND owner = token",
    fixes: "the row's version only grows: the resource refuses a holder paused past its TTL",
    flaw: "needs a resource that checks tokens",
    shown_by: "db-holder-paused",
    fencing: true,
    service: SERVICE,
    ..Rung::OFF_LADDER
};

/// The database rungs, in the order they are taught.
pub const RUNGS: [&Rung; 7] = [
    &UNIQUE_ROW,
    &UNIQUE_ROW_EXPIRY,
    &ADVISORY,
    &ADVISORY_POOLED,
    &ADVISORY_XACT,
    &MYSQL_GET_LOCK,
    &FENCED,
];

/// The tables the rungs keep their rows in, each created on first use.
const TABLES: [(&str, &str); 3] = [
    (
        "locklab_locks",
        "CREATE TABLE IF NOT EXISTS locklab_locks (name text PRIMARY KEY, owner text NOT NULL)",
    ),
    (
        "locklab_leases",
        "CREATE TABLE IF NOT EXISTS locklab_leases (name text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)",
    ),
    (
        "locklab_fences",
        "CREATE TABLE IF NOT EXISTS locklab_fences (name text PRIMARY KEY, owner text, expires_at timestamptz NOT NULL, version bigint NOT NULL)",
    ),
];

/// The advisory lock key of the lock named `resource`: its 64-bit FNV-1a
/// hash, as a `bigint`. Advisory locks are named by numbers; a hash of
/// the name is how libraries map names onto them (so two names may, very
/// rarely, share a key: they then exclude each other).
pub fn advisory_key(resource: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in resource.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash as i64
}

/// The longest name MariaDB takes for a named lock (longer ones are
/// refused with error 3057, "Incorrect user-level lock name").
pub const MYSQL_LOCK_NAME_MAX: usize = 64;

/// The MariaDB named lock of the lock named `resource`: the name itself
/// if it fits in [`MYSQL_LOCK_NAME_MAX`] bytes (so at most as many
/// characters), otherwise its first 47 bytes (cut at a character) and
/// `#` and the 16 hex digits of its [`advisory_key`] hash: stable, at
/// most 64 bytes, and still telling a person whose lock it is. Two long
/// names share a lock only if their starts and hashes both agree.
pub fn mysql_lock_name(resource: &str) -> String {
    if resource.len() <= MYSQL_LOCK_NAME_MAX {
        return resource.to_string();
    }
    let mut cut = 47;
    while !resource.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}#{:016x}",
        &resource[..cut],
        advisory_key(resource) as u64
    )
}

/// What a rung does its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    UniqueRow,
    UniqueRowExpiry,
    Advisory,
    AdvisoryPooled,
    AdvisoryXact,
    NamedLock,
    Fenced,
}

impl How {
    fn of(id: &str) -> Option<(&'static Rung, How)> {
        RUNGS.iter().copied().find(|r| r.id == id).map(|rung| {
            let how = match rung.id {
                "db-unique-row" => How::UniqueRow,
                "db-unique-row-expiry" => How::UniqueRowExpiry,
                "pg-advisory" => How::Advisory,
                "pg-advisory-pooled" => How::AdvisoryPooled,
                "pg-advisory-xact" => How::AdvisoryXact,
                "mysql-get-lock" => How::NamedLock,
                _ => How::Fenced,
            };
            (rung, how)
        })
    }

    /// The table its rows live in, if it keeps rows.
    fn table(self) -> Option<(&'static str, &'static str)> {
        match self {
            How::UniqueRow => Some(TABLES[0]),
            How::UniqueRowExpiry => Some(TABLES[1]),
            How::Fenced => Some(TABLES[2]),
            How::Advisory | How::AdvisoryPooled | How::AdvisoryXact | How::NamedLock => None,
        }
    }
}

/// The lock's session, and what it holds in it.
#[derive(Default)]
struct Slot {
    /// The open session, if any.
    session: Option<Arc<dyn Session>>,
    /// How many sessions this lock has opened.
    opened: u64,
    /// `pg-advisory-xact`: how many holds the open transaction carries
    /// (0: no transaction is open).
    in_transaction: u32,
}

/// One of the database rungs over one server.
pub struct DbLock {
    rung: &'static Rung,
    how: How,
    /// Opens the lock's own session; `None` for a pooled rung.
    open: Option<Opener>,
    ctx: LockContext,
    config: LockConfig,
    slot: Mutex<Slot>,
    /// Serialises opening a session, so concurrent acquires share one.
    opening: tokio::sync::Mutex<()>,
    /// `pg-advisory-pooled`: the process's pool, whose connections run its
    /// statements instead of the lock's own session.
    pool: Option<Arc<SessionPool>>,
}

impl std::fmt::Debug for DbLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbLock")
            .field("rung", &self.rung.id)
            .finish_non_exhaustive()
    }
}

impl DbLock {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open session, opening one (and the rung's table) if there is
    /// none or the last one's connection ended.
    async fn session(&self) -> Result<Arc<dyn Session>, DbError> {
        let _opening = self.opening.lock().await;
        let (current, number) = {
            let mut slot = self.slot();
            if slot.session.as_ref().is_some_and(|s| s.is_closed()) {
                slot.session = None;
                slot.in_transaction = 0;
            }
            (slot.session.clone(), slot.opened + 1)
        };
        if let Some(session) = current {
            return Ok(session);
        }
        let Some(open) = &self.open else {
            return Err(DbError::Lost(format!(
                "{} takes its sessions from its pool",
                self.rung.id
            )));
        };
        let session: Arc<dyn Session> = Arc::from(open(number).await?);
        {
            let mut slot = self.slot();
            slot.opened = number;
            slot.session = Some(session.clone());
        }
        self.ensure_table(&*session).await?;
        Ok(session)
    }

    /// Creates the rung's table if it does not exist, in every new
    /// session: the server this session reached may not be the one the
    /// last reached (a standby promoted before the table's creation
    /// reached it). Two sessions creating it at once may race in
    /// PostgreSQL's catalog (a duplicate key on its type): the loser finds
    /// it made.
    async fn ensure_table(&self, session: &dyn Session) -> Result<(), DbError> {
        let Some((_, create)) = self.how.table() else {
            return Ok(());
        };
        match self.run(session, create).await {
            Ok(_) => Ok(()),
            Err(e) if e.is("23505") || e.is("42P07") => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Runs `sql` in `session`; a lost connection closes the session, so
    /// that the next statement opens a new one.
    async fn run(&self, session: &dyn Session, sql: &str) -> Result<Answer, DbError> {
        let answer = session.query(sql).await;
        if matches!(answer, Err(DbError::Lost(_) | DbError::Garbled(_))) {
            self.forget(session.number());
        }
        answer
    }

    /// Drops session `number` if it is still the open one: its
    /// connection closes, and with it its session on the server.
    fn forget(&self, number: u64) {
        let mut slot = self.slot();
        if slot.session.as_ref().is_some_and(|s| s.number() == number) {
            slot.session = None;
            slot.in_transaction = 0;
        }
    }

    /// The open session if it is the one numbered `number`: a lease taken
    /// in another session is not held in this one.
    fn session_of(&self, lease: &Lease) -> Option<Arc<dyn Session>> {
        let number: u64 = lease.token.split(':').next()?.parse().ok()?;
        let slot = self.slot();
        slot.session
            .clone()
            .filter(|s| s.number() == number && !s.is_closed())
    }

    fn interval(&self) -> String {
        format!("interval '{} milliseconds'", self.config.ttl.as_millis())
    }

    /// One attempt: a lease, `None` when another holds the lock.
    async fn attempt(&self, resource: &str, owner: &Owner) -> Result<Option<Lease>, LockError> {
        if let Some(pool) = &self.pool {
            return self.attempt_pooled(pool, resource, owner).await;
        }
        let session = self.session().await?;
        let started = self.ctx.clock.monotonic();
        let name = literal(resource);
        let token = format!("{}:{}", session.number(), self.ctx.tokens.token());
        let lease = |fence: Option<u64>| {
            let mut lease = Lease::new(resource, token.clone(), owner, started);
            lease.fence = fence;
            Some(lease)
        };
        let taken = |e: DbError| {
            if e.is("23505") {
                Ok(None)
            } else {
                Err(LockError::from(e))
            }
        };
        match self.how {
            How::UniqueRow => {
                let insert = format!(
                    "INSERT INTO locklab_locks (name, owner) VALUES ({name}, {})",
                    literal(&token)
                );
                match self.run(&*session, &insert).await {
                    Ok(_) => Ok(lease(None)),
                    Err(e) => taken(e),
                }
            }
            How::UniqueRowExpiry => {
                let reap = format!(
                    "DELETE FROM locklab_leases WHERE name = {name} AND expires_at < now()"
                );
                self.run(&*session, &reap).await?;
                self.ctx.point(FaultPoint::AcquireMid, resource).await;
                let insert = format!(
                    "INSERT INTO locklab_leases (name, owner, expires_at) VALUES ({name}, {}, now() + {})",
                    literal(&token),
                    self.interval()
                );
                match self.run(&*session, &insert).await {
                    Ok(_) => Ok(lease(None)),
                    Err(e) => taken(e),
                }
            }
            How::Fenced => {
                let upsert = format!(
                    "INSERT INTO locklab_fences (name, owner, expires_at, version) VALUES ({name}, {}, now() + {}, 1) \
                     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, \
                     version = locklab_fences.version + 1 \
                     WHERE locklab_fences.owner IS NULL OR locklab_fences.expires_at < now() RETURNING version",
                    literal(&token),
                    self.interval()
                );
                let answer = self.run(&*session, &upsert).await?;
                match answer.first() {
                    None => Ok(None),
                    Some(v) => {
                        let version = v.parse::<u64>().map_err(|_| LockError::Protocol {
                            command: "INSERT ... RETURNING version",
                            reply: v.to_string(),
                        })?;
                        Ok(lease(Some(version)))
                    }
                }
            }
            How::Advisory | How::AdvisoryPooled => {
                let sql = format!("SELECT pg_try_advisory_lock({})", advisory_key(resource));
                let answer = self.run(&*session, &sql).await?;
                Ok(yes(&answer, "pg_try_advisory_lock")?
                    .then(|| lease(None))
                    .flatten())
            }
            How::NamedLock => {
                let sql = format!(
                    "SELECT GET_LOCK({}, 0)",
                    mysql::literal(&mysql_lock_name(resource))
                );
                let answer = self.run(&*session, &sql).await?;
                match answer.first() {
                    Some("1") => Ok(lease(None)),
                    Some("0") => Ok(None),
                    other => Err(LockError::Protocol {
                        command: "GET_LOCK",
                        reply: format!("{other:?}"),
                    }),
                }
            }
            How::AdvisoryXact => {
                let opened = self.slot().in_transaction > 0;
                if !opened {
                    self.run(&*session, "BEGIN").await?;
                }
                let sql = format!(
                    "SELECT pg_try_advisory_xact_lock({})",
                    advisory_key(resource)
                );
                let answer = self.run(&*session, &sql).await?;
                if yes(&answer, "pg_try_advisory_xact_lock")? {
                    self.slot().in_transaction += 1;
                    return Ok(lease(None));
                }
                if !opened {
                    // No transaction left idle while it waits.
                    self.run(&*session, "ROLLBACK").await?;
                }
                Ok(None)
            }
        }
    }

    /// Runs `sql` on a connection checked out of `pool` for it alone; a
    /// lost connection is dropped instead of handed back.
    async fn run_pooled(&self, pool: &Arc<SessionPool>, sql: &str) -> Result<Answer, DbError> {
        let checkout = pool.checkout().await?;
        let answer = checkout.session().query(sql).await;
        if matches!(answer, Err(DbError::Lost(_) | DbError::Garbled(_))) {
            checkout.discard();
        }
        answer
    }

    /// `pg-advisory-pooled`'s attempt: the try-lock on whichever pooled
    /// connection is free, handed back still holding what it took.
    async fn attempt_pooled(
        &self,
        pool: &Arc<SessionPool>,
        resource: &str,
        owner: &Owner,
    ) -> Result<Option<Lease>, LockError> {
        let started = self.ctx.clock.monotonic();
        let sql = format!("SELECT pg_try_advisory_lock({})", advisory_key(resource));
        let answer = self.run_pooled(pool, &sql).await?;
        let token = self.ctx.tokens.token();
        Ok(yes(&answer, "pg_try_advisory_lock")?
            .then(|| Lease::new(resource, token, owner, started)))
    }

    /// `pg-advisory-pooled`'s release: the unlock on whichever pooled
    /// connection is free, which may not be the one that holds the lock.
    async fn release_pooled(
        &self,
        pool: &Arc<SessionPool>,
        lease: &Lease,
    ) -> Result<(), LockError> {
        let sql = format!(
            "SELECT pg_advisory_unlock({})",
            advisory_key(&lease.resource)
        );
        let answer = self.run_pooled(pool, &sql).await?;
        if yes(&answer, "pg_advisory_unlock")? {
            Ok(())
        } else {
            Err(LockError::NotHeld {
                resource: lease.resource.clone(),
            })
        }
    }

    async fn release_inner(&self, lease: &Lease) -> Result<(), LockError> {
        self.ctx
            .point(FaultPoint::ReleaseStart, &lease.resource)
            .await;
        if let Some(pool) = &self.pool {
            return self.release_pooled(pool, lease).await;
        }
        let not_held = || LockError::NotHeld {
            resource: lease.resource.clone(),
        };
        let name = literal(&lease.resource);
        let owner = literal(&lease.token);
        match self.how {
            How::UniqueRow | How::UniqueRowExpiry | How::Fenced => {
                let session = self.session().await?;
                let sql = match self.how {
                    // The documents' design deletes by name alone.
                    How::UniqueRow => format!("DELETE FROM locklab_locks WHERE name = {name}"),
                    How::UniqueRowExpiry => format!(
                        "DELETE FROM locklab_leases WHERE name = {name} AND owner = {owner}"
                    ),
                    _ => format!(
                        "UPDATE locklab_fences SET owner = NULL WHERE name = {name} AND owner = {owner}"
                    ),
                };
                let answer = self.run(&*session, &sql).await?;
                if answer.count == 0 {
                    return Err(not_held());
                }
                Ok(())
            }
            How::Advisory | How::AdvisoryPooled => {
                // Its session ended, and the lock with it.
                let session = self.session_of(lease).ok_or_else(not_held)?;
                let sql = format!(
                    "SELECT pg_advisory_unlock({})",
                    advisory_key(&lease.resource)
                );
                let answer = self.run(&*session, &sql).await?;
                if yes(&answer, "pg_advisory_unlock")? {
                    Ok(())
                } else {
                    Err(not_held())
                }
            }
            How::NamedLock => {
                // Its session ended, and the lock with it.
                let session = self.session_of(lease).ok_or_else(not_held)?;
                let sql = format!(
                    "SELECT RELEASE_LOCK({})",
                    mysql::literal(&mysql_lock_name(&lease.resource))
                );
                let answer = self.run(&*session, &sql).await?;
                match answer.first() {
                    Some("1") => Ok(()),
                    // 0: another session's; NULL: no one's.
                    Some("0") | None => Err(not_held()),
                    Some(other) => Err(LockError::Protocol {
                        command: "RELEASE_LOCK",
                        reply: other.to_string(),
                    }),
                }
            }
            How::AdvisoryXact => {
                let session = self.session_of(lease).ok_or_else(not_held)?;
                let left = {
                    let mut slot = self.slot();
                    slot.in_transaction = slot.in_transaction.saturating_sub(1);
                    slot.in_transaction
                };
                if left > 0 {
                    // Other holds share the transaction: the lock stays
                    // until the last one ends it.
                    return Ok(());
                }
                self.run(&*session, "COMMIT").await?;
                Ok(())
            }
        }
    }

    async fn extend_inner(&self, lease: &mut Lease) -> Result<(), LockError> {
        let table = match self.how {
            How::UniqueRowExpiry => "locklab_leases",
            How::Fenced => "locklab_fences",
            _ => {
                return Err(LockError::Unsupported {
                    rung: self.rung.id,
                    operation: "extend (the lock has no expiry)",
                });
            }
        };
        let session = self.session().await?;
        let started = self.ctx.clock.monotonic();
        let sql = format!(
            "UPDATE {table} SET expires_at = now() + {} WHERE name = {} AND owner = {}",
            self.interval(),
            literal(&lease.resource),
            literal(&lease.token)
        );
        if self.run(&*session, &sql).await?.count == 0 {
            return Err(LockError::NotHeld {
                resource: lease.resource.clone(),
            });
        }
        lease.acquired_at = started;
        Ok(())
    }
}

/// A boolean answer (`t` or `f`) of `function`.
fn yes(answer: &Answer, function: &'static str) -> Result<bool, LockError> {
    match answer.first() {
        Some("t") => Ok(true),
        Some("f") => Ok(false),
        other => Err(LockError::Protocol {
            command: function,
            reply: format!("{other:?}"),
        }),
    }
}

impl Lock for DbLock {
    fn rung(&self) -> &'static Rung {
        self.rung
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let lease = retry_acquire(&self.ctx, &self.config, self.rung, resource, || {
                self.attempt(resource, owner)
            })
            .await?;
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.release_inner(lease))
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.extend_inner(lease))
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // None of them looks at its session or its row before writing:
        // that is each rung's flaw, or its fencing token's job.
        Box::pin(crate::rungs::common::pass_before_write(&self.ctx, lease))
    }
}

/// Whether rung `id` runs its statements through its process's
/// connection pool ([`build`]'s `pool`).
pub fn is_pooled(id: &str) -> bool {
    id == ADVISORY_POOLED.id
}

/// A pool of at most `connections` sessions on the server `dialer`
/// reaches, of the database of `service` ([`SERVICE`] or
/// [`MYSQL_SERVICE`]), with the timeouts of `conn`; a caller waits for a
/// free connection at most `conn.connect_timeout`.
pub fn pool<D: Dialer>(
    service: &str,
    dialer: D,
    conn: ConnConfig,
    connections: u32,
) -> SessionPool {
    SessionPool::new(
        opener(service, dialer, conn),
        connections,
        conn.connect_timeout,
    )
}

fn opener<D: Dialer>(service: &str, dialer: D, conn: ConnConfig) -> Opener {
    match service {
        MYSQL_SERVICE => mysql::opener(dialer, conn),
        _ => postgres::opener(dialer, conn),
    }
}

/// The database rung `id` on the server `dialer` reaches, with the
/// timeouts of `conn`; `None` if `id` is not a database rung. A pooled
/// rung ([`is_pooled`]) runs its statements through `pool`, the pool its
/// process shares among its callers, or through a pool of one connection
/// of its own when given none.
pub fn build<D: Dialer>(
    id: &str,
    dialer: D,
    conn: ConnConfig,
    pool: Option<Arc<SessionPool>>,
    ctx: LockContext,
    config: LockConfig,
) -> Option<Box<dyn Lock>> {
    let (rung, how) = How::of(id)?;
    // A pooled rung's statements all go through its pool.
    let (open, pool) = match (how, pool) {
        (How::AdvisoryPooled, Some(pool)) => (None, Some(pool)),
        (How::AdvisoryPooled, None) => {
            let own = opener(rung.service, dialer, conn);
            let pool = SessionPool::new(own, 1, conn.connect_timeout);
            (None, Some(Arc::new(pool)))
        }
        _ => (Some(opener(rung.service, dialer, conn)), None),
    };
    Some(Box::new(DbLock {
        rung,
        how,
        open,
        ctx,
        config,
        slot: Mutex::new(Slot::default()),
        opening: tokio::sync::Mutex::new(()),
        pool,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::conn::TcpDialer;

    #[test]
    fn every_database_rung_is_built_by_its_id_and_found_by_the_ladders_lookup() {
        for rung in RUNGS {
            let ctx = LockContext::new(Arc::new(SystemClock::new()), 7);
            let built = build(
                rung.id,
                TcpDialer::new("127.0.0.1:1"),
                ConnConfig::default(),
                None,
                ctx,
                LockConfig::default(),
            )
            .expect("builds");
            assert_eq!(built.rung().id, rung.id);
            assert_eq!(crate::ladder::rung(rung.id), Some(rung));
            assert!(crate::ladder::all_ids().contains(&rung.id));
            assert!([SERVICE, MYSQL_SERVICE].contains(&rung.service), "{rung:?}");
            let texts = [
                rung.acquire,
                rung.release,
                rung.fixes,
                rung.flaw,
                rung.shown_by,
            ];
            assert!(texts.iter().all(|t| !t.is_empty()), "{rung:?}");
        }
    }

    #[test]
    fn a_long_name_is_hashed_into_a_stable_named_lock_of_at_most_64_bytes() {
        assert_eq!(mysql_lock_name("lock:stock"), "lock:stock");
        let exact = "x".repeat(64);
        assert_eq!(mysql_lock_name(&exact), exact);
        let long = format!("lock:{}", "é".repeat(40));
        let named = mysql_lock_name(&long);
        assert!(named.len() <= MYSQL_LOCK_NAME_MAX, "{named}");
        assert!(named.starts_with("lock:é"), "{named}");
        assert_eq!(named, mysql_lock_name(&long));
        assert_ne!(named, mysql_lock_name(&format!("{long}!")));
    }

    #[test]
    fn the_advisory_key_is_fnv1a_of_the_name() {
        // FNV-1a 64 of the empty string is its offset basis.
        assert_eq!(advisory_key(""), 0xcbf2_9ce4_8422_2325_u64 as i64);
        assert_ne!(advisory_key("lock:a"), advisory_key("lock:b"));
        assert_eq!(advisory_key("lock:a"), advisory_key("lock:a"));
    }
}
