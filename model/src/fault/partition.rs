//! `partition`: messages between two groups of hosts are lost (one way
//! or both) until it heals.

use super::check;
use super::draw::{Draw, Scene};
use super::link;
use super::{FaultFields, required};
use crate::host::Host;
use crate::scenario::Scenario;
use serde::Serialize;

/// A two-way (or one-way) network partition between two groups of hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Partition {
    /// One side.
    pub a: Vec<Host>,
    /// The other side.
    pub b: Vec<Host>,
    /// Only messages from `a` to `b` are lost.
    pub oneway: bool,
    /// Heals after this long; never when absent.
    pub duration_ms: Option<u64>,
}

impl Partition {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["a", "b", "oneway", "duration_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<Partition, String> {
        Ok(Partition {
            a: required(f.a.take(), "a")?,
            b: required(f.b.take(), "b")?,
            oneway: f.oneway.take().unwrap_or(false),
            duration_ms: f.duration_ms.take(),
        })
    }

    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        check::times(&[("duration_ms", self.duration_ms)])?;
        link::validate(&self.a, &self.b, scenario)
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene) -> Option<Partition> {
        let (a, b) = link::draw_sides(d, scene, true)?;
        let oneway = d.chance(20);
        let duration_ms = if scene.bounds.is_none() && d.chance(10) {
            None
        } else {
            Some(d.scale(10, 3 * scene.ttl_ms))
        };
        Some(Partition {
            a,
            b,
            oneway,
            duration_ms,
        })
    }

    pub(super) fn variants(&self) -> Vec<Partition> {
        let mut out = vec![Partition {
            duration_ms: self.duration_ms.map(|d| (d / 2).max(1)),
            ..self.clone()
        }];
        out.extend(
            link::narrowed(&self.a, &self.b)
                .into_iter()
                .map(|(a, b)| Partition {
                    a,
                    b,
                    ..self.clone()
                }),
        );
        out.push(Partition {
            oneway: false,
            ..self.clone()
        });
        out
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<Partition> {
        let (a, b) = link::without_client(&self.a, &self.b, gone)?;
        Some(Partition {
            a,
            b,
            ..self.clone()
        })
    }
}
