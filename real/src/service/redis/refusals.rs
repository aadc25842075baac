//! What real mode can stage of a node fault on `redis-server`, and what
//! it refuses.
//!
//! Staged: node clock jumps and drift on a node without replicas (its
//! keys' deadlines shifted, see [`super::deadlines`]), node kills and
//! restarts (`SIGKILL`, same port, directory and config), power loss of
//! a node without persistence or with `appendfsync always` (the node is
//! first cut off from every host through the proxy, so no peer hears it
//! close, then killed: with those settings a power loss keeps exactly
//! what a kill keeps), failover (kill the master, `REPLICAOF NO ONE` on
//! its first replica after the delay, `master` re-pointed).
//!
//! Refused:
//! - a clock jump or drift of a node in a replicated topology with
//!   replicas: Redis propagates absolute deadlines, so shifting them on the
//!   master shifts the replicas' too, where the simulator moves only the
//!   master's clock (and a replica is read-only). Moving the server's
//!   clock itself (libfaketime) aborts at start-up on Debian's
//!   jemalloc-built redis-server 7.0.15 ("unexpected recursive calls to
//!   clock_gettime");
//! - a rung relying on a command newer than the server (`native-cad`'s
//!   `DELEX`/`DELIFEQ` and `SET ... IFEQ` on redis-server 7.0), asked of
//!   the server itself ([`crate::server_features`]);
//! - a power loss with `appendfsync everysec`: what it loses (up to the
//!   last second of writes the kernel had not yet flushed) cannot be made
//!   to happen by killing a process, whose written data the page cache
//!   keeps.

use crate::nodes::ServerBin;
use model::fault::CrashKind;
use model::fault::{ClockDrift, ClockJump, Crash, FaultAction};
use model::scenario::Persistence;
use model::scenario::{Scenario, TopologyKind};

/// Every part of `rung`'s run in `scenario` Redis's servers cannot stage,
/// in the scenario's order; empty when the whole run can be staged.
pub fn scenario_refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    let topology = scenario.topology_of(rung);
    let mut refused = Vec::new();
    for (i, fault) in scenario.faults_of(rung).iter().enumerate() {
        let n = i + 1;
        match &fault.action {
            FaultAction::ClockJump(ClockJump { target, .. })
            | FaultAction::ClockDrift(ClockDrift { target, .. })
                if target.is_node()
                    && topology.kind == TopologyKind::Replicated
                    && topology.replicas > 0 =>
            {
                refused.push(format!(
                    "fault {n} ({}) moves the clock of {target}, a node of a replicated \
                     topology: Redis propagates absolute deadlines to replicas, so shifting \
                     the master's deadlines would shift its replicas' too (their clocks did \
                     not move), and a replica is read-only",
                    fault.name()
                ));
            }
            FaultAction::Crash(Crash {
                how: CrashKind::PowerLoss,
                target,
                ..
            }) if target.is_some_and(|t| t.client().is_none())
                && topology.persistence == Persistence::AofEverysec =>
            {
                refused.push(format!(
                    "fault {n} (crash, power-loss) with appendfsync everysec: losing the writes \
                     of the last second that were not flushed cannot be staged by killing a process"
                ));
            }
            _ => {}
        }
    }
    refused
}

/// What the real server lacks of the commands `rung` relies on, each as a
/// refusal naming the command (asks a scratch server only when the rung
/// relies on a command newer than Redis 7.0).
pub fn server_refusals(rung: &str, bin: &ServerBin) -> Result<Vec<String>, String> {
    use crate::server_features::{lacking, needed_by};
    Ok(lacking(&needed_by(rung), bin)?
        .into_iter()
        .map(|what| {
            format!(
                "{rung} sends {what}, which {} does not know",
                bin.description
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_topology(topology: &str) -> Scenario {
        let text = format!(
            "rungs = [\"watchdog\"]\nduration_ms = 1000\n{topology}\n\
             [[clients]]\ncount = 1\n\
             [[faults]]\nkind = \"clock-jump\"\nat_ms = 100\ntarget = \"redis-0\"\njump_ms = 500\n"
        );
        Scenario::parse(&text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_node_clock_jump_is_stageable_on_a_node_without_replicas() {
        let standalone = with_topology("");
        assert!(scenario_refusals(&standalone, "watchdog").is_empty());
        let independent = with_topology("[topology]\nkind = \"independent\"\nmasters = 3");
        assert!(scenario_refusals(&independent, "watchdog").is_empty());
    }

    #[test]
    fn a_node_clock_jump_on_a_master_with_replicas_is_refused_with_its_reason() {
        let replicated = with_topology("[topology]\nkind = \"replicated\"\nreplicas = 1");
        let refused = scenario_refusals(&replicated, "watchdog");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("clock of redis-0"), "{refused:?}");
        assert!(refused[0].contains("absolute deadlines"), "{refused:?}");
    }
}
