//! Faults as scenario files write them, and when they fire.
//!
//! A fault fires either at a simulated time (`at_ms`) or when a client
//! reaches a named fault point in its n-th lock cycle
//! (`on = { client = 0, cycle = 1, point = "release-start" }`). The fault
//! points, and where a fault aimed at a point a rung lacks fires, are
//! defined in `docs/ladder.md`.

use crate::history::FaultName;
use crate::host::Host;
use crate::scenario::{MAX_MS, MAX_PPM, Scenario};
use locks::FaultPoint;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// When a fault fires.
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

/// Crash kinds by the names scenario files give them: `kill` (the process
/// dies, the machine and its page cache survive) or `power-loss`.
mod crash_how {
    use super::*;

    pub fn serialize<S: Serializer>(how: &CrashKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(name(*how))
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

    /// The name of a crash kind.
    pub fn name(how: CrashKind) -> &'static str {
        match how {
            CrashKind::ProcessKill => "kill",
            CrashKind::PowerLoss => "power-loss",
        }
    }
}

/// The name scenario files and histories give a crash kind.
pub fn crash_name(how: CrashKind) -> &'static str {
    crash_how::name(how)
}

fn one() -> u32 {
    1
}

/// A crash kind that may be absent, by the names scenario files give them.
mod crash_how_given {
    use super::*;

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<CrashKind>, D::Error> {
        crash_how::deserialize(deserializer).map(Some)
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
    kind: Option<FaultName>,
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

/// The fields each kind of fault has (besides `kind`).
fn fields_of(kind: FaultName) -> &'static [&'static str] {
    match kind {
        FaultName::Pause => &["at_ms", "on", "target", "duration_ms"],
        FaultName::Crash => &["at_ms", "on", "target", "how", "restart_after_ms"],
        FaultName::Partition => &["at_ms", "on", "a", "b", "oneway", "duration_ms"],
        FaultName::Delay => &["at_ms", "on", "a", "b", "oneway", "duration_ms"],
        FaultName::SlowLink => &["at_ms", "on", "a", "b", "latency_ms", "duration_ms"],
        FaultName::ClockJump => &["at_ms", "on", "target", "jump_ms"],
        FaultName::ClockDrift => &["at_ms", "on", "target", "ppm"],
        FaultName::Failover => &["at_ms", "on", "promote_after_ms"],
    }
}

/// A field a kind needs.
fn required<T>(value: Option<T>, field: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("missing field `{field}`"))
}

impl TryFrom<FaultFields> for FaultSpec {
    type Error = String;

