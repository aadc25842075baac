//! The node: configuration, the control handle, and command execution.
//!
//! A [`NodeHandle`] outlives the node's process (the turmoil host): it holds
//! the configuration, the node's clock, its disk and its event sink, and it
//! lets a scenario jump the clock, declare a crash kind or promote a
//! replica. The [`Node`] itself (keyspace, Lua state, clients, replication
//! links) lives inside the host and dies with it.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use crate::clock::{ClockSpec, NodeClock, true_elapsed};
use crate::commands::{self, Kind};
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

/// One connected client's state.
pub(crate) struct Client {
    pub(crate) id: u64,
    name: Option<Vec<u8>>,
    pub(crate) subscriptions: BTreeSet<Vec<u8>>,
    pub(crate) push: mpsc::UnboundedSender<Reply>,
    /// Replication offset after this client's last write (for WAIT).
    woff: u64,
}

/// What the connection must do after a command.
pub(crate) enum Out {
    Reply(Reply),
    Replies(Vec<Reply>),
    Quit(Reply),
    Wait { numreplicas: i64, timeout_ms: i64 },
    Psync,
}

pub(crate) struct State {
    pub(crate) ks: Keyspace,
    next_client: u64,
    channels: BTreeMap<Vec<u8>, BTreeMap<u64, mpsc::UnboundedSender<Reply>>>,
    pub(crate) role: Role,
    pub(crate) offset: u64,
    pub(crate) replicas: BTreeMap<u64, ReplicaLink>,
    next_link: u64,
    pub(crate) link_generation: u64,
    pub(crate) link_up: bool,
    replid: String,
    backlog: bool,
}

/// A running node (inside its host).
pub struct Node {
    pub(crate) handle: NodeHandle,
    pub(crate) state: RefCell<State>,
    lua: LuaEngine,
    pub(crate) acks: Notify,
    in_script: Cell<bool>,
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
                    channels: BTreeMap::new(),
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
                in_script: Cell::new(false),
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

    pub(crate) fn new_client(&self, push: mpsc::UnboundedSender<Reply>) -> Client {
        let mut st = self.state.borrow_mut();
        let id = st.next_client;
        st.next_client += 1;
        Client {
            id,
            name: None,
            subscriptions: BTreeSet::new(),
            push,
            woff: 0,
        }
    }

