//! Running one rung in one scenario on real servers: start the servers
//! and the proxy, stock the store, start every client on its own thread,
//! fire the faults from the agenda and the clients' fault points in real
//! time, read the stock back, stop everything, and hand back the history.
//!
//! The driver mirrors the simulator's (`sim::run`, `sim::nemesis`): the
//! same agenda of timed actions, the same mailbox for faults reached at
//! fault points, the same counting of link faults, the same history
//! events. Times in the scenario count from the moment the workload
//! starts, which is also the history's zero.
//!
//! Everything started here is stopped on every way out, errors and
//! panics included ([`RealWorld`]'s drop): client threads are killed and
//! joined, the proxy's runtime is shut down, the servers are killed by
//! pid and their data directories removed.

use crate::client::{ProcessHandle, RealClientState, RealDialer};
use crate::clock::{RealClock, machine_wall_ms};
use crate::hook::RealHook;
use crate::links::LinkTable;
use crate::node_clock::NodeClocks;
use crate::nodes::{Nodes, ServerBin, command, parse_int_reply};
use crate::proxy::Proxy;
use crate::service::{RealDeployment, RealStart, real_service};
use crate::stage;
use locks::database::pool::SessionPool;
use locks::{LockContext, Owner, ReconnectingConnection, Wakeups};
use model::history::{EventKind, History};
use model::host::Host;
use model::resource::{ResourceKind, STOCK_KEY};
use model::scenario::Persistence;
use model::scenario::{Scenario, Topology};
use sim::client_host::{ClientSetup, build_lock, client_seed};
use sim::directory::Directory;
use sim::mailbox::Mailbox;
use sim::nemesis::{self, Nemesis};
use sim::recorder::Recorder;
use sim::resource::Store;
use sim::run::{RunError, panic_text};
use sim::service::{LockService, lock_service};
use sim::workload::Client;
use sim::world::{Pools, client_setup};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The driver's step: how often it looks at the agenda and the mailbox.
const STEP: Duration = Duration::from_millis(1);

/// How long the driver waits for client threads to wind down at the end.
const JOIN_TIMEOUT_MS: u64 = 5_000;

/// What a real run produced.
#[derive(Debug, Clone)]
pub enum RealOutcome {
    /// The run took place; its history, in time order.
    Ran {
        /// The history.
        history: History,
        /// Wall time the workload took.
        elapsed: Duration,
    },
    /// The scenario asks for something real mode cannot stage: each part,
    /// named ([`stage::refusals`]).
    NotStageable(Vec<String>),
}

/// Runs `rung` in `scenario` on real servers of binary `bin`; `seed`
/// seeds the clients' tokens as in the simulator (a real run does not
/// repeat byte for byte).
pub fn run_real(
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    bin: &ServerBin,
) -> Result<RealOutcome, RunError> {
    if !scenario.rungs.iter().any(|r| r == rung) {
        return Err(RunError::BadInput(format!(
            "scenario {:?} does not name rung {rung:?}; it names {}",
            scenario.name,
            scenario.rungs.join(", ")
        )));
    }
    if locks::rung(rung).is_none() {
        return Err(RunError::BadInput(format!(
            "rung {rung:?} is neither built in nor registered from a rung file"
        )));
    }
    let refused = stage::refusals(scenario, rung, bin)?;
    if !refused.is_empty() {
        return Ok(RealOutcome::NotStageable(refused));
    }
    let mut world = RealWorld::build(scenario, rung, seed, bin)?;
    world.drive()?;
    let panics = world.stop_clients();
    if !panics.is_empty() {
        return Err(RunError::BadInput(format!(
            "the lock of rung {rung:?} panicked on a client's thread, so the run has no \
             verdict: {}",
            panics.join("; ")
        )));
    }
    world.audit()?;
    let elapsed = world.origin.elapsed();
    Ok(RealOutcome::Ran {
        history: world.recorder.history(),
        elapsed,
    })
}

/// One client: what survives its restarts, and its current process.
pub(crate) struct RealClient {
    pub(crate) state: Arc<RealClientState>,
    setup: Arc<ClientSetup>,
    pub(crate) process: ProcessHandle,
    thread: Option<JoinHandle<()>>,
}

