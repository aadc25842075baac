//! The fault hook of a simulated client: fires the faults a scenario aims
//! at a fault point of this client's n-th lock cycle.
//!
//! A fault aimed at a point the rung does not have fires at the next point
//! it does have (see `docs/ladder.md`): when the code reaches a point,
//! every unfired fault of this cycle aimed at that point *or an earlier
//! one* fires. What firing does is the nemesis's job
//! ([`crate::nemesis::fire_at_point`]).

use crate::client_host::SimClientState;
use crate::nemesis;
use crate::world::Shared;
use locks::{BoxFuture, FaultHook, FaultPoint};
use model::fault::FaultSpec;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A fault aimed at one of this client's points.
#[derive(Debug, Clone)]
pub struct AimedFault {
    /// Index in the scenario's fault list.
    pub index: usize,
    /// Which lock cycle, from 1.
    pub cycle: u32,
    /// The point.
    pub point: FaultPoint,
    /// Which pass of the point in the cycle, from 1.
    pub nth: u32,
    /// The fault.
    pub spec: FaultSpec,
}

impl AimedFault {
    /// The faults of `faults` aimed at client `client`'s points, each with
    /// its index in the list.
    pub fn at_client(faults: &[FaultSpec], client: usize) -> Vec<AimedFault> {
        faults
            .iter()
            .enumerate()
            .filter_map(|(index, spec)| {
                let on = spec.trigger()?;
                (on.client == client).then(|| AimedFault {
                    index,
                    cycle: on.cycle,
                    point: on.point,
                    nth: on.nth,
                    spec: spec.clone(),
                })
            })
            .collect()
    }
}

/// The hook of one client.
pub struct SimHook {
    state: Arc<SimClientState>,
    aimed: Vec<AimedFault>,
    shared: Arc<Shared>,
}

impl SimHook {
    /// A hook for the client of `state` that fires `aimed`.
    pub fn new(state: Arc<SimClientState>, aimed: Vec<AimedFault>, shared: Arc<Shared>) -> Self {
        SimHook {
            state,
            aimed,
            shared,
        }
    }

    /// The client's state.
    pub(crate) fn state(&self) -> &SimClientState {
        &self.state
    }

    /// What the client shares with the driver.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

/// The rule of fault points, shared with real mode: of `aimed`, the
/// faults that fire on the `passes`-th pass of `point` in `cycle` (those
/// of this cycle aimed at an earlier point, or at this one on its `nth`
/// pass), each at most once: marked in `fired`.
pub fn due_at(
    aimed: &[AimedFault],
    cycle: u32,
    point: FaultPoint,
    passes: u32,
    fired: &mut BTreeSet<usize>,
) -> Vec<AimedFault> {
    let mut due = Vec::new();
    for fault in aimed {
        let reached = fault.point < point || (fault.point == point && passes >= fault.nth);
        if fault.cycle == cycle && reached && fired.insert(fault.index) {
            due.push(fault.clone());
        }
    }
    due
}

impl FaultHook for SimHook {
    fn reached(&self, point: FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        let due = self.state.due(&self.aimed, point);
        if due.is_empty() {
            return Box::pin(std::future::ready(()));
        }
        let mut stop_here = false;
        for fault in &due {
            stop_here |= nemesis::fire_at_point(self, fault, point);
        }
        let freeze = self.state.machine.freeze.clone();
        Box::pin(async move {
            if stop_here {
                std::future::pending::<()>().await;
            }
            freeze.wait().await;
        })
    }
}
