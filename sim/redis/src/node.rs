//! The running node: its state, and the commit path every change takes.
//!
//! A [`Node`] lives inside its host and dies with it: the keyspace, the Lua
//! engine, the pub/sub channels, the replication role, offset and links.
//! What outlives it (configuration, clock, disk, event sink) is in its
//! [`NodeHandle`](crate::handle).
//!
//! Whatever changes keys (a client's command, a whole script, the active
//! expiry cycle, a batch from the master, the restore at start-up) only
//! records [`Change`]s in the keyspace; `Node::commit` then turns them
//! into ground-truth events, persistence records and, on a master, one
//! replication batch. Commands reach the node through the command table
//! (`commands.rs`), which decides when a command's changes are committed.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::blocking::Blocked;
use crate::client::{Client, KillSwitch};
use crate::commands::info::Stats;
use crate::commands::pubsub::Channels;
use crate::commands::transactions::Watches;
use crate::databases::Databases;
use crate::events::{EventKind, Origin};
use crate::handle::{Control, lock};
use crate::keyspace::{Change, Keyspace};
use crate::lua::LuaEngine;
use crate::persistence::{DbKeyState, KeyState};
use crate::resp::Reply;

// Re-exported so the older paths (`simredis::node::NodeHandle`, ...) keep
// working.
pub use crate::handle::{MasterAddr, NodeConfig, NodeHandle, Role};

/// A batch of effects streamed to replicas: the final state of every key
/// one command (or script, or expiry cycle) changed.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    /// The master's replication offset after this batch.
    pub(crate) offset: u64,
    /// A full snapshot: keys it does not name are gone.
    pub(crate) full: bool,
    /// Each key of database 0 (where locks live)'s new entry, `None` if
    /// deleted.
    pub(crate) states: Vec<KeyState>,
    /// The same for databases 1 to 15, each key with its database index
    /// (empty for a batch that only touched database 0, which then
    /// travels exactly as before databases existed).
    pub(crate) other_dbs: Vec<DbKeyState>,
    /// The master's function libraries after a `FUNCTION` command (or
    /// in a snapshot), as a `FUNCTION DUMP` payload; `None` if unchanged.
    pub(crate) functions: Option<Vec<u8>>,
}

impl Batch {
    /// Splits effects tagged with their database into a batch's two lists.
    fn new(offset: u64, full: bool, effects: Vec<DbKeyState>) -> Batch {
        let (db0, other_dbs): (Vec<DbKeyState>, Vec<DbKeyState>) =
            effects.into_iter().partition(|(db, _)| *db == 0);
        Batch {
            offset,
            full,
            states: db0.into_iter().map(|(_, s)| s).collect(),
            other_dbs,
            functions: None,
        }
    }

    /// Every state with its database index, database 0 first.
    fn into_effects(self) -> impl Iterator<Item = DbKeyState> {
        self.states
            .into_iter()
            .map(|s| (0, s))
            .chain(self.other_dbs)
    }
}

/// A batch as the master's commit path hands it to a replica's link: with
/// the moment it entered the replication buffer, from which the link counts
/// the replica's lag.
pub(crate) type Queued = (Instant, Batch);

/// A master's view of one attached replica.
pub(crate) struct ReplicaLink {
    /// Where the replica's batches go: its link holds them (the master's
    /// buffer for this replica) until they are due, then sends them.
    pub(crate) tx: mpsc::UnboundedSender<Queued>,
    /// The highest offset it acknowledged (what `WAIT` counts).
    pub(crate) ack: u64,
    /// How `ROLE` and `INFO` name it.
    pub(crate) addr: String,
    /// The node's wall time (ms) of its last acknowledgement (or of its
    /// attachment): how far behind it is, for `min-replicas-max-lag`.
    pub(crate) ack_at_ms: i64,
}

