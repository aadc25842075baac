//! PostgreSQL as a lock service in the simulator: a `simpg` server on a
//! turmoil machine, speaking PostgreSQL's wire protocol to the database
//! rungs.
//!
//! - `standalone`: one server;
//! - `replicated`: a primary and hot standbys replaying its WAL
//!   `replication_delay_ms` behind ([`simpg::replication`]). A failover
//!   promotes the first standby, with the rows that had reached it and
//!   no advisory lock: those are never WAL-logged.
//!
//! The server's committed rows live outside its host, as PostgreSQL's do
//! in its WAL (it syncs a commit before it answers), so a crash loses no
//! committed row; its sessions, and every advisory lock they held, end
//! with the process, as PostgreSQL's do. A crash of a client's host
//! closes its connections, as a killed process's kernel would, so the
//! server ends their sessions at once. `now()` reads the server's own
//! wall clock, which the nemesis can jump or drift: the expiry of a lock
//! row is the database's clock's business.
//!
//! Ground truth: an advisory lock on a watched lock's key
//! ([`locks::database::rungs::advisory_key`] of its name) is `set` when a
//! session takes it (its value the backend's pid), `deleted` when unlocked
//! or its transaction ends, `expired` when its session ended under it; a
//! committed row of a lock table keyed by a watched name is `set` (its
//! value the owner, and the version where there is one) or `deleted`.

use super::GroundTruth;
use super::database::{DatabaseServer, WallClockMs};
use futures::future::LocalBoxFuture;
use locks::database::rungs::advisory_key;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::TopologyKind;
use simpg::{AdvisoryKey, Change, Config, ReleaseReason, RowChange, Server, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// PostgreSQL: one server.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresService;

impl DatabaseServer for PostgresService {
    const NAME: &'static str = locks::database::rungs::SERVICE;
    const KINDS: &'static [TopologyKind] = &[TopologyKind::Standalone, TopologyKind::Replicated];
    type Server = Server;

    fn new_server(
        &self,
        host: Host,
        wall_clock_ms: WallClockMs,
        ground_truth: &GroundTruth,
        primary: Option<&Server>,
    ) -> Server {
        let keys: BTreeMap<i64, String> = (ground_truth.watched().iter())
            .map(|name| (advisory_key(name), name.clone()))
            .collect();
        let config = Config::new(wall_clock_ms);
        let server = match primary {
            Some(primary) => Server::standby_of(config, primary),
            None => Server::new(config),
        };
        let feed = ground_truth.clone();
        server.observe(Arc::new(move |change: &Change| {
            record_ground_truth(&feed, &keys, host, change);
        }));
        server
    }

    fn serve(server: &Server, port: u16) -> LocalBoxFuture<'static, turmoil::Result> {
        Box::pin(simpg::serve_sim(server.clone(), port))
    }

    fn follow(standby: &Server, primary: &Server, lag: Duration) -> LocalBoxFuture<'static, ()> {
        let (standby, primary) = (standby.clone(), primary.clone());
        Box::pin(async move { standby.follow(primary, lag).await })
    }

    fn promote(server: &Server) {
        server.promote();
    }
}

fn record_ground_truth(
    feed: &GroundTruth,
    keys: &BTreeMap<i64, String>,
    node: Host,
    change: &Change,
) {
    let recorded = match change {
        Change::LockGranted {
            key: AdvisoryKey::Big(k),
            pid,
            ..
        } => keys
            .get(k)
            .map(|name| (KeyChange::Set, name.clone(), Some(format!("pid {pid}")))),
        Change::LockReleased {
            key: AdvisoryKey::Big(k),
            why,
            ..
        } => keys.get(k).map(|name| {
            let what = match why {
                ReleaseReason::SessionEnded => KeyChange::Expired,
                ReleaseReason::Unlock | ReleaseReason::TransactionEnded => KeyChange::Deleted,
            };
            (what, name.clone(), None)
        }),
        Change::RowCommitted {
            table,
            kind,
            key: Some(Value::Text(name)),
            values,
        } if table.starts_with("locklab_") && feed.watches(name) => {
            let column = |c: &str| {
                (values.iter())
                    .find(|(n, _)| n == c)
                    .and_then(|(_, v)| v.to_text())
            };
            Some(match kind {
                RowChange::Delete => (KeyChange::Deleted, name.clone(), None),
                RowChange::Insert | RowChange::Update => {
                    let owner = column("owner").unwrap_or_else(|| "free".into());
                    let value = match column("version") {
                        Some(v) => format!("{owner} version {v}"),
                        None => owner,
                    };
                    (KeyChange::Set, name.clone(), Some(value))
                }
            })
        }
        _ => None,
    };
    if let Some((what, key, value)) = recorded {
        let at_us = turmoil::sim_elapsed().unwrap_or_default().as_micros() as u64;
        feed.record(at_us, node, what, key, value);
    }
}
