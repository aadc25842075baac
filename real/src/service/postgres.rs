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
//! A `replicated` deployment runs node-0 as the primary and node-1 on as
//! hot standbys of it (`harness::postgres::standby`), each streaming the
//! WAL through its proxy link to node-0, so that the replication lag (the
//! scenario's `replication_delay_ms`) is the latency of that link from
//! node-0 and a partition cuts the stream. Replication is asynchronous,
//! as PostgreSQL's is by default: a commit is acknowledged before any
//! standby has it. The run starts once every standby has replayed all
//! the primary wrote. A failover is staged as a kill of the primary and
//! a promotion (`pg_promote`): the promoted standby keeps the rows it had
//! replayed, loses those still in the delayed stream, and holds no
//! advisory lock (they are never in the WAL); the other standbys are
//! re-pointed at it through their links. A killed old primary restarted
//! afterwards comes back as a primary of its own: nothing demotes it.
//!
//! Refused: moving the server's clock. `now()` reads the machine's wall
//! clock, which is every process's on this machine; the tool that moves
//! one process's clock, libfaketime, would have to follow every backend
//! the postmaster forks, and is not used here.

use super::single::SingleServers;
use super::{RealDeployment, RealService, RealStart};
use crate::nodes::ServerBin;
use harness::postgres::PgServer;
use model::host::Host;
use model::scenario::{Scenario, TopologyKind};
use sim::service::LockService;
use sim::service::postgres::PostgresService;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a fresh standby may take to replay what the primary wrote.
const CATCH_UP: Duration = Duration::from_secs(30);

impl RealService for PostgresService {
    fn start_real(&self, mut start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let hosts = self.node_hosts(start.topology);
        if start.topology.kind == TopologyKind::Replicated {
            return Ok(Box::new(start_replicated(&mut start, &hosts)?));
        }
        super::single::start_each(hosts, PgServer::start)
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

/// Starts `hosts[0]` as the primary and the rest as its standbys, each
/// streaming through its proxy link to the primary; every pair of
/// standbys gets a link too, for a promotion that re-points the rest.
fn start_replicated(
    start: &mut RealStart<'_>,
    hosts: &[Host],
) -> Result<SingleServers<PgServer>, String> {
    let (&first, standbys) = hosts
        .split_first()
        .ok_or("a replicated PostgreSQL deployment with no node")?;
    let primary = PgServer::start().map_err(|e| format!("PostgreSQL for {first}: {e}"))?;
    let primary_addr = primary.addr();
    let mut servers = BTreeMap::from([(first, primary)]);
    for &standby in standbys {
        start.open(standby, first, primary_addr)?;
        let link = (start.table.addr(standby, first))
            .ok_or_else(|| format!("no link from {standby} to {first}"))?;
        let server = PgServer::start_standby(&servers[&first], link)
            .map_err(|e| format!("PostgreSQL standby {standby} of {first}: {e}"))?;
        servers.insert(standby, server);
    }
    for &from in standbys {
        for &to in standbys {
            if from != to {
                start.open(from, to, servers[&to].addr())?;
            }
        }
    }
    for &standby in standbys {
        servers[&standby]
            .wait_caught_up(primary_addr, CATCH_UP)
            .map_err(|e| format!("PostgreSQL standby {standby}: {e}"))?;
    }
    // The lag is time the WAL spends on its way to the standby; the
    // standby's acknowledgements go back at the base latency.
    let lag = Duration::from_millis(start.topology.replication_delay_ms);
    for &standby in standbys {
        start.table.set_latency(standby, first, start.base_latency);
        if !lag.is_zero() {
            start.table.set_latency_from(first, standby, lag);
        }
        for &other in standbys {
            start.table.set_latency(standby, other, start.base_latency);
        }
    }
    Ok(SingleServers::new(servers))
}
