//! MySQL (MariaDB) as a lock service on real servers: the deployment's
//! server as one real MariaDB 10.11 (`harness::mariadb`), reached by the
//! clients through locklab's proxy like any node.
//!
//! Staged: the server's kill and restart (`SIGKILL`, then the same port
//! and data folder), and a power loss the same way: InnoDB writes a
//! commit's redo log to disk before it acknowledges it, so a killed
//! server keeps every committed row and no session, nor any named lock.
//! Faults between a client and the server are the proxy's: a client cut
//! off keeps its session, and its named locks, on the server, as a silent
//! client does until the server's `wait_timeout` (eight hours by default)
//! or TCP keepalive ends it.
//!
//! Refused: moving the server's clock. `NOW()` reads the machine's wall
//! clock, which every process here shares.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use harness::mariadb::MariaDbServer;
use model::host::Host;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::mysql::MySqlService;
use std::collections::BTreeMap;
use std::net::SocketAddr;

impl RealService for MySqlService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let mut servers = BTreeMap::new();
        for host in self.node_hosts(start.topology) {
            let server = MariaDbServer::start().map_err(|e| format!("MariaDB for {host}: {e}"))?;
            servers.insert(host, server);
        }
        Ok(Box::new(MariaDbServers { servers }))
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        let mut refused = Vec::new();
        if !harness::mariadb::installed() {
            refused.push(
                "MariaDB is not installed (scripts/setup installs Debian's mariadb-server)"
                    .to_string(),
            );
        }
        refused.extend(super::node_clock_refusals(
            scenario,
            rung,
            "a MariaDB server: `NOW()` reads the machine's wall clock, which every process \
             here shares",
        ));
        Ok(refused)
    }
}

/// The running servers of one deployment, by node.
struct MariaDbServers {
    servers: BTreeMap<Host, MariaDbServer>,
}

impl RealDeployment for MariaDbServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.servers.get(&host).map(MariaDbServer::addr)
    }

    fn running(&self, host: Host) -> bool {
        self.servers.get(&host).is_some_and(MariaDbServer::running)
    }

    fn kill(&mut self, host: Host) {
        if let Some(server) = self.servers.get_mut(&host) {
            server.kill();
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let server = (self.servers.get_mut(&host))
            .ok_or_else(|| format!("{host} is no MariaDB server of this run"))?;
        server
            .restart()
            .map_err(|e| format!("restarting MariaDB {host}: {e}"))
    }

    /// A single server has no replica to promote.
    fn promote(&mut self, _replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        Ok(())
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        Err(format!(
            "the clock of MariaDB server {host} cannot be moved by {shift_ms} ms (refused \
             before the run)"
        ))
    }
}
