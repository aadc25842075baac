//! Redis as a lock service on real servers: `redis-server` processes
//! ([`crate::nodes`]), one per node of the deployment.
//!
//! A replicated deployment's replicas replicate from the master through
//! the proxy (`--replicaof` its link), so that the replication stream can
//! be delayed (the scenario's `replication_delay_ms`) and cut; every pair
//! of replicas has a link too, for a promotion that re-points the rest.
//! The run starts once every replica has finished its first sync. A
//! promotion is `REPLICAOF NO ONE`; a node's clock moves by shifting the
//! deadlines of its keys ([`deadlines`]).

pub mod deadlines;
pub mod refusals;

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::{Nodes, ServerBin, command};
use model::host::Host;
use model::scenario::{Scenario, TopologyKind};
use sim::service::LockService;
use sim::service::redis::RedisService;
use std::net::SocketAddr;
use std::time::Duration;

impl RealService for RedisService {
    fn start_real(&self, mut start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let topology = start.topology;
        let mut nodes = Nodes::new(start.run_id, start.bin.clone()).map_err(|e| e.to_string())?;
        let node_hosts = self.node_hosts(topology);
        let replicated = topology.kind == TopologyKind::Replicated;
        let first = node_hosts[0];
        let first_addr = nodes.start(first, topology.persistence, &[])?;
        let replicas = &node_hosts[1..];
        for &host in replicas {
            let extra = if replicated {
                // A replica reaches its master through the proxy, so that
                // the replication stream can be delayed and cut.
                start.open(host, first, first_addr)?;
                let port = start.table.addr(host, first).map(|a| a.port()).unwrap_or(0);
                vec![
                    "--replicaof".to_string(),
                    "127.0.0.1".to_string(),
                    port.to_string(),
                ]
            } else {
                Vec::new()
            };
            nodes.start(host, topology.persistence, &extra)?;
        }
        if replicated {
            link_replicas(&mut start, &nodes, replicas)?;
            for &replica in replicas {
                nodes.wait_synced(replica)?;
            }
            // The lag is time a write spends on its way to the replica.
            let lag = Duration::from_millis(topology.replication_delay_ms);
            for &replica in replicas {
                start.table.set_latency(replica, first, start.base_latency);
                if !lag.is_zero() {
                    start.table.set_latency_from(first, replica, lag);
                }
            }
            for &from in replicas {
                for &to in replicas {
                    start.table.set_latency(from, to, start.base_latency);
                }
            }
        }
        Ok(Box::new(RedisServers { nodes }))
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        let mut refused = refusals::scenario_refusals(scenario, rung);
        refused.extend(refusals::server_refusals(rung, bin)?);
        Ok(refused)
    }
}

/// Links between every pair of replicas, for a promotion that re-points
/// the remaining replicas.
fn link_replicas(
    start: &mut RealStart<'_>,
    nodes: &Nodes,
    replicas: &[Host],
) -> Result<(), String> {
    for &from in replicas {
        for &to in replicas {
            if from != to
                && let Some(addr) = nodes.addr(to)
            {
                start.open(from, to, addr)?;
            }
        }
    }
    Ok(())
}

/// The running `redis-server` processes of one deployment.
struct RedisServers {
    nodes: Nodes,
}

impl RealDeployment for RedisServers {
    fn hosts(&self) -> Vec<Host> {
        self.nodes.hosts()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.nodes.addr(host)
    }

    fn running(&self, host: Host) -> bool {
        self.nodes.running(host)
    }

    fn kill(&mut self, host: Host) {
        self.nodes.kill(host);
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        self.nodes.restart(host)
    }

    fn promote(&mut self, replica: Host, old: Host, table: &LinkTable) -> Result<(), String> {
        let addr = (self.nodes.addr(replica)).ok_or_else(|| format!("{replica} has no address"))?;
        command(addr, &["REPLICAOF", "NO", "ONE"])?;
        for other in self.nodes.hosts() {
            if other == old || other == replica {
                continue;
            }
            if let (Some(other_addr), Some(link)) =
                (self.nodes.addr(other), table.addr(other, replica))
            {
                let port = link.port().to_string();
                command(other_addr, &["REPLICAOF", "127.0.0.1", &port])?;
            }
        }
        Ok(())
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, prefixes: &[String]) -> Result<(), String> {
        let addr =
            (self.nodes.addr(host)).ok_or_else(|| format!("{host} is not a node of this run"))?;
        deadlines::shift_deadlines(addr, shift_ms, prefixes)
            .map_err(|e| format!("shifting the deadlines of {host}: {e}"))?;
        Ok(())
    }
}
