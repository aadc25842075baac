//! Scenario files: what to run, against which rungs, with which faults,
//! and what verdict each rung should get.
//!
//! The format is documented by example in `scenarios/README.md`. Loading is
//! strict: unknown fields, wrong types and impossible values are errors that
//! name the file, the line and column, and what was expected.

use crate::fault::FaultSpec;
use crate::host::Host;
use crate::resource::ResourceSpec;
use crate::verdict::Verdict;
use locks::rungfile::line_column;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
    /// The rungs it runs, by id (`variants` in older files).
    #[serde(alias = "variants")]
    pub rungs: Vec<String>,
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
    /// Per-rung resources: a rung named here guards this one instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_for: BTreeMap<String, ResourceSpec>,
    /// The faults, timed or aimed at fault points.
    #[serde(default, deserialize_with = "crate::fault::fault_list::deserialize")]
    pub faults: Vec<FaultSpec>,
    /// Per-rung fault lists: a rung named here gets this list instead of
    /// `faults`, so that one story can be told against rungs that need
    /// different faults.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::fault::fault_list::deserialize_per_rung"
    )]
    pub faults_for: BTreeMap<String, Vec<FaultSpec>>,
    /// The verdict each rung should get.
    #[serde(default)]
    pub expect: BTreeMap<String, Verdict>,
    /// Liveness: how soon after the last fault heals some waiting client
    /// must acquire. Defaults to 3 × TTL + 1 s.
    #[serde(default)]
    pub liveness_bound_ms: Option<u64>,
    /// Notes for the reader of the file that do not stop it from loading,
    /// such as an old spelling of a field.
    #[serde(skip)]
    pub notes: Vec<String>,
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
    #[serde(default, with = "persistence_name")]
    pub persistence: Persistence,
}

/// How a node persists its writes (the simulated node and real
/// `redis-server` are configured from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// No persistence: a restart comes back empty.
    #[default]
    None,
    /// `appendfsync always`: every write is on disk before its reply.
    AofAlways,
    /// `appendfsync everysec`: writes reach the page cache before their
    /// reply and are synced once a second.
    AofEverysec,
}

/// Persistence modes by the names scenario files give them.
mod persistence_name {
    use super::*;

    const NAMES: [(&str, Persistence); 3] = [
        ("none", Persistence::None),
        ("aof-always", Persistence::AofAlways),
        ("aof-everysec", Persistence::AofEverysec),
    ];

    pub fn serialize<S: Serializer>(mode: &Persistence, serializer: S) -> Result<S::Ok, S::Error> {
        let name = NAMES
            .iter()
            .find(|(_, m)| m == mode)
            .map_or("none", |(n, _)| n);
        serializer.serialize_str(name)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Persistence, D::Error> {
        let name = String::deserialize(deserializer)?;
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown persistence {name:?}; expected none, aof-always or aof-everysec"
                ))
            })
    }
}

fn default_kind() -> TopologyKind {
    TopologyKind::Standalone
}

fn one() -> usize {
    1
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            kind: TopologyKind::Standalone,
            masters: 1,
            replicas: 0,
            replication_delay_ms: 0,
            persistence: Persistence::None,
        }
    }
}

impl Topology {
    /// The nodes, masters first: `redis-0`, `redis-1`, ...
    pub fn nodes(&self) -> Vec<Host> {
        (0..self.node_count()).map(Host::Node).collect()
    }

