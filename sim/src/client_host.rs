//! One simulated client: the state it keeps across restarts of its process,
//! and the turmoil host that runs its workload.
//!
//! The driver, the client's fault hook and its workload all share one
//! [`ClientState`]: a restart of the host starts a new process (new
//! connections, a new owner id) with the same machine clock, the same
//! pause gate and the same place in the workload.

use crate::client_clock::SimClock;
use crate::dial::{PortBudget, SimDialer};
use crate::freeze::{Freeze, LinkHolds};
use crate::hook::{AimedFault, SimHook};
use crate::host::Host;
use crate::resource::{ResourceKind, Store};
use crate::scenario::ClientGroup;
use crate::workload::Client;
use crate::world::Shared;
use locks::{ConnConfig, FaultPoint, LockConfig, LockContext, Owner, ReconnectingConnection};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What a client keeps across restarts of its process.
#[derive(Debug)]
pub struct ClientState {
    /// The client's index.
    pub index: usize,
    /// Its pause gate.
    pub freeze: Arc<Freeze>,
    /// Its machine clock (skew, jumps and drift survive a restart).
    pub clock: Arc<SimClock>,
    /// The lock cycle it is in, from 1 (0 before the first).
    pub cycle: Arc<AtomicU32>,
    /// The scenario faults already fired at its fault points: a fault
    /// fires once per run, restarts included.
    pub fired: Mutex<BTreeSet<usize>>,
    /// How many times it has passed each fault point, by cycle (kept
    /// across restarts, like the cycle itself).
    pub passes: Mutex<BTreeMap<(u32, FaultPoint), u32>>,
    /// How many times its process has started.
    pub incarnation: AtomicU32,
    /// Whether its workload has finished.
    pub finished: AtomicBool,
    /// Whether it crashed and will not restart.
    pub crashed_for_good: AtomicBool,
    /// One-way holds on its links (a machine's network, so they outlive a
    /// restart of the process).
    pub links: Arc<LinkHolds>,
    /// Its machine's ephemeral ports lost to failed dials (turmoil keeps
    /// them taken across restarts of the process).
    pub ports: Arc<PortBudget>,
}

impl ClientState {
    /// A client that has not started yet.
    pub fn new(index: usize) -> Self {
        let freeze = Arc::new(Freeze::new());
        ClientState {
            index,
            clock: Arc::new(SimClock::new(freeze.clone())),
            freeze,
            cycle: Arc::new(AtomicU32::new(0)),
            fired: Mutex::new(BTreeSet::new()),
            passes: Mutex::new(BTreeMap::new()),
            incarnation: AtomicU32::new(0),
            finished: AtomicBool::new(false),
            crashed_for_good: AtomicBool::new(false),
            links: Arc::new(LinkHolds::default()),
            ports: Arc::new(PortBudget::default()),
        }
    }

    /// Counts one more pass of `point` in `cycle`; returns how many there
    /// have been.
    pub fn pass(&self, cycle: u32, point: FaultPoint) -> u32 {
        let mut passes = self.passes.lock().unwrap_or_else(|p| p.into_inner());
        let count = passes.entry((cycle, point)).or_insert(0);
        *count += 1;
        *count
    }

    /// Its host.
    pub fn host(&self) -> Host {
        Host::Client(self.index)
    }

    /// Whether the driver has nothing more to wait for from it.
    pub fn done(&self) -> bool {
        self.crashed_for_good.load(Ordering::SeqCst) || self.finished.load(Ordering::SeqCst)
    }
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
}

/// Registers the client's host with turmoil. The closure runs again at
/// every restart of the host: a new process, with new connections and a
/// new owner id, but the same machine clock and the same place in its
/// workload.
pub fn spawn(
    sim: &mut turmoil::Sim<'static>,
    state: Arc<ClientState>,
    setup: ClientSetup,
    shared: Arc<Shared>,
) {
    let host = state.host().to_string();
    sim.host(host, move || {
        let incarnation = state.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        state.freeze.thaw();
        let client = start_process(&state, &setup, &shared, incarnation);
        let state = state.clone();
        async move {
            let client = client?;
            client.run().await;
            state.finished.store(true, Ordering::SeqCst);
            Ok(())
        }
    });
}

/// Builds one incarnation of the client's process.
fn start_process(
    state: &Arc<ClientState>,
    setup: &ClientSetup,
    shared: &Arc<Shared>,
    incarnation: u32,
) -> Result<Client, Box<dyn std::error::Error>> {
    let i = state.index;
    let dial = |host: Host| {
        ReconnectingConnection::new(
            SimDialer::new(host, shared.directory.clone(), state.freeze.clone())
                .with_links(state.links.clone())
                .with_ports(state.ports.clone()),
            setup.conn,
        )
    };
    let conns: Vec<_> = setup.targets.iter().map(|&t| dial(t)).collect();
    let hook = SimHook::new(state.clone(), setup.aimed.clone(), shared.clone());
    let ctx = LockContext::new(state.clock.clone(), client_seed(setup.seed, i, incarnation))
        .with_hook(Arc::new(hook));
    let lock = locks::build(&setup.rung, conns, ctx, setup.lock)?;
    Ok(Client {
        group: setup.group.clone(),
        key: setup.key.clone(),
        lock,
        store: Store::new(dial(Host::Store), setup.resource == ResourceKind::Fenced),
        owner: Owner::new(format!("{}.{incarnation}", state.host()), 1),
        index: state.index,
        clock: state.clock.clone(),
        cycle: state.cycle.clone(),
        gate: Some(state.freeze.clone()),
        recorder: shared.recorder.clone(),
    })
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
