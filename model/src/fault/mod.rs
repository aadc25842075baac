//! Faults: what scenario files give, when they fire, and how the search
//! draws and simplifies them.
//!
//! A fault is a trigger and an action. The trigger ([`Trigger`]) fires at
//! a simulated time (`at_ms`) or when a client reaches a named fault point
//! in its n-th lock cycle (`on = { client = 0, cycle = 1, point =
//! "release-start" }`). The action ([`FaultAction`]) is one of the kinds of
//! [`FaultKind`], each a family in its own module: its fields, its
//! validation, how the search draws it, how the shrinker simplifies it.
//! The fault points, and where a fault aimed at a point a rung lacks
//! fires, are defined in `docs/ladder.md`; what a fault does to a world
//! is the nemesis's (`sim/src/nemesis.rs`).

mod check;
mod clock;
mod crash;
mod delay;
mod draw;
mod failover;
mod link;
mod partition;
mod pause;
mod slow_link;
mod trigger;

pub use clock::{ClockDrift, ClockJump};
pub use crash::{Crash, CrashKind, crash_name};
pub use delay::Delay;
pub use draw::{Bounds, Draw, Scene, Swarm};
pub use failover::Failover;
pub use partition::Partition;
pub use pause::Pause;
pub use slow_link::SlowLink;
pub use trigger::{PointTrigger, Trigger};

use crate::host::Host;
use crate::scenario::Scenario;
use crash::crash_how_given;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A fault's kind. Scenario files and histories name the eight kinds a
/// fault can be; [`FaultKind::Restart`] is the generator's ninth: a crash
/// that comes back (`crash` with `restart_after_ms`), drawn apart from a
/// crash for good. Scenario files and histories never carry it (it is
/// neither written nor read): a restart is a crash's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A stop-the-world pause of a client.
    Pause,
    /// A process kill or power loss (and, when it ends, the restart).
    Crash,
    /// A crash that restarts after a while (the generator's kind only).
    #[serde(skip)]
    Restart,
    /// A network partition.
    Partition,
    /// Messages held, then delivered at once.
    Delay,
    /// A slower link.
    SlowLink,
    /// A wall clock jumps.
    ClockJump,
    /// A clock starts to drift.
    ClockDrift,
    /// The master dies and a replica is promoted.
    Failover,
}

impl FaultKind {
    /// Every kind, in a fixed order (the order the generator draws them).
    pub const ALL: [FaultKind; 9] = [
        FaultKind::Pause,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::Partition,
        FaultKind::Delay,
        FaultKind::SlowLink,
        FaultKind::ClockJump,
        FaultKind::ClockDrift,
        FaultKind::Failover,
    ];

    /// The name scenario files, histories and `--faults` give the kind.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
            FaultKind::Partition => "partition",
            FaultKind::Delay => "delay",
            FaultKind::SlowLink => "slow-link",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::ClockDrift => "clock-drift",
            FaultKind::Failover => "failover",
        }
    }

    /// The letter that marks the kind in the ASCII timeline.
    pub fn mark(self) -> char {
        match self {
            FaultKind::Pause => 'P',
            FaultKind::Crash => 'C',
            FaultKind::Restart => 'R',
            FaultKind::Partition => '|',
            FaultKind::Delay => 'd',
            FaultKind::SlowLink => 's',
            FaultKind::ClockJump => 'J',
            FaultKind::ClockDrift => 'D',
            FaultKind::Failover => 'F',
        }
    }

    /// Looks a kind up by the name `--faults` takes.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One fault of a scenario: when it fires and what it does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "FaultFields")]
pub struct FaultSpec {
    /// When it fires.
    pub when: Trigger,
    /// What it does.
    pub action: FaultAction,
}

/// What a fault does: one variant per family of [`FaultKind`] (a restart
/// is a [`Crash`] with `restart_after_ms`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FaultAction {
    /// Stop-the-world pause of a client: nothing in it runs or leaves it.
    Pause(Pause),
    /// A process kill or power loss of a client or node.
    Crash(Crash),
    /// Two-way (or one-way) network partition between two groups of hosts.
    Partition(Partition),
    /// Messages between two groups are held, then all delivered at once.
    Delay(Delay),
    /// A slower link for a while.
    SlowLink(SlowLink),
    /// A client's or node's wall clock jumps (negative: backwards).
    ClockJump(ClockJump),
    /// A client's or node's clock starts to drift.
    ClockDrift(ClockDrift),
    /// The master dies and, after a delay, its first replica is promoted
    /// and the master's name points to it.
    Failover(Failover),
}

