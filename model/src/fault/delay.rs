//! `delay`: messages between two groups of hosts are held, then all
//! delivered at once.

use super::check;
use super::draw::{Draw, Scene};
use super::link;
use super::{FaultFields, required};
use crate::host::Host;
use crate::scenario::Scenario;
use serde::Serialize;

/// Messages between two groups held for a while.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delay {
    /// One side.
    pub a: Vec<Host>,
    /// The other side.
    pub b: Vec<Host>,
    /// Only messages from `a` to `b` are held (one side must be
    /// clients: a client's requests, or the replies it receives).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub oneway: bool,
    /// How long messages are held.
    pub duration_ms: u64,
}

impl Delay {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["a", "b", "oneway", "duration_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<Delay, String> {
        Ok(Delay {
            a: required(f.a.take(), "a")?,
            b: required(f.b.take(), "b")?,
            oneway: f.oneway.take().unwrap_or(false),
            duration_ms: required(f.duration_ms.take(), "duration_ms")?,
        })
    }

    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        check::times(&[("duration_ms", Some(self.duration_ms))])?;
        link::validate(&self.a, &self.b, scenario)?;
        if self.oneway {
            let clients = |side: &[Host]| side.iter().all(|h| h.client().is_some());
            let no_clients = |side: &[Host]| side.iter().all(|h| h.client().is_none());
            let (a, b) = (&self.a[..], &self.b[..]);
            let one_client_side = (clients(a) && no_clients(b)) || (no_clients(a) && clients(b));
            if !one_client_side {
                return Err(
                    "`oneway`: a one-way delay needs clients on exactly one side \
                     (their requests, or the replies they receive, are held)"
                        .into(),
                );
            }
        }
        Ok(())
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene) -> Option<Delay> {
        let (a, b) = link::draw_sides(d, scene, false)?;
        let mut duration_ms = scene.size(d, 1, 2 * scene.ttl_ms);
        if link::within_timeout(scene) {
            duration_ms = duration_ms
                .min(scene.response_timeout_ms.saturating_sub(21))
                .max(1);
        }
        Some(Delay {
            a,
            b,
            oneway: false,
            duration_ms,
        })
    }

    pub(super) fn variants(&self) -> Vec<Delay> {
        let mut out = vec![Delay {
            duration_ms: (self.duration_ms / 2).max(1),
            ..self.clone()
        }];
        out.extend(
            link::narrowed(&self.a, &self.b)
                .into_iter()
                .map(|(a, b)| Delay {
                    a,
                    b,
                    ..self.clone()
                }),
        );
        out
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<Delay> {
        let (a, b) = link::without_client(&self.a, &self.b, gone)?;
        Some(Delay {
            a,
            b,
            ..self.clone()
        })
    }
}
