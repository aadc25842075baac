//! MySQL (MariaDB) as a lock service in the simulator: a `simmysql`
//! server on a turmoil machine, speaking the MySQL wire protocol to the
//! MariaDB rung (`mysql-get-lock`).
//!
//! - `standalone`: one server.
//!
//! The server's committed rows live outside its host, as InnoDB's do in
//! its redo log, so a crash loses no committed row; its sessions, and
//! every named lock they held, end with the process, as MariaDB's do. A
//! crash of a client's host closes its connections, as a killed
//! process's kernel would, so the server ends their sessions at once.
//! `NOW()` reads the server's own wall clock, which the nemesis can jump
//! or drift (no rung here reads it yet; a lock row's expiry would).
//!
//! Ground truth: the named lock of a watched lock
//! ([`locks::database::rungs::mysql_lock_name`] of its name, the name
//! itself unless it is longer than MariaDB takes) is `set` when a session
//! takes it (its value the holder's connection id), `deleted` when
//! `RELEASE_LOCK` or `RELEASE_ALL_LOCKS()` lets it go, `expired` when its
//! session ended under it.

use super::GroundTruth;
use super::database::{DatabaseServer, WallClockMs};
use futures::future::LocalBoxFuture;
use locks::database::rungs::mysql_lock_name;
use model::history::KeyChange;
use model::host::Host;
use simmysql::{Change, Config, ReleaseReason, Server};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// MySQL (MariaDB): one server.
#[derive(Debug, Clone, Copy, Default)]
pub struct MySqlService;

impl DatabaseServer for MySqlService {
    const NAME: &'static str = locks::database::rungs::MYSQL_SERVICE;

    type Server = Server;

    fn new_server(
        &self,
        host: Host,
        wall_clock_ms: WallClockMs,
        ground_truth: &GroundTruth,
        _primary: Option<&Server>,
    ) -> Server {
        let names: BTreeMap<String, String> = (ground_truth.watched().iter())
            .map(|name| (mysql_lock_name(name), name.clone()))
            .collect();
        let server = Server::new(Config::new(wall_clock_ms));
        let feed = ground_truth.clone();
        server.observe(Arc::new(move |change: &Change| {
            record_ground_truth(&feed, &names, host, change);
        }));
        server
    }

    fn serve(server: &Server, port: u16) -> LocalBoxFuture<'static, turmoil::Result> {
        Box::pin(simmysql::serve_sim(server.clone(), port))
    }

    /// MariaDB's replication is not modelled: `KINDS` has no
    /// `replicated`, so there is never a standby to follow.
    fn follow(_standby: &Server, _primary: &Server, _lag: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }

    fn promote(_server: &Server) {}
}

/// A change to a watched lock's named lock, into the history.
fn record_ground_truth(
    feed: &GroundTruth,
    names: &BTreeMap<String, String>,
    node: Host,
    change: &Change,
) {
    let recorded = match change {
        Change::LockGranted { name, id } => names.get(name).map(|lock| {
            (
                KeyChange::Set,
                lock.clone(),
                Some(format!("connection {id}")),
            )
        }),
        Change::LockReleased { name, why, .. } => names.get(name).map(|lock| {
            let what = match why {
                ReleaseReason::SessionEnded => KeyChange::Expired,
                ReleaseReason::ReleaseLock | ReleaseReason::ReleaseAll => KeyChange::Deleted,
            };
            (what, lock.clone(), None)
        }),
        Change::RowCommitted { .. } => None,
    };
    if let Some((what, key, value)) = recorded {
        let at_us = turmoil::sim_elapsed().unwrap_or_default().as_micros() as u64;
        feed.record(at_us, node, what, key, value);
    }
}
