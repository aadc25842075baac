//! `pause`: a stop-the-world pause of a client; nothing in it runs or
//! leaves it.

use super::check;
use super::draw::{Draw, Scene};
use super::trigger::Trigger;
use super::{FaultFields, required};
use crate::host::Host;
use crate::scenario::Scenario;
use locks::FaultPoint;
use serde::Serialize;

/// A pause of a client.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pause {
    /// The paused client (`client-N`); defaults to `on.client`.
    pub target: Option<Host>,
    /// How long.
    pub duration_ms: u64,
}

impl Pause {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["target", "duration_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<Pause, String> {
        Ok(Pause {
            target: f.target.take(),
            duration_ms: required(f.duration_ms.take(), "duration_ms")?,
        })
    }

    pub(super) fn validate(&self, target: Option<Host>, scenario: &Scenario) -> Result<(), String> {
        check::times(&[("duration_ms", Some(self.duration_ms))])?;
        let host = target.ok_or("`target`: expected a client such as client-0")?;
        check::client(host, scenario).map_err(|e| format!("`target`: {e}"))
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene, trigger: &mut Trigger, client: usize) -> Pause {
        if let (Some(on), Some(bounds)) = (&mut trigger.on, &scene.bounds)
            && bounds.no_pause_at.contains(&on.point)
        {
            on.point = FaultPoint::AfterAcquire;
        }
        Pause {
            target: trigger.on.is_none().then_some(Host::Client(client)),
            duration_ms: scene.size(d, 1, 3 * scene.ttl_ms),
        }
    }

    pub(super) fn variants(&self) -> Vec<Pause> {
        vec![Pause {
            duration_ms: (self.duration_ms / 2).max(1),
            ..self.clone()
        }]
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<Pause> {
        let target = check::target_without_client(self.target, gone)?;
        Some(Pause {
            target,
            ..self.clone()
        })
    }
}
