//! Faults as scenario files write them, and when they fire.
//!
//! A fault fires either at a simulated time (`at_ms`) or when a client
//! reaches a named fault point in its n-th lock cycle
//! (`on = { client = 0, op = 1, point = "release-start" }`).

use crate::scenario::Scenario;
use locks::FaultPoint;
use serde::{Deserialize, Serialize};

/// When a fault fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointTrigger {
    /// The client whose code reaches the point.
    pub client: usize,
    /// Which of its lock cycles, from 1.
    #[serde(default = "one")]
    pub op: u32,
    /// The fault point's name (`acquire-mid`, `after-acquire`,
    /// `before-write`, `release-start`, `release-mid`).
    pub point: String,
}

fn one() -> u32 {
    1
}

/// One fault of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
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
        target: Option<String>,
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
        target: Option<String>,
        /// `kill` (the default) or `power-loss` (nodes: unsynced writes lost).
        #[serde(default = "kill")]
        how: String,
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
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
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
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
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
        a: Vec<String>,
        /// The other side.
        b: Vec<String>,
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
        target: String,
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
        target: String,
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

fn kill() -> String {
    "kill".to_string()
}

impl FaultSpec {
    /// The kind's name as scenario files write it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            FaultSpec::Pause { .. } => "pause",
            FaultSpec::Crash { .. } => "crash",
            FaultSpec::Partition { .. } => "partition",
            FaultSpec::Delay { .. } => "delay",
            FaultSpec::SlowLink { .. } => "slow-link",
            FaultSpec::ClockJump { .. } => "clock-jump",
            FaultSpec::ClockDrift { .. } => "clock-drift",
            FaultSpec::Failover { .. } => "failover",
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
    pub fn target_host(&self) -> Option<String> {
        let (_, on) = self.when();
        let explicit = match self {
            FaultSpec::Pause { target, .. } | FaultSpec::Crash { target, .. } => target.clone(),
            FaultSpec::ClockJump { target, .. } | FaultSpec::ClockDrift { target, .. } => {
                Some(target.clone())
            }
            _ => None,
        };
        explicit.or_else(|| on.map(|t| format!("client-{}", t.client)))
    }

    /// The fault point it is aimed at, parsed.
    pub fn point(&self) -> Option<(usize, u32, FaultPoint)> {
        let (_, on) = self.when();
        on.and_then(|t| FaultPoint::from_name(&t.point).map(|p| (t.client, t.op, p)))
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
            if FaultPoint::from_name(&t.point).is_none() {
                return Err(format!(
                    "`on.point`: unknown fault point {:?}; expected one of {}",
                    t.point,
                    FaultPoint::ALL.map(|p| p.name()).join(", ")
                ));
            }
            if t.client >= scenario.client_count() {
                return Err(format!(
                    "`on.client`: client {} does not exist (the scenario has {})",
                    t.client,
                    scenario.client_count()
                ));
            }
            if t.op == 0 {
                return Err("`on.op` counts lock cycles from 1".into());
            }
        }
        match self {
            FaultSpec::Pause { .. } => {
                let host = self.target_host().unwrap_or_default();
                check_client(&host, scenario)?;
            }
            FaultSpec::Crash { how, .. } => {
                let host = self
                    .target_host()
                    .ok_or("`target`: expected a host such as client-0 or redis-0")?;
                check_host(&host, scenario)?;
                if how != "kill" && how != "power-loss" {
                    return Err(format!(
                        "`how`: {how:?}; expected \"kill\" or \"power-loss\""
                    ));
                }
            }
            FaultSpec::Partition { a, b, .. }
            | FaultSpec::Delay { a, b, .. }
            | FaultSpec::SlowLink { a, b, .. } => {
                if a.is_empty() || b.is_empty() {
                    return Err("`a` and `b` must each name at least one host".into());
                }
                for host in a.iter().chain(b) {
                    check_host(host, scenario)?;
                }
            }
            FaultSpec::ClockJump { target, .. } | FaultSpec::ClockDrift { target, .. } => {
                check_host(target, scenario)?;
                if target == "store" {
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

fn check_client(host: &str, scenario: &Scenario) -> Result<(), String> {
    let n = host
        .strip_prefix("client-")
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| format!("`target`: {host:?}; expected client-N"))?;
    if n >= scenario.client_count() {
        return Err(format!(
            "`target`: {host} does not exist (the scenario has {} clients)",
            scenario.client_count()
        ));
    }
    Ok(())
}

/// Hosts a fault may name: `client-N`, `redis-N` (N below the largest
/// deployment of any rung: a node a rung does not have is skipped for that
/// rung) and `store`.
fn check_host(host: &str, scenario: &Scenario) -> Result<(), String> {
    if host == "store" {
        return Ok(());
    }
    if host.starts_with("client-") {
        return check_client(host, scenario);
    }
    if let Some(n) = host
        .strip_prefix("redis-")
        .and_then(|n| n.parse::<usize>().ok())
    {
        let most = std::iter::once(&scenario.topology)
            .chain(scenario.topology_for.values())
            .map(|t| t.node_count())
            .max()
            .unwrap_or(1);
        if n < most {
            return Ok(());
        }
        return Err(format!(
            "{host:?} does not exist (the largest deployment has {most} nodes)"
        ));
    }
    Err(format!(
        "unknown host {host:?}; expected client-N, redis-N or store"
    ))
}
