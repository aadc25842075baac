//! etcd as a lock service on real servers: the deployment's members as
//! one real etcd cluster (`harness::etcd`; a `standalone` deployment is a
//! cluster of one), each member reached by the clients through locklab's
//! proxy like any node.
//!
//! A `cluster` deployment starts its `members` as one cluster, then moves
//! leadership to `redis-0` and waits until every member agrees, so that
//! the leader at the start is `redis-0`, as in the simulator (etcd itself
//! elects whichever member's election timer fires first).
//!
//! Staged: a member's kill and restart (`SIGKILL`, then the same ports
//! and data folder), and a power loss the same way. etcd syncs every
//! write to its log before it answers, so a killed member keeps exactly
//! what a member that lost power keeps: every write it acknowledged. A
//! restarted member rejoins by itself. A promotion (a failover's end)
//! moves leadership to the promoted member: when the old leader is down,
//! etcd first elects a leader on its own (its election timeout, 1 to 2 s,
//! real time the run pays), and if that is another member, leadership
//! is then handed to the promoted one, so that the run goes on as the
//! simulator's does; a promoted member that is not running fails the run.
//! Faults between a client and a member are the proxy's, as for any node.
//!
//! Refused: moving a member's clock. etcd is a Go program, and Go reads
//! the clock through the kernel's vDSO without calling the C library, so
//! libfaketime cannot move it, and nothing else moves the clock of one
//! process. (etcd's leases run on its monotonic clock, which is why the
//! simulator's member ignores a wall-clock move; the simulator's verdict
//! stands alone for such a cell.) The store that holds the resource is a
//! `redis-server`, as in every real run.
//!
//! Refused too: a fault on the messages between two members (a partition,
//! a delay or a slow link with members on both sides). Members talk over
//! their peer URLs, and a member's peer URL is one address that every
//! other member dials, so a proxy in front of it cannot tell which member
//! a connection comes from; nor can each member be given a proxied URL of
//! its own for each peer, since etcd derives a member's ID from its peer
//! URLs and every member must list the same ones.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use harness::etcd::EtcdCluster;
use model::fault::{Delay, FaultAction, Partition, SlowLink};
use model::host::Host;
use model::scenario::{Scenario, Topology, TopologyKind};
use sim::service::LockService;
use sim::service::etcd::EtcdService;
use std::net::SocketAddr;

impl RealService for EtcdService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        Ok(Box::new(EtcdMembers::start(start.topology)?))
    }

    fn refusals(
        &self,
        scenario: &Scenario,
        rung: &str,
        _bin: &ServerBin,
    ) -> Result<Vec<String>, String> {
        let mut refused = Vec::new();
        if !harness::etcd::installed() {
            refused.push(
                "etcd is not installed (scripts/setup installs Debian's etcd-server)".to_string(),
            );
        }
        refused.extend(clock_refusals(scenario, rung));
        refused.extend(member_link_refusals(scenario, rung));
        Ok(refused)
    }
}

/// Every fault of `rung`'s run in `scenario` that moves a member's clock,
/// each refused with the reason.
pub fn clock_refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    super::node_clock_refusals(
        scenario,
        rung,
        "an etcd member: etcd is a Go program that reads the clock through the kernel's \
         vDSO, which libfaketime cannot intercept, and nothing else moves one process's \
         clock (etcd's leases run on its monotonic clock, which such a move leaves alone)",
    )
}