/// Everything a real run started, and the driver's view of it.
pub(crate) struct RealWorld<'s> {
    scenario: &'s Scenario,
    topology: Topology,
    seed: u64,
    // Declared in the order they must stop: clients first (their threads
    // hold connections through the proxy), then the proxy, then servers.
    pub(crate) clients: Vec<RealClient>,
    /// Where a pooled process's connections run, once one is needed:
    /// after the clients, as their locks hold the pool's sessions.
    pool_runtime: PoolRuntime,
    // Kept for its drop: the proxy stops after the clients, before the servers.
    _proxy: Proxy,
    service: &'static dyn LockService,
    pub(crate) deployment: Box<dyn RealDeployment>,
    pub(crate) store: Nodes,
    pub(crate) table: Arc<LinkTable>,
    pub(crate) directory: Arc<Directory>,
    pub(crate) recorder: Arc<Recorder>,
    /// Every client's wake-ups while waiting for a taken lock.
    wakeups: Arc<Wakeups>,
    mailbox: Arc<Mailbox>,
    pub(crate) nemesis: Nemesis,
    pub(crate) node_clocks: NodeClocks,
    pub(crate) origin: Instant,
}

/// A distinct name for each run's data directories in this process.
fn run_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst).to_string()
}

pub(crate) fn harness_error(e: impl std::fmt::Display) -> RunError {
    RunError::Simulation(format!("real mode: {e}"))
}

