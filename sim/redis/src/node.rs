//! The node: configuration, the control handle, and command execution.
//!
//! A [`NodeHandle`] outlives the node's process (the turmoil host): it holds
//! the configuration, the node's clock, its disk and its event sink, and it
//! lets a scenario jump the clock, declare a crash kind or promote a
//! replica. The [`Node`] itself (keyspace, Lua state, clients, replication
//! links) lives inside the host and dies with it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use crate::client::Client;
use crate::clock::{ClockSpec, NodeClock, true_elapsed};
use crate::commands::pubsub::Channels;
use crate::events::{EventKind, EventSink, NodeEvent, Origin};
use crate::keyspace::{Change, Keyspace};
use crate::lua::LuaEngine;
use crate::persistence::{CrashKind, Disk, KeyState, Persistence};
use crate::resp::Reply;

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
    /// Delay between a replica receiving a write and applying it.
    pub replication_delay: Duration,
    /// TCP port the node listens on (in the simulation), and that replicas
    /// dial on their master.
    pub port: u16,
}

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

    /// Sets the replication delay.
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

#[derive(Debug)]
pub(crate) enum Control {
    ReplicaOf(Option<String>),
}

pub(crate) struct Shared {
    pub(crate) config: NodeConfig,
    clock: Mutex<NodeClock>,
    sink: Mutex<Option<Arc<dyn EventSink>>>,
    pub(crate) disk: Mutex<Disk>,
    control: Mutex<Vec<Control>>,
    pub(crate) control_notify: Notify,
    role: Mutex<Role>,
    offset: Mutex<u64>,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

    pub(crate) fn set_offset(&self, off: u64) {
        *lock(&self.shared.offset) = off;
    }

    fn emit(&self, key: &[u8], kind: EventKind, wall_ms: i64) {
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

/// A batch of effects streamed to replicas.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub(crate) offset: u64,
    pub(crate) full: bool,
    pub(crate) states: Vec<KeyState>,
}

pub(crate) struct ReplicaLink {
    pub(crate) tx: mpsc::UnboundedSender<Batch>,
    pub(crate) ack: u64,
    pub(crate) addr: String,
}

pub(crate) struct State {
    pub(crate) ks: Keyspace,
    next_client: u64,
    pub(crate) channels: Channels,
    pub(crate) role: Role,
    pub(crate) offset: u64,
    pub(crate) replicas: BTreeMap<u64, ReplicaLink>,
    next_link: u64,
    pub(crate) link_generation: u64,
    pub(crate) link_up: bool,
    pub(crate) replid: String,
    backlog: bool,
}

/// A running node (inside its host).
pub struct Node {
    pub(crate) handle: NodeHandle,
    pub(crate) state: RefCell<State>,
    pub(crate) lua: LuaEngine,
    pub(crate) acks: Notify,
}

fn replid(name: &str, generation: u64) -> String {
    let s = crate::lua::sha1_hex(format!("{name}/{generation}").as_bytes());
    s[..40].to_string()
}

impl Node {
    /// Builds the node for `handle`, restoring its disk.
    pub(crate) fn new(handle: NodeHandle) -> Rc<Node> {
        let role = handle.role();
        let node = Rc::new_cyclic(|weak: &Weak<Node>| {
            let w = weak.clone();
            let lua = LuaEngine::new(Rc::new(move |args: &[Vec<u8>]| match w.upgrade() {
                Some(n) => n.call_from_script(args),
                None => Reply::err("ERR node gone"),
            }));
            Node {
                state: RefCell::new(State {
                    ks: Keyspace::new(),
                    next_client: 1,
                    channels: Channels::default(),
                    role: role.clone(),
                    offset: 0,
                    replicas: BTreeMap::new(),
                    next_link: 1,
                    link_generation: 0,
                    link_up: false,
                    replid: replid(handle.name(), 0),
                    backlog: false,
                }),
                handle,
                lua,
                acks: Notify::new(),
            }
        });
        let restored = lock(&node.handle.shared.disk).recover(node.handle.config().persistence);
        {
            let mut st = node.state.borrow_mut();
            st.ks.hide_only = matches!(role, Role::Replica(_));
            st.ks.now_ms = node.handle.now_ms();
            for (k, e) in restored {
                st.ks.put_raw(&k, e);
            }
        }
        node.commit(Origin::Restore);
        node.handle.set_offset(0);
        node
    }

    /// A new client whose pushed messages go to `push`.
    pub(crate) fn new_client(&self, push: mpsc::UnboundedSender<Reply>) -> Client {
        let mut st = self.state.borrow_mut();
        let id = st.next_client;
        st.next_client += 1;
        Client::new(id, push)
    }

    /// Forgets a client whose connection ended (or became a replication
    /// stream): its subscriptions go.
    pub(crate) fn drop_client(&self, c: &Client) {
        let mut st = self.state.borrow_mut();
        for ch in &c.subscriptions {
            st.channels.unsubscribe(ch, c.id);
        }
    }

