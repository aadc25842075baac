//! The fault hook of a real-mode client: the same rule as the simulator's
//! ([`sim::hook::due_at`]: at each point, every unfired fault of this
//! cycle aimed at that point or an earlier one fires), with real effects.
//!
//! What must happen inside the client happens here, at once: a pause of
//! the client itself blocks its whole thread right at the point; a clock
//! jump of its own clock applies; a crash of the client itself kills its
//! process before anything more leaves it. Everything else (a node's
//! crash, a partition, a failover) goes to the driver through the
//! mailbox, which applies it within a millisecond.

use crate::client::{ClientState, ProcessHandle};
use locks::{BoxFuture, FaultHook, FaultPoint};
use sim::fault::FaultSpec;
use sim::history::{FaultName, FaultTarget, Phase};
use sim::hook::{AimedFault, due_at};
use sim::mailbox::{FaultRequest, Mailbox};
use sim::recorder::Recorder;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The hook of one incarnation of a client's process.
pub struct RealHook {
    state: Arc<ClientState>,
    process: ProcessHandle,
    aimed: Vec<AimedFault>,
    recorder: Arc<Recorder>,
    mailbox: Arc<Mailbox>,
}

impl RealHook {
    /// A hook for `process` of the client of `state` that fires `aimed`.
    pub fn new(
        state: Arc<ClientState>,
        process: ProcessHandle,
        aimed: Vec<AimedFault>,
        recorder: Arc<Recorder>,
        mailbox: Arc<Mailbox>,
    ) -> Self {
        RealHook {
            state,
            process,
            aimed,
            recorder,
            mailbox,
        }
    }

    fn due(&self, point: FaultPoint) -> Vec<AimedFault> {
        if self.aimed.is_empty() {
            return Vec::new();
        }
        let cycle = self.state.cycle.load(Ordering::SeqCst);
        let passes = {
            let mut passes = self.state.passes.lock().unwrap_or_else(|p| p.into_inner());
            let count = passes.entry((cycle, point)).or_insert(0);
            *count += 1;
            *count
        };
        let mut fired = self.state.fired.lock().unwrap_or_else(|p| p.into_inner());
        due_at(&self.aimed, cycle, point, passes, &mut fired)
    }

    fn record(&self, fault: FaultName, phase: Phase, detail: String) -> u64 {
        let now_us = self.recorder.now_us();
        sim::nemesis::record(
            &self.recorder,
            now_us,
            fault,
            FaultTarget::Host(self.state.host()),
            phase,
            detail,
        );
        now_us
    }

    /// Fires one due fault; true when the client must stop here for good.
    fn fire(&self, fault: &AimedFault, reached: FaultPoint) -> bool {
        let me = self.state.host();
        let aimed_at_me = fault.spec.target_host() == Some(me);
        let detail = format!("at {} of cycle {}", reached, fault.cycle);
        let request = |started_us| {
            self.mailbox.request(FaultRequest {
                fault: fault.index,
                started_us,
            })
        };
        match &fault.spec {
            FaultSpec::Pause { duration_ms, .. } if aimed_at_me => {
                let started = self.record(
                    FaultName::Pause,
                    Phase::Start,
                    format!("{duration_ms} ms {detail}"),
                );
                self.process.pause(Duration::from_millis(*duration_ms));
                // The driver records the end when the pause is over.
                request(Some(started));
                false
            }
            FaultSpec::ClockJump { jump_ms, .. } if aimed_at_me => {
                self.state.clock.jump(*jump_ms);
                self.record(
                    FaultName::ClockJump,
                    Phase::Instant,
                    format!("{jump_ms:+} ms {detail}"),
                );
                false
            }
            FaultSpec::Crash { .. } if aimed_at_me => {
                // Nothing more may leave this process; the driver records
                // the crash and restarts it if the scenario says so.
                self.process.dead.store(true, Ordering::SeqCst);
                request(None);
                true
            }
            _ => {
                request(None);
                false
            }
        }
    }
}

impl FaultHook for RealHook {
    fn reached(&self, point: FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        let due = self.due(point);
        let mut stop_here = false;
        for fault in &due {
            stop_here |= self.fire(fault, point);
        }
        if stop_here {
            return Box::pin(std::future::pending());
        }
        // A pause of this client begins right here: the whole thread
        // stands still inside the lock code until it ends.
        self.process.freeze.block();
        Box::pin(std::future::ready(()))
    }
}
