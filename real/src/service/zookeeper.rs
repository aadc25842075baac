//! ZooKeeper as a lock service on real servers: the deployment's server
//! as one real ZooKeeper (`harness::zookeeper`), or a `cluster`
//! deployment's three as one real ensemble, each reached by the clients
//! through locklab's proxy like any node.
//!
//! An ensemble starts its three servers at once, and then makes sure
//! `redis-2` (`myid` 3) leads, as in the simulator: ZooKeeper's election
//! prefers the highest id when the logs are level, so it usually does,
//! but a server that comes up late finds the other two already led by the
//! higher of them. Then the leader is killed and restarted, once: the two
//! left elect the higher of themselves, `redis-2` whenever it is one.
//!
//! Staged: the server's kill and restart (`SIGKILL`, then the same port
//! and data folder), and a power loss the same way: ZooKeeper syncs its
//! transaction log before it answers (`forceSync=yes`), so a killed
//! server keeps exactly what a server that lost power keeps, every write
//! it acknowledged. A restarted server reloads its sessions and gives
//! each its whole timeout again, as the simulated one does; a restarted
//! member of an ensemble rejoins it by itself, and the survivors of a
//! leader's death elect a new one without help. Faults between a client
//! and a server are the proxy's, as for any node.
//!
//! Refused: moving the server's clock. ZooKeeper expires sessions on its
//! monotonic clock (`System.nanoTime`), which a jump of the wall clock
//! leaves alone (the simulated server ignores such a move for that
//! reason); the only tool that moves one process's clock, libfaketime,
//! moves the monotonic clock with it, which is a different fault.
//!
//! Faults between two members of an ensemble are the proxy's too: each
//! member's `zoo.cfg` names its peers' quorum and election ports at the
//! proxy's links from it to them (a member knows a peer by the id the
//! peer sends, not by its address, so each member can be told addresses
//! of its own), and a partition between two members cuts both links of
//! the pair, whichever of them dialed. When the partition heals, the
//! connections it wedged are closed, as the resets a real network brings
//! after a cut would close them, and the members dial each other again.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use crate::proxy::Link;
use harness::zookeeper::{ZkEnsemble, ZkServer};
use model::host::Host;
use model::scenario::{Scenario, TopologyKind};
use sim::service::LockService;
use sim::service::zookeeper::ZooKeeperService;
use std::net::SocketAddr;

impl RealService for ZooKeeperService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        if start.topology.kind == TopologyKind::Cluster {
            return Ok(Box::new(ZooKeeperEnsemble::start(start)?));
        }
        super::single::start_each(self.node_hosts(start.topology), ZkServer::start)
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

/// What a server's clock move answers: such a move is refused before the
/// run ([`clock_refusals`]), so reaching here is a staging error.
fn clock_refused(host: Host, shift_ms: i64) -> Result<(), String> {
    Err(format!(
        "the clock of ZooKeeper server {host} cannot be moved by {shift_ms} ms (refused \
         before the run: see `clock_refusals`)"
    ))
}

/// The running ensemble of a `cluster` deployment: `hosts[i]` is server
/// `i` (`myid` `i + 1`).
struct ZooKeeperEnsemble {
    hosts: Vec<Host>,
    ensemble: ZkEnsemble,
}

/// The ensemble's index of the server that leads at the start, as in the
/// simulator: the highest id.
const FIRST_LEADER: usize = harness::zookeeper::ENSEMBLE_SIZE - 1;

impl ZooKeeperEnsemble {
    /// Starts `start.topology`'s three servers as one ensemble led by
    /// `redis-2`, each member dialing its peers through the proxy.
    fn start(start: RealStart<'_>) -> Result<ZooKeeperEnsemble, String> {
        let hosts = ZooKeeperService.node_hosts(start.topology);
        if hosts.len() != harness::zookeeper::ENSEMBLE_SIZE {
            return Err(format!(
                "a real ZooKeeper ensemble has {} servers; this deployment has {}",
                harness::zookeeper::ENSEMBLE_SIZE,
                hosts.len()
            ));
        }
        // The links of the latest attempt: one that failed leaves its
        // links behind, unused.
        let mut links: Vec<(Host, Host, Link)> = Vec::new();
        let proxy = start.proxy;
        let mut route = |from: usize, to: usize, quorum: SocketAddr, election: SocketAddr| {
            if (from, to) == (0, 1) {
                links.clear();
            }
            let (dialer, target) = (hosts[from], hosts[to]);
            let mut via = |port: &str, addr: SocketAddr| {
                let link = proxy.open(&format!("{dialer}|{target} {port}"), addr)?;
                link.close_wedged_on_heal();
                let at = link.addr();
                links.push((dialer, target, link));
                Ok::<SocketAddr, std::io::Error>(at)
            };
            Ok((via("quorum", quorum)?, via("election", election)?))
        };
        let mut ensemble = ZkEnsemble::start_routed(&mut route)
            .map_err(|e| format!("ZooKeeper ensemble of three: {e}"))?;
        for (dialer, target, link) in links {
            start.table.insert(dialer, target, link);
        }
        let leader = ensemble.leader();
        if let Some(other) = leader.filter(|&i| i != FIRST_LEADER) {
            // The two left elect the higher of themselves: FIRST_LEADER.
            (ensemble.kill(other).and_then(|()| ensemble.restart(other)))
                .map_err(|e| format!("handing the ZooKeeper ensemble to redis-2: {e}"))?;
        }
        if ensemble.leader() != Some(FIRST_LEADER) {
            return Err(format!(
                "the ZooKeeper ensemble is led by server {:?}, not redis-2, after one hand-over",
                ensemble.leader()
            ));
        }
        Ok(ZooKeeperEnsemble { hosts, ensemble })
    }