    fn try_from(f: FaultFields) -> Result<FaultSpec, String> {
        let kind = required(f.kind, "kind")?;
        let own = fields_of(kind);
        if let Some(field) = f.given().into_iter().find(|g| !own.contains(g)) {
            let expected: Vec<String> = std::iter::once("kind")
                .chain(own.iter().copied())
                .map(|n| format!("`{n}`"))
                .collect();
            return Err(format!(
                "unknown field `{field}`, expected one of {} (a {kind} fault)",
                expected.join(", "),
            ));
        }
        let (at_ms, on) = (f.at_ms, f.on);
        Ok(match kind {
            FaultName::Pause => FaultSpec::Pause {
                at_ms,
                on,
                target: f.target,
                duration_ms: required(f.duration_ms, "duration_ms")?,
            },
            FaultName::Crash => FaultSpec::Crash {
                at_ms,
                on,
                target: f.target,
                how: f.how.unwrap_or_default(),
                restart_after_ms: f.restart_after_ms,
            },
            FaultName::Partition => FaultSpec::Partition {
                at_ms,
                on,
                a: required(f.a, "a")?,
                b: required(f.b, "b")?,
                oneway: f.oneway.unwrap_or(false),
                duration_ms: f.duration_ms,
            },
            FaultName::Delay => FaultSpec::Delay {
                at_ms,
                on,
                a: required(f.a, "a")?,
                b: required(f.b, "b")?,
                oneway: f.oneway.unwrap_or(false),
                duration_ms: required(f.duration_ms, "duration_ms")?,
            },
            FaultName::SlowLink => FaultSpec::SlowLink {
                at_ms,
                on,
                a: required(f.a, "a")?,
                b: required(f.b, "b")?,
                latency_ms: required(f.latency_ms, "latency_ms")?,
                duration_ms: f.duration_ms,
            },
            FaultName::ClockJump => FaultSpec::ClockJump {
                at_ms,
                on,
                target: required(f.target, "target")?,
                jump_ms: required(f.jump_ms, "jump_ms")?,
            },
            FaultName::ClockDrift => FaultSpec::ClockDrift {
                at_ms,
                on,
                target: required(f.target, "target")?,
                ppm: required(f.ppm, "ppm")?,
            },
            FaultName::Failover => FaultSpec::Failover {
                at_ms,
                on,
                promote_after_ms: f.promote_after_ms.unwrap_or(0),
            },
        })
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

/// One fault of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    deny_unknown_fields,
    try_from = "FaultFields"
)]
pub enum FaultSpec {
    /// Stop-the-world pause of a client: nothing in it runs or leaves it.
    Pause {
        /// Simulated time it starts, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it starts at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// The paused client (`client-N`); defaults to `on.client`.
        #[serde(default)]
        target: Option<Host>,
        /// How long.
        duration_ms: u64,
    },
    /// A process kill or power loss of a client or node.
    Crash {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// `client-N` or `redis-N`; defaults to `on.client`.
        #[serde(default)]
        target: Option<Host>,
        /// `kill` (the default) or `power-loss` (nodes: unsynced writes lost).
        #[serde(default, with = "crash_how")]
        how: CrashKind,
        /// Restart after this long; never when absent.
        #[serde(default)]
        restart_after_ms: Option<u64>,
    },
    /// Two-way (or one-way) network partition between two groups of hosts.
    Partition {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// One side.
        a: Vec<Host>,
        /// The other side.
        b: Vec<Host>,
        /// Only messages from `a` to `b` are lost.
        #[serde(default)]
        oneway: bool,
        /// Heals after this long; never when absent.
        #[serde(default)]
        duration_ms: Option<u64>,
    },
    /// Messages between two groups are held, then all delivered at once.
    Delay {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// One side.
        a: Vec<Host>,
        /// The other side.
        b: Vec<Host>,
        /// Only messages from `a` to `b` are held (one side must be
        /// clients: a client's requests, or the replies it receives).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        oneway: bool,
        /// How long messages are held.
        duration_ms: u64,
    },
    /// A slower link for a while.
    SlowLink {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// One side.
        a: Vec<Host>,
        /// The other side.
        b: Vec<Host>,
        /// One-way latency while slow.
        latency_ms: u64,
        /// How long; for ever when absent.
        #[serde(default)]
        duration_ms: Option<u64>,
    },
    /// A client's or node's wall clock jumps (negative: backwards).
    ClockJump {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// `client-N` or `redis-N`.
        target: Host,
        /// The jump.
        jump_ms: i64,
    },
    /// A client's or node's clock starts to drift.
    ClockDrift {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// `client-N` or `redis-N`.
        target: Host,
        /// Parts per million; positive runs fast.
        ppm: i64,
    },
    /// The master dies and, after a delay, its first replica is promoted
    /// and the master's name points to it.
    Failover {
        /// Simulated time, unless `on` is given.
        #[serde(default)]
        at_ms: Option<u64>,
        /// The fault point it happens at.
        #[serde(default)]
        on: Option<PointTrigger>,
        /// Delay between the master's death and the promotion.
        #[serde(default)]
        promote_after_ms: u64,
    },
}