/// Everything a running node holds, behind one `RefCell` (commands run one
/// at a time, so a borrow never outlives a command).
pub(crate) struct State {
    /// The sixteen databases: keys, deadlines, and the changes not yet
    /// committed.
    pub(crate) dbs: Databases,
    /// The id the next client gets.
    next_client: u64,
    /// Pub/sub channels and their subscribers.
    pub(crate) channels: Channels,
    /// Master, or replica of whom.
    pub(crate) role: Role,
    /// Master: batches written; replica: the offset of the last batch applied.
    pub(crate) offset: u64,
    /// Master: the attached replicas, by link id.
    pub(crate) replicas: BTreeMap<u64, ReplicaLink>,
    /// The id the next replica link gets.
    next_link: u64,
    /// Bumped by every `REPLICAOF` and promotion; a replication link of an
    /// older generation stops.
    pub(crate) link_generation: u64,
    /// Replica: whether the link to the master is up.
    pub(crate) link_up: bool,
    /// The replication id (`INFO`'s `run_id` and `master_replid`); a
    /// promotion draws a new one.
    pub(crate) replid: String,
    /// Whether a replica ever attached: only then does the offset move.
    backlog: bool,
    /// The connected clients' kill switches, by client id (`CLIENT
    /// KILL`), in the order they connected.
    pub(crate) connected: BTreeMap<u64, Rc<KillSwitch>>,
    /// What `CLIENT LIST` shows of each connected client, by id.
    pub(crate) client_views: BTreeMap<u64, Rc<crate::client::ClientView>>,
    /// The keys clients `WATCH`, and whose transactions must fail.
    pub(crate) watches: Watches,
    /// The parameters `CONFIG` reads and sets.
    pub(crate) config: crate::commands::config::Config,
    /// The counters `INFO` prints (commands, errors).
    pub(crate) stats: Stats,
    /// The keyspace event classes `notify-keyspace-events` turns on.
    pub(crate) notify_classes: crate::notifications::Classes,
    /// Keyspace events made since the last commit, published by it.
    pub(crate) notifications: Vec<crate::notifications::Notification>,
}

impl State {
    /// How many clients ever connected (`total_connections_received`).
    pub(crate) fn clients_created(&self) -> u64 {
        self.next_client - 1
    }
}

/// A running node (inside its host).
pub struct Node {
    /// The node's outside: config, clock, disk, sink, control queue.
    pub(crate) handle: NodeHandle,
    /// The node's state.
    pub(crate) state: RefCell<State>,
    /// The Lua engine and its script cache.
    pub(crate) lua: LuaEngine,
    /// Notified when a replica acknowledges (wakes blocked `WAIT`s).
    pub(crate) acks: Notify,
    /// Notified once by `SHUTDOWN`: the serving loop returns.
    pub(crate) stop: Notify,
    /// The clients blocked on keys (`BLPOP`...), and the keys ready to
    /// serve them.
    pub(crate) blocked: RefCell<Blocked>,
    /// The database the running command works in: the client's selected
    /// one, or a script's own after its `redis.call('SELECT', n)`.
    pub(crate) selected: Cell<usize>,
    /// An `EXEC` is running: its commands' changes wait for its end, to be
    /// committed together (see [`Node::commit`]).
    pub(crate) in_exec: Cell<bool>,
    /// The client whose command runs (its keyspace events may go after
    /// its reply).
    pub(crate) caller: Cell<Option<u64>>,
    /// How many of the messages the last commit published reach the caller
    /// after its reply (see `crate::notifications::order_around_reply`).
    pub(crate) after_reply: Cell<usize>,
    /// Memory was over `maxmemory` as the last client command started
    /// (what its scripts' calls are checked against: see
    /// `commands::maxmemory`).
    pub(crate) oom_at_command_start: Cell<bool>,
}

/// The effects of one database's `changes`, in order: each key's final
/// state (its last write or deletion only) or its expiry, with the event
/// that reports it.
fn settle(
    ks: &Keyspace,
    changes: &[Change],
    origin: Origin,
) -> Vec<(Vec<u8>, Option<crate::keyspace::Entry>, EventKind)> {
    let mut last: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (i, c) in changes.iter().enumerate() {
        if let Change::Written(k) | Change::Deleted(k) = c {
            last.insert(k.as_slice(), i);
        }
    }
    let mut out = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        match c {
            Change::Expired(k, d) => {
                out.push((k.clone(), None, EventKind::Expired { deadline_ms: *d }));
            }
            Change::Written(k) | Change::Deleted(k) => {
                if last.get(k.as_slice()) != Some(&i) {
                    continue;
                }
                match ks.peek(k) {
                    Some(e) => out.push((
                        k.clone(),
                        Some(e.clone()),
                        EventKind::Written {
                            value: e.value.clone(),
                            deadline_ms: e.deadline,
                            origin,
                        },
                    )),
                    None if matches!(c, Change::Deleted(_)) => {
                        out.push((k.clone(), None, EventKind::Deleted { origin }));
                    }
                    None => {}
                }
            }
        }
    }
    out
}

