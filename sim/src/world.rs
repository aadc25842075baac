//! The simulated world of one run: turmoil's network with the lock
//! service's nodes ([`crate::service`]), the store and the clients'
//! machines ([`crate::machines`]), built from a scenario for one rung and
//! one seed.
//!
//! Everything random comes from the seed: turmoil's own RNG (message order,
//! latency jitter), each client's token source, and nothing else.

use crate::client_clock::EPOCH_MS;
use crate::client_host::{self, ClientSetup, SimClientState};
use crate::dial::{PortBudget, SimDialer};
use crate::directory::Directory;
use crate::freeze::Freeze;
use crate::hook::AimedFault;
use crate::killed_servers::KilledServers;
use crate::machines::{CLIENTS_MACHINE, Machines, SERVERS_MACHINE};
use crate::mailbox::Mailbox;
use crate::nemesis::Nemesis;
use crate::recorder::Recorder;
use crate::run::{RunError, TICK, store_requests};
use crate::service::{self, GroundTruth, LockService, SimDeployment, Software};
use crate::store_host::StoreHost;
use locks::database::pool::SessionPool;
use locks::{ConnConfig, LockConfig, ReconnectingConnection, WaitStrategy};
use model::cut_short::CutShort;
use model::history::EventKind;
use model::host::Host;
use model::resource::STOCK_KEY;
use model::scenario::{Scenario, Topology};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

/// What every host of a run shares with the driver.
#[derive(Debug, Default)]
pub struct Shared {
    /// Where every event goes.
    pub recorder: Arc<Recorder>,
    /// Faults that hosts ask the driver to carry out.
    pub mailbox: Mailbox,
    /// Where aliases such as `master` point, and where each host listens.
    pub directory: Arc<Directory>,
    /// Every client's wake-ups while waiting for a taken lock.
    pub wakeups: Arc<locks::Wakeups>,
}

impl Shared {
    /// What the hosts on `machines` share, before anything happened.
    pub fn on(machines: Machines) -> Self {
        Shared {
            directory: Arc::new(Directory::with_machines(machines)),
            ..Shared::default()
        }
    }
}

/// Puts each server's software on its machine: one of its own, in host
/// order, or, after those, the one the others share
/// ([`SERVERS_MACHINE`]), where each runs as a task of its own.
fn place_servers(
    sim: &mut turmoil::Sim<'static>,
    machines: &Machines,
    servers: Vec<(Host, Software)>,
    killed: &KilledServers,
) {
    let mut together = Vec::new();
    for (host, software) in servers {
        if machines.shares(host) {
            together.push(software);
        } else {
            sim.host(machines.name(host), killed.wrap(host, software));
        }
    }
    if !together.is_empty() {
        sim.host(SERVERS_MACHINE, move || run_together(&together));
    }
}

/// One run of every software in `all`, each a task of its own, until they
/// have all ended.
fn run_together(all: &[Software]) -> futures::future::LocalBoxFuture<'static, turmoil::Result> {
    let started: Vec<_> = all.iter().map(|software| software()).collect();
    Box::pin(async move {
        let tasks: Vec<_> = started.into_iter().map(tokio::task::spawn_local).collect();
        for task in tasks {
            task.await??;
        }
        Ok(())
    })
}

/// The world of one run and the driver's view of it.
pub struct World<'s> {
    /// The scenario it was built from.
    pub(crate) scenario: &'s Scenario,
    /// The rung's deployment in that scenario.
    pub(crate) topology: Topology,
    /// turmoil's simulation.
    pub(crate) sim: turmoil::Sim<'static>,
    /// What the hosts share.
    pub(crate) shared: Arc<Shared>,
    /// The service the rung's locks run on.
    service: &'static dyn LockService,
    /// The service's nodes.
    pub(crate) nodes: Box<dyn SimDeployment>,
    /// The node that holds the guarded resource.
    store: StoreHost,
    /// Every client, by index.
    pub(crate) clients: Vec<Arc<SimClientState>>,
    /// Which machine each host runs on (the directory keeps a copy, to
    /// tell dialers where servers listen).
    pub(crate) machines: Machines,
    /// What the rung's faults do, and when.
    pub(crate) nemesis: Nemesis,
    /// When the workload starts (the store is stocked): the origin of every
    /// time in the scenario file (`at_ms`, `start_ms`, `duration_ms`).
    pub(crate) origin: Duration,
}

