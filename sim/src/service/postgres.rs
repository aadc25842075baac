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

use super::{GroundTruth, LockService, SimDeployment, Software};
use crate::client_clock::{EPOCH_MS, Skew};
use crate::freeze::sim_now;
use crate::machines::Machines;
use crate::nemesis::ClockChange;
use locks::database::rungs::advisory_key;
use model::fault::CrashKind;
use model::history::KeyChange;
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use simpg::{AdvisoryKey, Change, Config, ReleaseReason, RowChange, Server, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// PostgreSQL: one server.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresService;

impl LockService for PostgresService {
    fn name(&self) -> &'static str {
        locks::database::rungs::SERVICE
    }

    fn kinds(&self) -> &'static [TopologyKind] {
        &[TopologyKind::Standalone]
    }

    fn node_hosts(&self, topology: &Topology) -> Vec<Host> {
        topology.nodes()
    }

    fn lock_targets(&self, topology: &Topology, _client: usize) -> Vec<Host> {
        topology.nodes()
    }

    fn aliases(&self, _topology: &Topology) -> Vec<(Host, Host)> {
        Vec::new()
    }

    fn nodes_talk(&self, _topology: &Topology) -> bool {
        false
    }

    fn start_sim(
        &self,
        _seed: u64,
        topology: &Topology,
        machines: &Machines,
        ground_truth: GroundTruth,
    ) -> (Box<dyn SimDeployment>, Vec<(Host, Software)>) {
        let mut servers = BTreeMap::new();
        let mut software: Vec<(Host, Software)> = Vec::new();
        for host in self.node_hosts(topology) {
            let clock = Arc::new(Mutex::new(Skew::default()));
            let reads = clock.clone();
            let wall_clock_ms = Arc::new(move || {
                let skew = *reads.lock().unwrap_or_else(|p| p.into_inner());
                skew.wall_ms(EPOCH_MS, sim_now().as_micros() as i64) as i64
            });
            let server = Server::new(Config::new(wall_clock_ms));
            let feed = ground_truth.clone();
            let keys: BTreeMap<i64, String> = (feed.watched().iter())
                .map(|name| (advisory_key(name), name.clone()))
                .collect();
            server.observe(Arc::new(move |change: &Change| {
                record_ground_truth(&feed, &keys, host, change);
            }));
            let port = machines.address(host).1;
            let serving = server.clone();
            software.push((
                host,
                Box::new(move || Box::pin(simpg::serve_sim(serving.clone(), port))),
            ));
            servers.insert(host, (server, clock));
        }
        (Box::new(PostgresServers { servers }), software)
    }
}

/// The running servers of one run, by host, with their wall clocks.
struct PostgresServers {
    servers: BTreeMap<Host, (Server, Arc<Mutex<Skew>>)>,
}

impl SimDeployment for PostgresServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn has(&self, host: Host) -> bool {
        self.servers.contains_key(&host)
    }

    /// `now()` reads the server's wall clock: a jump or a drift moves
    /// every expiry the lock rows compare it with.
    fn move_clock(&self, host: Host, change: ClockChange) {
        let Some((_, clock)) = self.servers.get(&host) else {
            return;
        };
        let mut skew = clock.lock().unwrap_or_else(|p| p.into_inner());
        match change {
            ClockChange::JumpMs(ms) => skew.jump(ms),
            ClockChange::DriftPpm(ppm) => skew.set_drift(sim_now().as_micros() as i64, ppm),
        }
    }

    /// A commit is synced before it is acknowledged: a crash of either
    /// kind loses no committed row, and every session either way.
    fn prepare_crash(&self, _host: Host, _how: CrashKind) {}

    /// A single server has no standby to promote.
    fn promote(&self, _host: Host) {}
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