    /// A field set to something this kind of deployment ignores, if any:
    /// a value that would silently mean nothing is an error instead.
    pub fn ignored_field(&self) -> Option<&'static str> {
        match self.kind {
            TopologyKind::Standalone if self.masters != 1 => Some("masters"),
            TopologyKind::Standalone | TopologyKind::Independent if self.replicas != 0 => {
                Some("replicas")
            }
            TopologyKind::Standalone | TopologyKind::Independent
                if self.replication_delay_ms != 0 =>
            {
                Some("replication_delay_ms")
            }
            TopologyKind::Replicated if self.masters != 1 => Some("masters"),
            _ => None,
        }
    }

    /// How many Redis nodes the deployment has.
    pub fn node_count(&self) -> usize {
        match self.kind {
            TopologyKind::Standalone => 1,
            TopologyKind::Replicated => self.replicas.saturating_add(1),
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
    /// How many lock cycles each runs (`ops` in older files).
    #[serde(default = "one_u32", alias = "ops")]
    pub cycles: u32,
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

/// A scenario that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// Where and what was expected.
    pub message: String,
}

/// The longest time a scenario may give anywhere (`duration_ms`, a lease,
/// a timeout, a fault's duration), ms: one simulated hour. Every time is
/// turned into µs and scaled by a clock's drift, in signed 64-bit
/// arithmetic; below this bound none of that can wrap around.
pub const MAX_MS: u64 = 3_600_000;

/// The most Redis nodes a deployment may have.
pub const MAX_NODES: usize = 9;

/// The longest one-way trip the network may take, `latency_ms` plus
/// `jitter_ms`: ten seconds, far beyond any network a lock runs on. Every
/// request, even the driver's own stocking of the store before the run,
/// takes several trips, and the simulator steps through each millisecond
/// of them.
pub const MAX_TRIP_MS: u64 = 10_000;

/// The largest clock drift a fault may give, in parts per million either
/// way: -1,000,000 stops a clock, +1,000,000 runs it at double speed.
pub const MAX_PPM: i64 = 1_000_000;

/// The largest initial stock, far above any sale count a run can reach.
pub const MAX_STOCK: i64 = 1_000_000_000_000;

/// The largest scenario file read, in bytes: a scenario is a page of
/// TOML, and a larger input (or an endless one such as `/dev/zero`) is
/// refused rather than read into memory without bound.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

impl Scenario {
    /// Loads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_text(path).map(|(scenario, _)| scenario)
    }

    /// Loads and validates a scenario file, and returns the text it was
    /// read from. The file is read once, so that a run can keep a copy of
    /// exactly what it ran even when the file is a pipe; it is read up to
    /// [`MAX_FILE_BYTES`].
    pub fn load_text(path: &Path) -> Result<(Scenario, String), ScenarioError> {
        use std::io::Read as _;
        let file = path.display().to_string();
        let fail = |message: String| ScenarioError {
            file: file.clone(),
            message,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(fail(
                "file too large: more than 1 MiB; a scenario file is a page of TOML".into(),
            ));
        }
        let text = String::from_utf8(bytes)
            .map_err(|e| fail(format!("cannot read: not UTF-8 text ({e})")))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scenario = Scenario::parse(&text, &file, &stem)?;
        Ok((scenario, text))
    }

    /// Parses and validates scenario text; `file` names it in errors and
    /// `stem` is the default name.
    pub fn parse(text: &str, file: &str, stem: &str) -> Result<Scenario, ScenarioError> {
        let located = |message: String| ScenarioError {
            file: file.to_string(),
            message: match locate(text, &message) {
                Some((line, column)) => format!("line {line}, column {column}: {message}"),
                None => message,
            },
        };
        check_shapes(text).map_err(located)?;
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError {
            file: file.to_string(),
            message: describe_toml_error(text, &e),
        })?;
        // A name given in the file must be a plain file name: it names the
        // run's folder, and `..` or a `/` would put that folder elsewhere.
        // A stem comes from a file name and is one already.
        let named = if scenario.name.is_empty() {
            scenario.name = stem.to_string();
            Ok(())
        } else {
            check_name(&scenario.name)
        };
        scenario.notes = old_spellings(text);
        named.and_then(|()| scenario.validate()).map_err(located)?;
        Ok(scenario)
    }

    /// The deployment a rung uses in this scenario.
    pub fn topology_of(&self, rung: &str) -> &Topology {
        self.topology_for.get(rung).unwrap_or(&self.topology)
    }

    /// The faults a rung gets in this scenario.
    pub fn faults_of(&self, rung: &str) -> &[FaultSpec] {
        self.faults_for.get(rung).unwrap_or(&self.faults)
    }

    /// The resource a rung guards in this scenario.
    pub fn resource_of(&self, rung: &str) -> ResourceSpec {
        self.resource_for
            .get(rung)
            .copied()
            .unwrap_or(self.resource)
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
        if self.rungs.is_empty() {
            return Err("`rungs` is empty; expected at least one rung id".into());
        }
        for r in &self.rungs {
            if locks::rung(r).is_none() {
                return Err(format!(
                    "`rungs`: unknown rung {r:?}; expected one of {}",
                    locks::all_ids().join(", ")
                ));
            }
        }
        for r in self.expect.keys() {
            if !self.rungs.contains(r) {
                return Err(format!("`expect.{r}`: {r:?} is not in `rungs`"));
            }
        }
        for (table, keys) in [
            ("topology_for", self.topology_for.keys().collect::<Vec<_>>()),
            ("faults_for", self.faults_for.keys().collect()),
            ("resource_for", self.resource_for.keys().collect()),
        ] {
            if let Some(r) = keys.into_iter().find(|r| !self.rungs.contains(r)) {
                return Err(format!("`{table}.{r}`: {r:?} is not in `rungs`"));
            }
        }
        if self.seeds.is_empty() {
            return Err("`seeds` is empty; expected at least one seed, such as [1]".into());
        }
        if self.seeds.iter().any(|&s| s >= 1 << 53) {
            return Err(
                "`seeds`: every seed must be below 2^53 (JSON readers keep them exact)".into(),
            );
        }
        if self.duration_ms == 0 || self.duration_ms > 3_600_000 {
            return Err("`duration_ms` must be between 1 and 3600000".into());
        }
        // Each group is bounded before the groups are summed, so that the
        // sum cannot wrap around.
        if let Some((i, g)) = self.clients.iter().enumerate().find(|(_, g)| g.count > 256) {
            return Err(format!(
                "`clients[{i}]`: `count` is {}; expected at most 256 clients",
                g.count
            ));
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
        // A zero timeout fails every request before its reply can arrive
        // (a reply takes at least one 1 ms step): nothing could ever be
        // acquired. `max_wait_ms = 0` is meaningful: one attempt.
        if self.lock.response_timeout_ms == 0 {
            return Err(
                "`lock.response_timeout_ms` must be at least 1 (0 would time out every reply)"
                    .into(),
            );
        }
        if self.lock.node_timeout_ms == 0 {
            return Err(
                "`lock.node_timeout_ms` must be at least 1 (0 would time out every node)".into(),
            );
        }
        let mut times = vec![
            ("lock.ttl_ms".to_string(), self.lock.ttl_ms),
            ("lock.max_wait_ms".into(), self.lock.max_wait_ms),
            ("lock.retry_ms".into(), self.lock.retry_ms),
            ("lock.node_timeout_ms".into(), self.lock.node_timeout_ms),
            (
                "lock.response_timeout_ms".into(),
                self.lock.response_timeout_ms,
            ),
            ("network.latency_ms".into(), self.network.latency_ms),
            ("network.jitter_ms".into(), self.network.jitter_ms),
        ];
        if let Some(bound) = self.liveness_bound_ms {
            times.push(("liveness_bound_ms".into(), bound));
        }
        for (i, g) in self.clients.iter().enumerate() {
            times.push((
                format!("clients[{i}]` `critical_section_ms"),
                g.critical_section_ms,
            ));
            times.push((format!("clients[{i}]` `think_ms"), g.think_ms));
            times.push((format!("clients[{i}]` `start_ms"), g.start_ms));
        }
        for (name, topo) in std::iter::once(("topology".to_string(), &self.topology)).chain(
            self.topology_for
                .iter()
                .map(|(k, t)| (format!("topology_for.{k}"), t)),
        ) {
            times.push((
                format!("{name}.replication_delay_ms"),
                topo.replication_delay_ms,
            ));
        }
        if let Some((name, ms)) = times.into_iter().find(|(_, ms)| *ms > MAX_MS) {
            return Err(format!(
                "`{name}` is {ms}; expected at most {MAX_MS} (one simulated hour)"
            ));
        }
        let trip_ms = self.network.latency_ms + self.network.jitter_ms;
        if trip_ms > MAX_TRIP_MS {
            return Err(format!(
                "`network.latency_ms` plus `network.jitter_ms` is {trip_ms}; expected at most {MAX_TRIP_MS} (ten seconds one way: every request, even stocking the store before the run, takes several trips)"
            ));
        }
        for (name, resource) in std::iter::once(("resource".to_string(), &self.resource)).chain(
            self.resource_for
                .iter()
                .map(|(k, r)| (format!("resource_for.{k}"), r)),
        ) {
            if !(0..=MAX_STOCK).contains(&resource.stock) {
                return Err(format!(
                    "`{name}.stock` is {}; expected between 0 and {MAX_STOCK}",
                    resource.stock
                ));
            }
        }
        for (name, topo) in std::iter::once(("topology".to_string(), &self.topology)).chain(
            self.topology_for
                .iter()
                .map(|(k, t)| (format!("topology_for.{k}"), t)),
        ) {
            if topo.node_count() == 0 || topo.node_count() > MAX_NODES {
                let (field, value) = match topo.kind {
                    TopologyKind::Replicated => ("replicas", topo.replicas),
                    TopologyKind::Standalone | TopologyKind::Independent => {
                        ("masters", topo.masters)
                    }
                };
                return Err(format!(
                    "`{name}.{field}` is {value}, which makes {} nodes; expected between 1 and {MAX_NODES} nodes",
                    topo.node_count()
                ));
            }
            if let Some(field) = topo.ignored_field() {
                return Err(format!(
                    "`{name}.{field}`: a {} deployment has no use for it; remove it or change `kind`",
                    format!("{:?}", topo.kind).to_lowercase()
                ));
            }
        }
        for (i, group) in self.clients.iter().enumerate() {
            if group.start_ms >= self.duration_ms {
                return Err(format!(
                    "`clients[{i}].start_ms` is {}, but the run lasts {} ms, so these clients never start; expected below {}",
                    group.start_ms, self.duration_ms, self.duration_ms
                ));
            }
        }
        for (i, fault) in self.faults.iter().enumerate() {
            fault
                .validate(self)
                .map_err(|e| format!("`faults[{i}]` ({}): {e}", fault.name()))?;
        }
        for (rung, faults) in &self.faults_for {
            for (i, fault) in faults.iter().enumerate() {
                fault
                    .validate(self)
                    .map_err(|e| format!("`faults_for.{rung}[{i}]` ({}): {e}", fault.name()))?;
            }
        }
        Ok(())
    }
}

