//! Streaming replication: a hot standby that replays its primary's
//! write-ahead log a fixed lag behind, and its promotion.
//!
//! What the WAL carries is what PostgreSQL's carries and no more: every
//! committed row write and every table created or dropped, in commit
//! order. Advisory locks are never WAL-logged, so a standby has none of
//! its primary's, and a promoted standby starts with no advisory lock
//! held: every session lock the old primary granted is gone with it.
//!
//! # The model
//!
//! A standby starts from a copy of its primary's tables (the base backup)
//! and then replays each WAL record once `lag` has passed since its
//! commit, while the primary is serving: a record committed shortly
//! before the primary went down, still on its way when it did, reaches
//! the standby only if the primary comes back. A standby promoted
//! meanwhile never gets it: asynchronous replication loses the last
//! `lag` of commits in a failover. The stream is modelled inside the
//! process rather than as a connection between the hosts, so a partition
//! between primary and standby does not hold it back; the lock designs
//! here never partition the two.
//!
//! Until it is promoted a standby is in recovery: reads and advisory
//! locks work, as on PostgreSQL's hot standby, and any write is refused
//! with 25006, as PostgreSQL refuses it. The primary keeps its WAL only
//! once a standby follows it, and only until the standby has replayed it.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::core::Server;
use crate::sql::ColumnDef;
use crate::table::{RowId, Table, Write};

/// How long a standby with nothing due waits before it looks at its
/// primary's WAL again: the grain of its replay, well under any lag a
/// scenario sets.
const REPLAY_POLL: Duration = Duration::from_millis(10);

/// One change to durable state.
#[derive(Debug, Clone)]
pub(crate) enum WalChange {
    /// CREATE TABLE.
    CreateTable {
        /// The table's name.
        name: String,
        /// Its columns.
        columns: Vec<ColumnDef>,
    },
    /// DROP TABLE.
    DropTable {
        /// The table's name.
        name: String,
    },
    /// A committed write to one row.
    Row {
        /// The table's name.
        table: String,
        /// The row.
        id: RowId,
        /// What was written.
        write: Write,
    },
}

/// One WAL record: a change and when it was committed.
#[derive(Debug, Clone)]
pub(crate) struct WalRecord {
    lsn: u64,
    committed_at: Instant,
    change: WalChange,
}

/// A primary's WAL, as far as its standbys have not yet replayed it.
#[derive(Debug, Default)]
pub(crate) struct Wal {
    /// A standby follows: records are kept for it.
    kept: bool,
    /// The last record's number.
    last_lsn: u64,
    records: VecDeque<WalRecord>,
}

impl Wal {
    /// Logs `change`, if a standby follows.
    pub(crate) fn log(&mut self, change: WalChange) {
        if !self.kept {
            return;
        }
        self.last_lsn += 1;
        self.records.push_back(WalRecord {
            lsn: self.last_lsn,
            committed_at: Instant::now(),
            change,
        });
    }
}

/// Where a standby's replay stands.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Recovery {
    /// The last WAL record replayed.
    applied_lsn: u64,
}

impl Server {
    /// A hot standby of `primary`, built with `config`: a copy of its
    /// tables now, in recovery until [`Server::promote`]. Run
    /// [`Server::follow`] beside its serving to replay what the primary
    /// commits from now on.
    pub fn standby_of(config: crate::core::Config, primary: &Server) -> Server {
        let standby = Server::new(config);
        let mut source = primary.lock();
        source.wal.kept = true;
        let mut state = standby.lock();
        state.tables = source.tables.clone();
        state.next_row = source.next_row;
        state.recovery = Some(Recovery {
            applied_lsn: source.wal.last_lsn,
        });
        drop(state);
        drop(source);
        standby
    }

    /// Whether the server is a standby still in recovery
    /// (`pg_is_in_recovery()`).
    pub fn in_recovery(&self) -> bool {
        self.lock().recovery.is_some()
    }

    /// Ends recovery (`pg_promote()`): the server stops following and
    /// takes writes. Its committed rows are what it had replayed.
    pub fn promote(&self) {
        self.lock().recovery = None;
    }

    /// Replays `primary`'s WAL `lag` behind its commits until promoted;
    /// runs on the standby's host beside its serving, and starts where it
    /// left off after the host restarts.
    pub async fn follow(&self, primary: Server, lag: Duration) {
        while self.in_recovery() {
            match self.replay_due(&primary, lag) {
                Some(due) => tokio::time::sleep_until(due).await,
                None => tokio::time::sleep(REPLAY_POLL).await,
            }
        }
    }

    /// Replays every record of `primary`'s WAL that is due now, if the
    /// primary is serving; returns when the next record falls due.
    fn replay_due(&self, primary: &Server, lag: Duration) -> Option<Instant> {
        let recovery = self.lock().recovery?;
        let now = Instant::now();
        let (due, next) = {
            let mut source = primary.lock();
            if !source.serving {
                return None;
            }
            let mut pending = (source.wal.records.iter()).filter(|r| r.lsn > recovery.applied_lsn);
            let due: Vec<WalRecord> = pending
                .clone()
                .take_while(|r| r.committed_at + lag <= now)
                .cloned()
                .collect();
            let next = pending.nth(due.len()).map(|r| r.committed_at + lag);
            // Replayed here, the records are no longer the primary's to keep.
            let upto = due.last().map_or(recovery.applied_lsn, |r| r.lsn);
            source.wal.records.retain(|r| r.lsn > upto);
            (due, next)
        };
        if !due.is_empty() {
            self.replay(due);
        }
        next
    }

    /// Applies `records` in order, reporting each row written to this
    /// server's observers as its own commit.
    fn replay(&self, records: Vec<WalRecord>) {
        let mut state = self.lock();
        for record in records {
            if let Some(recovery) = state.recovery.as_mut() {
                recovery.applied_lsn = record.lsn;
            }
            match record.change {
                WalChange::CreateTable { name, columns } => {
                    let table = Table {
                        columns,
                        rows: Default::default(),
                    };
                    state.tables.insert(name, table);
                }
                WalChange::DropTable { name } => {
                    state.tables.remove(&name);
                }
                WalChange::Row { table, id, write } => {
                    state.next_row = state.next_row.max(id + 1);
                    let change = (state.tables.get_mut(&table))
                        .and_then(|t| t.commit(table.clone(), id, write));
                    if let Some(change) = change {
                        state.emit(change);
                    }
                }
            }
        }
        drop(state);
        self.changed.notify_waiters();
    }
}
