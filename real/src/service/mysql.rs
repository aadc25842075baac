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
use crate::nodes::ServerBin;
use harness::mariadb::MariaDbServer;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::mysql::MySqlService;

impl RealService for MySqlService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        super::single::start_each(self.node_hosts(start.topology), MariaDbServer::start)
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        Ok(super::single::refusals(
            harness::mariadb::installed(),
            "MariaDB is not installed (scripts/setup installs Debian's mariadb-server)",
            scenario,
            rung,
            "a MariaDB server: `NOW()` reads the machine's wall clock, which every process \
             here shares",
        ))
    }
}