/// Checks a `name` given in a scenario file: a plain file name of ASCII
/// letters, digits, `-`, `_` and `.`, not `.` or `..`, because it names
/// the run's folder.
fn check_name(name: &str) -> Result<(), String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !plain || name == "." || name == ".." || name.len() > 100 {
        return Err(format!(
            "`name`: {name:?} is not a plain file name; expected up to 100 letters, digits, `-`, `_` or `.` (not `.` or `..` alone), because it names the run's folder"
        ));
    }
    Ok(())
}

/// Checks that each table of the file has its shape: one table
/// (`[lock]`) or an array of tables (`[[clients]]`). Read as the other
/// shape, a table's fields would be taken for something else and the error
/// would make no sense. A text that is not TOML at all is left to the
/// parser, whose error says where.
fn check_shapes(text: &str) -> Result<(), String> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Ok(());
    };
    let one = |path: &str, value: &toml::Value| match value {
        toml::Value::Array(_) => Err(format!(
            "`{path}`: expected one table, `[{path}]`, not an array of tables, `[[{path}]]`"
        )),
        _ => Ok(()),
    };
    let many = |path: &str, value: &toml::Value| match value {
        toml::Value::Table(_) => Err(format!(
            "`{path}`: expected an array of tables, `[[{path}]]` (one per item), not one table, `[{path}]`"
        )),
        _ => Ok(()),
    };
    for key in ["topology", "network", "lock", "resource", "expect"] {
        if let Some(value) = table.get(key) {
            one(key, value)?;
        }
    }
    for key in ["clients", "faults"] {
        if let Some(value) = table.get(key) {
            many(key, value)?;
        }
    }
    for (key, shape) in [
        (
            "topology_for",
            one as fn(&str, &toml::Value) -> Result<(), String>,
        ),
        ("resource_for", one),
        ("faults_for", many),
    ] {
        if let Some(toml::Value::Table(per_rung)) = table.get(key) {
            for (rung, value) in per_rung {
                shape(&format!("{key}.{rung}"), value)?;
            }
        }
    }
    Ok(())
}