impl<'s> RealWorld<'s> {
    fn build(
        scenario: &'s Scenario,
        rung: &str,
        seed: u64,
        bin: &ServerBin,
    ) -> Result<RealWorld<'s>, RunError> {
        let topology = scenario.topology_of(rung).clone();
        let service = lock_service(rung, &topology)?;
        let run_id = run_id();
        let mut store_server =
            Nodes::new(&format!("{run_id}-store"), bin.clone()).map_err(harness_error)?;
        let proxy = Proxy::start().map_err(harness_error)?;
        let mut table = LinkTable::new();
        let client_count = scenario.client_count();
        // The store is never part of a fault's persistence story.
        let store = store_server
            .start(Host::Store, Persistence::None, &[])
            .map_err(harness_error)?;
        let base_latency = Duration::from_millis(scenario.network.latency_ms);
        let deployment = real_service(service)?
            .start_real(RealStart {
                topology: &topology,
                bin,
                run_id: &run_id,
                proxy: &proxy,
                table: &mut table,
                base_latency,
            })
            .map_err(harness_error)?;
        for i in 0..client_count {
            for node in deployment.hosts().into_iter().chain([Host::Store]) {
                let addr = deployment.addr(node).unwrap_or(store);
                let link = (proxy.open(&format!("{}|{node}", Host::Client(i)), addr))
                    .map_err(harness_error)?;
                table.insert(Host::Client(i), node, link);
                table.set_latency(Host::Client(i), node, base_latency);
            }
        }
        let stock = scenario.resource_of(rung).stock;
        command(store, &["SET", STOCK_KEY, &stock.to_string()]).map_err(harness_error)?;
        let directory = Arc::new(Directory::new());
        for (name, host) in service.aliases(&topology) {
            directory.point(name, host);
        }
        let origin = Instant::now();
        let origin_wall_ms = machine_wall_ms();
        let mut world = RealWorld {
            scenario,
            seed,
            clients: Vec::new(),
            _proxy: proxy,
            service,
            deployment,
            store: store_server,
            table: Arc::new(table),
            directory,
            recorder: Arc::new(Recorder::real_time(origin)),
            wakeups: Arc::new(Wakeups::default()),
            mailbox: Arc::new(Mailbox::new()),
            nemesis: Nemesis::new(
                scenario.faults_of(rung).to_vec(),
                topology.clone(),
                Duration::from_millis(scenario.network.latency_ms),
            ),
            node_clocks: NodeClocks::new(vec![scenario.lock.key.clone()]),
            origin,
            topology,
            pool_runtime: PoolRuntime::default(),
        };
        let mut pools = Pools::default();
        for i in 0..client_count {
            let targets = world.service.lock_targets(&world.topology, i);
            let mut setup = client_setup(scenario, rung, seed, i, targets)?;
            setup.pool = world.pool_for(&mut pools, rung, i, &setup)?;
            let clock = Arc::new(RealClock::new(origin, origin_wall_ms));
            let state = Arc::new(RealClientState::new(i, clock, ()));
            world.clients.push(RealClient {
                state,
                setup: Arc::new(setup),
                process: ProcessHandle::new(),
                thread: None,
            });
            world.start_process(i)?;
        }
        // Scenario times count from the history's zero, the origin.
        world.nemesis.schedule_timed_faults(Duration::ZERO);
        Ok(world)
    }

    /// The connection pool client `i` shares with its group, for a pooled
    /// rung in a pooled group ([`Pools`]). Its sessions open on a runtime
    /// of the world's, not on the client's own: each client runs on a
    /// thread and runtime of its own, which ends with it, while the
    /// sessions it opened are handed on to the others. They go out
    /// through the first caller's links, as no fault may set the group's
    /// callers apart.
    fn pool_for(
        &mut self,
        pools: &mut Pools,
        rung: &str,
        i: usize,
        setup: &ClientSetup,
    ) -> Result<Option<Arc<SessionPool>>, RunError> {
        let Some(runtime) = self.pool_runtime.get(rung, self.scenario)? else {
            return Ok(None);
        };
        let dialer = RealDialer::new(
            Host::Client(i),
            setup.targets[0],
            self.directory.clone(),
            self.table.clone(),
            Arc::new(AtomicBool::new(false)),
        );
        let service = locks::rung(rung).map_or("", |r| r.service);
        Ok(pools.pool_for(self.scenario, rung, i, |connections| {
            locks::database::rungs::pool(service, dialer, setup.conn, connections)
                .opening_on(runtime)
        }))
    }

    /// Starts a new incarnation of client `i`'s process on its own thread.
    pub(crate) fn start_process(&mut self, i: usize) -> Result<(), RunError> {
        let process = ProcessHandle::new();
        let client = &mut self.clients[i];
        let incarnation = client.state.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        let state = client.state.clone();
        let setup = client.setup.clone();
        let recorder = self.recorder.clone();
        let mailbox = self.mailbox.clone();
        let directory = self.directory.clone();
        let table = self.table.clone();
        let wakeups = self.wakeups.clone();
        let seed = self.seed;
        let handle = process.clone();
        let thread = std::thread::Builder::new()
            .name(format!("locklab-client-{i}"))
            .spawn(move || {
                run_process(
                    state,
                    setup,
                    handle,
                    incarnation,
                    seed,
                    recorder,
                    mailbox,
                    directory,
                    table,
                    wakeups,
                )
            })
            .map_err(harness_error)?;
        client.process = process;
        client.thread = Some(thread);
        Ok(())
    }

    pub(crate) fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn all_finished(&self) -> bool {
        self.clients.iter().all(|c| {
            c.process.finished.load(Ordering::SeqCst)
                || c.state.crashed_for_good.load(Ordering::SeqCst)
        })
    }

    /// Fires the faults in real time until the scenario's duration is
    /// over, or every client has finished and nothing is left to do.
    fn drive(&mut self) -> Result<(), RunError> {
        let end = Duration::from_millis(self.scenario.duration_ms);
        loop {
            if let Some(cause) = sim::interrupt::cause() {
                return Err(RunError::Interrupted(cause));
            }
            let now_us = self.now().as_micros() as u64;
            while let Some(action) = self.nemesis.pop_due(now_us) {
                nemesis::act(self, action).map_err(harness_error)?;
            }
            for request in self.mailbox.take() {
                nemesis::handle_request(self, request).map_err(harness_error)?;
            }
            self.node_clocks
                .tick(self.now(), &*self.deployment)
                .map_err(harness_error)?;
            if (self.all_finished() && self.nemesis.is_idle()) || self.now() >= end {
                return Ok(());
            }
            std::thread::sleep(STEP);
        }
    }

    /// Kills every client process and waits for its thread; returns what
    /// each thread that panicked (a lock's code can) said.
    fn stop_clients(&mut self) -> Vec<String> {
        for client in &self.clients {
            client.process.kill();
        }
        let deadline = Instant::now() + Duration::from_millis(JOIN_TIMEOUT_MS);
        let mut panics = Vec::new();
        for (i, client) in self.clients.iter_mut().enumerate() {
            if let Some(thread) = client.thread.take() {
                // A thread that panicked never marks itself ended.
                let done = |t: &JoinHandle<()>| {
                    client.process.ended.load(Ordering::SeqCst) || t.is_finished()
                };
                while !done(&thread) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                if done(&thread)
                    && let Err(payload) = thread.join()
                {
                    let what =
                        panic_text(payload.as_ref()).unwrap_or_else(|| "(no message)".to_string());
                    panics.push(format!("client {i}: {what}"));
                }
            }
        }
        panics
    }

    /// Reads the stock straight from the store (no proxy) and records it.
    fn audit(&mut self) -> Result<(), RunError> {
        let store = self
            .store
            .addr(Host::Store)
            .ok_or_else(|| harness_error("the store has no address"))?;
        let reply = command(store, &["GET", STOCK_KEY]).map_err(harness_error)?;
        self.recorder.record(EventKind::Wakeups {
            count: self.wakeups.total(),
        });
        self.recorder.record(EventKind::Final {
            value: parse_int_reply(&reply).unwrap_or(0),
        });
        Ok(())
    }
}

