//! A node's outside: how it is built ([`NodeConfig`]) and how a scenario
//! controls it ([`NodeHandle`]).
//!
//! The handle outlives the node's process (the turmoil host): it holds the
//! configuration, the node's clock, its disk and its event sink, so a
//! crashed and restarted host finds them again. Through it a scenario jumps
//! or skews the clock, declares how the next crash happens, and promotes a
//! replica or points it at another master; the running node picks such
//! requests up from the handle's control queue.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::clock::{ClockSpec, NodeClock, true_elapsed};
use crate::events::{EventKind, EventSink, NodeEvent};
use crate::persistence::{CrashKind, Disk, Persistence};
use crate::version::ServerVersion;

/// How to build a node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The node's name (its turmoil host name); stamped on its events.
    pub name: String,
    /// How writes are persisted.
    pub persistence: Persistence,
    /// The node's clock.
    pub clock: ClockSpec,
    /// The master to replicate at start-up, if any.
    pub replica_of: Option<MasterAddr>,
    /// On a replica: how long its master holds each write in its
    /// replication buffer for this replica before sending it. The replica
    /// applies a write this delay plus the link's latency after the master
    /// acknowledged it, and a master that dies within the delay loses it
    /// (see [`crate::replication`]).
    pub replication_delay: Duration,
    /// TCP port the node listens on in the simulation (6379 by default).
    pub port: u16,
    /// Redis's `busy-reply-threshold` (alias `lua-time-limit`; 5000 ms by
    /// default): on the real-TCP server, once a script has run this long,
    /// other clients are answered `BUSY` and `SCRIPT KILL` may stop it
    /// (see `crate::tcp`). A script is never aborted for time, as in
    /// Redis. Inside a simulation time stands still while a script runs,
    /// so this has no effect there.
    pub busy_reply_threshold: Duration,
    /// How many Lua VM instructions a script may run before it is aborted
    /// with an error to its caller. Deterministic: it bounds a runaway
    /// script inside a simulation, where the clock does not move. The
    /// real-TCP server does not apply it (Redis has no such limit).
    pub script_instruction_limit: u64,
    /// Which server the node is: it answers only the commands and options
    /// that version has ([`crate::version`]).
    pub version: ServerVersion,
}

/// The default [`NodeConfig::script_instruction_limit`]: far above any
/// lock script (a few hundred instructions), about a second of a tight loop.
pub const SCRIPT_INSTRUCTION_LIMIT: u64 = 100_000_000;

impl NodeConfig {
    /// Makes the node this server version.
    pub fn version(mut self, version: ServerVersion) -> NodeConfig {
        self.version = version;
        self
    }

    /// A Redis 7.0 master named `name`, no persistence, default clock,
    /// port 6379.
    pub fn new(name: impl Into<String>) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            persistence: Persistence::None,
            clock: ClockSpec::default(),
            replica_of: None,
            replication_delay: Duration::ZERO,
            port: DEFAULT_PORT,
            busy_reply_threshold: Duration::from_millis(5000),
            script_instruction_limit: SCRIPT_INSTRUCTION_LIMIT,
            version: ServerVersion::default(),
        }
    }

    /// Sets the persistence mode.
    pub fn persistence(mut self, p: Persistence) -> Self {
        self.persistence = p;
        self
    }

    /// Sets the clock.
    pub fn clock(mut self, c: ClockSpec) -> Self {
        self.clock = c;
        self
    }

    /// Makes the node start as a replica of `master`: a host name (its
    /// port is then 6379) or a [`MasterAddr`].
    pub fn replica_of(mut self, master: impl Into<MasterAddr>) -> Self {
        self.replica_of = Some(master.into());
        self
    }

    /// Sets the replication delay (see [`NodeConfig::replication_delay`]).
    pub fn replication_delay(mut self, d: Duration) -> Self {
        self.replication_delay = d;
        self
    }
}

/// Redis's default port: where a master named by its host alone listens.
pub const DEFAULT_PORT: u16 = 6379;

/// Where a replica finds its master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterAddr {
    /// In a simulation a turmoil host name (or an IP address: 127.0.0.1 is
    /// the replica's own host); on real TCP an IP address or a DNS name.
    pub host: String,
    /// The master's TCP port.
    pub port: u16,
}

impl MasterAddr {
    /// The master at `host`:`port`.
    pub fn new(host: impl Into<String>, port: u16) -> MasterAddr {
        MasterAddr {
            host: host.into(),
            port,
        }
    }

    /// Whether `REPLICAOF host port` names this master: Redis compares the
    /// host case-insensitively (`strcasecmp`) and the port exactly.
    pub fn is(&self, host: &str, port: u16) -> bool {
        self.host.eq_ignore_ascii_case(host) && self.port == port
    }
}

/// A host name alone: the master listens on [`DEFAULT_PORT`].
impl From<&str> for MasterAddr {
    fn from(host: &str) -> MasterAddr {
        MasterAddr::new(host, DEFAULT_PORT)
    }
}

/// A host name alone: the master listens on [`DEFAULT_PORT`].
impl From<String> for MasterAddr {
    fn from(host: String) -> MasterAddr {
        MasterAddr::new(host, DEFAULT_PORT)
    }
}

impl std::fmt::Display for MasterAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The node's replication role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Accepts writes.
    Master,
    /// Follows this master.
    Replica(MasterAddr),
}