/// The deployment `rung` runs on in `scenario`, its server named: the
/// scenario's, else the oldest server the rung works on.
pub fn deployment_of(scenario: &Scenario, rung: &str) -> Topology {
    let mut topology = scenario.topology_of(rung).clone();
    if topology.server.is_none() {
        topology.server =
            Some(locks::registration(rung).map_or_else(Default::default, |r| r.rung.server));
    }
    topology
}

impl<'s> World<'s> {
    /// Builds the world of `rung` in `scenario` with `seed`: nodes and
    /// store up and stocked, client hosts registered, timed faults on the
    /// agenda.
    pub fn build(scenario: &'s Scenario, rung: &str, seed: u64) -> Result<World<'s>, RunError> {
        let topology = deployment_of(scenario, rung);
        let service = service::lock_service(rung, &topology)?;
        let latency = Duration::from_millis(scenario.network.latency_ms);
        let trip_ms = scenario.network.latency_ms + scenario.network.jitter_ms;
        let mut sim = turmoil::Builder::new()
            .rng_seed(seed)
            .epoch(UNIX_EPOCH + Duration::from_millis(EPOCH_MS))
            .tick_duration(TICK)
            .min_message_latency(latency)
            .max_message_latency(latency + Duration::from_millis(scenario.network.jitter_ms))
            .simulation_duration(
                Duration::from_millis(scenario.duration_ms) + store_requests(trip_ms).1 * 2,
            )
            // turmoil's default (64) bounds both a listener's queue of
            // connections not yet accepted and a stream's queue of
            // segments: 65 clients dialing one node at start overflow the
            // first, and turmoil panics. A scenario has at most 256
            // clients, each dialing the store and every node once (again
            // after a restart), so 1024 leaves room. The larger stream
            // queue only matters to a stream that had 64 segments waiting
            // to be read; no scenario here has one, and their histories
            // are byte for byte what they were with the default.
            .tcp_capacity(1024)
            .build();
        let machines = Machines::plan(
            scenario.faults_of(rung),
            scenario.client_count(),
            &service.node_hosts(&topology),
            service.nodes_talk(&topology),
        );
        let shared = Arc::new(Shared::on(machines.clone()));
        let watched = vec![scenario.lock.key.clone()];
        let ground_truth = GroundTruth::new(shared.recorder.clone(), watched);
        let (nodes, mut servers) = service.start_sim(seed, &topology, &machines, ground_truth);
        let (store, store_software) = StoreHost::new(&machines);
        servers.push((Host::Store, store_software));
        place_servers(&mut sim, &machines, servers, shared.directory.killed());
        for (name, host) in service.aliases(&topology) {
            shared.directory.point(name, host);
        }
        let nemesis = Nemesis::new(scenario.faults_of(rung).to_vec(), topology.clone(), latency);
        let mut world = World {
            scenario,
            topology,
            sim,
            shared,
            service,
            nodes,
            store,
            clients: Vec::new(),
            machines,
            nemesis,
            origin: Duration::ZERO,
        };
        world.stock_the_store(scenario.resource_of(rung).stock)?;
        world.origin = world.now();
        world.add_clients(rung, seed)?;
        world.nemesis.schedule_timed_faults(world.origin);
        Ok(world)
    }

    /// Registers every client: on a machine of its own, or as a process on
    /// the machine the others share ([`Machines`]).
    fn add_clients(&mut self, rung: &str, seed: u64) -> Result<(), RunError> {
        let sharing = self.machines.shared_clients().count() as u32;
        let shared_ports = Arc::new(PortBudget::for_clients(sharing));
        let mut on_shared = Vec::new();
        let mut pools = Pools::default();
        for i in 0..self.scenario.client_count() {
            let targets = self.service.lock_targets(&self.topology, i);
            let mut setup = client_setup(self.scenario, rung, seed, i, targets)?;
            let shares = self.machines.shares(Host::Client(i));
            let ports = if shares {
                shared_ports.clone()
            } else {
                Arc::default()
            };
            let state = Arc::new(client_host::new_state(i, ports));
            // A pooled group's callers never crash or restart (no fault
            // may name them), so one pool serves the whole run. Its
            // connections go out through the first caller's machine: the
            // shared one, as no fault sets the group's clients apart.
            setup.pool = pools.pool_for(self.scenario, rung, i, |connections| {
                let dialer = SimDialer::new(
                    setup.targets[0],
                    self.shared.directory.clone(),
                    state.machine.freeze.clone(),
                )
                .with_links(state.machine.links.clone())
                .with_ports(state.machine.ports.clone());
                let service = locks::rung(rung).map_or("", |r| r.service);
                locks::database::rungs::pool(service, dialer, setup.conn, connections)
            });
            if shares {
                on_shared.push((state.clone(), setup));
            } else {
                client_host::spawn(&mut self.sim, state.clone(), setup, self.shared.clone());
            }
            self.clients.push(state);
        }
        if !on_shared.is_empty() {
            let shared = self.shared.clone();
            client_host::spawn_shared(&mut self.sim, CLIENTS_MACHINE, on_shared, shared);
        }
        Ok(())
    }

    /// turmoil's simulation, to add a host of one's own before the run
    /// ([`crate::run::run_world`]): how a test makes a node face what no
    /// scenario can say, such as a client sending it an endless script.
    pub fn sim(&mut self) -> &mut turmoil::Sim<'static> {
        &mut self.sim
    }

