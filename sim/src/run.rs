//! Running one rung in one scenario under one seed: build the simulated
//! world ([`World::build`]), drive it step by step while the agenda and
//! the clients' fault points fire faults ([`crate::nemesis`]), read the
//! resource's final state, and hand back the history. A run that a node
//! cuts short ([`CutShort`]: it aborted a runaway script) stops there and
//! says why; it is judged, and its verdict is `unknown`.
//!
//! The same scenario, rung and seed give a byte-identical history.

use crate::nemesis;
use crate::world::World;
use model::cut_short::CutShort;
use model::history::{EventKind, History};
use model::scenario::Scenario;
use std::time::Duration;

/// The simulation's step: every host advances this much per step.
pub const TICK: Duration = Duration::from_millis(1);

/// Simulated time allowed, on a fast network, to stock the store before
/// the workload and to read its final state after it.
pub(crate) const AUDIT_LIMIT: Duration = Duration::from_secs(10);

/// How the driver's own requests to the store (stocking it, reading the
/// final stock) connect and wait, and how long each of the two may take,
/// on a network whose one-way trips take up to `trip_ms`: a connection and
/// a request are a few trips, so on a slow network the defaults would time
/// out before the first reply could arrive.
pub(crate) fn store_requests(trip_ms: u64) -> (locks::ConnConfig, Duration) {
    let default = locks::ConnConfig::default();
    let trips = Duration::from_millis(trip_ms.saturating_mul(4));
    let conn = locks::ConnConfig {
        connect_timeout: default.connect_timeout.max(trips),
        response_timeout: default.response_timeout.max(trips),
    };
    (conn, AUDIT_LIMIT + trips * 2)
}

/// A run that could not be carried out (not a verdict: a harness failure).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The rung is not in the scenario, or unknown.
    #[error("{0}")]
    BadInput(String),
    /// The simulation itself failed.
    #[error("simulation failed: {0}")]
    Simulation(String),
    /// The user asked the process to stop ([`crate::interrupt`]): the run
    /// was abandoned between two steps and has no history.
    #[error("run abandoned: interrupted by {0}")]
    Interrupted(crate::interrupt::Cause),
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The history, in time order (up to the cut, when cut short).
    pub history: History,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
    /// Why the run ended before its scenario did, if it did.
    pub cut_short: Option<CutShort>,
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
    // A panic inside the simulation is a bug of the harness (locklab's or
    // turmoil's), never a verdict on the lock: it ends this run with an
    // error that says so, and the other runs of a command go on.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_world(World::build(scenario, rung, seed)?)
    }))
    .unwrap_or_else(|panic| {
        let what = panic_text(panic.as_ref()).unwrap_or_else(|| "no message".into());
        Err(RunError::Simulation(format!(
            "the simulator panicked (a bug in locklab, not a verdict): {what}"
        )))
    })
}

/// The message of a panic's payload (a `String` or a `&str`), when it has
/// one: what a caught panic said, for the error that reports it.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

/// Runs a world [`World::build`] made: drives it to its end, reads the
/// resource's final state, and hands back the history. [`run`] is build,
/// then this; a test that needs something no scenario can say (a host of
/// its own, through [`World::sim`]) adds it in between.
pub fn run_world(mut world: World<'_>) -> Result<RunOutput, RunError> {
    let driven = drive(&mut world)?;
    let shared = &world.shared;
    (shared.recorder).record(EventKind::Wakeups {
        count: shared.wakeups.total(),
    });
    let cut_short = match driven {
        Some(cut) => Some(cut),
        None => {
            world.audit()?;
            world.cut_short()
        }
    };
    Ok(RunOutput {
        history: world.shared.recorder.history(),
        sim_elapsed: world.sim.elapsed(),
        cut_short,
    })
}

/// A simulated stage's effect failed (it never does; a run would stop with
/// the reason).
fn stage_failed(e: nemesis::StageError) -> RunError {
    RunError::Simulation(e.0)
}

/// Steps the world until the scenario's duration is over, or every client
/// has finished and nothing is left on the agenda, or a node cut the run
/// short (returned). Before each step, the due actions of the agenda run,
/// then the faults clients asked for.
fn drive(world: &mut World<'_>) -> Result<Option<CutShort>, RunError> {
    let end = world.origin + Duration::from_millis(world.scenario.duration_ms);
    let left = end.saturating_sub(world.now());
    let max_steps = (left.as_micros() / TICK.as_micros()) as u64 + 1;
    if let Some(cut) = world.cut_short() {
        return Ok(Some(cut));
    }
    for _step in 0..max_steps {
        // Between steps, so an interrupted run stops within one step; an
        // uninterrupted one is unchanged by the look.
        if let Some(cause) = crate::interrupt::cause() {
            return Err(RunError::Interrupted(cause));
        }
        // The simulator's stage never fails: its effects are turmoil's.
        while let Some(action) = world.nemesis.pop_due(world.now_us()) {
            nemesis::act(world, action).map_err(stage_failed)?;
        }
        for request in world.shared.mailbox.take() {
            nemesis::handle_request(world, request).map_err(stage_failed)?;
        }
        if world.all_finished() && world.nemesis.is_idle() {
            break;
        }
        world
            .sim
            .step()
            .map_err(|e| RunError::Simulation(e.to_string()))?;
        // Whatever happens after an aborted script is not what Redis
        // would do: the history stops here.
        if let Some(cut) = world.cut_short() {
            return Ok(Some(cut));
        }
        if world.now() >= end {
            break;
        }
    }
    Ok(None)
}
