//! Lock services on real servers: the other backend of
//! `sim::service::LockService`.
//!
//! The real half of a service starts its deployment's servers on
//! loopback, opens through locklab's proxy the links its nodes use among
//! themselves (a replica's to its master), and then stages node faults
//! on them through [`RealDeployment`]: kill and restart a server, promote
//! a replica, move a node's clock. Real mode's world and stage
//! (`crate::run`, `real_stage`) call only these traits; the store that
//! holds the resource is a `redis-server` whatever the service, as in
//! the simulator.
//!
//! One service, one file or folder beside this file ([`redis`], [`etcd`],
//! [`zookeeper`], [`postgres`], [`mysql`]),
//! registered in
//! [`SERVICES`] by the same type that the simulator registers.

pub mod etcd;
pub mod mysql;
pub mod postgres;
pub mod redis;
pub mod single;
pub mod zookeeper;

use crate::links::LinkTable;
use crate::nodes::ServerBin;
use crate::proxy::Proxy;
use model::fault::{ClockDrift, ClockJump, FaultAction};
use model::host::Host;
use model::scenario::{Scenario, Topology};
use sim::run::RunError;
use sim::service::LockService;
use std::net::SocketAddr;
use std::time::Duration;

/// Every lock service real mode can start, by the simulator's name.
pub const SERVICES: &[&dyn RealService] = &[
    &sim::service::redis::RedisService,
    &sim::service::etcd::EtcdService,
    &sim::service::zookeeper::ZooKeeperService,
    &sim::service::postgres::PostgresService,
    &sim::service::mysql::MySqlService,
];

/// A lock service that real mode can run: its real servers.
pub trait RealService: LockService {
    /// Starts the servers of `start.topology`, each node's links to other
    /// nodes opened through the proxy and given their latency.
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String>;
    /// Every part of `rung`'s run in `scenario` that servers of `bin`
    /// cannot stage honestly, each named ("not stageable", `crate::stage`).
    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        bin: &ServerBin,
    ) -> Result<Vec<String>, String>;
}

/// What a service's servers start from.
pub struct RealStart<'a> {
    /// The deployment.
    pub topology: &'a Topology,
    /// The server binary the run was given.
    pub bin: &'a ServerBin,
    /// Names this run's data directories apart from every other's.
    pub run_id: &'a str,
    /// The proxy that carries every link.
    pub proxy: &'a Proxy,
    /// Where the links between nodes go.
    pub table: &'a mut LinkTable,
    /// The latency of a link nothing slows.
    pub base_latency: Duration,
}

impl RealStart<'_> {
    /// Opens the proxy link from `from` to `to` (listening at `addr`).
    pub fn open(&mut self, from: Host, to: Host, addr: SocketAddr) -> Result<(), String> {
        let link = (self.proxy)
            .open(&format!("{from}|{to}"), addr)
            .map_err(|e| e.to_string())?;
        self.table.insert(from, to, link);
        Ok(())
    }
}

/// A service's running servers, by node.
pub trait RealDeployment {
    /// Its nodes, in order.
    fn hosts(&self) -> Vec<Host>;
    /// Where `host` listens (running or not).
    fn addr(&self, host: Host) -> Option<SocketAddr>;
    /// Whether `host`'s server is running.
    fn running(&self, host: Host) -> bool;
    /// Kills `host`'s server (`SIGKILL`) and waits until it is gone.
    fn kill(&mut self, host: Host);
    /// Starts a killed node again on its own data.
    fn restart(&mut self, host: Host) -> Result<(), String>;
    /// Makes `replica` the master, the other nodes but `old` following
    /// it through their links in `table`.
    fn promote(&mut self, replica: Host, old: Host, table: &LinkTable) -> Result<(), String>;
    /// Moves `host`'s clock forward by `shift_ms` (negative: backward) as
    /// far as the keys whose names start with one of `prefixes` can tell.
    fn shift_clock(&self, host: Host, shift_ms: i64, prefixes: &[String]) -> Result<(), String>;
}

/// Every fault of `rung`'s run in `scenario` that moves a node's clock,
/// each refused: `why` says what the node is and why its clock cannot be
/// moved (it follows "moves the clock of NODE, ").
pub fn node_clock_refusals(scenario: &Scenario, rung: &str, why: &str) -> Vec<String> {
    let mut refused = Vec::new();
    for (i, fault) in scenario.faults_of(rung).iter().enumerate() {
        if let FaultAction::ClockJump(ClockJump { target, .. })
        | FaultAction::ClockDrift(ClockDrift { target, .. }) = &fault.action
            && target.is_node()
        {
            refused.push(format!(
                "fault {} ({}) moves the clock of {target}, {why}",
                i + 1,
                fault.name()
            ));
        }
    }
    refused
}

/// The real half of `service`.
pub fn real_service(service: &dyn LockService) -> Result<&'static dyn RealService, RunError> {
    (SERVICES.iter().copied())
        .find(|real| real.name() == service.name())
        .ok_or_else(|| {
            RunError::BadInput(format!(
                "the lock service {} has no real servers",
                service.name()
            ))
        })
}

/// The version of the servers of the lock service named `service` when
/// that is not Redis (`etcd 3.4.23`, `zookeeper 3.8.0`, `postgresql
/// 15.18`, `mariadb 10.11.19`); `None` for Redis,
/// or when the service is not installed.
fn other_service_version(service: &str) -> Option<String> {
    match service {
        "etcd" => harness::etcd::version(),
        "zookeeper" => harness::zookeeper::version(),
        "postgres" => harness::postgres::version(),
        "mysql" => harness::mariadb::version(),
        _ => None,
    }
}

/// The lock service `rung` keeps its state on (`redis` for a rung that is
/// not built in).
fn service_of(rung: &str) -> &'static str {
    locks::rung(rung).map_or("redis", |r| r.service)
}

/// What `rung`'s real runs run on, as reports name it: the servers of its
/// lock service, and the store's when they differ (`etcd 3.4.23 (store:
/// redis-server 7.0.15)`).
pub fn servers_for(rung: &str, bin: &ServerBin) -> String {
    match other_service_version(service_of(rung)) {
        Some(version) => format!("{version} (store: {})", bin.description),
        None => bin.description.clone(),
    }
}

/// What a real suite whose runs covered `rungs` ran on: `bin`, and the
/// other services' servers beside it (etcd, ZooKeeper) when some of the
/// rungs ran on them.
pub fn servers_of<'a>(rungs: impl IntoIterator<Item = &'a str>, bin: &ServerBin) -> String {
    let services: std::collections::BTreeSet<&str> = rungs.into_iter().map(service_of).collect();
    std::iter::once(bin.description.clone())
        .chain(services.into_iter().filter_map(other_service_version))
        .collect::<Vec<_>>()
        .join(", ")
}