    /// Where the server `host` listens: its machine and port
    /// ([`crate::machines`]), for a host a test adds through [`World::sim`].
    pub fn address(&self, host: Host) -> (String, u16) {
        self.shared.directory.address(host)
    }

    /// Why the run must stop now, if a node cut it short (the service's
    /// nodes in host order, then the store).
    pub(crate) fn cut_short(&self) -> Option<CutShort> {
        let store = || (self.store.aborted_a_script()).map(|limit| (Host::Store, limit));
        (self.nodes.aborted_a_script())
            .or_else(store)
            .map(|(node, instruction_limit)| CutShort::ScriptAborted {
                node,
                instruction_limit,
                at_us: self.now_us(),
            })
    }

    /// True simulated time.
    pub(crate) fn now(&self) -> Duration {
        self.sim.elapsed()
    }

    /// True simulated time, µs.
    pub(crate) fn now_us(&self) -> u64 {
        self.now().as_micros() as u64
    }

    /// Whether every client has finished or crashed for good.
    pub(crate) fn all_finished(&self) -> bool {
        self.clients.iter().all(|c| client_host::done(c))
    }

    /// Puts the initial stock on the store before any client starts.
    fn stock_the_store(&mut self, stock: i64) -> Result<(), RunError> {
        let (conn_config, limit) = self.store_requests();
        let done = Arc::new(AtomicBool::new(false));
        let done2 = done.clone();
        let directory = self.shared.directory.clone();
        self.sim.client("stocker", async move {
            let mut conn = ReconnectingConnection::new(
                SimDialer::new(Host::Store, directory, Arc::new(Freeze::new())),
                conn_config,
            );
            let _: () = redis::cmd("SET")
                .arg(STOCK_KEY)
                .arg(stock)
                .query_async(&mut conn)
                .await?;
            done2.store(true, Ordering::SeqCst);
            Ok(())
        });
        self.step_until(&done, limit)?;
        if done.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(RunError::Simulation(
                "the store did not take the initial stock".into(),
            ))
        }
    }

    /// Steps until `done` is set, for at most `limit` of simulated time.
    fn step_until(&mut self, done: &AtomicBool, limit: Duration) -> Result<(), RunError> {
        let max_steps = limit.as_micros() / TICK.as_micros();
        for _ in 0..max_steps {
            if done.load(Ordering::SeqCst) {
                break;
            }
            self.sim
                .step()
                .map_err(|e| RunError::Simulation(e.to_string()))?;
        }
        Ok(())
    }

    /// Reads the resource's final state with a fresh client and records it.
    pub(crate) fn audit(&mut self) -> Result<(), RunError> {
        let (conn_config, limit) = self.store_requests();
        let recorder = self.shared.recorder.clone();
        let directory = self.shared.directory.clone();
        let done = Arc::new(AtomicBool::new(false));
        let done2 = done.clone();
        self.sim.client("auditor", async move {
            let freeze = Arc::new(Freeze::new());
            let conn = ReconnectingConnection::new(
                SimDialer::new(Host::Store, directory, freeze),
                conn_config,
            );
            let mut conn2 = conn.clone();
            // Bounded: the store is never faulted by the audit itself.
            for _attempt in 0..5 {
                let value: Result<Option<i64>, _> = redis::cmd("GET")
                    .arg(STOCK_KEY)
                    .query_async(&mut conn2)
                    .await;
                if let Ok(value) = value {
                    recorder.record(EventKind::Final {
                        value: value.unwrap_or(0),
                    });
                    break;
                }
            }
            done2.store(true, Ordering::SeqCst);
            Ok(())
        });
        self.step_until(&done, limit)
    }

    /// [`store_requests`] on this world's network.
    fn store_requests(&self) -> (ConnConfig, Duration) {
        let network = &self.scenario.network;
        store_requests(network.latency_ms + network.jitter_ms)
    }
}

