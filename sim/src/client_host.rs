//! One simulated client: the state it keeps across restarts of its process,
//! and the turmoil host that runs its workload.
//!
//! The driver, the client's fault hook and its workload all share one
//! [`SimClientState`]: a restart of the host starts a new process (new
//! connections, a new owner id) with the same machine clock, the same
//! pause gate and the same place in the workload.

use crate::client_clock::SimClock;
use crate::client_state::ClientState;
use crate::dial::{PortBudget, SimDialer};
use crate::freeze::{Freeze, LinkHolds};
use crate::hook::{AimedFault, SimHook};
use crate::resource::Store;
use crate::workload::Client;
use crate::world::Shared;
use locks::database::pool::SessionPool;
use locks::etcd::channel::FailoverDialer;
use locks::{
    ConnConfig, Dialer, Lock, LockConfig, LockContext, Owner, ReconnectingConnection, UnknownRung,
};
use model::host::Host;
use model::resource::ResourceKind;
use model::scenario::ClientGroup;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A simulated client's state: the one [`ClientState`] on a simulated
/// clock, with the simulated machine's own part.
pub type SimClientState = ClientState<SimClock, SimMachine>;

/// What a simulated client's machine keeps besides the common state.
#[derive(Debug)]
pub struct SimMachine {
    /// Its pause gate.
    pub freeze: Arc<Freeze>,
    /// Whether its workload has finished.
    pub finished: AtomicBool,
    /// One-way holds on its links (a machine's network, so they outlive a
    /// restart of the process).
    pub links: Arc<LinkHolds>,
    /// Its machine's ephemeral ports lost to failed dials (turmoil keeps
    /// them taken across restarts of the process).
    pub ports: Arc<PortBudget>,
}

/// A simulated client that has not started yet, on a machine whose
/// ephemeral ports are `ports`.
pub fn new_state(index: usize, ports: Arc<PortBudget>) -> SimClientState {
    let freeze = Arc::new(Freeze::new());
    let clock = Arc::new(SimClock::new(freeze.clone()));
    let machine = SimMachine {
        freeze,
        finished: AtomicBool::new(false),
        links: Arc::new(LinkHolds::default()),
        ports,
    };
    ClientState::new(index, clock, machine)
}

/// Whether the driver has nothing more to wait for from a client.
pub fn done(state: &SimClientState) -> bool {
    state.crashed_for_good.load(Ordering::SeqCst) || state.machine.finished.load(Ordering::SeqCst)
}

/// Everything a client's process is built from.
#[derive(Clone)]
pub struct ClientSetup {
    /// The rung's id.
    pub rung: String,
    /// The run's seed.
    pub seed: u64,
    /// Its workload.
    pub group: ClientGroup,
    /// The lock's key.
    pub key: String,
    /// The hosts the rung's connections dial, one per independent node.
    pub targets: Vec<Host>,
    /// What the store guards.
    pub resource: ResourceKind,
    /// The faults aimed at this client's fault points.
    pub aimed: Vec<AimedFault>,
    /// Connection timeouts.
    pub conn: ConnConfig,
    /// Lock parameters.
    pub lock: LockConfig,
    /// The connection pool its process shares with the rest of its group,
    /// for a pooled rung in a pooled group ([`crate::world::Pools`]).
    pub pool: Option<Arc<SessionPool>>,
}

/// Registers the client's host with turmoil. The closure runs again at
/// every restart of the host: a new process, with new connections and a
/// new owner id, but the same machine clock and the same place in its
/// workload.
pub fn spawn(
    sim: &mut turmoil::Sim<'static>,
    state: Arc<SimClientState>,
    setup: ClientSetup,
    shared: Arc<Shared>,
) {
    let host = state.host().to_string();
    sim.host(host, move || {
        let incarnation = state.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        state.machine.freeze.thaw();
        let client = start_process(&state, &setup, &shared, incarnation);
        let state = state.clone();
        async move {
            let client = client?;
            client.run().await;
            state.machine.finished.store(true, Ordering::SeqCst);
            Ok(())
        }
    });
}