/// Every fault of `rung`'s run in `scenario` on the messages between two
/// members of its deployment (a partition, delay or slow link with a
/// member on each side), each refused with the reason.
pub fn member_link_refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    let topology = scenario.topology_of(rung);
    let members = EtcdService.node_hosts(topology);
    // `master` names a member only where the service points it at one;
    // it may then stand for any member (a failover moves it).
    let master_is_member = (EtcdService.aliases(topology).iter()).any(|(n, _)| *n == Host::Master);
    let member = |h: &Host| members.contains(h) || (master_is_member && *h == Host::Master);
    let mut refused = Vec::new();
    for (i, fault) in scenario.faults_of(rung).iter().enumerate() {
        let (FaultAction::Partition(Partition { a, b, .. })
        | FaultAction::Delay(Delay { a, b, .. })
        | FaultAction::SlowLink(SlowLink { a, b, .. })) = &fault.action
        else {
            continue;
        };
        let mut pairs = Vec::new();
        for x in a.iter().filter(|h| member(h)) {
            for y in b.iter().filter(|h| member(h)) {
                let same =
                    x == y || ((*x == Host::Master || *y == Host::Master) && members.len() < 2);
                if !same && !pairs.contains(&(*y, *x)) {
                    pairs.push((*x, *y));
                }
            }
        }
        if pairs.is_empty() {
            continue;
        }
        let between: Vec<String> = pairs.iter().map(|(x, y)| format!("{x} and {y}")).collect();
        refused.push(format!(
            "fault {} ({}) is on the messages between etcd members ({}): members talk over \
             their peer URLs, and a member's peer URL is one address every other member dials, \
             so a proxy in front of it cannot tell which member a connection comes from; nor \
             can each member be given its own proxied URLs, since etcd derives a member's ID \
             from its peer URLs (faults between a client and a member are staged)",
            i + 1,
            fault.name(),
            between.join(", ")
        ));
    }
    refused
}

/// The running etcd cluster of one deployment: `hosts[i]` is member `i`.
struct EtcdMembers {
    hosts: Vec<Host>,
    cluster: EtcdCluster,
}

impl EtcdMembers {
    /// Starts `topology`'s members as one cluster; a `cluster` deployment
    /// led by `redis-0`.
    fn start(topology: &Topology) -> Result<EtcdMembers, String> {
        let hosts = EtcdService.node_hosts(topology);
        let cluster = EtcdCluster::start(hosts.len())
            .map_err(|e| format!("etcd cluster of {} members: {e}", hosts.len()))?;
        if topology.kind == TopologyKind::Cluster {
            // The simulator's cluster starts with redis-0 leading.
            (cluster.move_leader(0))
                .map_err(|e| format!("making {} the etcd leader: {e}", Host::Node(0)))?;
        }
        Ok(EtcdMembers { hosts, cluster })
    }

    /// `host`'s member index.
    fn index(&self, host: Host) -> Result<usize, String> {
        (self.hosts.iter().position(|h| *h == host))
            .ok_or_else(|| format!("{host} is no etcd member of this run"))
    }
}

impl RealDeployment for EtcdMembers {
    fn hosts(&self) -> Vec<Host> {
        self.hosts.clone()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        let i = self.index(host).ok()?;
        self.cluster.member(i).map(|m| m.addr())
    }

    fn running(&self, host: Host) -> bool {
        (self.index(host).ok())
            .and_then(|i| self.cluster.member(i))
            .is_some_and(|m| m.running())
    }