    pub(crate) fn drop_client(&self, c: &Client) {
        let mut st = self.state.borrow_mut();
        for ch in &c.subscriptions {
            if let Some(subs) = st.channels.get_mut(ch) {
                subs.remove(&c.id);
                if subs.is_empty() {
                    st.channels.remove(ch);
                }
            }
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

    fn call_from_script(&self, args: &[Vec<u8>]) -> Reply {
        let Some(spec) = commands::lookup(&args[0]) else {
            return Reply::err("ERR Unknown Redis command called from script");
        };
        if !commands::arity_ok(spec.arity, args.len()) {
            return Reply::err("ERR Wrong number of args calling Redis command from script");
        }
        match spec.kind {
            Kind::Node => Reply::err("ERR This Redis command is not allowed from script"),
            Kind::NodeScriptOk => self.exec_node_simple(spec.name, args),
            Kind::Write | Kind::Read => {
                let mut st = self.state.borrow_mut();
                if spec.kind == Kind::Write && st.role != Role::Master {
                    return Reply::err("READONLY You can't write against a read only replica.");
                }
                let now_us = self.handle.now_us();
                commands::exec_keyspace(&mut st.ks, spec, args, now_us)
            }
        }
    }

    /// Executes one client command.
    pub(crate) fn execute(&self, c: &mut Client, args: &[Vec<u8>]) -> Out {
        let Some(spec) = commands::lookup(&args[0]) else {
            return Out::Reply(commands::unknown_command(args));
        };
        if !commands::arity_ok(spec.arity, args.len()) {
            return Out::Reply(commands::arity_error(spec.name));
        }
        if !c.subscriptions.is_empty()
            && !matches!(spec.name, "subscribe" | "unsubscribe" | "ping" | "quit")
        {
            return Out::Reply(Reply::err(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            )));
        }
        match spec.kind {
            Kind::Read | Kind::Write => {
                if !c.subscriptions.is_empty() && spec.name == "ping" {
                    let msg = args.get(1).cloned().unwrap_or_default();
                    return Out::Reply(Reply::Array(vec![
                        Reply::Bulk(b"pong".to_vec()),
                        Reply::Bulk(msg),
                    ]));
                }
                let reply = {
                    let mut st = self.state.borrow_mut();
                    if spec.kind == Kind::Write && st.role != Role::Master {
                        return Out::Reply(Reply::err(
                            "READONLY You can't write against a read only replica.",
                        ));
                    }
                    st.ks.now_ms = self.handle.now_ms();
                    let now_us = if spec.name == "time" {
                        self.handle.now_us()
                    } else {
                        0
                    };
                    commands::exec_keyspace(&mut st.ks, spec, args, now_us)
                };
                self.commit(Origin::Client);
                c.woff = self.state.borrow().offset;
                Out::Reply(reply)
            }
            Kind::NodeScriptOk => Out::Reply(self.exec_node_simple(spec.name, args)),
            Kind::Node => self.exec_node(c, spec.name, args),
        }
    }

    fn exec_node_simple(&self, name: &str, args: &[Vec<u8>]) -> Reply {
        match name {
            "select" => match commands::int_arg(&args[1]) {
                Ok(0) => Reply::ok(),
                Ok(_) => Reply::err("ERR DB index is out of range"),
                Err(e) => e,
            },
            "publish" => {
                let st = self.state.borrow();
                let n = match st.channels.get(&args[1]) {
                    Some(subs) => {
                        let msg = Reply::Array(vec![
                            Reply::Bulk(b"message".to_vec()),
                            Reply::Bulk(args[1].clone()),
                            Reply::Bulk(args[2].clone()),
                        ]);
                        subs.values()
                            .filter(|tx| tx.send(msg.clone()).is_ok())
                            .count()
                    }
                    None => 0,
                };
                Reply::Int(n as i64)
            }
            "role" => {
                let st = self.state.borrow();
                match &st.role {
                    Role::Master => Reply::Array(vec![
                        Reply::Bulk(b"master".to_vec()),
                        Reply::Int(st.offset as i64),
                        Reply::Array(
                            st.replicas
                                .values()
                                .map(|l| {
                                    Reply::Array(vec![
                                        Reply::Bulk(l.addr.clone().into_bytes()),
                                        Reply::Bulk(b"6379".to_vec()),
                                        Reply::Bulk(l.ack.to_string().into_bytes()),
                                    ])
                                })
                                .collect(),
                        ),
                    ]),
                    Role::Replica(m) => Reply::Array(vec![
                        Reply::Bulk(b"slave".to_vec()),
                        Reply::Bulk(m.clone().into_bytes()),
                        Reply::Int(i64::from(self.handle.config().port)),
                        Reply::Bulk(
                            if st.link_up { "connected" } else { "connect" }
                                .as_bytes()
                                .to_vec(),
                        ),
                        Reply::Int(st.offset as i64),
                    ]),
                }
            }
            "info" => Reply::Bulk(self.info(args.get(1)).into_bytes()),
            _ => Reply::err("ERR unsupported"),
        }
    }

    fn info(&self, section: Option<&Vec<u8>>) -> String {
        let sec = section
            .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
            .unwrap_or_else(|| "default".into());
        let st = self.state.borrow();
        let mut out = String::new();
        let all = matches!(sec.as_str(), "default" | "all" | "everything");
        if all || sec == "server" {
            out.push_str("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n");
            out.push_str(&format!(
                "run_id:{}\r\ntcp_port:{}\r\n",
                st.replid,
                self.handle.config().port
            ));
            if all {
                out.push_str("\r\n");
            }
        }
        if all || sec == "replication" {
            out.push_str("# Replication\r\n");
            match &st.role {
                Role::Master => {
                    out.push_str("role:master\r\n");
                    out.push_str(&format!("connected_slaves:{}\r\n", st.replicas.len()));
                    for (i, l) in st.replicas.values().enumerate() {
                        out.push_str(&format!(
                            "slave{i}:ip={},port=6379,state=online,offset={},lag=0\r\n",
                            l.addr, l.ack
                        ));
                    }
                    out.push_str("master_failover_state:no-failover\r\n");
                }
                Role::Replica(m) => {
                    out.push_str("role:slave\r\n");
                    out.push_str(&format!(
                        "master_host:{m}\r\nmaster_port:{}\r\n",
                        self.handle.config().port
                    ));
                    out.push_str(&format!(
                        "master_link_status:{}\r\n",
                        if st.link_up { "up" } else { "down" }
                    ));
                    out.push_str(&format!(
                        "slave_repl_offset:{}\r\nslave_read_only:1\r\nconnected_slaves:0\r\n",
                        st.offset
                    ));
                }
            }
            out.push_str(&format!(
                "master_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
                st.replid, st.offset
            ));
        }
        if all || sec == "keyspace" {
            if all {
                out.push_str("\r\n");
            }
            out.push_str("# Keyspace\r\n");
            if !st.ks.is_empty() {
                out.push_str(&format!(
                    "db0:keys={},expires={},avg_ttl=0\r\n",
                    st.ks.len(),
                    st.ks.expires_len()
                ));
            }
        }
        out
    }

    fn exec_node(&self, c: &mut Client, name: &str, args: &[Vec<u8>]) -> Out {
        let eq = |a: &[u8], b: &str| a.eq_ignore_ascii_case(b.as_bytes());
        match name {
            "quit" => Out::Quit(Reply::ok()),
            "command" => Out::Reply(Reply::Array(Vec::new())),
            "client" => {
                let sub = &args[1];
                let arity = |n: usize, sub: &str| {
                    if args.len() != n {
                        Some(Out::Reply(commands::arity_error(&format!("client|{sub}"))))
                    } else {
                        None
                    }
                };
                if eq(sub, "id") {
                    arity(2, "id").unwrap_or(Out::Reply(Reply::Int(c.id as i64)))
                } else if eq(sub, "getname") {
                    arity(2, "getname").unwrap_or_else(|| {
                        Out::Reply(c.name.clone().map_or(Reply::Nil, Reply::Bulk))
                    })
                } else if eq(sub, "setname") {
                    if let Some(o) = arity(3, "setname") {
                        return o;
                    }
                    let n = &args[2];
                    if n.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                        return Out::Reply(Reply::err(
                            "ERR Client names cannot contain spaces, newlines or special characters.",
                        ));
                    }
                    c.name = if n.is_empty() { None } else { Some(n.clone()) };
                    Out::Reply(Reply::ok())
                } else {
                    Out::Reply(commands::unknown_subcommand(args))
                }
            }
            "script" => {
                let sub = &args[1];
                if eq(sub, "load") {
                    if args.len() != 3 {
                        return Out::Reply(commands::arity_error("script|load"));
                    }
                    Out::Reply(match self.lua.load(&args[2]) {
                        Ok(sha) => Reply::Bulk(sha.into_bytes()),
                        Err(e) => e,
                    })
                } else if eq(sub, "exists") {
                    if args.len() < 3 {
                        return Out::Reply(commands::arity_error("script|exists"));
                    }
                    Out::Reply(Reply::Array(
                        args[2..]
                            .iter()
                            .map(|s| {
                                let s = String::from_utf8_lossy(s).to_ascii_lowercase();
                                Reply::Int(i64::from(self.lua.exists(&s)))
                            })
                            .collect(),
                    ))
                } else if eq(sub, "flush") {
                    if args.len() > 3 {
                        return Out::Reply(commands::arity_error("script|flush"));
                    }
                    if args.len() == 3 && !eq(&args[2], "sync") && !eq(&args[2], "async") {
                        return Out::Reply(Reply::err(
                            "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
                        ));
                    }
                    self.lua.flush();
                    Out::Reply(Reply::ok())
                } else {
                    Out::Reply(commands::unknown_subcommand(args))
                }
            }
            "eval" | "evalsha" => {
                let r = self.eval(name == "evalsha", args);
                c.woff = self.state.borrow().offset;
                Out::Reply(r)
            }
            "subscribe" => {
                let mut out = Vec::new();
                let mut st = self.state.borrow_mut();
                for ch in &args[1..] {
                    if c.subscriptions.insert(ch.clone()) {
                        st.channels
                            .entry(ch.clone())
                            .or_default()
                            .insert(c.id, c.push.clone());
                    }
                    out.push(Reply::Array(vec![
                        Reply::Bulk(b"subscribe".to_vec()),
                        Reply::Bulk(ch.clone()),
                        Reply::Int(c.subscriptions.len() as i64),
                    ]));
                }
                Out::Replies(out)
            }
            "unsubscribe" => {
                let chans: Vec<Vec<u8>> = if args.len() > 1 {
                    args[1..].to_vec()
                } else {
                    c.subscriptions.iter().cloned().collect()
                };
                if chans.is_empty() {
                    return Out::Reply(Reply::Array(vec![
                        Reply::Bulk(b"unsubscribe".to_vec()),
                        Reply::Nil,
                        Reply::Int(0),
                    ]));
                }
                let mut out = Vec::new();
                let mut st = self.state.borrow_mut();
                for ch in chans {
                    c.subscriptions.remove(&ch);
                    if let Some(subs) = st.channels.get_mut(&ch) {
                        subs.remove(&c.id);
                        if subs.is_empty() {
                            st.channels.remove(&ch);
                        }
                    }
                    out.push(Reply::Array(vec![
                        Reply::Bulk(b"unsubscribe".to_vec()),
                        Reply::Bulk(ch),
                        Reply::Int(c.subscriptions.len() as i64),
                    ]));
                }
                Out::Replies(out)
            }
            "wait" => {
                if self.state.borrow().role != Role::Master {
                    return Out::Reply(Reply::err(
                        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
                    ));
                }
                let n = match commands::int_arg(&args[1]) {
                    Ok(n) => n,
                    Err(e) => return Out::Reply(e),
                };
                let t = match commands::string2ll_timeout(&args[2]) {
                    Ok(t) => t,
                    Err(e) => return Out::Reply(e),
                };
                let acked = self.acked(c.woff);
                if acked >= n {
                    return Out::Reply(Reply::Int(acked));
                }
                Out::Wait {
                    numreplicas: n,
                    timeout_ms: t,
                }
            }
            "replicaof" | "slaveof" => {
                if eq(&args[1], "no") && eq(&args[2], "one") {
                    self.set_replicaof(None);
                    return Out::Reply(Reply::ok());
                }
                if commands::int_arg(&args[2]).is_err() {
                    return Out::Reply(Reply::err("ERR Invalid master port"));
                }
                let host = String::from_utf8_lossy(&args[1]).into_owned();
                if self.state.borrow().role == Role::Replica(host.clone()) {
                    return Out::Reply(Reply::Status(
                        "OK Already connected to specified master".into(),
                    ));
                }
                self.handle.replicaof(Some(host));
                Out::Reply(Reply::ok())
            }
            "psync" => Out::Psync,
            _ => Out::Reply(commands::unknown_command(args)),
        }
    }