impl FaultAction {
    /// The kind, as scenario files and histories name it.
    pub fn kind(&self) -> FaultKind {
        match self {
            FaultAction::Pause(_) => FaultKind::Pause,
            FaultAction::Crash(_) => FaultKind::Crash,
            FaultAction::Partition(_) => FaultKind::Partition,
            FaultAction::Delay(_) => FaultKind::Delay,
            FaultAction::SlowLink(_) => FaultKind::SlowLink,
            FaultAction::ClockJump(_) => FaultKind::ClockJump,
            FaultAction::ClockDrift(_) => FaultKind::ClockDrift,
            FaultAction::Failover(_) => FaultKind::Failover,
        }
    }

    /// The fields of a kind in scenario files, besides `kind` and the
    /// trigger's.
    fn fields_of(kind: FaultKind) -> &'static [&'static str] {
        match kind {
            FaultKind::Pause => Pause::FIELDS,
            FaultKind::Crash | FaultKind::Restart => Crash::FIELDS,
            FaultKind::Partition => Partition::FIELDS,
            FaultKind::Delay => Delay::FIELDS,
            FaultKind::SlowLink => SlowLink::FIELDS,
            FaultKind::ClockJump => ClockJump::FIELDS,
            FaultKind::ClockDrift => ClockDrift::FIELDS,
            FaultKind::Failover => Failover::FIELDS,
        }
    }

    /// The action of a kind from the fields a scenario file gave.
    fn from_fields(kind: FaultKind, f: &mut FaultFields) -> Result<FaultAction, String> {
        Ok(match kind {
            FaultKind::Pause => FaultAction::Pause(Pause::from_fields(f)?),
            FaultKind::Crash | FaultKind::Restart => FaultAction::Crash(Crash::from_fields(f)?),
            FaultKind::Partition => FaultAction::Partition(Partition::from_fields(f)?),
            FaultKind::Delay => FaultAction::Delay(Delay::from_fields(f)?),
            FaultKind::SlowLink => FaultAction::SlowLink(SlowLink::from_fields(f)?),
            FaultKind::ClockJump => FaultAction::ClockJump(ClockJump::from_fields(f)?),
            FaultKind::ClockDrift => FaultAction::ClockDrift(ClockDrift::from_fields(f)?),
            FaultKind::Failover => FaultAction::Failover(Failover::from_fields(f)?),
        })
    }

    /// The host it names as its `target`, if it has one.
    fn target(&self) -> Option<Host> {
        match self {
            FaultAction::Pause(p) => p.target,
            FaultAction::Crash(c) => c.target,
            FaultAction::ClockJump(j) => Some(j.target),
            FaultAction::ClockDrift(d) => Some(d.target),
            _ => None,
        }
    }

    /// Checks the action's sizes and hosts; `target` is the host it hits
    /// (its own, or the triggering client).
    fn validate(&self, target: Option<Host>, scenario: &Scenario) -> Result<(), String> {
        match self {
            FaultAction::Pause(p) => p.validate(target, scenario),
            FaultAction::Crash(c) => c.validate(target, scenario),
            FaultAction::Partition(p) => p.validate(scenario),
            FaultAction::Delay(d) => d.validate(scenario),
            FaultAction::SlowLink(s) => s.validate(scenario),
            FaultAction::ClockJump(j) => j.validate(scenario),
            FaultAction::ClockDrift(d) => d.validate(scenario),
            FaultAction::Failover(f) => f.validate(),
        }
    }

    /// Draws an action of `kind` aimed at client `client` (a pause may
    /// move the trigger's point); `None` when the bounds leave none.
    fn draw(
        kind: FaultKind,
        d: &mut Draw,
        scene: &Scene,
        when: &mut Trigger,
        client: usize,
    ) -> Option<FaultAction> {
        Some(match kind {
            FaultKind::Pause => FaultAction::Pause(Pause::draw(d, scene, when, client)),
            FaultKind::Crash => FaultAction::Crash(Crash::draw(d, scene, when, client, false)),
            FaultKind::Restart => FaultAction::Crash(Crash::draw(d, scene, when, client, true)),
            FaultKind::Partition => FaultAction::Partition(Partition::draw(d, scene)?),
            FaultKind::Delay => FaultAction::Delay(Delay::draw(d, scene)?),
            FaultKind::SlowLink => FaultAction::SlowLink(SlowLink::draw(d, scene)?),
            FaultKind::ClockJump => FaultAction::ClockJump(ClockJump::draw(d, scene, client)),
            FaultKind::ClockDrift => FaultAction::ClockDrift(ClockDrift::draw(d, scene, client)),
            FaultKind::Failover => FaultAction::Failover(Failover::draw(d)),
        })
    }

    /// Simpler actions of the same kind (some may equal this one).
    fn variants(&self) -> Vec<FaultAction> {
        fn all<T>(variants: Vec<T>, wrap: fn(T) -> FaultAction) -> Vec<FaultAction> {
            variants.into_iter().map(wrap).collect()
        }
        match self {
            FaultAction::Pause(p) => all(p.variants(), FaultAction::Pause),
            FaultAction::Crash(c) => all(c.variants(), FaultAction::Crash),
            FaultAction::Partition(p) => all(p.variants(), FaultAction::Partition),
            FaultAction::Delay(d) => all(d.variants(), FaultAction::Delay),
            FaultAction::SlowLink(s) => all(s.variants(), FaultAction::SlowLink),
            FaultAction::ClockJump(j) => all(j.variants(), FaultAction::ClockJump),
            FaultAction::ClockDrift(d) => all(d.variants(), FaultAction::ClockDrift),
            FaultAction::Failover(f) => all(f.variants(), FaultAction::Failover),
        }
    }

    /// The action once client `gone` is removed; `None` when it was about
    /// that client only.
    fn without_client(&self, gone: usize) -> Option<FaultAction> {
        Some(match self {
            FaultAction::Pause(p) => FaultAction::Pause(p.without_client(gone)?),
            FaultAction::Crash(c) => FaultAction::Crash(c.without_client(gone)?),
            FaultAction::Partition(p) => FaultAction::Partition(p.without_client(gone)?),
            FaultAction::Delay(d) => FaultAction::Delay(d.without_client(gone)?),
            FaultAction::SlowLink(s) => FaultAction::SlowLink(s.without_client(gone)?),
            FaultAction::ClockJump(j) => FaultAction::ClockJump(j.without_client(gone)?),
            FaultAction::ClockDrift(d) => FaultAction::ClockDrift(d.without_client(gone)?),
            FaultAction::Failover(f) => FaultAction::Failover(f.clone()),
        })
    }
}

