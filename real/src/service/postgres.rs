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
use crate::nodes::ServerBin;
use harness::postgres::PgServer;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::postgres::PostgresService;

impl RealService for PostgresService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        super::single::start_each(self.node_hosts(start.topology), PgServer::start)
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        Ok(super::single::refusals(
            harness::postgres::installed(),
            "PostgreSQL 15 is not installed (scripts/setup installs Debian's postgresql-15)",
            scenario,
            rung,
            "a PostgreSQL server: `now()` reads the machine's wall clock, which every \
             process here shares, and libfaketime would have to follow every backend \
             the postmaster forks",
        ))
    }
}