    /// `host`'s index in the ensemble.
    fn index(&self, host: Host) -> Result<usize, String> {
        (self.hosts.iter().position(|h| *h == host))
            .ok_or_else(|| format!("{host} is no ZooKeeper server of this run"))
    }
}

impl RealDeployment for ZooKeeperEnsemble {
    fn hosts(&self) -> Vec<Host> {
        self.hosts.clone()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        let i = self.index(host).ok()?;
        self.ensemble.addrs().get(i).copied()
    }

    fn running(&self, host: Host) -> bool {
        self.index(host).is_ok_and(|i| self.ensemble.running(i))
    }

    fn kill(&mut self, host: Host) {
        if let Ok(i) = self.index(host) {
            let _ = self.ensemble.kill(i);
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let i = self.index(host)?;
        (self.ensemble.restart(i)).map_err(|e| format!("restarting ZooKeeper {host}: {e}"))
    }

    /// ZooKeeper has no command to hand leadership over: an ensemble's
    /// leader is whom its election chose, as in the simulator.
    fn promote(&mut self, _replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        Ok(())
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        clock_refused(host, shift_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::Proxy;
    use std::time::{Duration, Instant};

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

    /// Whether to skip a test that needs ZooKeeper, saying so.
    fn skipped() -> bool {
        let missing = !harness::zookeeper::installed();
        if missing {
            eprintln!("skipped: ZooKeeper is not installed (scripts/setup installs it)");
        }
        missing
    }

    /// The store's server, as a run is given it (ZooKeeper's runs use it
    /// only for the store).
    fn store_bin() -> ServerBin {
        ServerBin {
            path: "redis-server".into(),
            description: "redis-server".into(),
        }
    }

    /// `scenario` on an ensemble of three.
    fn ensemble_scenario(fault: &str) -> Scenario {
        let text = format!(
            "rungs = [\"zk-recipe\"]\nduration_ms = 1000\n\
             [topology]\nkind = \"cluster\"\n\
             [[clients]]\ncount = 2\n\
             [[faults]]\n{fault}\n"
        );
        Scenario::parse(&text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_partition_between_ensemble_members_is_stageable() {
        let cut = ensemble_scenario(
            "kind = \"partition\"\nat_ms = 100\na = [\"redis-0\"]\nb = [\"redis-1\", \"redis-2\"]",
        );
        let bin = store_bin();
        let refused = ZooKeeperService
            .refusals(&cut, "zk-recipe", &bin)
            .expect("refusals");
        assert!(
            refused.iter().all(|r| r.contains("not installed")),
            "{refused:?}"
        );
    }

    #[test]
    fn an_ensemble_starts_led_by_redis_2_and_a_member_cut_off_through_the_proxy_stops_serving() {
        if skipped() {
            return;
        }
        let topology =
            ensemble_scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-2\"").topology;
        let proxy = Proxy::start().expect("a proxy");
        let mut table = LinkTable::new();
        let bin = store_bin();
        let mut servers = ZooKeeperEnsemble::start(RealStart {
            topology: &topology,
            bin: &bin,
            run_id: "zk-ensemble-test",
            proxy: &proxy,
            table: &mut table,
            base_latency: Duration::ZERO,
        })
        .expect("an ensemble");
        let nodes = [Host::Node(0), Host::Node(1), Host::Node(2)];
        assert_eq!(servers.hosts(), nodes);
        assert_eq!(servers.ensemble.leader(), Some(2), "redis-2 leads");
        assert!(nodes.iter().all(|n| servers.running(*n)));
        assert!(servers.addr(Host::Node(3)).is_none());

        // redis-0 cut off from both peers: within syncLimit it stops
        // serving, while the other two go on.
        let (cut, rest) = (Host::Node(0), [Host::Node(1), Host::Node(2)]);
        for other in rest {
            table.set_cut(cut, other, true);
            table.set_cut(other, cut, true);
        }
        let addrs = servers.ensemble.addrs();
        let deadline = Instant::now() + Duration::from_secs(20);
        while harness::zookeeper::mode(addrs[0]).is_some() {
            assert!(
                Instant::now() < deadline,
                "redis-0 still serves when cut off"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            harness::zookeeper::mode(addrs[1]).is_some(),
            "redis-1 serves"
        );
        assert_eq!(servers.ensemble.leader(), Some(2), "redis-2 still leads");
        // Healed, it follows again.
        for other in rest {
            table.set_cut(cut, other, false);
            table.set_cut(other, cut, false);
        }
        servers.ensemble.wait_serving().expect("redis-0 rejoins");

        servers.kill(Host::Node(2));
        assert!(!servers.running(Host::Node(2)));
        servers.restart(Host::Node(2)).expect("rejoins");
        assert!(servers.running(Host::Node(2)));
        assert!(servers.ensemble.leader().is_some(), "one leads");
        assert!(
            servers.restart(Host::Store).is_err(),
            "the store is no server"
        );
    }

    #[test]
    fn a_standalone_deployment_kills_and_restarts_its_server_keeping_its_port() {
        if skipped() {
            return;
        }
        let topology = scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"").topology;
        let hosts = ZooKeeperService.node_hosts(&topology);
        let mut servers =
            super::super::single::start_each(hosts, ZkServer::start).expect("ZooKeeper starts");
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
