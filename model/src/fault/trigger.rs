//! When a fault fires: at a simulated time (`at_ms`) or when a client
//! reaches a fault point of one of its lock cycles (`on`), checked,
//! drawn and simplified the same way for every kind.

use super::draw::{Draw, Scene, Swarm};
use crate::scenario::Scenario;
use locks::FaultPoint;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The fault point a fault is aimed at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointTrigger {
    /// The client whose code reaches the point.
    pub client: usize,
    /// Which of its lock cycles, from 1 (`op` in older files).
    #[serde(default = "one", alias = "op")]
    pub cycle: u32,
    /// The fault point (`acquire-reply`, `acquire-mid`, `after-acquire`,
    /// `before-write`, `release-start`, `release-mid`).
    #[serde(with = "point_name")]
    pub point: FaultPoint,
    /// The n-th time the client passes that point in the cycle, from 1
    /// (`acquire-reply` is passed once per reply of a multi-node round).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nth: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Fault points by the names scenario files give them.
mod point_name {
    use super::*;

    pub fn serialize<S: Serializer>(point: &FaultPoint, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(point.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<FaultPoint, D::Error> {
        let name = String::deserialize(deserializer)?;
        FaultPoint::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown fault point {name:?}; expected one of {}",
                FaultPoint::ALL.map(|p| p.name()).join(", ")
            ))
        })
    }
}

/// When a fault fires, as a scenario gives it: exactly one of the two is
/// set in a valid scenario (both are kept, so that a file giving both or
/// neither can be told so).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trigger {
    /// Simulated time it fires, unless `on` is given.
    pub at_ms: Option<u64>,
    /// The fault point it fires at.
    pub on: Option<PointTrigger>,
}

impl Trigger {
    /// Checks the trigger against the scenario it is in.
    pub(super) fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        match (self.at_ms, &self.on) {
            (Some(_), Some(_)) => return Err("give either `at_ms` or `on`, not both".into()),
            (None, None) => return Err("expected `at_ms` (a time) or `on` (a fault point)".into()),
            _ => {}
        }
        if let Some(t) = &self.on {
            if t.client >= scenario.client_count() {
                return Err(format!(
                    "`on.client`: client {} does not exist (the scenario has {})",
                    t.client,
                    scenario.client_count()
                ));
            }
            if t.cycle == 0 {
                return Err("`on.cycle` counts lock cycles from 1".into());
            }
            if t.nth == 0 {
                return Err("`on.nth` counts passes of the point from 1".into());
            }
            // A client runs only its group's cycles: a later one never comes.
            let cycles = scenario.group_of(t.client).map_or(0, |g| g.cycles);
            if t.cycle > cycles {
                return Err(format!(
                    "`on.cycle`: client {} runs {cycles} lock cycle(s), so cycle {} never comes; expected 1 to {cycles}",
                    t.client, t.cycle
                ));
            }
        }
        if let Some(at_ms) = self.at_ms
            && at_ms >= scenario.duration_ms
        {
            return Err(format!(
                "`at_ms` is {at_ms}, but the run lasts {} ms (`duration_ms`), so it never fires; expected below {}",
                scenario.duration_ms, scenario.duration_ms
            ));
        }
        Ok(())
    }

    /// Draws a trigger aimed at client `client`: a fault point of one of
    /// its cycles (as often as the swarm aims), or a time.
    pub(super) fn draw(d: &mut Draw, scene: &Scene, swarm: &Swarm, client: usize) -> Trigger {
        if d.chance(swarm.aim_percent) {
            let cycles = scene.clients[client].cycles;
            let point = d.pick(&swarm.points);
            let cycle = d.range(1, u64::from(cycles)) as u32;
            // Between the replies of a round: after the k-th of its masters.
            let nth = match point {
                FaultPoint::AcquireReply => d.range(1, scene.nodes.len().max(1) as u64) as u32,
                _ => 1,
            };
            let on = PointTrigger {
                client,
                cycle,
                point,
                nth,
            };
            Trigger {
                at_ms: None,
                on: Some(on),
            }
        } else {
            Trigger {
                at_ms: Some(d.scale(0, 4 * scene.ttl_ms)),
                on: None,
            }
        }
    }

    /// Simpler triggers: aimed at the first cycle; fired at time 0, then
    /// at half the time (some may equal this one).
    pub(super) fn variants(&self) -> [Trigger; 3] {
        let mut first_cycle = self.clone();
        if let Some(t) = &mut first_cycle.on {
            t.cycle = 1;
        }
        let at = |cut: fn(u64) -> u64| Trigger {
            at_ms: self.at_ms.map(cut),
            on: self.on.clone(),
        };
        [first_cycle, at(|_| 0), at(|ms| ms / 2)]
    }

    /// The trigger once client `gone` is removed (later clients move down
    /// one); `None` when it was aimed at that client.
    pub(super) fn without_client(&self, gone: usize) -> Option<Trigger> {
        let mut out = self.clone();
        if let Some(t) = &mut out.on {
            if t.client == gone {
                return None;
            }
            if t.client > gone {
                t.client -= 1;
            }
        }
        Some(out)
    }
}
