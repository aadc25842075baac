//! ZooKeeper as a lock service on real servers: the deployment's server
//! as one real ZooKeeper (`harness::zookeeper`), reached by the clients
//! through locklab's proxy like any node.
//!
//! Staged: the server's kill and restart (`SIGKILL`, then the same port
//! and data folder), and a power loss the same way: ZooKeeper syncs its
//! transaction log before it answers (`forceSync=yes`), so a killed
//! server keeps exactly what a server that lost power keeps, every write
//! it acknowledged. A restarted server reloads its sessions and gives
//! each its whole timeout again, as the simulated one does. Faults
//! between a client and the server are the proxy's, as for any node.
//!
//! Refused: moving the server's clock. ZooKeeper expires sessions on its
//! monotonic clock (`System.nanoTime`), which a jump of the wall clock
//! leaves alone (the simulated server ignores such a move for that
//! reason); the only tool that moves one process's clock, libfaketime,
//! moves the monotonic clock with it, which is a different fault.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use harness::zookeeper::ZkServer;
use model::host::Host;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::zookeeper::ZooKeeperService;
use std::collections::BTreeMap;
use std::net::SocketAddr;

impl RealService for ZooKeeperService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let mut servers = BTreeMap::new();
        for host in self.node_hosts(start.topology) {
            let server = ZkServer::start().map_err(|e| format!("ZooKeeper for {host}: {e}"))?;
            servers.insert(host, server);
        }
        Ok(Box::new(ZooKeeperServers { servers }))
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        let mut refused = Vec::new();
        if !harness::zookeeper::installed() {
            refused.push(
                "ZooKeeper is not installed (scripts/setup installs Debian's zookeeper)"
                    .to_string(),
            );
        }
        refused.extend(clock_refusals(scenario, rung));
        Ok(refused)
    }
}

/// Every fault of `rung`'s run in `scenario` that moves a ZooKeeper
/// server's clock, each refused with the reason.
pub fn clock_refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    super::node_clock_refusals(
        scenario,
        rung,
        "a ZooKeeper server: ZooKeeper expires sessions on its monotonic clock, which a \
         wall-clock move leaves alone, and libfaketime, the only tool that moves one \
         process's clock, moves the monotonic clock with it",
    )
}

/// The running servers of one deployment, by node.
struct ZooKeeperServers {
    servers: BTreeMap<Host, ZkServer>,
}

impl RealDeployment for ZooKeeperServers {
    fn hosts(&self) -> Vec<Host> {
        self.servers.keys().copied().collect()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.servers.get(&host).map(ZkServer::addr)
    }

    fn running(&self, host: Host) -> bool {
        self.servers.get(&host).is_some_and(ZkServer::running)
    }

    fn kill(&mut self, host: Host) {
        if let Some(server) = self.servers.get_mut(&host) {
            server.kill();
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let server = (self.servers.get_mut(&host))
            .ok_or_else(|| format!("{host} is no ZooKeeper server of this run"))?;
        server
            .restart()
            .map_err(|e| format!("restarting ZooKeeper {host}: {e}"))
    }

    /// A standalone server has no one to hand over to.
    fn promote(&mut self, _replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        Ok(())
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        Err(format!(
            "the clock of ZooKeeper server {host} cannot be moved by {shift_ms} ms (refused \
             before the run: see `clock_refusals`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(fault: &str) -> Scenario {
        let text = format!(
            "rungs = [\"zk-recipe\"]\nduration_ms = 1000\n\
             [[clients]]\ncount = 1\n\
             [[faults]]\n{fault}\n"
        );
        Scenario::parse(&text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_server_clock_jump_is_refused_with_its_reason() {
        let jump =
            scenario("kind = \"clock-jump\"\nat_ms = 100\ntarget = \"redis-0\"\njump_ms = 500");
        let refused = clock_refusals(&jump, "zk-recipe");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("monotonic clock"), "{refused:?}");
    }

    #[test]
    fn a_client_clock_jump_and_a_server_crash_are_stageable() {
        let client =
            scenario("kind = \"clock-jump\"\nat_ms = 100\ntarget = \"client-0\"\njump_ms = 500");
        assert!(clock_refusals(&client, "zk-recipe").is_empty());
        let crash = scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"");
        assert!(clock_refusals(&crash, "zk-recipe").is_empty());
    }

    #[test]
    fn a_standalone_deployment_kills_and_restarts_its_server_keeping_its_port() {
        if !harness::zookeeper::installed() {
            eprintln!("skipped: ZooKeeper is not installed (scripts/setup installs it)");
            return;
        }
        let topology = scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"").topology;
        let hosts = ZooKeeperService.node_hosts(&topology);
        let mut servers = ZooKeeperServers {
            servers: (hosts.iter())
                .map(|&h| (h, ZkServer::start().expect("ZooKeeper starts")))
                .collect(),
        };
        let node = Host::Node(0);
        assert_eq!(servers.hosts(), vec![node]);
        let addr = servers.addr(node).expect("an address");
        assert!(servers.running(node));
        servers.kill(node);
        assert!(!servers.running(node));
        servers.restart(node).expect("restarted");
        assert!(servers.running(node));
        assert_eq!(servers.addr(node), Some(addr), "the same port");
        assert!(
            servers.restart(Host::Store).is_err(),
            "the store is no server"
        );
    }
}
