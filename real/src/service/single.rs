//! The deployment of services whose every node is one server process the
//! harness started (a standalone ZooKeeper, PostgreSQL, MariaDB, or a
//! PostgreSQL primary and its streaming standbys): each node a
//! [`SingleServer`], killed and restarted on its own data, promoted if it
//! is a standby, and with a clock that cannot be moved (each service
//! refuses such faults before the run, with its reason).

use super::RealDeployment;
use crate::links::LinkTable;
use model::host::Host;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// One real server process the harness started.
pub trait SingleServer {
    /// What reports call it (`PostgreSQL`).
    const KIND: &'static str;
    /// Where it listens.
    fn addr(&self) -> SocketAddr;
    /// Whether its process is running.
    fn running(&self) -> bool;
    /// Kills it (`SIGKILL`) and waits until it is gone.
    fn kill(&mut self);
    /// Starts it again on its own data and port.
    fn restart(&mut self) -> std::io::Result<()>;
    /// Ends its recovery, if it is a standby; a server on its own has
    /// nothing to end.
    fn promote(&self) -> std::io::Result<()> {
        Ok(())
    }
    /// Streams from `upstream` from now on, if it is a standby (re-pointed
    /// at a promoted one); a server on its own follows nobody.
    fn follow(&self, _upstream: SocketAddr) -> std::io::Result<()> {
        Ok(())
    }
}

impl SingleServer for harness::zookeeper::ZkServer {
    const KIND: &'static str = "ZooKeeper";
    fn addr(&self) -> SocketAddr {
        harness::zookeeper::ZkServer::addr(self)
    }
    fn running(&self) -> bool {
        harness::zookeeper::ZkServer::running(self)
    }
    fn kill(&mut self) {
        harness::zookeeper::ZkServer::kill(self);
    }
    fn restart(&mut self) -> std::io::Result<()> {
        harness::zookeeper::ZkServer::restart(self)
    }
}

impl SingleServer for harness::postgres::PgServer {
    const KIND: &'static str = "PostgreSQL";
    fn addr(&self) -> SocketAddr {
        harness::postgres::PgServer::addr(self)
    }
    fn running(&self) -> bool {
        harness::postgres::PgServer::running(self)
    }
    fn kill(&mut self) {
        harness::postgres::PgServer::kill(self);
    }
    fn restart(&mut self) -> std::io::Result<()> {
        harness::postgres::PgServer::restart(self)
    }
    fn promote(&self) -> std::io::Result<()> {
        harness::postgres::PgServer::promote(self)
    }
    fn follow(&self, upstream: SocketAddr) -> std::io::Result<()> {
        harness::postgres::PgServer::follow(self, upstream)
    }
}

impl SingleServer for harness::mariadb::MariaDbServer {
    const KIND: &'static str = "MariaDB";
    fn addr(&self) -> SocketAddr {
        harness::mariadb::MariaDbServer::addr(self)
    }
    fn running(&self) -> bool {
        harness::mariadb::MariaDbServer::running(self)
    }
    fn kill(&mut self) {
        harness::mariadb::MariaDbServer::kill(self);
    }
    fn restart(&mut self) -> std::io::Result<()> {
        harness::mariadb::MariaDbServer::restart(self)
    }
}

/// Starts one server per host with `start`; the first failure ends the
/// start (the servers already started are stopped as they drop).
pub fn start_each<S: SingleServer + 'static>(
    hosts: Vec<Host>,
    start: impl Fn() -> std::io::Result<S>,
) -> Result<Box<dyn RealDeployment>, String> {
    let mut servers = BTreeMap::new();
    for host in hosts {
        let server = start().map_err(|e| format!("{} for {host}: {e}", S::KIND))?;
        servers.insert(host, server);
    }
    Ok(Box::new(SingleServers::new(servers)))
}

/// The running servers of one deployment, by node.
pub struct SingleServers<S> {
    servers: BTreeMap<Host, S>,
}

impl<S> SingleServers<S> {
    /// The deployment of `servers`, by node.
    pub fn new(servers: BTreeMap<Host, S>) -> SingleServers<S> {
        SingleServers { servers }
    }
}

impl<S: SingleServer> RealDeployment for SingleServers<S> {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.servers.get(&host).map(S::addr)
    }

    fn running(&self, host: Host) -> bool {
        self.servers.get(&host).is_some_and(S::running)
    }

    fn kill(&mut self, host: Host) {
        if let Some(server) = self.servers.get_mut(&host) {
            server.kill();
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let server = (self.servers.get_mut(&host))
            .ok_or_else(|| format!("{host} is no {} server of this run", S::KIND))?;
        server
            .restart()
            .map_err(|e| format!("restarting {} {host}: {e}", S::KIND))
    }

    /// Promotes `replica` (nothing, for a server on its own), then every
    /// other running server but `old` follows it through its link.
    fn promote(&mut self, replica: Host, old: Host, table: &LinkTable) -> Result<(), String> {
        let server = (self.servers.get(&replica))
            .ok_or_else(|| format!("{replica} is no {} server of this run", S::KIND))?;
        (server.promote()).map_err(|e| format!("promoting {} {replica}: {e}", S::KIND))?;
        for (&other, server) in &self.servers {
            if other == old || other == replica || !server.running() {
                continue;
            }
            if let Some(link) = table.addr(other, replica) {
                (server.follow(link))
                    .map_err(|e| format!("re-pointing {} {other} at {replica}: {e}", S::KIND))?;
            }
        }
        Ok(())
    }

    /// Refused before the run by every service deployed this way.
    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        Err(format!(
            "the clock of {} server {host} cannot be moved by {shift_ms} ms (refused before \
             the run)",
            S::KIND
        ))
    }
}

/// What a service of single servers refuses to stage in `rung`'s run of
/// `scenario`: everything when its server is not `installed` (`missing`
/// says how to install it), and every move of a server's clock (`why`
/// says why, after "moves the clock of NODE, ").
pub fn refusals(
    installed: bool,
    missing: &str,
    scenario: &model::scenario::Scenario,
    rung: &str,
    why: &str,
) -> Vec<String> {
    let mut refused = Vec::new();
    if !installed {
        refused.push(missing.to_string());
    }
    refused.extend(super::node_clock_refusals(scenario, rung, why));
    refused
}