impl FaultSpec {
    /// The fault's kind, by which scenario files and histories name it (a
    /// crash that restarts is a `crash`).
    pub fn name(&self) -> FaultKind {
        self.action.kind()
    }

    /// The host a client/node fault hits: its `target`, or the triggering client.
    pub fn target_host(&self) -> Option<Host> {
        let on = self.when.on.as_ref();
        self.action
            .target()
            .or_else(|| on.map(|t| Host::Client(t.client)))
    }

    /// Every host the fault names: its target, the client whose fault
    /// point triggers it, and both sides of a link it acts on.
    pub fn hosts_named(&self) -> Vec<Host> {
        let mut hosts: Vec<Host> = self.target_host().into_iter().collect();
        hosts.extend(self.when.on.as_ref().map(|t| Host::Client(t.client)));
        match &self.action {
            FaultAction::Partition(p) => hosts.extend(p.a.iter().chain(&p.b)),
            FaultAction::Delay(d) => hosts.extend(d.a.iter().chain(&d.b)),
            FaultAction::SlowLink(s) => hosts.extend(s.a.iter().chain(&s.b)),
            _ => {}
        }
        hosts
    }

    /// What it is aimed at, when a fault point triggers it.
    pub fn trigger(&self) -> Option<&PointTrigger> {
        self.when.on.as_ref()
    }

    /// Checks the fault against the scenario it is in.
    pub fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        self.when.validate(scenario)?;
        self.action.validate(self.target_host(), scenario)
    }

    /// Draws a fault of `kind` for the case `scene` describes, aimed at a
    /// client drawn first; `None` when the bounds leave no such fault.
    pub fn draw(kind: FaultKind, d: &mut Draw, scene: &Scene, swarm: &Swarm) -> Option<FaultSpec> {
        let client = d.below(scene.clients.len() as u64) as usize;
        let mut when = Trigger::draw(d, scene, swarm, client);
        let action = FaultAction::draw(kind, d, scene, &mut when, client)?;
        Some(FaultSpec { when, action })
    }

    /// Simpler variants of the fault, boldest first: aimed at the first
    /// cycle, fired earlier, then the kind's own (shorter, narrower, milder).
    pub fn simpler(&self) -> Vec<FaultSpec> {
        let triggers = self.when.variants().into_iter().map(|when| FaultSpec {
            when,
            action: self.action.clone(),
        });
        let actions = self.action.variants().into_iter().map(|action| FaultSpec {
            when: self.when.clone(),
            action,
        });
        triggers.chain(actions).filter(|f| f != self).collect()
    }

    /// The fault once client `gone` is removed from the scenario (later
    /// clients move down one); `None` when it was about that client only.
    pub fn without_client(&self, gone: usize) -> Option<FaultSpec> {
        let action = self.action.without_client(gone)?;
        let when = self.when.without_client(gone)?;
        Some(FaultSpec { when, action })
    }
}