    /// WAIT's offset for a client.
    pub(crate) fn client_woff(&self, c: &Client) -> u64 {
        c.woff
    }

    fn eval(&self, by_sha: bool, args: &[Vec<u8>]) -> Reply {
        if by_sha && args[1].len() != 40 {
            return Reply::err("NOSCRIPT No matching script. Please use EVAL.");
        }
        let numkeys = match commands::int_arg(&args[2]) {
            Ok(n) => n,
            Err(e) => return e,
        };
        if numkeys > (args.len() - 3) as i64 {
            return Reply::err("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Reply::err("ERR Number of keys can't be negative");
        }
        let sha = if by_sha {
            let s = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            if !self.lua.exists(&s) {
                return Reply::err("NOSCRIPT No matching script. Please use EVAL.");
            }
            s
        } else {
            match self.lua.load(&args[1]) {
                Ok(s) => s,
                Err(e) => return e,
            }
        };
        let k = 3 + numkeys as usize;
        self.state.borrow_mut().ks.now_ms = self.handle.now_ms();
        self.in_script.set(true);
        let r = self
            .lua
            .run(&sha, &args[3..k], &args[k..])
            .unwrap_or_else(|| Reply::err("NOSCRIPT No matching script. Please use EVAL."));
        self.in_script.set(false);
        self.commit(Origin::Client);
        r
    }
}
