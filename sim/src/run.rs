//! Running one rung in one scenario under one seed: build the simulated
//! world ([`World::build`]), drive it step by step while the agenda and
//! the clients' fault points fire faults ([`crate::nemesis`]), read the
//! resource's final state, and hand back the history.
//!
//! The same scenario, rung and seed give a byte-identical history.

use crate::history::History;
use crate::scenario::Scenario;
use crate::world::World;
use std::time::Duration;

/// The simulation's step: every host advances this much per step.
pub const TICK: Duration = Duration::from_millis(1);

/// Simulated time allowed after the scenario's duration to read the
/// final state of the resource.
pub(crate) const AUDIT_LIMIT: Duration = Duration::from_secs(10);

/// A run that could not be carried out (not a verdict: a harness failure).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The rung is not in the scenario, or unknown.
    #[error("{0}")]
    BadInput(String),
    /// The simulation itself failed.
    #[error("simulation failed: {0}")]
    Simulation(String),
    /// A node aborted a Lua script that ran past its instruction limit
    /// (an endless script would otherwise hang the run): the history is
    /// cut short by something no lock is meant to face, so it is not
    /// judged.
    #[error("run not judged: {0}")]
    ScriptAborted(String),
    /// The user asked the process to stop ([`crate::interrupt`]): the run
    /// was abandoned between two steps and has no history.
    #[error("run abandoned: interrupted by {0}")]
    Interrupted(crate::interrupt::Cause),
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The history, in time order.
    pub history: History,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
}

/// Runs `rung` in `scenario` with `seed`.
pub fn run(scenario: &Scenario, rung: &str, seed: u64) -> Result<RunOutput, RunError> {
    if !scenario.rungs.iter().any(|r| r == rung) {
        return Err(RunError::BadInput(format!(
            "scenario {:?} does not name rung {rung:?}; it names {}",
            scenario.name,
            scenario.rungs.join(", ")
        )));
    }
    let aborted_before = simredis::lua::aborted_scripts();
    let mut world = World::build(scenario, rung, seed)?;
    drive(&mut world)?;
    world.audit()?;
    let aborted = simredis::lua::aborted_scripts() - aborted_before;
    if aborted > 0 {
        return Err(RunError::ScriptAborted(format!(
            "{aborted} Lua script(s) ran past the node's limit of {} instructions and were aborted",
            simredis::handle::SCRIPT_INSTRUCTION_LIMIT
        )));
    }
    Ok(RunOutput {
        history: world.shared.recorder.history(),
        sim_elapsed: world.sim.elapsed(),
    })
}

/// Steps the world until the scenario's duration is over, or every client
/// has finished and nothing is left on the agenda. Before each step, the
/// due actions of the agenda run, then the faults clients asked for.
fn drive(world: &mut World<'_>) -> Result<(), RunError> {
    let end = world.origin + Duration::from_millis(world.scenario.duration_ms);
    let left = end.saturating_sub(world.now());
    let max_steps = (left.as_micros() / TICK.as_micros()) as u64 + 1;
    for _step in 0..max_steps {
        // Between steps, so an interrupted run stops within one step; an
        // uninterrupted one is unchanged by the look.
        if let Some(cause) = crate::interrupt::cause() {
            return Err(RunError::Interrupted(cause));
        }
        while let Some(action) = world.agenda.pop_due(world.now_us()) {
            world.act(action);
        }
        for request in world.shared.mailbox.take() {
            world.handle_request(request);
        }
        if world.all_finished() && world.agenda.is_empty() {
            break;
        }
        world
            .sim
            .step()
            .map_err(|e| RunError::Simulation(e.to_string()))?;
        if world.now() >= end {
            break;
        }
    }
    Ok(())
}