/// The old spellings a scenario text uses, each as a note naming the new
/// one: `variants` (now `rungs`), a client group's `ops` (now `cycles`) and
/// a trigger's `on.op` (now `on.cycle`). They still load.
fn old_spellings(text: &str) -> Vec<String> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let tables = |key: &str| -> Vec<toml::Table> {
        match table.get(key) {
            Some(toml::Value::Array(items)) => {
                items.iter().filter_map(|v| v.as_table().cloned()).collect()
            }
            _ => Vec::new(),
        }
    };
    let mut notes = Vec::new();
    let mut note = |line: usize, old: &str, new: &str| {
        let at = if line > 0 {
            format!("line {line}: ")
        } else {
            String::new()
        };
        notes.push(format!(
            "{at}`{old}` is the old spelling of `{new}`; it still loads"
        ));
    };
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| {
                let l = l.trim_start();
                l.strip_prefix(needle)
                    .is_some_and(|r| r.trim_start().starts_with('='))
                    || l.contains(&format!(" {needle} ="))
                    || l.contains(&format!("{{{needle} ="))
            })
            .map_or(0, |i| i + 1)
    };
    if table.contains_key("variants") {
        note(line_of("variants"), "variants", "rungs");
    }
    if tables("clients").iter().any(|c| c.contains_key("ops")) {
        note(line_of("ops"), "ops", "cycles");
    }
    let old_trigger = tables("faults").iter().any(|f| {
        f.get("on")
            .and_then(toml::Value::as_table)
            .is_some_and(|on| on.contains_key("op"))
    });
    if old_trigger {
        note(line_of("op"), "on.op", "on.cycle");
    }
    notes
}