/// A fault as scenario files write it: its kind, its trigger, then its
/// action's fields.
impl Serialize for FaultSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            kind: FaultKind,
            at_ms: Option<u64>,
            on: &'a Option<PointTrigger>,
            #[serde(flatten)]
            action: &'a FaultAction,
        }
        Written {
            kind: self.name(),
            at_ms: self.when.at_ms,
            on: &self.when.on,
            action: &self.action,
        }
        .serialize(serializer)
    }
}

/// A fault as a scenario file gives it: every field any kind has, read one
/// by one, so that an error in a value points at that value's own line (a
/// tagged enum is read whole first, and its errors could only point at the
/// fault's header and not say which field). [`FaultSpec`]'s `TryFrom`
/// then refuses a field the kind does not have, or lacks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FaultFields {
    // Optional here, so that a fault without one is refused naming the
    // fault (a missing field of the table itself could only point at the
    // first fault of the list).
    #[serde(default)]
    kind: Option<FaultKind>,
    #[serde(default)]
    at_ms: Option<u64>,
    #[serde(default)]
    on: Option<PointTrigger>,
    #[serde(default)]
    target: Option<Host>,
    #[serde(default, with = "crash_how_given")]
    how: Option<CrashKind>,
    #[serde(default)]
    restart_after_ms: Option<u64>,
    #[serde(default)]
    a: Option<Vec<Host>>,
    #[serde(default)]
    b: Option<Vec<Host>>,
    #[serde(default)]
    oneway: Option<bool>,
    #[serde(default)]
    latency_ms: Option<u64>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    jump_ms: Option<i64>,
    #[serde(default)]
    ppm: Option<i64>,
    #[serde(default)]
    promote_after_ms: Option<u64>,
}

impl FaultFields {
    /// The fields given, by name, in the order of the struct.
    fn given(&self) -> Vec<&'static str> {
        [
            ("at_ms", self.at_ms.is_some()),
            ("on", self.on.is_some()),
            ("target", self.target.is_some()),
            ("how", self.how.is_some()),
            ("restart_after_ms", self.restart_after_ms.is_some()),
            ("a", self.a.is_some()),
            ("b", self.b.is_some()),
            ("oneway", self.oneway.is_some()),
            ("latency_ms", self.latency_ms.is_some()),
            ("duration_ms", self.duration_ms.is_some()),
            ("jump_ms", self.jump_ms.is_some()),
            ("ppm", self.ppm.is_some()),
            ("promote_after_ms", self.promote_after_ms.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// A field a kind needs.
fn required<T>(value: Option<T>, field: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("missing field `{field}`"))
}

impl TryFrom<FaultFields> for FaultSpec {
    type Error = String;

    fn try_from(mut f: FaultFields) -> Result<FaultSpec, String> {
        let kind = required(f.kind, "kind")?;
        let own = FaultAction::fields_of(kind);
        let is_own = |field: &str| ["at_ms", "on"].contains(&field) || own.contains(&field);
        if let Some(field) = f.given().into_iter().find(|g| !is_own(g)) {
            let expected: Vec<String> = ["kind", "at_ms", "on"]
                .into_iter()
                .chain(own.iter().copied())
                .map(|n| format!("`{n}`"))
                .collect();
            return Err(format!(
                "unknown field `{field}`, expected one of {} (a {kind} fault)",
                expected.join(", "),
            ));
        }
        let when = Trigger {
            at_ms: f.at_ms.take(),
            on: f.on.take(),
        };
        let action = FaultAction::from_fields(kind, &mut f)?;
        Ok(FaultSpec { when, action })
    }
}

/// Reading a scenario's fault lists (`faults`, `faults_for.<rung>`): each
/// fault's fields one by one, then each fault checked whole, an error
/// naming the fault (`faults[2]`) so that it can be found in the file.
pub(crate) mod fault_list {
    use super::*;
    use std::collections::BTreeMap;

    /// The faults of list `path`, or the first fault's error.
    fn convert(path: &str, raw: Vec<FaultFields>) -> Result<Vec<FaultSpec>, String> {
        raw.into_iter()
            .enumerate()
            .map(|(i, fields)| {
                let kind = fields.kind;
                FaultSpec::try_from(fields).map_err(|e| match kind {
                    Some(kind) => format!("`{path}[{i}]` ({kind}): {e}"),
                    None => format!("`{path}[{i}]`: {e}"),
                })
            })
            .collect()
    }

    /// `faults`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultSpec>, D::Error> {
        let raw = Vec::<FaultFields>::deserialize(d)?;
        convert("faults", raw).map_err(serde::de::Error::custom)
    }

    /// `faults_for`.
    pub fn deserialize_per_rung<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Vec<FaultSpec>>, D::Error> {
        let raw = BTreeMap::<String, Vec<FaultFields>>::deserialize(d)?;
        raw.into_iter()
            .map(|(rung, list)| convert(&format!("faults_for.{rung}"), list).map(|l| (rung, l)))
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