/// What client `i`'s process is built from, for `rung` in `scenario`
/// (real mode builds its clients from the same setup).
pub fn client_setup(
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    i: usize,
    targets: Vec<Host>,
) -> Result<ClientSetup, RunError> {
    let group = scenario
        .group_of(i)
        .cloned()
        .ok_or_else(|| RunError::BadInput(format!("client {i} has no group")))?;
    let aimed = AimedFault::at_client(scenario.faults_of(rung), i);
    let lock = &scenario.lock;
    Ok(ClientSetup {
        rung: rung.to_string(),
        seed,
        group,
        key: lock.key.clone(),
        targets,
        resource: scenario.resource_of(rung).kind,
        aimed,
        pool: None,
        conn: ConnConfig {
            connect_timeout: Duration::from_millis(lock.response_timeout_ms),
            response_timeout: Duration::from_millis(lock.response_timeout_ms),
        },
        lock: LockConfig {
            ttl: Duration::from_millis(lock.ttl_ms),
            max_wait: Duration::from_millis(lock.max_wait_ms),
            wait: WaitStrategy::Fixed {
                interval: Duration::from_millis(lock.retry_ms),
            },
            node_timeout: Duration::from_millis(lock.node_timeout_ms),
        },
    })
}

/// The connection pools of a run's pooled processes, one per client
/// group with `pool_connections`, made as the group's first client is
/// set up and shared by the rest. Only a pooled rung
/// ([`locks::database::rungs::is_pooled`]) uses one.
#[derive(Default)]
pub struct Pools(BTreeMap<usize, Arc<SessionPool>>);

impl Pools {
    /// The pool client `i` shares with its group for `rung` in
    /// `scenario`, made by `make(connections)` if it is the group's first;
    /// `None` when the rung or the group is not pooled.
    pub fn pool_for(
        &mut self,
        scenario: &Scenario,
        rung: &str,
        i: usize,
        make: impl FnOnce(u32) -> SessionPool,
    ) -> Option<Arc<SessionPool>> {
        if !locks::database::rungs::is_pooled(rung) {
            return None;
        }
        let group = scenario.group_index_of(i)?;
        let connections = scenario.clients[group].pool_connections?;
        let pool = self
            .0
            .entry(group)
            .or_insert_with(|| Arc::new(make(connections)));
        Some(pool.clone())
    }
}