/// Registers the machine the clients in `processes` share
/// ([`crate::machines`]): one turmoil host on which each client's process
/// runs as a task of its own. No fault crashes or restarts it, so each
/// process starts once.
pub fn spawn_shared(
    sim: &mut turmoil::Sim<'static>,
    name: &str,
    processes: Vec<(Arc<SimClientState>, ClientSetup)>,
    shared: Arc<Shared>,
) {
    sim.host(name, move || {
        let started: Vec<_> = processes
            .iter()
            .map(|(state, setup)| {
                let incarnation = state.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
                state.machine.freeze.thaw();
                let client = start_process(state, setup, &shared, incarnation);
                (state.clone(), client)
            })
            .collect();
        async move {
            let mut tasks = Vec::with_capacity(started.len());
            for (state, client) in started {
                let client = client?;
                tasks.push(tokio::task::spawn_local(async move {
                    client.run().await;
                    state.machine.finished.store(true, Ordering::SeqCst);
                }));
            }
            for task in tasks {
                task.await?;
            }
            Ok(())
        }
    });
}

/// Builds one incarnation of the client's process.
fn start_process(
    state: &Arc<SimClientState>,
    setup: &ClientSetup,
    shared: &Arc<Shared>,
    incarnation: u32,
) -> Result<Client, Box<dyn std::error::Error>> {
    let i = state.index;
    let dialer = |host: Host| {
        SimDialer::new(host, shared.directory.clone(), state.machine.freeze.clone())
            .with_links(state.machine.links.clone())
            .with_ports(state.machine.ports.clone())
    };
    let dial = |host: Host| ReconnectingConnection::new(dialer(host), setup.conn);
    let hook = SimHook::new(state.clone(), setup.aimed.clone(), shared.clone());
    let ctx = LockContext::new(state.clock.clone(), client_seed(setup.seed, i, incarnation))
        .with_hook(Arc::new(hook))
        .with_wakeups(shared.wakeups.clone());
    let lock = build_lock(setup, dialer, ctx)?;
    Ok(Client {
        group: setup.group.clone(),
        key: setup.key.clone(),
        lock,
        store: Store::new(dial(Host::Store), setup.resource == ResourceKind::Fenced),
        owner: Owner::new(format!("{}.{incarnation}", state.host()), 1),
        index: state.index,
        clock: state.clock.clone(),
        cycle: state.cycle.clone(),
        gate: Some(state.machine.freeze.clone()),
        recorder: shared.recorder.clone(),
    })
}

/// The lock of `setup.rung` for one client process, each node reached
/// through `dialer(host)`: an etcd rung speaks gRPC over one channel to
/// one member at a time (the targets in turn when a dial fails), a
/// ZooKeeper rung its own protocol over one session, a database rung
/// its database's (PostgreSQL's or MySQL's) over one session, every other rung
/// RESP over a reconnecting connection per node. The simulator
/// and real mode build their clients' locks here.
pub fn build_lock<D: Dialer>(
    setup: &ClientSetup,
    dialer: impl Fn(Host) -> D,
    ctx: LockContext,
) -> Result<Box<dyn Lock>, UnknownRung> {
    if setup.targets.is_empty() {
        return Err(UnknownRung(format!("{} (no node to reach)", setup.rung)));
    }
    if locks::rung(&setup.rung).is_some_and(|r| r.service == "etcd") {
        let members = FailoverDialer::new(setup.targets.iter().map(|&h| dialer(h)).collect());
        return locks::etcd::rungs::build(&setup.rung, members, ctx, setup.lock)
            .ok_or_else(|| UnknownRung(setup.rung.clone()));
    }
    if locks::rung(&setup.rung).is_some_and(|r| r.service == "zookeeper") {
        // A ZooKeeper client keeps one session over one connection at a
        // time and moves along its server list by itself.
        let servers = setup.targets.iter().map(|&h| dialer(h)).collect();
        return locks::zookeeper::rungs::build(&setup.rung, servers, ctx, setup.lock)
            .ok_or_else(|| UnknownRung(setup.rung.clone()));
    }
    if (locks::database::rungs::RUNGS.iter()).any(|r| r.id == setup.rung) {
        // A database lock keeps one session, on the one server, or takes
        // one from its process's pool for each statement.
        return locks::database::rungs::build(
            &setup.rung,
            dialer(setup.targets[0]),
            setup.conn,
            setup.pool.clone(),
            ctx,
            setup.lock,
        )
        .ok_or_else(|| UnknownRung(setup.rung.clone()));
    }
    let conns = (setup.targets.iter())
        .map(|&host| ReconnectingConnection::new(dialer(host), setup.conn))
        .collect();
    locks::build(&setup.rung, conns, ctx, setup.lock)
}

/// A client's token seed: distinct per run seed, client and incarnation
/// (real mode seeds its clients the same way).
pub fn client_seed(seed: u64, client: usize, incarnation: u32) -> u64 {
    let mut x = seed ^ ((client as u64) << 32) ^ (incarnation as u64).rotate_left(17);
    // splitmix64 finaliser: nearby inputs give unrelated seeds.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
