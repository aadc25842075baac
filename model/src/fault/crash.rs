//! `crash`: a process kill or a power loss of a client or node, for good
//! or with a restart ([`FaultKind::Restart`](super::FaultKind::Restart)
//! when drawn).

use super::FaultFields;
use super::check;
use super::draw::{Draw, Scene};
use super::trigger::Trigger;
use crate::host::Host;
use crate::scenario::{Persistence, Scenario};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a crashed machine goes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashKind {
    /// The process dies; the machine (and its page cache) survives.
    #[default]
    ProcessKill,
    /// The machine loses power: what it had not synced to disk is gone,
    /// and its peers hear nothing (no FIN, no RST).
    PowerLoss,
}

/// The name scenario files and histories give a crash kind.
pub fn crash_name(how: CrashKind) -> &'static str {
    match how {
        CrashKind::ProcessKill => "kill",
        CrashKind::PowerLoss => "power-loss",
    }
}

/// Crash kinds by the names scenario files give them: `kill` (the process
/// dies, the machine and its page cache survive) or `power-loss`.
mod crash_how {
    use super::*;

    pub fn serialize<S: Serializer>(how: &CrashKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(crash_name(*how))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<CrashKind, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "kill" => Ok(CrashKind::ProcessKill),
            "power-loss" => Ok(CrashKind::PowerLoss),
            other => Err(serde::de::Error::custom(format!(
                "unknown crash {other:?}; expected \"kill\" or \"power-loss\""
            ))),
        }
    }
}

/// A crash kind that may be absent, by the names scenario files give them.
pub(super) mod crash_how_given {
    use super::*;

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<CrashKind>, D::Error> {
        crash_how::deserialize(deserializer).map(Some)
    }
}

/// A crash of a client or node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crash {
    /// `client-N` or `redis-N`; defaults to `on.client`.
    pub target: Option<Host>,
    /// `kill` (the default) or `power-loss` (nodes: unsynced writes lost).
    #[serde(with = "crash_how")]
    pub how: CrashKind,
    /// Restart after this long; never when absent.
    pub restart_after_ms: Option<u64>,
}

impl Crash {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["target", "how", "restart_after_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<Crash, String> {
        Ok(Crash {
            target: f.target.take(),
            how: f.how.take().unwrap_or_default(),
            restart_after_ms: f.restart_after_ms.take(),
        })
    }

    pub(super) fn validate(&self, target: Option<Host>, scenario: &Scenario) -> Result<(), String> {
        check::times(&[("restart_after_ms", self.restart_after_ms)])?;
        let host = target.ok_or("`target`: expected a host such as client-0 or redis-0")?;
        check::host(host, scenario).map_err(|e| format!("`target`: {e}"))
    }

    /// Draws a crash aimed at `client` or at a node; `restarts`: it comes
    /// back (a drawn [`FaultKind::Restart`](super::FaultKind::Restart)).
    pub(super) fn draw(
        d: &mut Draw,
        scene: &Scene,
        trigger: &Trigger,
        client: usize,
        restarts: bool,
    ) -> Crash {
        let ttl = scene.ttl_ms;
        let client_ok = scene.bounds.as_ref().is_none_or(|b| b.client_crashes);
        let on_client = client_ok && d.chance(60);
        let target = if on_client {
            trigger.on.is_none().then_some(Host::Client(client))
        } else {
            Some(d.pick(&scene.nodes))
        };
        let mut restart_after_ms = restarts.then(|| {
            if d.chance(50) {
                d.scale(1, 100)
            } else {
                d.scale(ttl, 2 * ttl)
            }
        });
        if let (Some(bounds), Some(after)) = (&scene.bounds, restart_after_ms.as_mut())
            && !on_client
            && scene.persistence != Persistence::AofAlways
        {
            // A node comes back only after every lease it gave expired.
            *after = (*after).max(bounds.node_restart_floor_ms);
        }
        let how = if d.chance(30) {
            CrashKind::PowerLoss
        } else {
            CrashKind::ProcessKill
        };
        Crash {
            target,
            how,
            restart_after_ms,
        }
    }

    pub(super) fn variants(&self) -> Vec<Crash> {
        vec![
            Crash {
                restart_after_ms: self.restart_after_ms.map(|r| r / 2),
                ..self.clone()
            },
            Crash {
                how: CrashKind::ProcessKill,
                ..self.clone()
            },
        ]
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<Crash> {
        let target = check::target_without_client(self.target, gone)?;
        Some(Crash {
            target,
            ..self.clone()
        })
    }
}
