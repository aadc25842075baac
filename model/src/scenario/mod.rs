//! Scenario files: what to run, against which rungs, with which faults,
//! and what verdict each rung should get.
//!
//! The format is documented by example in `scenarios/README.md`. Loading is
//! strict: unknown fields, wrong types and impossible values are errors that
//! name the file, the line and column, and what was expected.

mod document;
mod locate;
mod old_spellings;
mod path;
mod types;
mod validate;

pub use types::{ClientGroup, LockMode, LockSpec, Network, Persistence, Topology, TopologyKind};

use crate::fault::FaultSpec;
use crate::resource::ResourceSpec;
use crate::verdict::Verdict;
use document::Document;
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
        let doc = Document::new(text);
        let fail = |message: String| ScenarioError {
            file: file.to_string(),
            message,
        };
        validate::check_shapes(&doc).map_err(|e| fail(locate::placed(&doc, e)))?;
        let mut scenario: Scenario =
            toml::from_str(text).map_err(|e| fail(locate::describe_toml_error(&doc, &e)))?;
        // A name given in the file must be a plain file name: it names the
        // run's folder, and `..` or a `/` would put that folder elsewhere.
        // A stem comes from a file name and is one already.
        let named = if scenario.name.is_empty() {
            scenario.name = stem.to_string();
            Ok(())
        } else {
            validate::check_name(&scenario.name)
        };
        scenario.notes = old_spellings::notes(&doc);
        named
            .and_then(|()| validate::validate(&scenario))
            .map_err(|e| fail(locate::placed(&doc, e)))?;
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
        self.group_index_of(client).map(|g| &self.clients[g])
    }

    /// The index in `clients` of client `client`'s group.
    pub fn group_index_of(&self, client: usize) -> Option<usize> {
        let mut first = 0;
        for (index, group) in self.clients.iter().enumerate() {
            if client < first + group.count {
                return Some(index);
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
}

#[cfg(test)]
mod tests;
