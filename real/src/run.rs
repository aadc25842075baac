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

use crate::client::{ClientState, ProcessHandle, RealDialer};
use crate::clock::{RealClock, machine_wall_ms};
use crate::hook::RealHook;
use crate::links::LinkTable;
use crate::node_clock::NodeClocks;
use crate::nodes::{Nodes, ServerBin, command, parse_int_reply};
use crate::proxy::Proxy;
use crate::stage;
use locks::{LockContext, Owner, ReconnectingConnection};
use sim::agenda::{Action, Agenda};
use sim::client_host::{ClientSetup, client_seed};
use sim::directory::Directory;
use sim::fault::{FaultSpec, crash_name};
use sim::history::{EventKind, FaultName, FaultTarget, History, Phase};
use sim::host::Host;
use sim::links::Links;
use sim::mailbox::{FaultRequest, Mailbox};
use sim::nemesis::sides;
use sim::recorder::Recorder;
use sim::resource::{ResourceKind, STOCK_KEY, Store};
use sim::run::RunError;
use sim::scenario::{Scenario, Topology, TopologyKind};
use sim::workload::Client;
use sim::world::{client_setup, lock_targets};
use simredis::{CrashKind, Persistence};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
    if locks::registration(rung).is_none() {
        return Err(RunError::BadInput(format!(
            "rung {rung:?} is neither built in nor registered from a rung file"
        )));
    }
    let mut refused = stage::refusals(scenario, rung);
    refused.extend(stage::server_refusals(rung, bin).map_err(harness_error)?);
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
struct RealClient {
    state: Arc<ClientState>,
    setup: Arc<ClientSetup>,
    process: ProcessHandle,
    thread: Option<JoinHandle<()>>,
}

/// Everything a real run started, and the driver's view of it.
struct RealWorld<'s> {
    scenario: &'s Scenario,
    topology: Topology,
    faults: Vec<FaultSpec>,
    seed: u64,
    // Declared in the order they must stop: clients first (their threads
    // hold connections through the proxy), then the proxy, then servers.
    clients: Vec<RealClient>,
    // Kept for its drop: the proxy stops after the clients, before the servers.
    _proxy: Proxy,
    nodes: Nodes,
    table: Arc<LinkTable>,
    links: Links,
    directory: Arc<Directory>,
    recorder: Arc<Recorder>,
    mailbox: Arc<Mailbox>,
    agenda: Agenda,
    powered_off: BTreeSet<Host>,
    node_clocks: NodeClocks,
    origin: Instant,
}

/// A distinct name for each run's data directories in this process.
fn run_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst).to_string()
}

