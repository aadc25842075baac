//! Scenario files: what to run, against which rungs, with which faults,
//! and what verdict each rung should get.
//!
//! The format is documented by example in `scenarios/README.md`. Loading is
//! strict: unknown fields, wrong types and impossible values are errors that
//! name the file, the line and column, and what was expected.

use crate::fault::FaultSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name; defaults to the file's stem.
    #[serde(default)]
    pub name: String,
    /// What the scenario shows, in a sentence or two (the tour prints it).
    #[serde(default)]
    pub description: String,
    /// The rungs it runs, by id.
    pub variants: Vec<String>,
    /// The seeds `run` and `suite` use when none is given.
    #[serde(default = "default_seeds")]
    pub seeds: Vec<u64>,
    /// How long the run may last, in simulated ms.
    pub duration_ms: u64,
    /// The Redis deployment every rung uses unless `topology_for` says otherwise.
    #[serde(default)]
    pub topology: Topology,
    /// Per-rung deployments, e.g. Redlock on five independent masters.
    #[serde(default)]
    pub topology_for: BTreeMap<String, Topology>,
    /// Link latency.
    #[serde(default)]
    pub network: Network,
    /// Lock parameters.
    #[serde(default)]
    pub lock: LockSpec,
    /// Groups of clients.
    pub clients: Vec<ClientGroup>,
    /// The guarded resource.
    #[serde(default)]
    pub resource: ResourceSpec,
    /// The faults, timed or aimed at fault points.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// The verdict each rung should get.
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
    /// Liveness: how soon after the last fault heals some waiting client
    /// must acquire. Defaults to 3 × TTL + 1 s.
    #[serde(default)]
    pub liveness_bound_ms: Option<u64>,
}

fn default_seeds() -> Vec<u64> {
    vec![1]
}

/// How the Redis nodes are deployed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// `standalone`, `replicated` (a master and replicas, failover by name)
    /// or `independent` (N masters, for Redlock).
    #[serde(default = "default_kind")]
    pub kind: TopologyKind,
    /// Number of masters (`independent`).
    #[serde(default = "one")]
    pub masters: usize,
    /// Number of replicas of the master (`replicated`).
    #[serde(default)]
    pub replicas: usize,
    /// How long the master's writes take to reach a replica.
    #[serde(default)]
    pub replication_delay_ms: u64,
    /// Each node's persistence: `none`, `aof-always` or `aof-everysec`.
    #[serde(default = "default_persistence")]
    pub persistence: String,
}

fn default_kind() -> TopologyKind {
    TopologyKind::Standalone
}

fn one() -> usize {
    1
}

fn default_persistence() -> String {
    "none".to_string()
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            kind: TopologyKind::Standalone,
            masters: 1,
            replicas: 0,
            replication_delay_ms: 0,
            persistence: default_persistence(),
        }
    }
}

impl Topology {
    /// The node names, masters first: `redis-0`, `redis-1`, ...
    pub fn node_names(&self) -> Vec<String> {
        (0..self.node_count())
            .map(|i| format!("redis-{i}"))
            .collect()
    }

    /// How many Redis nodes the deployment has.
    pub fn node_count(&self) -> usize {
        match self.kind {
            TopologyKind::Standalone => 1,
            TopologyKind::Replicated => 1 + self.replicas,
            TopologyKind::Independent => self.masters,
        }
    }
}

/// The kinds of deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// One node.
    Standalone,
    /// One master and its replicas; clients reach the master by name.
    Replicated,
    /// Independent masters (Redlock).
    Independent,
}

/// The simulated network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Smallest one-way latency of every link, ms.
    #[serde(default = "one_u64")]
    pub latency_ms: u64,
    /// Extra latency each message may draw (from the seed), ms: what makes
    /// two seeds of one scenario differ.
    #[serde(default = "one_u64")]
    pub jitter_ms: u64,
}

fn one_u64() -> u64 {
    1
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency_ms: 1,
            jitter_ms: 1,
        }
    }
}

/// Lock parameters shared by every client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// The lock's key.
    #[serde(default = "default_key")]
    pub key: String,
    /// Lease TTL.
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// How long an acquire keeps trying.
    #[serde(default = "default_max_wait")]
    pub max_wait_ms: u64,
    /// Pause between attempts.
    #[serde(default = "default_retry")]
    pub retry_ms: u64,
    /// Redlock's per-node reply timeout.
    #[serde(default = "default_node_timeout")]
    pub node_timeout_ms: u64,
    /// Timeout of every Redis reply.
    #[serde(default = "default_response_timeout")]
    pub response_timeout_ms: u64,
}

