//! Named fault points: where in a rung's code a fault can be aimed.
//!
//! There are six points, in the order a lock cycle passes them
//! ([`FaultPoint::ALL`]); `acquire-reply` exists only in multi-node rungs,
//! which pass it once per reply of their round, so that a fault can land
//! between the replies of a quorum. A rung calls
//! [`FaultHook::reached`] at each point its code really has; outside the
//! simulator the hook is [`NoFaults`] and costs one virtual call. Inside the
//! simulator the hook may pause the client there (the future completes
//! when the pause ends) or crash it (the future never completes; the host
//! is torn down).
//!
//! Not every rung has every step: a one-command acquire has no
//! `acquire-mid`, `no-lock` has no release command. Such a rung simply does
//! not pass the point, so the hook only ever sees points that exist in the
//! code path that ran, and a fault aimed at a missing point fires at the
//! next point the rung does pass in that cycle: the simulator's hook fires,
//! at each point, every fault of the cycle aimed at that point or an
//! earlier one. Each rung's code says where its own points lie (the shared
//! ones: [`RungSteps`](crate::rungs::common::RungSteps) and
//! [`between_release_points`](crate::rungs::common::between_release_points)).

use crate::clock::BoxFuture;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A place in the lock code where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultPoint {
    /// A multi-node acquire has received one more reply of its round (the
    /// n-th time this point is passed in a cycle, n replies have come back).
    AcquireReply,
    /// Between the commands of a two-command acquire (e.g. SETNX and EXPIRE).
    AcquireMid,
    /// The acquire has succeeded; the holder has not done anything yet.
    AfterAcquire,
    /// After the validity check, just before the write to the guarded resource.
    BeforeWrite,
    /// The release has begun; its first command is not sent yet.
    ReleaseStart,
    /// Between the commands of a two-command release (e.g. GET and DEL).
    ReleaseMid,
}

impl FaultPoint {
    /// Every point, in the order a lock cycle passes them.
    pub const ALL: [FaultPoint; 6] = [
        FaultPoint::AcquireReply,
        FaultPoint::AcquireMid,
        FaultPoint::AfterAcquire,
        FaultPoint::BeforeWrite,
        FaultPoint::ReleaseStart,
        FaultPoint::ReleaseMid,
    ];

    /// The name used in scenario files and histories.
    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::AcquireReply => "acquire-reply",
            FaultPoint::AcquireMid => "acquire-mid",
            FaultPoint::AfterAcquire => "after-acquire",
            FaultPoint::BeforeWrite => "before-write",
            FaultPoint::ReleaseStart => "release-start",
            FaultPoint::ReleaseMid => "release-mid",
        }
    }

    /// Parses a name as written in scenario files.
    pub fn from_name(name: &str) -> Option<FaultPoint> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Receives every fault point a lock passes.
pub trait FaultHook: Send + Sync + 'static {
    /// Called when the code reaches `point` while working on `resource`.
    /// The lock continues when the returned future completes.
    fn reached(&self, point: FaultPoint, resource: &str) -> BoxFuture<'static, ()>;

    /// Whether every point passes at once with nothing recorded, so the
    /// lock may skip calling [`reached`](Self::reached) (and the future it
    /// would allocate) on its hot path; false unless a hook says so.
    fn passes_everything(&self) -> bool {
        false
    }
}

/// The hook used outside the simulator: every point passes at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFaults;

impl FaultHook for NoFaults {
    fn reached(&self, _point: FaultPoint, _resource: &str) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }

    fn passes_everything(&self) -> bool {
        true
    }
}