    /// Turns the keyspace changes of the last command into events,
    /// persistence records and replication effects.
    pub(crate) fn commit(&self, origin: Origin) {
        let mut st = self.state.borrow_mut();
        if !st.ks.has_changes() {
            return;
        }
        let changes = st.ks.take_changes();
        let wall = st.ks.now_ms;
        let mut last: BTreeMap<&[u8], usize> = BTreeMap::new();
        for (i, c) in changes.iter().enumerate() {
            match c {
                Change::Written(k) | Change::Deleted(k) => {
                    last.insert(k.as_slice(), i);
                }
                Change::Expired(..) => {}
            }
        }
        let mut effects: Vec<KeyState> = Vec::new();
        for (i, c) in changes.iter().enumerate() {
            match c {
                Change::Expired(k, d) => {
                    self.handle
                        .emit(k, EventKind::Expired { deadline_ms: *d }, wall);
                    effects.push((k.clone(), None));
                }
                Change::Written(k) | Change::Deleted(k) => {
                    if last.get(k.as_slice()) != Some(&i) {
                        continue;
                    }
                    match st.ks.peek(k) {
                        Some(e) => {
                            self.handle.emit(
                                k,
                                EventKind::Written {
                                    value: e.value.clone(),
                                    deadline_ms: e.deadline,
                                    origin,
                                },
                                wall,
                            );
                            effects.push((k.clone(), Some(e.clone())));
                        }
                        None if matches!(c, Change::Deleted(_)) => {
                            self.handle.emit(k, EventKind::Deleted { origin }, wall);
                            effects.push((k.clone(), None));
                        }
                        None => {}
                    }
                }
            }
        }
        if effects.is_empty() {
            return;
        }
        if origin != Origin::Restore {
            lock(&self.handle.shared.disk).write(self.handle.config().persistence, &effects);
        }
        // Like Redis, the offset only moves once a replica has attached (the
        // replication backlog exists).
        if st.role == Role::Master && origin != Origin::Restore && st.backlog {
            st.offset += 1;
            let batch = Batch {
                offset: st.offset,
                full: false,
                states: effects,
            };
            st.replicas.retain(|_, l| l.tx.send(batch.clone()).is_ok());
            self.handle.set_offset(st.offset);
        }
    }

    /// Applies a batch streamed from the master.
    pub(crate) fn apply_batch(&self, batch: Batch) {
        {
            let mut st = self.state.borrow_mut();
            st.ks.now_ms = self.handle.now_ms();
            if batch.full {
                let keep: BTreeSet<&Vec<u8>> = batch.states.iter().map(|(k, _)| k).collect();
                let gone: Vec<Vec<u8>> = st
                    .ks
                    .iter()
                    .map(|(k, _)| k)
                    .filter(|k| !keep.contains(k))
                    .cloned()
                    .collect();
                for k in gone {
                    st.ks.remove_raw(&k);
                }
            }
            for (k, e) in batch.states {
                match e {
                    Some(e) => {
                        if st.ks.peek(&k) != Some(&e) {
                            st.ks.put_raw(&k, e);
                        }
                    }
                    None => {
                        st.ks.remove_raw(&k);
                    }
                }
            }
            st.offset = batch.offset;
            self.handle.set_offset(batch.offset);
        }
        self.commit(Origin::Replication);
    }

    /// A full snapshot of the keyspace for a new replica.
    pub(crate) fn snapshot(&self) -> Batch {
        let st = self.state.borrow();
        Batch {
            offset: st.offset,
            full: true,
            states: st
                .ks
                .iter()
                .map(|(k, e)| (k.clone(), Some(e.clone())))
                .collect(),
        }
    }

    pub(crate) fn add_replica(&self, tx: mpsc::UnboundedSender<Batch>, addr: String) -> u64 {
        let mut st = self.state.borrow_mut();
        let id = st.next_link;
        st.next_link += 1;
        let ack = 0;
        st.backlog = true;
        st.replicas.insert(id, ReplicaLink { tx, ack, addr });
        id
    }

    pub(crate) fn remove_replica(&self, id: u64) {
        self.state.borrow_mut().replicas.remove(&id);
    }

    pub(crate) fn replica_ack(&self, id: u64, off: u64) {
        if let Some(l) = self.state.borrow_mut().replicas.get_mut(&id) {
            l.ack = l.ack.max(off);
        }
        self.acks.notify_waiters();
    }

    /// Number of replicas that acknowledged offset `off`.
    pub(crate) fn acked(&self, off: u64) -> i64 {
        self.state
            .borrow()
            .replicas
            .values()
            .filter(|l| l.ack >= off)
            .count() as i64
    }

    /// The active expiry cycle (one `hz` tick).
    pub(crate) fn cron(&self) {
        {
            let mut st = self.state.borrow_mut();
            if st.role != Role::Master {
                return;
            }
            let now = self.handle.now_ms();
            st.ks.now_ms = now;
            st.ks.active_expire(now, 1000);
        }
        self.commit(Origin::Client);
    }

    /// Applies pending control requests; returns the new master to follow
    /// if a replication link must start.
    pub(crate) fn apply_controls(&self) -> Option<(String, u64)> {
        let mut start = None;
        for c in self.handle.take_controls() {
            match c {
                Control::ReplicaOf(m) => start = self.set_replicaof(m),
            }
        }
        start
    }

    /// Switches role. Returns the master and link generation to start.
    pub(crate) fn set_replicaof(&self, master: Option<String>) -> Option<(String, u64)> {
        let mut st = self.state.borrow_mut();
        st.link_generation += 1;
        st.link_up = false;
        let generation = st.link_generation;
        match master {
            None => {
                if st.role != Role::Master {
                    st.role = Role::Master;
                    st.ks.hide_only = false;
                    st.replid = replid(self.handle.name(), generation);
                    self.handle.set_role(Role::Master);
                }
                None
            }
            Some(m) => {
                st.role = Role::Replica(m.clone());
                st.ks.hide_only = true;
                st.replicas.clear();
                self.handle.set_role(Role::Replica(m.clone()));
                Some((m, generation))
            }
        }
    }
}