    fn kill(&mut self, host: Host) {
        if let Ok(i) = self.index(host) {
            let _ = self.cluster.kill(i);
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let i = self.index(host)?;
        (self.cluster.restart(i)).map_err(|e| format!("restarting etcd member {host}: {e}"))
    }

    /// Moves leadership to `replica` (after etcd's own election, when the
    /// old leader is down: see the module's documentation). A single
    /// member is always its own leader.
    fn promote(&mut self, replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        if self.hosts.len() < 2 {
            return Ok(());
        }
        let i = self.index(replica)?;
        (self.cluster.move_leader(i))
            .map_err(|e| format!("making etcd member {replica} the leader: {e}"))
    }

    fn shift_clock(&self, host: Host, shift_ms: i64, _prefixes: &[String]) -> Result<(), String> {
        Err(format!(
            "the clock of etcd member {host} cannot be moved by {shift_ms} ms (refused before \
             the run: see `clock_refusals`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(fault: &str) -> Scenario {
        let text = format!(
            "rungs = [\"etcd-mutex\"]\nduration_ms = 1000\n\
             [[clients]]\ncount = 1\n\
             [[faults]]\n{fault}\n"
        );
        Scenario::parse(&text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
    }

    /// `scenario` in a three-member cluster.
    fn cluster_scenario(fault: &str) -> Scenario {
        let text = format!(
            "rungs = [\"etcd-mutex\"]\nduration_ms = 1000\n\
             [topology]\nkind = \"cluster\"\n\
             [[clients]]\ncount = 2\n\
             [[faults]]\n{fault}\n"
        );
        Scenario::parse(&text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_partition_between_members_is_refused_with_its_reason() {
        let cut = cluster_scenario(
            "kind = \"partition\"\nat_ms = 100\na = [\"redis-0\"]\nb = [\"redis-1\", \"redis-2\", \"client-0\"]",
        );
        let refused = member_link_refusals(&cut, "etcd-mutex");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("fault 1 (partition)"), "{refused:?}");
        assert!(
            refused[0].contains("redis-0 and redis-1, redis-0 and redis-2"),
            "{refused:?}"
        );
        assert!(refused[0].contains("peer URL"), "{refused:?}");
        let slow = cluster_scenario(
            "kind = \"slow-link\"\nat_ms = 100\na = [\"redis-1\"]\nb = [\"redis-2\"]\nlatency_ms = 50",
        );
        assert_eq!(member_link_refusals(&slow, "etcd-mutex").len(), 1);
    }

    #[test]
    fn a_partition_between_a_client_and_a_member_is_stageable() {
        let cut = cluster_scenario(
            "kind = \"partition\"\nat_ms = 100\na = [\"client-0\", \"client-1\"]\nb = [\"redis-0\"]",
        );
        assert!(member_link_refusals(&cut, "etcd-mutex").is_empty());
        let delay = cluster_scenario(
            "kind = \"delay\"\nat_ms = 100\na = [\"client-0\"]\nb = [\"redis-1\", \"store\"]\nduration_ms = 200",
        );
        assert!(member_link_refusals(&delay, "etcd-mutex").is_empty());
        let crash = cluster_scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-2\"");
        assert!(member_link_refusals(&crash, "etcd-mutex").is_empty());
    }

    #[test]
    fn an_etcd_cluster_deployment_starts_led_by_redis_0_and_promotes_on_request() {
        let topology =
            cluster_scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-2\"").topology;
        let mut members = EtcdMembers::start(&topology).expect("etcd (scripts/setup installs it)");
        let nodes = [Host::Node(0), Host::Node(1), Host::Node(2)];
        assert_eq!(members.hosts(), nodes);
        assert_eq!(
            members.cluster.leader(),
            Some(0),
            "redis-0 leads at the start"
        );
        assert!(nodes.iter().all(|n| members.running(*n)));
        assert!(members.addr(Host::Node(3)).is_none());
        // A failover: the leader dies, redis-2 is promoted; etcd elects
        // one of the two survivors first.
        members.kill(Host::Node(0));
        assert!(!members.running(Host::Node(0)));
        let table = LinkTable::new();
        (members.promote(Host::Node(2), Host::Node(0), &table)).expect("promoted");
        assert_eq!(members.cluster.leader(), Some(2));
        members.restart(Host::Node(0)).expect("restarted");
        assert!(members.running(Host::Node(0)));
        assert!(
            members.restart(Host::Store).is_err(),
            "the store is no member"
        );
    }

    #[test]
    fn a_member_clock_jump_is_refused_with_its_reason() {
        let jump =
            scenario("kind = \"clock-jump\"\nat_ms = 100\ntarget = \"redis-0\"\njump_ms = 500");
        let refused = clock_refusals(&jump, "etcd-mutex");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("vDSO"), "{refused:?}");
    }

    #[test]
    fn a_client_clock_jump_and_a_member_crash_are_stageable() {
        let client =
            scenario("kind = \"clock-jump\"\nat_ms = 100\ntarget = \"client-0\"\njump_ms = 500");
        assert!(clock_refusals(&client, "etcd-mutex").is_empty());
        let crash = scenario("kind = \"crash\"\nat_ms = 100\ntarget = \"redis-0\"");
        assert!(clock_refusals(&crash, "etcd-mutex").is_empty());
    }
}