/// Turns a TOML error into "line L, column C: `field`: what was
/// expected".
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let mut message = err.message().trim().to_string();
    // An error that names its place (`faults[2]` ...) is found by name:
    // its span covers the whole list.
    if message.starts_with('`')
        && let Some((line, column)) = locate(text, &message)
    {
        return format!("line {line}, column {column}: {message}");
    }
    match err.span() {
        Some(span) => {
            let (mut line, mut column) = line_column(text, span.start);
            // An error about a whole table (a fault's fields checked
            // together) points at its header: point at the field itself.
            if let Some((field_line, field_column)) = field_in_table(text, line, &message) {
                (line, column) = (field_line, field_column);
            }
            // An error about a value says what was wrong with it, but not
            // whose value it is: name the field.
            let names_a_field = message.starts_with('`')
                || message.starts_with("unknown field")
                || message.starts_with("missing field");
            if !names_a_field && let Some(field) = field_at(text, span.start) {
                message = format!("`{field}`: {message}");
            }
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// The field whose value is at byte `offset` of a scenario text, as a path
/// (`duration_ms`, `lock.ttl_ms`, `clients[1].count`,
/// `faults[0].on.point`): the key before `=` on that line (or on the
/// nearest line above, for a value in an array spread over lines), inside
/// the table whose header comes last before it. `None` when the offset is
/// not in a value (a header, a key).
pub fn field_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    if line.trim_start().starts_with('[') && !line.contains('=') {
        // A table's header: the error is about the table as a whole.
        let name = line
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim();
        return (!name.is_empty()).then(|| name.to_string());
    }
    // The keys of the current line before the offset, then of the lines
    // above it, up to the table's header.
    let mut keys = keys_before(&before[line_start..]);
    // An error about a key itself points at the key: `key = ...` follows.
    if keys.is_empty() {
        let rest = &text[offset..];
        let rest = &rest[..rest.find('\n').unwrap_or(rest.len())];
        if let Some((key, _)) = rest.split_once('=') {
            let key = key.trim();
            if !key.is_empty() && !key.contains(['"', '\'', '[', '{', ' ']) {
                keys.push(key.to_string());
            }
        }
    }
    if keys.is_empty() {
        for line in before[..line_start].lines().rev() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                break;
            }
            keys = keys_before(line);
            if !keys.is_empty() {
                break;
            }
        }
    }
    let key = keys.join(".");
    if key.is_empty() {
        return None;
    }
    // The table: the last header before the line, numbered when it is one
    // of an array of tables.
    let lines: Vec<&str> = before[..line_start].lines().collect();
    let header = lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['));
    let table = match header {
        Some(h) if h.starts_with("[[") => {
            let name = h.trim_start_matches('[').trim_end_matches(']').trim();
            let n = lines
                .iter()
                .filter(|l| l.trim() == format!("[[{name}]]"))
                .count();
            format!("{name}[{}].", n.saturating_sub(1))
        }
        Some(h) => format!(
            "{}.",
            h.trim_start_matches('[').trim_end_matches(']').trim()
        ),
        None => String::new(),
    };
    Some(format!("{table}{key}"))
}