impl Drop for RealWorld<'_> {
    fn drop(&mut self) {
        // Errors and panics come here too: no client thread may outlive
        // the run. The proxy and the servers stop as their fields drop.
        let _ = self.stop_clients();
    }
}

/// The runtime a run's pooled processes open their connections on,
/// started when the first is needed and stopped without waiting for its
/// tasks (the connections close with it).
#[derive(Default)]
struct PoolRuntime(Option<tokio::runtime::Runtime>);

impl PoolRuntime {
    /// A handle on the runtime if `rung` in `scenario` pools its
    /// connections, starting it the first time.
    fn get(
        &mut self,
        rung: &str,
        scenario: &Scenario,
    ) -> Result<Option<tokio::runtime::Handle>, RunError> {
        let pooled = scenario
            .clients
            .iter()
            .any(|g| g.pool_connections.is_some());
        if !pooled || !locks::database::rungs::is_pooled(rung) {
            return Ok(None);
        }
        if self.0.is_none() {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("locklab-pool")
                .enable_all()
                .build()
                .map_err(harness_error)?;
            self.0 = Some(runtime);
        }
        Ok(self.0.as_ref().map(|r| r.handle().clone()))
    }
}

impl Drop for PoolRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// The body of one client process's thread: its own current-thread
/// runtime, whose every task poll waits while the process is paused.
#[allow(clippy::too_many_arguments)]
fn run_process(
    state: Arc<RealClientState>,
    setup: Arc<ClientSetup>,
    process: ProcessHandle,
    incarnation: u32,
    seed: u64,
    recorder: Arc<Recorder>,
    mailbox: Arc<Mailbox>,
    directory: Arc<Directory>,
    table: Arc<LinkTable>,
    wakeups: Arc<Wakeups>,
) {
    let gate = process.freeze.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_before_task_poll(move |_| gate.block())
        .build();
    let Ok(runtime) = runtime else {
        process.ended.store(true, Ordering::SeqCst);
        return;
    };
    let me = state.host();
    let dialer = |host: Host| {
        RealDialer::new(
            me,
            host,
            directory.clone(),
            table.clone(),
            process.dead.clone(),
        )
    };
    let hook = RealHook::new(
        state.clone(),
        process.clone(),
        setup.aimed.clone(),
        recorder.clone(),
        mailbox,
    );
    let ctx = LockContext::new(
        state.clock.clone(),
        client_seed(seed, state.index, incarnation),
    )
    .with_hook(Arc::new(hook))
    .with_wakeups(wakeups);
    // An etcd rung's channel starts its worker task as it is built.
    let entered = runtime.enter();
    let built = build_lock(&setup, dialer, ctx);
    drop(entered);
    if let Ok(lock) = built {
        let client = Client {
            group: setup.group.clone(),
            key: setup.key.clone(),
            lock,
            store: Store::new(
                ReconnectingConnection::new(dialer(Host::Store), setup.conn),
                setup.resource == ResourceKind::Fenced,
            ),
            owner: Owner::new(format!("{me}.{incarnation}"), 1),
            index: state.index,
            clock: state.clock.clone(),
            cycle: state.cycle.clone(),
            gate: None,
            recorder,
        };
        let finished = process.finished.clone();
        let stop = process.stop.clone();
        runtime.block_on(async move {
            let work = tokio::spawn(async move { client.run().await });
            tokio::select! {
                biased;
                _ = stop.notified() => {}
                done = work => {
                    if done.is_ok() {
                        finished.store(true, Ordering::SeqCst);
                    }
                }
            }
        });
    }
    // Dropping the runtime drops every task of the process and closes its
    // sockets, as the kernel does for a process that ends.
    drop(runtime);
    process.ended.store(true, Ordering::SeqCst);
}
