//! The tables of a scenario file besides its faults: the deployment, the
//! network, the lock's parameters and the client groups.

use crate::host::Host;
use locks::redis_server::RedisServer;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How the lock service's nodes are deployed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// `standalone`, `replicated` (a master and replicas, failover by name),
    /// `independent` (N masters, for Redlock) or `cluster` (members that
    /// elect their leader among themselves, as etcd's do).
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
    /// Number of members (`cluster`; [`Topology::CLUSTER_MEMBERS`] unless
    /// given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<usize>,
    /// Which server the Redis nodes are (`redis-7.0`, `redis-8.4`,
    /// `valkey-8.1`, `valkey-9.0`): a node answers only the commands that
    /// server has. Unset, each rung runs on the oldest server it works on
    /// (`locks::redis_server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<RedisServer>,
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
            members: None,
            server: None,
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
            TopologyKind::Cluster if self.masters != 1 => Some("masters"),
            TopologyKind::Cluster if self.replicas != 0 => Some("replicas"),
            TopologyKind::Cluster if self.replication_delay_ms != 0 => Some("replication_delay_ms"),
            TopologyKind::Standalone | TopologyKind::Replicated | TopologyKind::Independent
                if self.members.is_some() =>
            {
                Some("members")
            }
            _ => None,
        }
    }

    /// The members of a `cluster` unless `members` says otherwise: the
    /// smallest that survives the loss of one.
    pub const CLUSTER_MEMBERS: usize = 3;

    /// How many nodes the deployment has.
    pub fn node_count(&self) -> usize {
        match self.kind {
            TopologyKind::Standalone => 1,
            TopologyKind::Replicated => self.replicas.saturating_add(1),
            TopologyKind::Independent => self.masters,
            TopologyKind::Cluster => self.members.unwrap_or(Self::CLUSTER_MEMBERS),
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
    /// Members that replicate one log by consensus and elect its leader
    /// among themselves; a client may dial any of them.
    Cluster,
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
    /// When set, the group's clients are the callers (request handlers,
    /// tasks) of one application process, which shares one pool of this
    /// many database connections among them. Only a pooled rung
    /// (`pg-advisory-pooled`) runs its statements through the pool; every
    /// other rung keeps a session of its own per client. No fault may be
    /// aimed at such a client: they are not processes of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_connections: Option<u32>,
    /// How the group's clients take the lock: `exclusive` (the default),
    /// or `shared`, as readers of a read-write lock.
    #[serde(default, skip_serializing_if = "LockMode::is_exclusive")]
    pub mode: LockMode,
}

/// How a client group takes the lock.
///
/// A shared holder (a reader) reads the stock and never writes it; a
/// rung with a read mode (`redisson-rw`) lets shared holders in beside
/// each other, and every other rung grants a shared request its one
/// exclusive lock, as a user without a read-write lock would take it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockMode {
    /// Alone: each cycle reads, works, checks and writes the stock.
    #[default]
    Exclusive,
    /// Beside other shared holders: each cycle only reads and works.
    Shared,
}

impl LockMode {
    /// Whether this is the default, exclusive mode (left out when written).
    pub fn is_exclusive(&self) -> bool {
        *self == LockMode::Exclusive
    }
}

fn one_u32() -> u32 {
    1
}