fn harness_error(e: impl std::fmt::Display) -> RunError {
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
        let mut nodes = Nodes::new(&run_id(), bin.clone()).map_err(harness_error)?;
        let proxy = Proxy::start().map_err(harness_error)?;
        let mut table = LinkTable::new();
        let node_hosts = topology.nodes();
        let client_count = scenario.client_count();
        // The store is never part of a fault's persistence story.
        let store = nodes
            .start(Host::Store, Persistence::None, &[])
            .map_err(harness_error)?;
        let open = |table: &mut LinkTable, from: Host, to: Host, addr| {
            let link = proxy
                .open(&format!("{from}|{to}"), addr)
                .map_err(harness_error)?;
            table.insert(from, to, link);
            Ok::<_, RunError>(())
        };
        let first = node_hosts[0];
        let first_addr = nodes
            .start(first, topology.persistence, &[])
            .map_err(harness_error)?;
        for &host in &node_hosts[1..] {
            let extra = if topology.kind == TopologyKind::Replicated {
                // A replica reaches its master through the proxy, so that
                // the replication stream can be delayed and cut.
                open(&mut table, host, first, first_addr)?;
                let port = table.addr(host, first).map(|a| a.port()).unwrap_or(0);
                vec![
                    "--replicaof".to_string(),
                    "127.0.0.1".to_string(),
                    port.to_string(),
                ]
            } else {
                Vec::new()
            };
            nodes
                .start(host, topology.persistence, &extra)
                .map_err(harness_error)?;
        }
        if topology.kind == TopologyKind::Replicated {
            // Links between every other pair of nodes, for a promotion
            // that re-points the remaining replicas.
            for &from in &node_hosts[1..] {
                for &to in &node_hosts[1..] {
                    if from != to
                        && let Some(addr) = nodes.addr(to)
                    {
                        open(&mut table, from, to, addr)?;
                    }
                }
            }
            for &replica in &node_hosts[1..] {
                nodes.wait_synced(replica).map_err(harness_error)?;
            }
        }
        for i in 0..client_count {
            for &node in node_hosts.iter().chain([&Host::Store]) {
                let addr = if node == Host::Store {
                    store
                } else {
                    nodes.addr(node).unwrap_or(store)
                };
                open(&mut table, Host::Client(i), node, addr)?;
            }
        }
        table.set_all_latency(Duration::from_millis(scenario.network.latency_ms));
        if topology.kind == TopologyKind::Replicated && topology.replication_delay_ms > 0 {
            // The lag is time a write spends on its way to the replica.
            for &replica in &node_hosts[1..] {
                table.set_latency_from(
                    first,
                    replica,
                    Duration::from_millis(topology.replication_delay_ms),
                );
            }
        }
        let stock = scenario.resource_of(rung).stock;
        command(store, &["SET", STOCK_KEY, &stock.to_string()]).map_err(harness_error)?;
        let directory = Arc::new(Directory::new());
        if topology.kind == TopologyKind::Replicated {
            directory.point(Host::Master, first);
        }
        let origin = Instant::now();
        let origin_wall_ms = machine_wall_ms();
        let mut world = RealWorld {
            scenario,
            faults: scenario.faults_of(rung).to_vec(),
            seed,
            clients: Vec::new(),
            _proxy: proxy,
            nodes,
            table: Arc::new(table),
            links: Links::new(),
            directory,
            recorder: Arc::new(Recorder::real_time(origin)),
            mailbox: Arc::new(Mailbox::new()),
            agenda: Agenda::new(),
            powered_off: BTreeSet::new(),
            node_clocks: NodeClocks::new(vec![scenario.lock.key.clone()]),
            origin,
            topology,
        };
        let targets = lock_targets(&world.topology);
        for i in 0..client_count {
            let setup = client_setup(scenario, rung, seed, i, targets.clone())?;
            let state = Arc::new(ClientState::new(i, RealClock::new(origin, origin_wall_ms)));
            world.clients.push(RealClient {
                state,
                setup: Arc::new(setup),
                process: ProcessHandle::new(),
                thread: None,
            });
            world.start_process(i)?;
        }
        for (i, fault) in world.faults.iter().enumerate() {
            if let (Some(at_ms), None) = fault.when() {
                world
                    .agenda
                    .schedule(Duration::from_millis(at_ms), Action::Start(i));
            }
        }
        Ok(world)
    }

    /// Starts a new incarnation of client `i`'s process on its own thread.
    fn start_process(&mut self, i: usize) -> Result<(), RunError> {
        let process = ProcessHandle::new();
        let client = &mut self.clients[i];
        let incarnation = client.state.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        let state = client.state.clone();
        let setup = client.setup.clone();
        let recorder = self.recorder.clone();
        let mailbox = self.mailbox.clone();
        let directory = self.directory.clone();
        let table = self.table.clone();
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
                )
            })
            .map_err(harness_error)?;
        client.process = process;
        client.thread = Some(thread);
        Ok(())
    }

    fn now(&self) -> Duration {
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
            while let Some(action) = self.agenda.pop_due(now_us) {
                self.act(action)?;
            }
            for request in self.mailbox.take() {
                self.handle_request(request)?;
            }
            self.node_clocks
                .tick(self.now(), &self.nodes)
                .map_err(harness_error)?;
            if (self.all_finished() && self.agenda.is_empty()) || self.now() >= end {
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
                    panics.push(format!("client {i}: {}", panic_text(payload.as_ref())));
                }
            }
        }
        panics
    }

    /// Reads the stock straight from the store (no proxy) and records it.
    fn audit(&mut self) -> Result<(), RunError> {
        let store = self
            .nodes
            .addr(Host::Store)
            .ok_or_else(|| harness_error("the store has no address"))?;
        let reply = command(store, &["GET", STOCK_KEY]).map_err(harness_error)?;
        self.recorder.record(EventKind::Final {
            value: parse_int_reply(&reply).unwrap_or(0),
        });
        Ok(())
    }

    fn record(&self, fault: FaultName, target: FaultTarget, phase: Phase, detail: &str) {
        sim::nemesis::record(
            &self.recorder,
            self.recorder.now_us(),
            fault,
            target,
            phase,
            detail.to_string(),
        );
    }

    fn schedule_in(&mut self, after_ms: u64, action: Action) {
        let at = self.now() + Duration::from_millis(after_ms);
        self.agenda.schedule(at, action);
    }

    fn client_index(&self, host: Host) -> Option<usize> {
        host.client().filter(|&c| c < self.clients.len())
    }

    fn host_exists(&self, host: Host) -> bool {
        match host {
            Host::Client(c) => c < self.clients.len(),
            Host::Node(_) | Host::Store => self.nodes.has(host),
            Host::Master => false,
        }
    }

    fn all_hosts(&self) -> Vec<Host> {
        let mut hosts: Vec<Host> = (0..self.clients.len()).map(Host::Client).collect();
        hosts.extend(self.nodes.hosts());
        hosts.push(Host::Store);
        hosts
    }

    /// Host pairs between two sides, aliases resolved; hosts this run
    /// lacks are left out.
    fn host_pairs(&self, a: &[Host], b: &[Host]) -> Vec<(Host, Host)> {
        let mut out = Vec::new();
        for &x in a {
            for &y in b {
                let (x, y) = (self.directory.resolve(x), self.directory.resolve(y));
                if self.host_exists(x) && self.host_exists(y) && x != y {
                    out.push((x, y));
                }
            }
        }
        out
    }

    fn handle_request(&mut self, request: FaultRequest) -> Result<(), RunError> {
        let spec = self.faults[request.fault].clone();
        match (&spec, request.started_us) {
            (FaultSpec::Pause { duration_ms, .. }, Some(_)) => {
                if let Some(target) = spec.target_host() {
                    self.schedule_in(*duration_ms, Action::EndPause(target));
                }
                Ok(())
            }
            _ => self.apply(request.fault),
        }
    }

    fn act(&mut self, action: Action) -> Result<(), RunError> {
        match action {
            Action::Start(i) => self.apply(i)?,
            Action::EndPause(target) => {
                self.record(FaultName::Pause, FaultTarget::Host(target), Phase::End, "");
            }
            Action::Heal(i) => {
                if let FaultSpec::Partition { a, b, oneway, .. } = self.faults[i].clone() {
                    for (x, y) in self.host_pairs(&a, &b) {
                        let calls = self.links.heal(x, y, oneway);
                        self.table.make(&calls);
                    }
                    self.record(FaultName::Partition, sides(&a, &b), Phase::End, "");
                }
            }
            Action::Release(i) => {
                if let FaultSpec::Delay { a, b, oneway, .. } = self.faults[i].clone() {
                    for (x, y) in self.host_pairs(&a, &b) {
                        if oneway {
                            self.table.set_held(x, y, false);
                        } else {
                            let calls = self.links.release(x, y);
                            self.table.make(&calls);
                        }
                    }
                    self.record(FaultName::Delay, sides(&a, &b), Phase::End, "");
                }
            }
            Action::Unslow(i) => {
                if let FaultSpec::SlowLink { a, b, .. } = self.faults[i].clone() {
                    let base = Duration::from_millis(self.scenario.network.latency_ms);
                    for (x, y) in self.host_pairs(&a, &b) {
                        self.table.set_latency(x, y, base);
                    }
                    self.record(FaultName::SlowLink, sides(&a, &b), Phase::End, "");
                }
            }
            Action::Restart(host) => self.restart(host)?,
            Action::Promote => self.promote()?,
        }
        Ok(())
    }

    /// Applies scenario fault `i` now.
    fn apply(&mut self, i: usize) -> Result<(), RunError> {
        let spec = self.faults[i].clone();
        let target = spec.target_host().map(|t| self.directory.resolve(t));
        match &spec {
            FaultSpec::Pause { duration_ms, .. } => {
                let Some(c) = target.and_then(|t| self.client_index(t)) else {
                    return Ok(());
                };
                self.clients[c]
                    .process
                    .pause(Duration::from_millis(*duration_ms));
                let host = Host::Client(c);
                self.record(
                    FaultName::Pause,
                    FaultTarget::Host(host),
                    Phase::Start,
                    &format!("{duration_ms} ms"),
                );
                self.schedule_in(*duration_ms, Action::EndPause(host));
            }
            FaultSpec::Crash {
                how,
                restart_after_ms,
                ..
            } => {
                if let Some(target) = target {
                    self.crash(target, *how, *restart_after_ms);
                }
            }
            FaultSpec::Partition {
                a,
                b,
                oneway,
                duration_ms,
                ..
            } => {
                for (x, y) in self.host_pairs(a, b) {
                    let calls = self.links.partition(x, y, *oneway);
                    self.table.make(&calls);
                }
                let detail = if *oneway { "one-way" } else { "two-way" };
                self.record(FaultName::Partition, sides(a, b), Phase::Start, detail);
                if let Some(d) = duration_ms {
                    self.schedule_in(*d, Action::Heal(i));
                }
            }
            FaultSpec::Delay {
                a,
                b,
                duration_ms,
                oneway,
                ..
            } => {
                for (x, y) in self.host_pairs(a, b) {
                    if *oneway {
                        self.table.set_held(x, y, true);
                    } else {
                        let calls = self.links.hold(x, y);
                        self.table.make(&calls);
                    }
                }
                let way = if *oneway { " one-way" } else { "" };
                let detail = format!("{duration_ms} ms{way}");
                self.record(FaultName::Delay, sides(a, b), Phase::Start, &detail);
                self.schedule_in(*duration_ms, Action::Release(i));
            }
            FaultSpec::SlowLink {
                a,
                b,
                latency_ms,
                duration_ms,
                ..
            } => {
                for (x, y) in self.host_pairs(a, b) {
                    self.table
                        .set_latency(x, y, Duration::from_millis(*latency_ms));
                }
                let detail = format!("{latency_ms} ms");
                self.record(FaultName::SlowLink, sides(a, b), Phase::Start, &detail);
                if let Some(d) = duration_ms {
                    self.schedule_in(*d, Action::Unslow(i));
                }
            }
            FaultSpec::ClockJump { jump_ms, .. } => self.change_clock(
                target,
                FaultName::ClockJump,
                &format!("{jump_ms:+} ms"),
                |clock| clock.jump(*jump_ms),
                |clocks, node, now, nodes| clocks.jump(node, *jump_ms, now, nodes),
            )?,
            FaultSpec::ClockDrift { ppm, .. } => self.change_clock(
                target,
                FaultName::ClockDrift,
                &format!("{ppm:+} ppm"),
                |clock| clock.set_drift(*ppm),
                |clocks, node, now, nodes| clocks.set_drift(node, *ppm, now, nodes),
            )?,
            FaultSpec::Failover {
                promote_after_ms, ..
            } => self.fail_over(*promote_after_ms),
        }
        Ok(())
    }

    /// Changes the clock of a client (`on_client`) or a node (`on_node`:
    /// its deadlines shifted, see [`crate::node_clock`]; nodes with
    /// replicas were refused before the run) and records the instant, as
    /// the simulator does; a host this run lacks (the store's clock is
    /// not modelled) is left alone.
    fn change_clock(
        &mut self,
        target: Option<Host>,
        fault: FaultName,
        detail: &str,
        on_client: impl FnOnce(&RealClock),
        on_node: impl FnOnce(&mut NodeClocks, Host, Duration, &Nodes) -> Result<(), String>,
    ) -> Result<(), RunError> {
        let Some(target) = target else {
            return Ok(());
        };
        if let Some(c) = self.client_index(target) {
            on_client(&self.clients[c].state.clock);
        } else if target.is_node() && self.nodes.has(target) {
            let now = self.now();
            on_node(&mut self.node_clocks, target, now, &self.nodes).map_err(harness_error)?;
        } else {
            return Ok(());
        }
        self.record(fault, FaultTarget::Host(target), Phase::Instant, detail);
        Ok(())
    }

    /// Crashes a host; it restarts after `restart_after_ms` if given.
    fn crash(&mut self, target: Host, how: CrashKind, restart_after_ms: Option<u64>) {
        let phase = if restart_after_ms.is_some() {
            Phase::Start
        } else {
            Phase::Instant
        };
        if let Some(c) = self.client_index(target) {
            if !self.clients[c].process.running() {
                return;
            }
            self.record(
                FaultName::Crash,
                FaultTarget::Host(target),
                phase,
                crash_name(how),
            );
            self.clients[c].process.kill();
            if restart_after_ms.is_none() {
                self.clients[c]
                    .state
                    .crashed_for_good
                    .store(true, Ordering::SeqCst);
            }
        } else {
            if !self.nodes.running(target) {
                return;
            }
            self.record(
                FaultName::Crash,
                FaultTarget::Host(target),
                phase,
                crash_name(how),
            );
            if how == CrashKind::PowerLoss {
                // No FIN or RST reaches a peer of a machine that lost
                // power: cut it off before its process dies.
                self.powered_off.insert(target);
                for other in self.all_hosts() {
                    if other != target {
                        let calls = self.links.partition(target, other, false);
                        self.table.make(&calls);
                    }
                }
            }
            self.nodes.kill(target);
        }
        if let Some(after) = restart_after_ms {
            self.schedule_in(after, Action::Restart(target));
        }
    }

    /// Restarts a crashed host.
    fn restart(&mut self, host: Host) -> Result<(), RunError> {
        if let Some(c) = self.client_index(host) {
            let process = &self.clients[c].process;
            if !process.killed.load(Ordering::SeqCst) {
                return Ok(());
            }
            self.start_process(c)?;
        } else {
            if self.nodes.running(host) {
                return Ok(());
            }
            self.nodes.restart(host).map_err(harness_error)?;
            // The keys it reloads expire by its moved clock, if it has one.
            let now = self.now();
            (self.node_clocks)
                .sync(host, now, &self.nodes)
                .map_err(harness_error)?;
            let powered_off = self.powered_off.remove(&host);
            for other in self.all_hosts() {
                if other != host {
                    let calls = if powered_off {
                        self.links.heal(host, other, false)
                    } else {
                        self.links.repair_all(host, other)
                    };
                    self.table.make(&calls);
                }
            }
        }
        self.record(
            FaultName::Crash,
            FaultTarget::Host(host),
            Phase::End,
            "restarted",
        );
        Ok(())
    }

    /// Kills the master and schedules the promotion of its first replica.
    fn fail_over(&mut self, promote_after_ms: u64) {
        let first = Host::Node(0);
        if self.topology.kind != TopologyKind::Replicated || self.topology.replicas == 0 {
            self.record(
                FaultName::Failover,
                FaultTarget::Host(first),
                Phase::Instant,
                "no replica: master lost",
            );
            self.nodes.kill(first);
            return;
        }
        let master = self.directory.resolve(Host::Master);
        self.record(
            FaultName::Failover,
            FaultTarget::Host(master),
            Phase::Start,
            &format!("promote after {promote_after_ms} ms"),
        );
        // Writes still waiting in the old master's replication buffer die
        // with it (docs/ladder.md, `failover`): its replication links are
        // cut first, so what the proxy still delays on them is lost in
        // flight instead of reaching the replica after the kill.
        for replica in self.nodes.hosts().into_iter().filter(|h| *h != master) {
            let calls = self.links.partition(master, replica, false);
            self.table.make(&calls);
        }
        self.nodes.kill(master);
        self.schedule_in(promote_after_ms, Action::Promote);
    }

    /// Promotes the first node that is not the old master, re-points
    /// `master` and the other replicas at it.
    fn promote(&mut self) -> Result<(), RunError> {
        let old = self.directory.resolve(Host::Master);
        let Some(replica) = self.nodes.hosts().into_iter().find(|n| *n != old) else {
            return Ok(());
        };
        let addr = self
            .nodes
            .addr(replica)
            .ok_or_else(|| harness_error(format!("{replica} has no address")))?;
        command(addr, &["REPLICAOF", "NO", "ONE"]).map_err(harness_error)?;
        for other in self.nodes.hosts() {
            if other == old || other == replica {
                continue;
            }
            if let (Some(other_addr), Some(link)) =
                (self.nodes.addr(other), self.table.addr(other, replica))
            {
                let port = link.port().to_string();
                command(other_addr, &["REPLICAOF", "127.0.0.1", &port]).map_err(harness_error)?;
            }
        }
        self.directory.point(Host::Master, replica);
        self.record(
            FaultName::Failover,
            FaultTarget::Host(replica),
            Phase::End,
            &format!("{replica} promoted"),
        );
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

/// The message of a panic's payload, when it has one.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// The body of one client process's thread: its own current-thread
/// runtime, whose every task poll waits while the process is paused.
#[allow(clippy::too_many_arguments)]
fn run_process(
    state: Arc<ClientState>,
    setup: Arc<ClientSetup>,
    process: ProcessHandle,
    incarnation: u32,
    seed: u64,
    recorder: Arc<Recorder>,
    mailbox: Arc<Mailbox>,
    directory: Arc<Directory>,
    table: Arc<LinkTable>,
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
    let dial = |host: Host| {
        ReconnectingConnection::new(
            RealDialer::new(
                me,
                host,
                directory.clone(),
                table.clone(),
                process.dead.clone(),
            ),
            setup.conn,
        )
    };
    let conns: Vec<_> = setup.targets.iter().map(|&t| dial(t)).collect();
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
    .with_hook(Arc::new(hook));
    if let Ok(lock) = locks::build(&setup.rung, conns, ctx, setup.lock) {
        let client = Client {
            group: setup.group.clone(),
            key: setup.key.clone(),
            lock,
            store: Store::new(dial(Host::Store), setup.resource == ResourceKind::Fenced),
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
