//! `failover`: the master dies and, after a delay, its first replica is
//! promoted and the master's name points to it.

use super::FaultFields;
use super::check;
use super::draw::Draw;
use serde::Serialize;

/// A failover of the master.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failover {
    /// Delay between the master's death and the promotion.
    pub promote_after_ms: u64,
}

impl Failover {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["promote_after_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<Failover, String> {
        Ok(Failover {
            promote_after_ms: f.promote_after_ms.take().unwrap_or(0),
        })
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        check::times(&[("promote_after_ms", Some(self.promote_after_ms))])
    }

    pub(super) fn draw(d: &mut Draw) -> Failover {
        Failover {
            promote_after_ms: d.scale(0, 300),
        }
    }

    pub(super) fn variants(&self) -> Vec<Failover> {
        vec![Failover {
            promote_after_ms: self.promote_after_ms / 2,
        }]
    }
}
