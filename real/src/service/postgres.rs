//! PostgreSQL as a lock service on real servers: the deployment's server
//! as one real PostgreSQL 15 (`harness::postgres`), reached by the
//! clients through locklab's proxy like any node.
//!
//! Staged: the server's kill and restart (`SIGKILL` to the postmaster,
//! then the same port and data folder), and a power loss the same way: a
//! commit is fsynced before it is acknowledged, so a killed server keeps
//! exactly what one that lost power keeps, every committed row, and no
//! session (the killed postmaster's backends exit as they notice). Faults
//! between a client and the server are the proxy's: a client cut off
//! keeps its session on the server, as a silent client does until TCP
//! keepalive gives up on it.
//!
//! Refused: moving the server's clock. `now()` reads the machine's wall
//! clock, which is every process's on this machine; the tool that moves
//! one process's clock, libfaketime, would have to follow every backend
//! the postmaster forks, and is not used here.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use harness::postgres::PgServer;
use model::host::Host;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::postgres::PostgresService;
use std::collections::BTreeMap;
use std::net::SocketAddr;

impl RealService for PostgresService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let mut servers = BTreeMap::new();
        for host in self.node_hosts(start.topology) {
            let server = PgServer::start().map_err(|e| format!("PostgreSQL for {host}: {e}"))?;
            servers.insert(host, server);
        }
        Ok(Box::new(PostgresServers { servers }))
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        let mut refused = Vec::new();
        if !harness::postgres::installed() {
            refused.push(
                "PostgreSQL 15 is not installed (scripts/setup installs Debian's postgresql-15)"
                    .to_string(),
            );
        }
        refused.extend(super::node_clock_refusals(
            scenario,
            rung,
            "a PostgreSQL server: `now()` reads the machine's wall clock, which every \
             process here shares, and libfaketime would have to follow every backend \
             the postmaster forks",
        ));
        Ok(refused)
    }
}

/// The running servers of one deployment, by node.
struct PostgresServers {
    servers: BTreeMap<Host, PgServer>,
}

impl RealDeployment for PostgresServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.servers.get(&host).map(PgServer::addr)
    }

    fn running(&self, host: Host) -> bool {
        self.servers.get(&host).is_some_and(PgServer::running)
    }

    fn kill(&mut self, host: Host) {
        if let Some(server) = self.servers.get_mut(&host) {
            server.kill();
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let server = (self.servers.get_mut(&host))
            .ok_or_else(|| format!("{host} is no PostgreSQL server of this run"))?;
        server
            .restart()
            .map_err(|e| format!("restarting PostgreSQL {host}: {e}"))
    }

    /// A single server has no standby to promote.
    fn promote(&mut self, _replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        Ok(())
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        Err(format!(
            "the clock of PostgreSQL server {host} cannot be moved by {shift_ms} ms (refused \
             before the run)"
        ))
    }
}
