//! `clock-jump` and `clock-drift`: a client's or node's clock moves.

use super::check;
use super::draw::{Draw, Scene};
use super::{FaultFields, required};
use crate::host::Host;
use crate::scenario::{MAX_MS, MAX_PPM, Scenario};
use serde::Serialize;

/// A client's or node's wall clock jumps (negative: backwards).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockJump {
    /// `client-N` or `redis-N`.
    pub target: Host,
    /// The jump.
    pub jump_ms: i64,
}

/// A client's or node's clock starts to drift.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockDrift {
    /// `client-N` or `redis-N`.
    pub target: Host,
    /// Parts per million; positive runs fast.
    pub ppm: i64,
}

/// The host of a clock fault: one whose clock plays a part.
fn validate_target(target: Host, scenario: &Scenario) -> Result<(), String> {
    check::host(target, scenario).map_err(|e| format!("`target`: {e}"))?;
    if target == Host::Store {
        return Err("`target`: the store's clock plays no part; aim at client-N or redis-N".into());
    }
    Ok(())
}

/// A node half the time, else client `client`.
fn draw_target(d: &mut Draw, scene: &Scene, client: usize) -> (Host, bool) {
    let on_node = d.chance(50);
    let target = if on_node {
        d.pick(&scene.nodes)
    } else {
        Host::Client(client)
    };
    (target, on_node)
}

impl ClockJump {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["target", "jump_ms"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<ClockJump, String> {
        Ok(ClockJump {
            target: required(f.target.take(), "target")?,
            jump_ms: required(f.jump_ms.take(), "jump_ms")?,
        })
    }

    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        let jump_ms = self.jump_ms;
        if jump_ms.unsigned_abs() > MAX_MS {
            return Err(format!(
                "`jump_ms` is {jump_ms}; expected between -{MAX_MS} and {MAX_MS}"
            ));
        }
        validate_target(self.target, scenario)
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene, client: usize) -> ClockJump {
        let ttl = scene.ttl_ms;
        let (target, on_node) = draw_target(d, scene, client);
        let forward = d.chance(60);
        let within_allowance = (ttl / 200).min(scene.share_ms.unwrap_or(u64::MAX)).max(1);
        let magnitude = match &scene.bounds {
            None => d.scale(1, 3 * ttl),
            Some(b) if on_node && forward && !b.node_forward_jumps => {
                d.up_to_edge(1, within_allowance)
            }
            Some(_) if on_node && !forward => d.up_to_edge(1, ttl / 2),
            Some(b) if !on_node && b.client_wall_clock => d.up_to_edge(1, within_allowance),
            Some(_) => d.scale(1, 3 * ttl),
        };
        let magnitude = magnitude as i64;
        ClockJump {
            target,
            jump_ms: if forward { magnitude } else { -magnitude },
        }
    }

    pub(super) fn variants(&self) -> Vec<ClockJump> {
        vec![ClockJump {
            jump_ms: self.jump_ms / 2,
            ..self.clone()
        }]
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<ClockJump> {
        let target = check::without_client(self.target, gone)?;
        Some(ClockJump {
            target,
            ..self.clone()
        })
    }
}

impl ClockDrift {
    /// Its fields in scenario files, besides `kind` and the trigger.
    pub(super) const FIELDS: &[&str] = &["target", "ppm"];

    pub(super) fn from_fields(f: &mut FaultFields) -> Result<ClockDrift, String> {
        Ok(ClockDrift {
            target: required(f.target.take(), "target")?,
            ppm: required(f.ppm.take(), "ppm")?,
        })
    }

    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        let ppm = self.ppm;
        if !(-MAX_PPM..=MAX_PPM).contains(&ppm) {
            return Err(format!(
                "`ppm` is {ppm}; expected between -{MAX_PPM} and {MAX_PPM}"
            ));
        }
        validate_target(self.target, scenario)
    }

    pub(super) fn draw(d: &mut Draw, scene: &Scene, client: usize) -> ClockDrift {
        let (target, _) = draw_target(d, scene, client);
        let limit = match &scene.bounds {
            Some(b) => b.max_drift_ppm as u64,
            None => 200_000,
        };
        let ppm = d.scale(100.min(limit), limit) as i64;
        ClockDrift {
            target,
            ppm: if d.chance(50) { ppm } else { -ppm },
        }
    }

    pub(super) fn variants(&self) -> Vec<ClockDrift> {
        vec![ClockDrift {
            ppm: self.ppm / 2,
            ..self.clone()
        }]
    }

    pub(super) fn without_client(&self, gone: usize) -> Option<ClockDrift> {
        let target = check::without_client(self.target, gone)?;
        Some(ClockDrift {
            target,
            ..self.clone()
        })
    }
}
