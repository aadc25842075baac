//! The fault hook of a simulated client: fires the faults a scenario aims
//! at a fault point of this client's n-th lock cycle.
//!
//! A fault aimed at a point the rung does not have fires at the next point
//! it does have (LADDER.md): when the code reaches a point, every unfired
//! fault of this cycle aimed at that point *or an earlier one* fires.

use crate::client_clock::SimClock;
use crate::fault::FaultSpec;
use crate::freeze::{Freeze, sim_now};
use crate::history::EventKind;
use crate::recorder::{FaultRequest, Recorder};
use locks::{BoxFuture, FaultHook, FaultPoint};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A fault aimed at one of this client's points.
#[derive(Debug, Clone)]
pub struct AimedFault {
    /// Index in the scenario's fault list.
    pub index: usize,
    /// Which lock cycle, from 1.
    pub op: u32,
    /// The point.
    pub point: FaultPoint,
    /// The fault.
    pub spec: FaultSpec,
}

/// The hook of client `client`.
pub struct SimHook {
    client: usize,
    /// The lock cycle the client is in (set by its workload).
    pub cycle: Arc<AtomicU32>,
    aimed: Vec<AimedFault>,
    fired: Arc<Mutex<BTreeSet<usize>>>,
    recorder: Arc<Recorder>,
    freeze: Arc<Freeze>,
    clock: Arc<SimClock>,
}

impl SimHook {
    /// A hook for `client` that fires `aimed`; `fired` survives restarts so
    /// that a fault fires once per run.
    pub fn new(
        client: usize,
        cycle: Arc<AtomicU32>,
        aimed: Vec<AimedFault>,
        fired: Arc<Mutex<BTreeSet<usize>>>,
        recorder: Arc<Recorder>,
        freeze: Arc<Freeze>,
        clock: Arc<SimClock>,
    ) -> Self {
        SimHook {
            client,
            cycle,
            aimed,
            fired,
            recorder,
            freeze,
            clock,
        }
    }

    fn due(&self, point: FaultPoint) -> Vec<AimedFault> {
        let cycle = self.cycle.load(Ordering::SeqCst);
        let mut fired = self.fired.lock().unwrap_or_else(|p| p.into_inner());
        let mut due = Vec::new();
        for fault in &self.aimed {
            if fault.op == cycle && fault.point <= point && fired.insert(fault.index) {
                due.push(fault.clone());
            }
        }
        due
    }

    /// Carries out what can be done from inside the client; the rest goes
    /// to the driver. Returns whether the client must stop here for good.
    fn fire(&self, fault: &AimedFault, reached: FaultPoint) -> bool {
        let me = format!("client-{}", self.client);
        let target = fault.spec.target_host().unwrap_or_default();
        let detail = format!("at {} of cycle {}", reached, fault.op);
        match &fault.spec {
            FaultSpec::Pause { duration_ms, .. } if target == me => {
                self.recorder.record(EventKind::Fault {
                    fault: "pause".into(),
                    target: me,
                    phase: "start".into(),
                    detail: format!("{duration_ms} ms {detail}"),
                });
                self.freeze
                    .freeze_until(sim_now() + Duration::from_millis(*duration_ms));
                // The driver records the end when the pause is over.
                self.recorder.request(FaultRequest {
                    fault: fault.index,
                    started_us: Some(sim_now().as_micros() as u64),
                });
                false
            }
            FaultSpec::ClockJump { jump_ms, .. } if target == me => {
                self.clock.jump(*jump_ms);
                self.recorder.record(EventKind::Fault {
                    fault: "clock-jump".into(),
                    target: me,
                    phase: "instant".into(),
                    detail: format!("{jump_ms:+} ms {detail}"),
                });
                false
            }
            FaultSpec::Crash { .. } if target == me => {
                // Nothing more may run or leave this process: shut the gate
                // for good; the driver crashes the host after this step.
                self.freeze.freeze_forever();
                self.recorder.request(FaultRequest {
                    fault: fault.index,
                    started_us: None,
                });
                true
            }
            _ => {
                self.recorder.request(FaultRequest {
                    fault: fault.index,
                    started_us: None,
                });
                false
            }
        }
    }
}

impl FaultHook for SimHook {
    fn reached(&self, point: FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        let due = self.due(point);
        if due.is_empty() {
            return Box::pin(std::future::ready(()));
        }
        let mut stop_here = false;
        for fault in &due {
            stop_here |= self.fire(fault, point);
        }
        let freeze = self.freeze.clone();
        Box::pin(async move {
            if stop_here {
                std::future::pending::<()>().await;
            }
            freeze.wait().await;
        })
    }
}
