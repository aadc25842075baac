//! `slow-link`: a link between two groups of hosts gets slower for a
//! while.

use super::check;
use super::draw::{Draw, Scene};
use super::link;
use super::{FaultFields, required};
use crate::host::Host;
use crate::scenario::Scenario;
use serde::Serialize;

/// A slower link for a while.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowLink {
    /// One side.
    pub a: Vec<Host>,
    /// The other side.
    pub b: Vec<Host>,
    /// One-way latency while slow.
    pub latency_ms: u64,
    /// How long; for ever when absent.
    pub duration_ms: Option<u64>,
}

impl SlowLink {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["a", "b", "latency_ms", "duration_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<SlowLink, String> {
        Ok(SlowLink {
            a: required(f.a.take(), "a")?,
            b: required(f.b.take(), "b")?,
            latency_ms: required(f.latency_ms.take(), "latency_ms")?,
            duration_ms: f.duration_ms.take(),
        })
    }

    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        check::times(&[
            ("latency_ms", Some(self.latency_ms)),
            ("duration_ms", self.duration_ms),
        ])?;
        link::validate(&self.a, &self.b, scenario)
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene) -> Option<SlowLink> {
        let (a, b) = link::draw_sides(d, scene, false)?;
        let mut latency_ms = match scene.share_ms {
            Some(s) => 1 + d.scale(0, s / (2 * scene.cycle_round_trips)),
            None => d.scale(2, scene.ttl_ms / 2),
        };
        if link::within_timeout(scene) {
            latency_ms = latency_ms
                .min(scene.response_timeout_ms.saturating_sub(20) / 2)
                .max(1);
        }
        Some(SlowLink {
            a,
            b,
            latency_ms,
            duration_ms: Some(d.scale(10, 3 * scene.ttl_ms)),
        })
    }

    pub(super) fn variants(&self) -> Vec<SlowLink> {
        let mut out = vec![SlowLink {
            duration_ms: self.duration_ms.map(|d| (d / 2).max(1)),
            ..self.clone()
        }];
        out.extend(
            link::narrowed(&self.a, &self.b)
                .into_iter()
                .map(|(a, b)| SlowLink {
                    a,
                    b,
                    ..self.clone()
                }),
        );
        out.push(SlowLink {
            latency_ms: (self.latency_ms / 2).max(1),
            ..self.clone()
        });
        out
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<SlowLink> {
        let (a, b) = link::without_client(&self.a, &self.b, gone)?;
        Some(SlowLink {
            a,
            b,
            ..self.clone()
        })
    }
}