impl FaultSpec {
    /// The fault's kind, as scenario files and histories name it.
    pub fn name(&self) -> FaultName {
        match self {
            FaultSpec::Pause { .. } => FaultName::Pause,
            FaultSpec::Crash { .. } => FaultName::Crash,
            FaultSpec::Partition { .. } => FaultName::Partition,
            FaultSpec::Delay { .. } => FaultName::Delay,
            FaultSpec::SlowLink { .. } => FaultName::SlowLink,
            FaultSpec::ClockJump { .. } => FaultName::ClockJump,
            FaultSpec::ClockDrift { .. } => FaultName::ClockDrift,
            FaultSpec::Failover { .. } => FaultName::Failover,
        }
    }

    /// When it fires: a time or a point.
    pub fn when(&self) -> (Option<u64>, Option<&PointTrigger>) {
        match self {
            FaultSpec::Pause { at_ms, on, .. }
            | FaultSpec::Crash { at_ms, on, .. }
            | FaultSpec::Partition { at_ms, on, .. }
            | FaultSpec::Delay { at_ms, on, .. }
            | FaultSpec::SlowLink { at_ms, on, .. }
            | FaultSpec::ClockJump { at_ms, on, .. }
            | FaultSpec::ClockDrift { at_ms, on, .. }
            | FaultSpec::Failover { at_ms, on, .. } => (*at_ms, on.as_ref()),
        }
    }

    /// The host a client/node fault hits: its `target`, or the triggering client.
    pub fn target_host(&self) -> Option<Host> {
        let (_, on) = self.when();
        let explicit = match self {
            FaultSpec::Pause { target, .. } | FaultSpec::Crash { target, .. } => *target,
            FaultSpec::ClockJump { target, .. } | FaultSpec::ClockDrift { target, .. } => {
                Some(*target)
            }
            _ => None,
        };
        explicit.or_else(|| on.map(|t| Host::Client(t.client)))
    }

    /// What it is aimed at, when a fault point triggers it.
    pub fn trigger(&self) -> Option<&PointTrigger> {
        self.when().1
    }

