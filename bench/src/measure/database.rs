//! What the PostgreSQL and MariaDB sections say of their rows, and the
//! counting pass that reads each database's own count of its log fsyncs
//! over a rung's cycles; the rows are measured by the machinery every
//! service beside Redis shares ([`super::beside`]).

use super::{COMMON, TTL};
use crate::client::{ANSWER_WITHIN, Client, Impl, Node, Service};
use locks::database::mysql::MySqlSession;
use locks::database::postgres::PgSession;
use locks::database::session::{DbError, Session};
use locks::{ConnConfig, LockError, Owner, TcpDialer};
use std::time::{Duration, Instant};

/// What the report says of the PostgreSQL rows.
pub const POSTGRES_NOTE: &str = "The PostgreSQL rungs on one real PostgreSQL server this run \
     started (on 127.0.0.1, a fresh cluster with fsync and synchronous_commit on, its WAL on this \
     machine's disk), beside the floor and lua-release on redis-server node 0, interleaved round \
     by round in a shuffled order, intervals over rounds; × floor is to the Redis floor in the \
     same rounds. Each lock keeps one session (one connection, one backend) from cycle to cycle \
     and sends one statement per round trip as a simple query. The row locks pay for their \
     durability: every statement that changes a row is a transaction the server commits, its WAL \
     fsynced, before it answers, where Redis answers 2 commands from memory; the advisory locks \
     live in the server's memory and change no row. WAL fsyncs per cycle are PostgreSQL's own \
     count (pg_stat_wal.wal_sync, which takes in the WAL writer's and the checkpointer's too) over \
     40 cycles of each rung in a session of its own after the timed rounds, read once that \
     session has ended (a backend hands in its counts at most once a second while it works, and \
     for good as it exits). The hand-off: 16 clients, each \
     with a session of its own, acquire one key and release it at once; a hand-off is the lock \
     passing to another client (taking it straight back is none). A database has nothing to wake \
     a waiter with, so every database rung polls, as its default does, every 50 ms (fixed), as \
     set-nx-px does; wake-ups are counted by the lock code: each retry of a polling waiter, each \
     release message a notified waiter hears.";

/// What the report says of the MariaDB rows.
pub const MYSQL_NOTE: &str = "mysql-get-lock on one real MariaDB server this run started (on \
     127.0.0.1, a fresh data folder, InnoDB flushing its redo log at every commit, the binary log \
     off), beside the floor and lua-release on redis-server node 0, interleaved round by round in \
     a shuffled order, intervals over rounds; × floor is to the Redis floor in the same rounds. \
     The lock keeps one session (one connection) from cycle to cycle: SELECT GET_LOCK(name, 0) \
     and SELECT RELEASE_LOCK(name), one round trip each. A named lock lives in the server's \
     memory and is no transaction, so a cycle writes nothing; InnoDB fsyncs per cycle are \
     InnoDB's own count (Innodb_data_fsyncs, which takes in its redo log's: 21 for 20 one-row \
     commits here) over 40 cycles in a session of its own after the \
     timed rounds. The hand-off: 16 clients, each with a session of its own, acquire one key and \
     release it at once; a hand-off is the lock passing to another client (taking it straight \
     back is none). GET_LOCK could wait in the server, but the rung asks with a timeout of 0 and \
     polls, as its default does, every 50 ms (fixed), as set-nx-px does; wake-ups are counted by \
     the lock code: each retry of a polling waiter, each release message a notified waiter \
     hears.";

/// Cycles of each rung in the counting pass: enough that a stray fsync
/// of the server's own (its WAL writer's, a checkpoint's) moves the
/// figure by a few hundredths at most.
pub const COUNTED_CYCLES: u32 = 40;

/// How long the counting pass waits for the sessions it closed to end.
const SETTLE_WITHIN: Duration = Duration::from_secs(5);

/// A session of the bench's own on a database server, reading its count
/// of fsyncs: PostgreSQL's of its WAL, InnoDB's of its files and redo log.
pub(super) struct FsyncCounter {
    service: Service,
    session: Box<dyn Session>,
}

impl FsyncCounter {
    /// Logs in to the server of `service` at `server`.
    pub(super) async fn open(service: Service, server: &Node) -> anyhow::Result<FsyncCounter> {
        let dialer = TcpDialer::new(server.addr.clone());
        let conn = ConnConfig {
            connect_timeout: ANSWER_WITHIN,
            response_timeout: ANSWER_WITHIN,
        };
        let session: Box<dyn Session> = match service {
            Service::Postgres => Box::new(PgSession::open(&dialer, conn, 0).await.map_err(db)?),
            Service::MySql => Box::new(MySqlSession::open(&dialer, conn, 0).await.map_err(db)?),
            Service::Etcd | Service::ZooKeeper => {
                anyhow::bail!("{} is not a database", service.name())
            }
        };
        Ok(FsyncCounter { service, session })
    }

    /// The server's count of its fsyncs so far.
    async fn read(&self) -> anyhow::Result<u64> {
        let (sql, column) = match self.service {
            Service::Postgres => ("SELECT wal_sync FROM pg_stat_wal", 0),
            // MariaDB 10.8 and later count the redo log's fsyncs here (and
            // have no Innodb_os_log_fsyncs).
            _ => ("SHOW GLOBAL STATUS LIKE 'Innodb_data_fsyncs'", 1),
        };
        let answer = self.session.query(sql).await.map_err(db)?;
        let value = answer
            .rows
            .first()
            .and_then(|row| row.get(column))
            .cloned()
            .flatten();
        value
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("{sql}: answered {value:?}"))
    }

    /// Waits until every other session has ended: a PostgreSQL backend
    /// hands in its counts at most once a second while it works, and for
    /// good as it exits. MariaDB counts as it goes.
    async fn settle(&self) -> anyhow::Result<()> {
        if self.service != Service::Postgres {
            return Ok(());
        }
        let others = "SELECT count(*) FROM pg_stat_activity \
                      WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
        let deadline = Instant::now() + SETTLE_WITHIN;
        loop {
            let answer = self.session.query(others).await.map_err(db)?;
            if answer.first() == Some("0") {
                // A backend leaves the activity list just before it hands
                // in its last counts.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "sessions still open after {SETTLE_WITHIN:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Log fsyncs per cycle of `which`: [`COUNTED_CYCLES`] uncontended
    /// cycles on `key` in a session of its own, between two reads of the
    /// counter taken while no other session is open.
    pub(super) async fn per_cycle(
        &self,
        which: Impl,
        server: &Node,
        key: &str,
        seed: u64,
    ) -> anyhow::Result<f64> {
        self.settle().await?;
        let before = self.read().await?;
        {
            let client = Client::connect(which, std::slice::from_ref(server), COMMON, seed).await?;
            let owner = Owner::new(format!("bench-{}", std::process::id()), 0);
            for _ in 0..COUNTED_CYCLES {
                let held = client
                    .try_acquire(key, &owner, TTL)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("{}: {key} taken", which.name()))?;
                client.release(key, held).await?;
            }
            // Dropped here: its session ends, and with it its backend.
        }
        self.settle().await?;
        let after = self.read().await?;
        Ok(after.saturating_sub(before) as f64 / f64::from(COUNTED_CYCLES))
    }
}

/// A database's error as the run's, with what the lock code makes of it.
fn db(e: DbError) -> anyhow::Error {
    LockError::from(e).into()
}