fn default_key() -> String {
    "lock:stock".to_string()
}
fn default_ttl() -> u64 {
    1_000
}
fn default_max_wait() -> u64 {
    5_000
}
fn default_retry() -> u64 {
    20
}
fn default_node_timeout() -> u64 {
    50
}
fn default_response_timeout() -> u64 {
    500
}

impl Default for LockSpec {
    fn default() -> Self {
        LockSpec {
            key: default_key(),
            ttl_ms: default_ttl(),
            max_wait_ms: default_max_wait(),
            retry_ms: default_retry(),
            node_timeout_ms: default_node_timeout(),
            response_timeout_ms: default_response_timeout(),
        }
    }
}

/// A group of identical clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientGroup {
    /// How many clients.
    #[serde(default = "one")]
    pub count: usize,
    /// How many lock cycles each runs.
    #[serde(default = "one_u32")]
    pub ops: u32,
    /// Work inside the lock, between reading and writing the resource.
    #[serde(default)]
    pub critical_section_ms: u64,
    /// Pause between cycles.
    #[serde(default)]
    pub think_ms: u64,
    /// When the first cycle starts.
    #[serde(default)]
    pub start_ms: u64,
    /// Whether the holder acquires the same lock again inside its cycle.
    #[serde(default)]
    pub nested: bool,
    /// Sales (read, work, write) per cycle.
    #[serde(default = "one_u32")]
    pub writes: u32,
}

fn one_u32() -> u32 {
    1
}

/// The guarded resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// `inventory` (read, decrement, write) or `fenced` (the same, through a
    /// store that rejects tokens lower than one it has seen).
    #[serde(default = "default_resource_kind")]
    pub kind: String,
    /// Initial stock.
    #[serde(default = "default_stock")]
    pub stock: i64,
}

fn default_resource_kind() -> String {
    "inventory".to_string()
}
fn default_stock() -> i64 {
    200
}

impl Default for ResourceSpec {
    fn default() -> Self {
        ResourceSpec {
            kind: default_resource_kind(),
            stock: default_stock(),
        }
    }
}

/// A scenario that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// Where and what was expected.
    pub message: String,
}

/// The verdicts a scenario may expect.
pub const VERDICTS: [&str; 4] = ["safe", "violated", "deadlock", "unknown"];