    /// Checks the fault against the scenario it is in.
    pub fn validate(&self, scenario: &Scenario) -> Result<(), String> {
        let (at, on) = self.when();
        match (at, on) {
            (Some(_), Some(_)) => return Err("give either `at_ms` or `on`, not both".into()),
            (None, None) => return Err("expected `at_ms` (a time) or `on` (a fault point)".into()),
            _ => {}
        }
        if let Some(t) = on {
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
        if let Some(at_ms) = at
            && at_ms >= scenario.duration_ms
        {
            return Err(format!(
                "`at_ms` is {at_ms}, but the run lasts {} ms (`duration_ms`), so it never fires; expected below {}",
                scenario.duration_ms, scenario.duration_ms
            ));
        }
        check_sizes(self)?;
        match self {
            FaultSpec::Pause { .. } => {
                let host = self
                    .target_host()
                    .ok_or("`target`: expected a client such as client-0")?;
                check_client(host, scenario).map_err(|e| format!("`target`: {e}"))?;
            }
            FaultSpec::Crash { .. } => {
                let host = self
                    .target_host()
                    .ok_or("`target`: expected a host such as client-0 or redis-0")?;
                check_host(host, scenario).map_err(|e| format!("`target`: {e}"))?;
            }
            FaultSpec::Partition { a, b, .. }
            | FaultSpec::Delay { a, b, .. }
            | FaultSpec::SlowLink { a, b, .. } => {
                if a.is_empty() || b.is_empty() {
                    return Err("`a` and `b` must each name at least one host".into());
                }
                for (side, hosts) in [("a", a), ("b", b)] {
                    for host in hosts {
                        check_host(*host, scenario).map_err(|e| format!("`{side}`: {e}"))?;
                    }
                }
                if let FaultSpec::Delay { oneway: true, .. } = self {
                    let clients = |side: &[Host]| side.iter().all(|h| h.client().is_some());
                    let no_clients = |side: &[Host]| side.iter().all(|h| h.client().is_none());
                    let one_client_side =
                        (clients(a) && no_clients(b)) || (no_clients(a) && clients(b));
                    if !one_client_side {
                        return Err(
                            "`oneway`: a one-way delay needs clients on exactly one side \
                             (their requests, or the replies they receive, are held)"
                                .into(),
                        );
                    }
                }
            }
            FaultSpec::ClockJump { target, .. } | FaultSpec::ClockDrift { target, .. } => {
                check_host(*target, scenario).map_err(|e| format!("`target`: {e}"))?;
                if *target == Host::Store {
                    return Err(
                        "`target`: the store's clock plays no part; aim at client-N or redis-N"
                            .into(),
                    );
                }
            }
            FaultSpec::Failover { .. } => {}
        }
        Ok(())
    }
}

/// Bounds every time and size a fault gives, so that no accepted value
/// wraps around when the simulator turns it into µs or scales it by a
/// drift (see [`MAX_MS`] and [`MAX_PPM`]).
fn check_sizes(fault: &FaultSpec) -> Result<(), String> {
    let mut times: Vec<(&str, u64)> = Vec::new();
    match fault {
        FaultSpec::Pause { duration_ms, .. } | FaultSpec::Delay { duration_ms, .. } => {
            times.push(("duration_ms", *duration_ms));
        }
        FaultSpec::Crash {
            restart_after_ms, ..
        } => times.extend(restart_after_ms.map(|ms| ("restart_after_ms", ms))),
        FaultSpec::Partition { duration_ms, .. } => {
            times.extend(duration_ms.map(|ms| ("duration_ms", ms)));
        }
        FaultSpec::SlowLink {
            latency_ms,
            duration_ms,
            ..
        } => {
            times.push(("latency_ms", *latency_ms));
            times.extend(duration_ms.map(|ms| ("duration_ms", ms)));
        }
        FaultSpec::ClockJump { jump_ms, .. } => {
            if jump_ms.unsigned_abs() > MAX_MS {
                return Err(format!(
                    "`jump_ms` is {jump_ms}; expected between -{MAX_MS} and {MAX_MS}"
                ));
            }
        }
        FaultSpec::ClockDrift { ppm, .. } => {
            if !(-MAX_PPM..=MAX_PPM).contains(ppm) {
                return Err(format!(
                    "`ppm` is {ppm}; expected between -{MAX_PPM} and {MAX_PPM}"
                ));
            }
        }
        FaultSpec::Failover {
            promote_after_ms, ..
        } => times.push(("promote_after_ms", *promote_after_ms)),
    }
    match times.into_iter().find(|(_, ms)| *ms > MAX_MS) {
        Some((name, ms)) => Err(format!(
            "`{name}` is {ms}; expected at most {MAX_MS} (one simulated hour)"
        )),
        None => Ok(()),
    }
}

fn check_client(host: Host, scenario: &Scenario) -> Result<(), String> {
    let n = host
        .client()
        .ok_or_else(|| format!("{host}; expected client-N"))?;
    if n >= scenario.client_count() {
        return Err(format!(
            "{host} does not exist (the scenario has {} clients)",
            scenario.client_count()
        ));
    }
    Ok(())
}

/// Hosts a fault may name: `client-N`, `redis-N` (N below the largest
/// deployment of any rung: a node a rung does not have is skipped for that
/// rung), `master` and `store`.
fn check_host(host: Host, scenario: &Scenario) -> Result<(), String> {
    match host {
        Host::Store | Host::Master => Ok(()),
        Host::Client(_) => check_client(host, scenario),
        Host::Node(n) => {
            let most = std::iter::once(&scenario.topology)
                .chain(scenario.topology_for.values())
                .map(|t| t.node_count())
                .max()
                .unwrap_or(1);
            if n < most {
                Ok(())
            } else {
                Err(format!(
                    "\"{host}\" does not exist (the largest deployment has {most} nodes)"
                ))
            }
        }
    }
}