/// The replication id of `name`'s `generation`: 40 hex digits, derived, not
/// drawn, so runs are reproducible.
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
                    dbs: Databases::seeded(handle.name()),
                    next_client: 1,
                    channels: Channels::default(),
                    stats: Stats::default(),
                    notify_classes: Default::default(),
                    notifications: Vec::new(),
                    role: role.clone(),
                    offset: 0,
                    replicas: BTreeMap::new(),
                    next_link: 1,
                    link_generation: 0,
                    link_up: false,
                    replid: replid(handle.name(), 0),
                    backlog: false,
                    connected: BTreeMap::new(),
                    client_views: BTreeMap::new(),
                    watches: Watches::default(),
                    config: crate::commands::config::Config::new(handle.config()),
                }),
                handle,
                lua,
                acks: Notify::new(),
                stop: Notify::new(),
                blocked: RefCell::default(),
                selected: Cell::new(0),
                in_exec: Cell::new(false),
                caller: Cell::new(None),
                after_reply: Cell::new(0),
                oom_at_command_start: Cell::new(false),
            }
        });
        node.lua
            .set_instruction_limit(node.handle.config().script_instruction_limit);
        let restored = lock(&node.handle.shared.disk).recover(node.handle.config().persistence);
        let functions = lock(&node.handle.shared.disk).functions();
        if let Some(payload) = functions {
            node.replace_libraries(&payload);
        }
        {
            let mut st = node.state.borrow_mut();
            st.dbs.set_hide_only(matches!(role, Role::Replica(_)));
            st.dbs.set_now(node.handle.now_ms());
            for (db, k, e) in restored {
                st.dbs.db_mut(db).put_raw(&k, e);
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
        let client = Client::new(id, push);
        st.connected.insert(id, client.kill.clone());
        st.client_views.insert(id, client.view.clone());
        client
    }

    /// Forgets a client whose connection ended (or became a replication
    /// stream): its subscriptions go.
    pub(crate) fn drop_client(&self, c: &Client) {
        let mut st = self.state.borrow_mut();
        st.connected.remove(&c.id);
        st.client_views.remove(&c.id);
        st.watches.unwatch_all(c.id);
        for ch in &c.subscriptions {
            st.channels.unsubscribe(ch, c.id);
        }
        self.unblock_disconnected(c.id);
        for pattern in &c.patterns {
            st.channels.punsubscribe(pattern, c.id);
        }
    }

    /// `SHUTDOWN`: flushes the disk (Redis fsyncs its AOF before it
    /// exits) and tells the serving loop to return.
    pub(crate) fn shut_down(&self) {
        lock(&self.handle.shared.disk).fsync();
        self.stop.notify_one();
    }

    /// Turns the keyspace changes of the last command into events,
    /// persistence records and replication effects: every database's
    /// changes in one batch; then serves the clients blocked on keys it
    /// wrote (see [`crate::blocking`]). Inside an `EXEC` nothing is
    /// committed until the transaction's end.
    pub(crate) fn commit(&self, origin: Origin) {
        if self.in_exec.get() {
            return;
        }
        self.commit_changes(origin);
        self.serve_ready_keys();
    }

    /// [`Node::commit`]'s first part: events, disk, replicas.
    fn commit_changes(&self, origin: Origin) {
        let mut st = self.state.borrow_mut();
        if !st.dbs.has_changes() {
            return;
        }
        self.publish_notifications(&mut st);
        let wall = st.dbs.now_ms();
        let mut effects: Vec<DbKeyState> = Vec::new();
        for (db, changes) in st.dbs.take_changes() {
            self.note_ready_keys(db, &changes);
            // Ground-truth events describe lock keys, which live in
            // database 0: changes to other databases are replicated and
            // persisted but not reported (reporting them under their bare
            // key would make a checker mistake them for lock keys).
            let report = db == 0;
            for (key, state, kind) in settle(st.dbs.db(db), &changes, origin) {
                if report {
                    self.handle.emit(&key, kind, wall);
                }
                st.watches.touch(db, &key, state.is_some());
                effects.push((db, (key, state)));
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
            let batch = Batch::new(st.offset, false, effects);
            // Stamped now, as the reply to the client is: the lag counts
            // from the acknowledgement, not from when the link task wakes.
            let now = Instant::now();
            st.replicas
                .retain(|_, l| l.tx.send((now, batch.clone())).is_ok());
            self.handle.set_offset(st.offset);
        }
    }

    /// Publishes the keyspace events made since the last commit, with the
    /// `expired` events of keys the active expiry removed meanwhile.
    fn publish_notifications(&self, st: &mut State) {
        let classes = st.notify_classes;
        if classes.any() {
            for db in 0..crate::databases::DATABASES {
                let (changes, _) = st.dbs.db_mut(db).take_unnoticed();
                let expired = crate::notifications::expired_only(&changes, db);
                st.notifications.extend(expired);
            }
        }
        for n in std::mem::take(&mut st.notifications) {
            for (channel, message) in n.messages(classes) {
                if let (true, Some(caller)) = (n.after_reply, self.caller.get()) {
                    let late = st.channels.reaches(&channel, caller);
                    self.after_reply.set(self.after_reply.get() + late);
                }
                st.channels.publish(&channel, &message);
            }
        }
    }

    /// Applies a batch streamed from the master.
    pub(crate) fn apply_batch(&self, batch: Batch) {
        {
            let mut st = self.state.borrow_mut();
            st.dbs.set_now(self.handle.now_ms());
            let (offset, full) = (batch.offset, batch.full);
            if let Some(payload) = &batch.functions {
                self.replace_libraries(payload);
            }
            let effects: Vec<DbKeyState> = batch.into_effects().collect();
            if full {
                let keep: BTreeSet<(usize, &Vec<u8>)> =
                    effects.iter().map(|(db, (k, _))| (*db, k)).collect();
                let gone: Vec<(usize, Vec<u8>)> = st
                    .dbs
                    .iter()
                    .flat_map(|(db, ks)| ks.iter().map(move |(k, _)| (db, k)))
                    .filter(|(db, k)| !keep.contains(&(*db, *k)))
                    .map(|(db, k)| (db, k.clone()))
                    .collect();
                for (db, k) in gone {
                    st.dbs.db_mut(db).remove_raw(&k);
                }
            }
            for (db, (k, e)) in effects {
                let ks = st.dbs.db_mut(db);
                match e {
                    Some(e) => {
                        if ks.peek(&k) != Some(&e) {
                            ks.put_raw(&k, e);
                        }
                    }
                    None => {
                        ks.remove_raw(&k);
                    }
                }
            }
            st.offset = offset;
            self.handle.set_offset(offset);
        }
        self.commit(Origin::Replication);
    }

    /// A full snapshot of the keyspace for a new replica.
    pub(crate) fn snapshot(&self) -> Batch {
        let st = self.state.borrow();
        let effects = st
            .dbs
            .iter()
            .flat_map(|(db, ks)| {
                ks.iter()
                    .map(move |(k, e)| (db, (k.clone(), Some(e.clone()))))
            })
            .collect();
        let mut batch = Batch::new(st.offset, true, effects);
        batch.functions = Some(self.libraries_payload());
        batch
    }

    /// The libraries as a `FUNCTION DUMP` payload.
    fn libraries_payload(&self) -> Vec<u8> {
        let libs = self.lua.libraries();
        crate::commands::functions::dump(&libs.libraries.values().cloned().collect::<Vec<_>>())
    }

    /// Replaces the libraries with the ones in `payload` (a master's, or
    /// the disk's): Redis replicates and persists functions, not scripts.
    /// A payload that does not load leaves the libraries as they were.
    fn replace_libraries(&self, payload: &[u8]) {
        let Ok(codes) = crate::commands::functions::read_dump(payload) else {
            return;
        };
        let old = self.lua.take_libraries();
        for code in &codes {
            if self.lua.load_library(code, false).is_err() {
                self.lua.set_libraries(old);
                return;
            }
        }
        lock(&self.handle.shared.disk)
            .write_functions(self.handle.config().persistence, payload.to_vec());
    }

    /// A `FUNCTION` command changed the libraries: they go to the disk and,
    /// as one batch, to the replicas (the libraries whole, as a key's final
    /// state goes).
    pub(crate) fn functions_changed(&self) {
        let payload = self.libraries_payload();
        lock(&self.handle.shared.disk)
            .write_functions(self.handle.config().persistence, payload.clone());
        let mut st = self.state.borrow_mut();
        if st.role == Role::Master && st.backlog {
            st.offset += 1;
            let mut batch = Batch::new(st.offset, false, Vec::new());
            batch.functions = Some(payload);
            let now = Instant::now();
            st.replicas
                .retain(|_, l| l.tx.send((now, batch.clone())).is_ok());
            self.handle.set_offset(st.offset);
        }
    }

    /// Attaches a replica whose batches go to `tx`; returns its link id.
    pub(crate) fn add_replica(&self, tx: mpsc::UnboundedSender<Queued>, addr: String) -> u64 {
        let mut st = self.state.borrow_mut();
        let id = st.next_link;
        st.next_link += 1;
        let ack = 0;
        st.backlog = true;
        let ack_at_ms = self.handle.now_ms();
        st.replicas.insert(
            id,
            ReplicaLink {
                tx,
                ack,
                addr,
                ack_at_ms,
            },
        );
        id
    }

    /// Detaches the replica of link `id`.
    pub(crate) fn remove_replica(&self, id: u64) {
        self.state.borrow_mut().replicas.remove(&id);
    }

    /// Records that the replica of link `id` applied offset `off`, and
    /// wakes the blocked `WAIT`s.
    pub(crate) fn replica_ack(&self, id: u64, off: u64) {
        let now = self.handle.now_ms();
        if let Some(l) = self.state.borrow_mut().replicas.get_mut(&id) {
            l.ack = l.ack.max(off);
            l.ack_at_ms = now;
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
            st.dbs.set_now(now);
            for (_, ks) in st.dbs.iter_mut() {
                ks.active_expire(now, 1000);
            }
        }
        self.commit(Origin::Client);
    }

    /// Applies pending control requests; returns the new master to follow
    /// if a replication link must start.
    pub(crate) fn apply_controls(&self) -> Option<(MasterAddr, u64)> {
        let mut start = None;
        for c in self.handle.take_controls() {
            match c {
                Control::ReplicaOf(m) => start = self.set_replicaof(m),
                // A link of an older generation ends as soon as it starts.
                Control::Follow(m, generation) => start = Some((m, generation)),
            }
        }
        start
    }

    /// A client's `REPLICAOF`: switches role at once, so the commands after
    /// it in the same pipeline see the new role, and leaves starting the
    /// link to the node's control task (which knows the network to dial).
    pub(crate) fn replicaof_from_client(&self, master: Option<MasterAddr>) {
        if let Some((m, generation)) = self.set_replicaof(master) {
            self.handle.push_control(Control::Follow(m, generation));
        }
    }

    /// Switches role. Returns the master and link generation to start.
    pub(crate) fn set_replicaof(&self, master: Option<MasterAddr>) -> Option<(MasterAddr, u64)> {
        let mut st = self.state.borrow_mut();
        st.link_generation += 1;
        st.link_up = false;
        let generation = st.link_generation;
        match master {
            None => {
                if st.role != Role::Master {
                    st.role = Role::Master;
                    st.dbs.set_hide_only(false);
                    st.replid = replid(self.handle.name(), generation);
                    self.handle.set_role(Role::Master);
                }
                None
            }
            Some(m) => {
                self.unblock_all_for_failover();
                st.role = Role::Replica(m.clone());
                st.dbs.set_hide_only(true);
                st.replicas.clear();
                self.handle.set_role(Role::Replica(m.clone()));
                Some((m, generation))
            }
        }
    }
}
