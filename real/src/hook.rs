//! The fault hook of a real-mode client: the same rule as the simulator's
//! ([`sim::hook::due_at`]: at each point, every unfired fault of this
//! cycle aimed at that point or an earlier one fires), with real effects.
//!
//! What firing a fault means is `sim::nemesis::fire_at_point`'s; this
//! hook is its client-side stage ([`crate::real_stage`]): a pause of the
//! client itself blocks its whole thread right at the point, a crash of
//! the client itself kills its process before anything more leaves it,
//! and everything else goes to the driver through the mailbox, which
//! applies it within a millisecond.

use crate::client::{ProcessHandle, RealClientState};
use locks::{BoxFuture, FaultHook, FaultPoint};
use sim::hook::AimedFault;
use sim::mailbox::Mailbox;
use sim::recorder::Recorder;
use std::sync::Arc;

/// The hook of one incarnation of a client's process.
pub struct RealHook {
    state: Arc<RealClientState>,
    process: ProcessHandle,
    aimed: Vec<AimedFault>,
    recorder: Arc<Recorder>,
    mailbox: Arc<Mailbox>,
}

impl RealHook {
    /// A hook for `process` of the client of `state` that fires `aimed`.
    pub fn new(
        state: Arc<RealClientState>,
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

    /// The client's state.
    pub(crate) fn state(&self) -> &RealClientState {
        &self.state
    }

    /// The process this hook belongs to.
    pub(crate) fn process(&self) -> &ProcessHandle {
        &self.process
    }

    /// Where every event goes.
    pub(crate) fn recorder_ref(&self) -> &Recorder {
        &self.recorder
    }

    /// The driver's mailbox.
    pub(crate) fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }
}

impl FaultHook for RealHook {
    fn reached(&self, point: FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        let due = self.state.due(&self.aimed, point);
        let mut stop_here = false;
        for fault in &due {
            stop_here |= sim::nemesis::fire_at_point(self, fault, point);
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
