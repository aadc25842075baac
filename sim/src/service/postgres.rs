//! PostgreSQL as a lock service in the simulator: a `simpg` server on a
//! turmoil machine, speaking PostgreSQL's wire protocol to the database
//! rungs.
//!
//! - `standalone`: one server.
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

use super::database::{DatabaseServer, WallClockMs};
use super::{GroundTruth, Software};
use locks::database::rungs::advisory_key;
use model::history::KeyChange;
use model::host::Host;
use simpg::{AdvisoryKey, Change, Config, ReleaseReason, RowChange, Server, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// PostgreSQL: one server.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresService;

impl DatabaseServer for PostgresService {
    const NAME: &'static str = locks::database::rungs::SERVICE;

    fn start_server(
        &self,
        host: Host,
        port: u16,
        wall_clock_ms: WallClockMs,
        ground_truth: &GroundTruth,
    ) -> Software {
        let keys: BTreeMap<i64, String> = (ground_truth.watched().iter())
            .map(|name| (advisory_key(name), name.clone()))
            .collect();
        let server = Server::new(Config::new(wall_clock_ms));
        let feed = ground_truth.clone();
        server.observe(Arc::new(move |change: &Change| {
            record_ground_truth(&feed, &keys, host, change);
        }));
        Box::new(move || Box::pin(simpg::serve_sim(server.clone(), port)))
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
