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

/// How to build a node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The node's name (its turmoil host name); stamped on its events.
    pub name: String,
    /// How writes are persisted.
    pub persistence: Persistence,
    /// The node's clock.
    pub clock: ClockSpec,
    /// Host name of the master to replicate at start-up, if any.
    pub replica_of: Option<String>,
    /// On a replica: how long its master holds each write in its
    /// replication buffer for this replica before sending it. The replica
    /// applies a write this delay plus the link's latency after the master
    /// acknowledged it, and a master that dies within the delay loses it
    /// (see [`crate::replication`]).
    pub replication_delay: Duration,
    /// TCP port the node listens on (in the simulation), and that replicas
    /// dial on their master.
    pub port: u16,
    /// How long a script may run on the node's clock before it is aborted
    /// with an error to its caller (Redis's `busy-reply-threshold`, 5000 ms
    /// by default). Only the real-TCP server's clock moves during a script:
    /// in a simulation time stands still while a script runs, so there
    /// [`NodeConfig::script_instruction_limit`] bounds it instead.
    pub script_time_limit: Duration,
    /// How many Lua VM instructions a script may run before it is aborted
    /// with an error to its caller. Deterministic: it bounds a runaway
    /// script inside a simulation, where the clock does not move.
    pub script_instruction_limit: u64,
}

/// The default [`NodeConfig::script_instruction_limit`]: far above any
/// lock script (a few hundred instructions), about a second of a tight loop.
pub const SCRIPT_INSTRUCTION_LIMIT: u64 = 100_000_000;

impl NodeConfig {
    /// A master named `name`, no persistence, default clock, port 6379.
    pub fn new(name: impl Into<String>) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            persistence: Persistence::None,
            clock: ClockSpec::default(),
            replica_of: None,
            replication_delay: Duration::ZERO,
            port: 6379,
            script_time_limit: Duration::from_millis(5000),
            script_instruction_limit: SCRIPT_INSTRUCTION_LIMIT,
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

    /// Makes the node start as a replica of `master` (a host name).
    pub fn replica_of(mut self, master: impl Into<String>) -> Self {
        self.replica_of = Some(master.into());
        self
    }

    /// Sets the replication delay (see [`NodeConfig::replication_delay`]).
    pub fn replication_delay(mut self, d: Duration) -> Self {
        self.replication_delay = d;
        self
    }
}

/// The node's replication role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Accepts writes.
    Master,
    /// Follows the master at this host name.
    Replica(String),
}

/// A request the running node applies from the handle's control queue.
#[derive(Debug)]
pub(crate) enum Control {
    /// Follow this master, or (`None`) become a master.
    ReplicaOf(Option<String>),
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

    /// Number of keys on the node's disk that would survive any crash.
    pub fn durable_keys(&self) -> usize {
        lock(&self.shared.disk).durable_len()
    }

    /// Promotes a replica to master (as `REPLICAOF NO ONE`). Writes it had
    /// not received are lost; from now on its own clock expires its keys.
    pub fn promote(&self) {
        self.replicaof(None);
    }

    /// Makes the node replicate `master` (a host name), or, with `None`,
    /// stop replicating.
    pub fn replicaof(&self, master: Option<String>) {
        lock(&self.shared.control).push(Control::ReplicaOf(master));
        self.shared.control_notify.notify_one();
    }

    /// The node's current role (as last set; applied by the running node).
    pub fn role(&self) -> Role {
        lock(&self.shared.role).clone()
    }

    /// The node's replication offset (master: written; replica: applied).
    pub fn repl_offset(&self) -> u64 {
        *lock(&self.shared.offset)
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
