//! etcd as a lock service on real servers: one real `etcd` member per
//! node of the deployment (`harness::etcd`), reached by the clients
//! through locklab's proxy like any node.
//!
//! Staged: a member's kill and restart (`SIGKILL`, then the same ports
//! and data folder), and a power loss the same way. etcd syncs every
//! write to its log before it answers, so a killed member keeps exactly
//! what a member that lost power keeps: every write it acknowledged.
//!
//! Refused: moving a member's clock. etcd is a Go program, and Go reads
//! the clock through the kernel's vDSO without calling the C library, so
//! libfaketime cannot move it, and nothing else moves the clock of one
//! process. (etcd's leases run on its monotonic clock, which is why the
//! simulator's member ignores a wall-clock move; the simulator's verdict
//! stands alone for such a cell.) The store that holds the resource is a
//! `redis-server`, as in every real run.

use super::{RealDeployment, RealService, RealStart};
use crate::links::LinkTable;
use crate::nodes::ServerBin;
use harness::etcd::EtcdServer;
use model::fault::{ClockDrift, ClockJump, FaultAction};
use model::host::Host;
use model::scenario::Scenario;
use sim::service::LockService;
use sim::service::etcd::EtcdService;
use std::collections::BTreeMap;
use std::net::SocketAddr;

impl RealService for EtcdService {
    fn start_real(&self, start: RealStart<'_>) -> Result<Box<dyn RealDeployment>, String> {
        let mut members = BTreeMap::new();
        for host in self.node_hosts(start.topology) {
            let member = EtcdServer::start().map_err(|e| format!("etcd member {host}: {e}"))?;
            members.insert(host, member);
        }
        Ok(Box::new(EtcdMembers { members }))
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
        Ok(refused)
    }
}

/// Every fault of `rung`'s run in `scenario` that moves a member's clock,
/// each refused with the reason.
pub fn clock_refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    let mut refused = Vec::new();
    for (i, fault) in scenario.faults_of(rung).iter().enumerate() {
        if let FaultAction::ClockJump(ClockJump { target, .. })
        | FaultAction::ClockDrift(ClockDrift { target, .. }) = &fault.action
            && target.is_node()
        {
            refused.push(format!(
                "fault {} ({}) moves the clock of {target}, an etcd member: etcd is a Go \
                 program that reads the clock through the kernel's vDSO, which libfaketime \
                 cannot intercept, and nothing else moves one process's clock (etcd's \
                 leases run on its monotonic clock, which such a move leaves alone)",
                i + 1,
                fault.name()
            ));
        }
    }
    refused
}

/// The running etcd members of one deployment, by node.
struct EtcdMembers {
    members: BTreeMap<Host, EtcdServer>,
}

impl RealDeployment for EtcdMembers {
    fn hosts(&self) -> Vec<Host> {
        self.members.keys().copied().collect()
    }

    fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.members.get(&host).map(EtcdServer::addr)
    }

    fn running(&self, host: Host) -> bool {
        self.members.get(&host).is_some_and(EtcdServer::running)
    }

    fn kill(&mut self, host: Host) {
        if let Some(member) = self.members.get_mut(&host) {
            member.kill();
        }
    }

    fn restart(&mut self, host: Host) -> Result<(), String> {
        let member = (self.members.get_mut(&host)).ok_or_else(|| format!("{host} is no member"))?;
        member
            .restart()
            .map_err(|e| format!("restarting etcd member {host}: {e}"))
    }

    /// A single member is always its own leader.
    fn promote(&mut self, _replica: Host, _old: Host, _table: &LinkTable) -> Result<(), String> {
        Ok(())
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