/// A request the running node applies from the handle's control queue.
#[derive(Debug)]
pub(crate) enum Control {
    /// Follow this master, or (`None`) become a master.
    ReplicaOf(Option<MasterAddr>),
    /// Start the link of a switch already made (by a client's
    /// `REPLICAOF`) for this link generation.
    Follow(MasterAddr, u64),
}

/// What a handle and all its clones share with the running node.
pub(crate) struct Shared {
    pub(crate) config: NodeConfig,
    clock: Mutex<NodeClock>,
    sink: Mutex<Option<Arc<dyn EventSink>>>,
    pub(crate) disk: Mutex<Disk>,
    control: Mutex<Vec<Control>>,
    pub(crate) control_notify: Notify,
    role: Mutex<Role>,
    offset: Mutex<u64>,
    /// Scripts this node aborted past its limits, across restarts.
    aborted_scripts: AtomicU64,
    name: Arc<str>,
}

/// Controls one node from outside its host; cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct NodeHandle {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for NodeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeHandle")
            .field("name", &self.shared.config.name)
            .finish()
    }
}

/// Locks `m`, even if a panicking holder poisoned it (the data is still
/// consistent: every critical section is a single assignment or call).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl NodeHandle {
    /// A handle for a node built from `config`.
    pub fn new(config: NodeConfig) -> NodeHandle {
        let role = match &config.replica_of {
            Some(m) => Role::Replica(m.clone()),
            None => Role::Master,
        };
        NodeHandle {
            shared: Arc::new(Shared {
                clock: Mutex::new(NodeClock::new(config.clock)),
                name: config.name.as_str().into(),
                config,
                sink: Mutex::new(None),
                disk: Mutex::new(Disk::default()),
                control: Mutex::new(Vec::new()),
                control_notify: Notify::new(),
                role: Mutex::new(role),
                offset: Mutex::new(0),
                aborted_scripts: AtomicU64::new(0),
            }),
        }
    }

    /// The node's configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.shared.config
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// Attaches the ground-truth event sink (replacing any other).
    pub fn set_sink(&self, sink: Arc<dyn EventSink>) {
        *lock(&self.shared.sink) = Some(sink);
    }

    /// Jumps the node's wall clock by `delta_ms` (negative: backwards).
    pub fn jump_clock(&self, delta_ms: i64) {
        lock(&self.shared.clock).jump(delta_ms);
    }

    /// Changes the node clock's drift (ppm) from now on.
    pub fn set_drift(&self, ppm: f64) {
        lock(&self.shared.clock).set_drift(ppm);
    }

    /// The node's wall clock now (ms). Call inside the simulation.
    pub fn now_ms(&self) -> i64 {
        lock(&self.shared.clock).now_ms()
    }

    /// The node's wall clock at true simulated time `elapsed` (ms).
    pub fn wall_ms_at(&self, elapsed: Duration) -> i64 {
        lock(&self.shared.clock).wall_ms_at(elapsed)
    }

    pub(crate) fn now_us(&self) -> i64 {
        lock(&self.shared.clock).now_us()
    }

    /// Declares how the next crash of this node happens; call before
    /// `Sim::crash` (the default is a process kill).
    pub fn set_crash_kind(&self, kind: CrashKind) {
        lock(&self.shared.disk).set_crash_kind(kind);
    }

    /// Promotes a replica to master (as `REPLICAOF NO ONE`). Writes it had
    /// not received are lost; from now on its own clock expires its keys.
    pub fn promote(&self) {
        self.replicaof(None);
    }

    /// Makes the node replicate `master`, or, with `None`, stop
    /// replicating.
    pub fn replicaof(&self, master: Option<MasterAddr>) {
        self.push_control(Control::ReplicaOf(master));
    }

    /// Queues a request for the running node and wakes it.
    pub(crate) fn push_control(&self, control: Control) {
        lock(&self.shared.control).push(control);
        self.shared.control_notify.notify_one();
    }

    /// The node's current role (as last set; applied by the running node).
    pub fn role(&self) -> Role {
        lock(&self.shared.role).clone()
    }

    pub(crate) fn take_controls(&self) -> Vec<Control> {
        std::mem::take(&mut *lock(&self.shared.control))
    }

    pub(crate) fn set_role(&self, role: Role) {
        *lock(&self.shared.role) = role;
    }

    /// How many scripts this node has aborted for running past its limits
    /// ([`NodeConfig::script_instruction_limit`], or the time limit on
    /// real TCP), over all its restarts: a harness asks it to learn which
    /// node cut a run short.
    pub fn aborted_scripts(&self) -> u64 {
        self.shared.aborted_scripts.load(Ordering::Relaxed)
    }

    pub(crate) fn count_aborted_script(&self) {
        self.shared.aborted_scripts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_offset(&self, off: u64) {
        *lock(&self.shared.offset) = off;
    }

    /// Sends one ground-truth event about `key` to the sink, if any.
    pub(crate) fn emit(&self, key: &[u8], kind: EventKind, wall_ms: i64) {
        let sink = lock(&self.shared.sink).clone();
        if let Some(sink) = sink {
            sink.record(&NodeEvent {
                at: true_elapsed(),
                node_wall_ms: wall_ms,
                node: self.shared.name.clone(),
                key: key.to_vec(),
                kind,
            });
        }
    }
}