impl Scenario {
    /// Loads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            message: format!("cannot read: {e}"),
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Scenario::parse(&text, &file, &stem)
    }

    /// Parses and validates scenario text; `file` names it in errors and
    /// `stem` is the default name.
    pub fn parse(text: &str, file: &str, stem: &str) -> Result<Scenario, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError {
            file: file.to_string(),
            message: describe_toml_error(text, &e),
        })?;
        if scenario.name.is_empty() {
            scenario.name = stem.to_string();
        }
        scenario.validate().map_err(|message| ScenarioError {
            file: file.to_string(),
            message: match locate(text, &message) {
                Some((line, column)) => format!("line {line}, column {column}: {message}"),
                None => message,
            },
        })?;
        Ok(scenario)
    }

    /// The deployment a rung uses in this scenario.
    pub fn topology_of(&self, variant: &str) -> &Topology {
        self.topology_for.get(variant).unwrap_or(&self.topology)
    }

    /// Total number of clients.
    pub fn client_count(&self) -> usize {
        self.clients.iter().map(|g| g.count).sum()
    }

    /// The group client `i` belongs to.
    pub fn group_of(&self, client: usize) -> Option<&ClientGroup> {
        let mut first = 0;
        for group in &self.clients {
            if client < first + group.count {
                return Some(group);
            }
            first += group.count;
        }
        None
    }

    /// The liveness bound.
    pub fn liveness_bound_ms(&self) -> u64 {
        self.liveness_bound_ms
            .unwrap_or(3 * self.lock.ttl_ms + 1_000)
    }

    fn validate(&self) -> Result<(), String> {
        if self.variants.is_empty() {
            return Err("`variants` is empty; expected at least one rung id".into());
        }
        for v in &self.variants {
            if locks::rung(v).is_none() {
                return Err(format!(
                    "`variants`: unknown rung {v:?}; expected one of {}",
                    locks::ids().join(", ")
                ));
            }
        }
        for (v, verdict) in &self.expect {
            if !self.variants.contains(v) {
                return Err(format!("`expect.{v}`: {v:?} is not in `variants`"));
            }
            if !VERDICTS.contains(&verdict.as_str()) {
                return Err(format!(
                    "`expect.{v}`: {verdict:?} is not a verdict; expected one of {}",
                    VERDICTS.join(", ")
                ));
            }
        }
        for v in self.topology_for.keys() {
            if !self.variants.contains(v) {
                return Err(format!("`topology_for.{v}`: {v:?} is not in `variants`"));
            }
        }
        if self.seeds.iter().any(|&s| s >= 1 << 53) {
            return Err(
                "`seeds`: every seed must be below 2^53 (JSON readers keep them exact)".into(),
            );
        }
        if self.duration_ms == 0 || self.duration_ms > 3_600_000 {
            return Err("`duration_ms` must be between 1 and 3600000".into());
        }
        if self.clients.is_empty() || self.client_count() == 0 {
            return Err("`clients`: expected at least one client".into());
        }
        if self.client_count() > 256 {
            return Err("`clients`: at most 256 clients".into());
        }
        if self.lock.ttl_ms == 0 {
            return Err("`lock.ttl_ms` must be at least 1".into());
        }
        if self.lock.retry_ms == 0 {
            return Err("`lock.retry_ms` must be at least 1".into());
        }
        if !["inventory", "fenced"].contains(&self.resource.kind.as_str()) {
            return Err(format!(
                "`resource.kind`: {:?}; expected \"inventory\" or \"fenced\"",
                self.resource.kind
            ));
        }
        for (name, topo) in std::iter::once(("topology".to_string(), &self.topology)).chain(
            self.topology_for
                .iter()
                .map(|(k, t)| (format!("topology_for.{k}"), t)),
        ) {
            if !["none", "aof-always", "aof-everysec"].contains(&topo.persistence.as_str()) {
                return Err(format!(
                    "`{name}.persistence`: {:?}; expected none, aof-always or aof-everysec",
                    topo.persistence
                ));
            }
            if topo.node_count() == 0 || topo.node_count() > 9 {
                return Err(format!("`{name}`: between 1 and 9 nodes"));
            }
        }
        for (i, fault) in self.faults.iter().enumerate() {
            fault
                .validate(self)
                .map_err(|e| format!("`faults[{i}]` ({}): {e}", fault.kind_name()))?;
        }
        Ok(())
    }
}

/// Turns a TOML error into "line L, column C: what was expected".
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().to_string();
    match err.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Where in the file a validation message's field is: the message starts
/// with the field's path in backticks (`variants`, `lock.ttl_ms`,
/// `faults[2]`, `expect.setnx`). Best effort: `None` when not found.
fn locate(text: &str, message: &str) -> Option<(usize, usize)> {
    let path = message.strip_prefix('`')?.split('`').next()?;
    let lines: Vec<&str> = text.lines().collect();
    let at = |i: usize| {
        let line = lines[i];
        (i + 1, line.len() - line.trim_start().len() + 1)
    };
    // `faults[2]` and `clients[0]`: the n-th array-of-tables header.
    if let Some((name, rest)) = path.split_once('[') {
        let n: usize = rest.split(']').next()?.parse().ok()?;
        let header = format!("[[{name}]]");
        return lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim() == header)
            .nth(n)
            .map(|(i, _)| at(i));
    }
    let key_line = |key: &str, from: usize, to: usize| {
        (from..to).find(|&i| {
            let l = lines[i].trim_start();
            l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
    };
    if let Some(h) = lines.iter().position(|l| l.trim() == format!("[{path}]")) {
        return Some(at(h));
    }
    match path.rsplit_once('.') {
        None => key_line(path, 0, lines.len()).map(at),
        Some((table, key)) => {
            // `[table]` then `key = ...` before the next header, or a
            // dotted `table.key = ...`, or the header itself.
            let header = lines.iter().position(|l| l.trim() == format!("[{table}]"));
            if let Some(h) = header {
                let end = (h + 1..lines.len())
                    .find(|&i| lines[i].trim_start().starts_with('['))
                    .unwrap_or(lines.len());
                return key_line(key, h + 1, end).or(Some(h)).map(at);
            }
            key_line(path, 0, lines.len()).map(at)
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}
