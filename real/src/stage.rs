//! What real mode can stage, and what it refuses.
//!
//! A scenario asking for something real mode cannot do honestly is not
//! run with that part left out: the whole cell is refused with a "not
//! stageable in real mode: <what>" outcome naming every such part.
//!
//! Staged for every lock service: client pauses (the client's whole
//! thread stops, see [`crate::client`]), client crashes and restarts,
//! client clock jumps and drift (through the rung's `Clock`), partitions,
//! delays and slow links through the proxy, fault points. What a node
//! fault can and cannot be on its servers is the service's to say
//! ([`crate::service::RealService::refusals`]; for Redis,
//! [`crate::service::redis::refusals`]).

use crate::nodes::ServerBin;
use crate::run::harness_error;
use crate::service::real_service;
use model::scenario::Scenario;
use sim::run::RunError;
use sim::service::lock_service;

/// Every part of `rung`'s run in `scenario` real mode cannot stage on
/// servers of `bin`, in the scenario's order (then what the server
/// lacks); empty when the whole run can be staged.
pub fn refusals(scenario: &Scenario, rung: &str, bin: &ServerBin) -> Result<Vec<String>, RunError> {
    let simulated = lock_service(rung, scenario.topology_of(rung))?;
    let Ok(service) = real_service(simulated) else {
        // The simulator has the service, real mode not yet: the cell is
        // refused with the reason, not an error that stops the suite.
        return Ok(vec![format!(
            "real mode has no {} servers yet (the simulator's verdict stands alone)",
            simulated.name()
        )]);
    };
    service.refusals(scenario, rung, bin).map_err(harness_error)
}

/// The outcome text of a refused cell.
pub fn not_stageable(refused: &[String]) -> String {
    format!("not stageable in real mode: {}", refused.join("; "))
}