/// The path of keys a position at the end of `line` is in: the last key
/// given before it (`key = `), preceded by the keys of the inline tables
/// (`on = { ... }`) it is inside. Quoted strings are skipped.
fn keys_before(line: &str) -> Vec<String> {
    // (key, brace depth at which it was given)
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                // Skip a string (basic strings may escape their quote).
                while let Some(d) = chars.next() {
                    if d == '\\' && c == '"' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
                word.clear();
            }
            '#' => break,
            '{' => {
                depth += 1;
                word.clear();
            }
            '}' => {
                depth = depth.saturating_sub(1);
                stack.retain(|(_, d)| *d <= depth);
                word.clear();
            }
            '=' => {
                let key = word.trim().to_string();
                if !key.is_empty() {
                    stack.retain(|(_, d)| *d < depth);
                    stack.push((key, depth));
                }
                word.clear();
            }
            ',' | '[' | ']' => word.clear(),
            c => word.push(c),
        }
    }
    stack.into_iter().map(|(k, _)| k).collect()
}

/// For an error about field `X` (``unknown field `X` ``, ``missing field
/// `X` `` is left alone) reported at a table header on line `header`, the
/// line and column of `X = ...` inside that table.
fn field_in_table(text: &str, header: usize, message: &str) -> Option<(usize, usize)> {
    let field = message.strip_prefix("unknown field `")?.split('`').next()?;
    let lines: Vec<&str> = text.lines().collect();
    if !lines.get(header - 1)?.trim_start().starts_with('[') {
        return None;
    }
    lines
        .iter()
        .enumerate()
        .skip(header)
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find(|(_, l)| {
            l.trim_start()
                .strip_prefix(field)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|(i, l)| (i + 1, l.len() - l.trim_start().len() + 1))
}

/// Where in the file a validation message's field is: the message starts
/// with the field's path in backticks (`rungs`, `lock.ttl_ms`,
/// `faults[2]`, `expect.setnx`). Best effort: `None` when not found.
fn locate(text: &str, message: &str) -> Option<(usize, usize)> {
    let path = message.strip_prefix('`')?.split('`').next()?;
    // A field given in its old spelling is found under that spelling.
    if path == "rungs" {
        return locate_path(text, "rungs", message)
            .or_else(|| locate_path(text, "variants", message));
    }
    locate_path(text, path, message)
}

/// Where the field at `path` (the start of `message`) is given in the
/// file.
fn locate_path(text: &str, path: &str, message: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let at = |i: usize| {
        let line = lines[i];
        (i + 1, line.len() - line.trim_start().len() + 1)
    };
    // `faults[2]` and `clients[0]`: the n-th array-of-tables header, and
    // in that table the field the message names next, if it is there.
    if let Some((name, rest)) = path.split_once('[') {
        let n: usize = rest.split(']').next()?.parse().ok()?;
        let header = format!("[[{name}]]");
        let start = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim() == header)
            .nth(n)
            .map(|(i, _)| i)?;
        let end = (start + 1..lines.len())
            .find(|&i| lines[i].trim_start().starts_with('['))
            .unwrap_or(lines.len());
        // The field: in the path (`clients[0].start_ms`), or the next name
        // in backticks after it (`faults[1]` (pause): `target`: ...).
        let in_path = rest.split_once(']').and_then(|(_, r)| r.strip_prefix('.'));
        let next = message
            .get(message.find(path)? + path.len() + 1..)
            .and_then(|after| after.split('`').nth(1));
        let field = in_path
            .or(next)
            .and_then(|f| f.split('.').next())
            .filter(|f| !f.is_empty());
        let field_line = field.and_then(|f| {
            (start + 1..end).find(|&i| {
                lines[i]
                    .trim_start()
                    .strip_prefix(f)
                    .is_some_and(|r| r.trim_start().starts_with('='))
            })
        });
        return Some(at(field_line.unwrap_or(start)));
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
    // `clients`: an array of tables, named by its first header.
    if let Some(h) = lines.iter().position(|l| l.trim() == format!("[[{path}]]")) {
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
