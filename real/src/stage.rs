//! What real mode can stage on `redis-server`, and what it refuses.
//!
//! A scenario asking for something real mode cannot do honestly is not
//! run with that part left out: the whole cell is refused with a "not
//! stageable in real mode: <what>" outcome naming every such part.
//!
//! Staged: client pauses (the client's whole thread stops, see
//! [`crate::client`]), client crashes and restarts, client clock jumps and
//! drift (through the rung's `Clock`), node kills and restarts (`SIGKILL`,
//! same port, directory and config), power loss of a node without
//! persistence or with `appendfsync always` (the node is first cut off
//! from every host through the proxy, so no peer hears it close, then
//! killed: with those settings a power loss keeps exactly what a kill
//! keeps), partitions, delays and slow links through the proxy, failover
//! (kill the master, `REPLICAOF NO ONE` on its first replica after the
//! delay, `master` re-pointed), fault points.
//!
//! Refused:
//! - a node's clock jump or drift: redis-server keeps deadlines by its own
//!   clock, and the route that moves it (libfaketime) aborts at start-up
//!   on Debian's jemalloc-built redis-server 7.0.15 ("unexpected recursive
//!   calls to clock_gettime");
//! - a rung relying on a command newer than the server (`native-cad`'s
//!   `DELEX`/`DELIFEQ` and `SET ... IFEQ` on redis-server 7.0), asked of
//!   the server itself ([`crate::server_features`]);
//! - a power loss with `appendfsync everysec`: what it loses (up to the
//!   last second of writes the kernel had not yet flushed) cannot be made
//!   to happen by killing a process, whose written data the page cache
//!   keeps.

use sim::fault::FaultSpec;
use sim::scenario::Scenario;
use simredis::{CrashKind, Persistence};

/// Every part of `rung`'s run in `scenario` real mode cannot stage, in
/// the scenario's order; empty when the whole run can be staged.
pub fn refusals(scenario: &Scenario, rung: &str) -> Vec<String> {
    let topology = scenario.topology_of(rung);
    let mut refused = Vec::new();
    for (i, fault) in scenario.faults_of(rung).iter().enumerate() {
        let n = i + 1;
        match fault {
            FaultSpec::ClockJump { target, .. } | FaultSpec::ClockDrift { target, .. }
                if target.client().is_none() =>
            {
                refused.push(format!(
                    "fault {n} ({}) moves the clock of {target}: redis-server keeps key deadlines by \
                     its own clock, and libfaketime aborts at start-up on Debian's jemalloc-built \
                     redis-server 7.0.15",
                    fault.name()
                ));
            }
            FaultSpec::Crash {
                how: CrashKind::PowerLoss,
                target,
                ..
            } if target.is_some_and(|t| t.client().is_none())
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

/// The outcome text of a refused cell.
pub fn not_stageable(refused: &[String]) -> String {
    format!("not stageable in real mode: {}", refused.join("; "))
}

/// What the real server lacks of the commands `rung` relies on, each as a
/// refusal naming the command (asks a scratch server only when the rung
/// relies on a command newer than Redis 7.0).
pub fn server_refusals(rung: &str) -> Result<Vec<String>, String> {
    use crate::server_features::{lacking, needed_by};
    let server = format!(
        "redis-server {}",
        harness::version().unwrap_or_else(|| "(version unknown)".into())
    );
    Ok(lacking(&needed_by(rung))?
        .into_iter()
        .map(|what| format!("{rung} sends {what}, which {server} does not know"))
        .collect())
}
