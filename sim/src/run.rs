//! Running one rung in one scenario under one seed: build the simulated
//! world, drive it step by step, fire the faults, and collect the history.
//!
//! Everything random comes from the seed: turmoil's own RNG (message order,
//! host order), each client's token source, and nothing else. The same
//! scenario, rung and seed give a byte-identical history.

use crate::client_clock::{EPOCH_MS, SimClock};
use crate::dial::SimDialer;
use crate::fault::FaultSpec;
use crate::freeze::Freeze;
use crate::history::{EventKind, History};
use crate::hook::{AimedFault, SimHook};
use crate::nodes::Nodes;
use crate::recorder::{FaultRequest, Recorder};
use crate::resource::{STOCK_KEY, Store};
use crate::scenario::{Scenario, Topology, TopologyKind};
use crate::workload::Client;
use locks::{ConnConfig, LockConfig, LockContext, Owner, ReconnectingConnection, WaitStrategy};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

/// The simulation's step: every host advances this much per step.
pub const TICK: Duration = Duration::from_millis(1);

/// Simulated time allowed after the scenario's duration to read the
/// final state of the resource.
const AUDIT_LIMIT: Duration = Duration::from_secs(10);

/// A run that could not be carried out (not a verdict: a harness failure).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The rung is not in the scenario, or unknown.
    #[error("{0}")]
    BadInput(String),
    /// The simulation itself failed.
    #[error("simulation failed: {0}")]
    Simulation(String),
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The history, in time order.
    pub history: History,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
}

/// Per-client state that outlives a restart of the client's process.
struct ClientSlot {
    freeze: Arc<Freeze>,
    clock: Arc<SimClock>,
    cycle: Arc<AtomicU32>,
    fired: Arc<Mutex<BTreeSet<usize>>>,
    incarnation: Arc<AtomicU32>,
    finished: Arc<AtomicBool>,
    crashed_for_good: bool,
}

/// Something the driver does at a simulated time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    /// Start scenario fault `i`.
    Start(usize),
    /// Record the end of a pause.
    EndPause(usize, String),
    /// Heal a partition.
    Heal(usize),
    /// Release held messages.
    Release(usize),
    /// Restore a link's latency.
    Unslow(usize),
    /// Restart a crashed host.
    Restart(usize, String),
    /// Promote the first replica and re-point `master`.
    Promote(usize),
}

/// Runs `variant` in `scenario` with `seed`.
pub fn run(scenario: &Scenario, variant: &str, seed: u64) -> Result<RunOutput, RunError> {
    if !scenario.variants.iter().any(|v| v == variant) {
        return Err(RunError::BadInput(format!(
            "scenario {:?} does not name rung {variant:?}; it names {}",
            scenario.name,
            scenario.variants.join(", ")
        )));
    }
    let mut world = World::build(scenario, variant, seed)?;
    world.drive()?;
    world.audit()?;
    let history = world.recorder.history();
    Ok(RunOutput {
        history,
        sim_elapsed: world.sim.elapsed(),
    })
}

struct World<'s> {
    scenario: &'s Scenario,
    topology: Topology,
    sim: turmoil::Sim<'static>,
    recorder: Arc<Recorder>,
    nodes: Nodes,
    clients: Vec<ClientSlot>,
    agenda: BTreeMap<(u64, u64), Action>,
    agenda_seq: u64,
}

impl<'s> World<'s> {
    fn build(scenario: &'s Scenario, variant: &str, seed: u64) -> Result<World<'s>, RunError> {
        let topology = scenario.topology_of(variant).clone();
        let latency = Duration::from_millis(scenario.network.latency_ms);
        let mut sim = turmoil::Builder::new()
            .rng_seed(seed)
            .epoch(UNIX_EPOCH + Duration::from_millis(EPOCH_MS))
            .tick_duration(TICK)
            .min_message_latency(latency)
            .max_message_latency(latency + Duration::from_millis(scenario.network.jitter_ms))
            .simulation_duration(Duration::from_millis(scenario.duration_ms) + AUDIT_LIMIT * 2)
            .build();
        let recorder = Arc::new(Recorder::new());
        let watched = vec![scenario.lock.key.clone()];
        let nodes = Nodes::start(&mut sim, &topology, recorder.clone(), watched);
        if topology.kind == TopologyKind::Replicated {
            recorder.point_name("master", "redis-0");
        }
        let mut world = World {
            scenario,
            topology,
            sim,
            recorder,
            nodes,
            clients: Vec::new(),
            agenda: BTreeMap::new(),
            agenda_seq: 0,
        };
        world.stock_the_store(scenario.resource.stock)?;
        for i in 0..scenario.client_count() {
            world.add_client(i, variant, seed)?;
        }
        for (i, fault) in scenario.faults.iter().enumerate() {
            if let (Some(at_ms), None) = fault.when() {
                world.schedule(Duration::from_millis(at_ms), Action::Start(i));
            }
        }
        Ok(world)
    }

    /// The names the rung's connections dial.
    fn lock_targets(&self) -> Vec<String> {
        match self.topology.kind {
            TopologyKind::Standalone => vec!["redis-0".into()],
            TopologyKind::Replicated => vec!["master".into()],
            TopologyKind::Independent => self.topology.node_names(),
        }
    }

    fn add_client(&mut self, i: usize, variant: &str, seed: u64) -> Result<(), RunError> {
        let scenario = self.scenario;
        let group = scenario
            .group_of(i)
            .cloned()
            .ok_or_else(|| RunError::BadInput(format!("client {i} has no group")))?;
        let freeze = Arc::new(Freeze::new());
        let slot = ClientSlot {
            clock: Arc::new(SimClock::new(freeze.clone())),
            freeze,
            cycle: Arc::new(AtomicU32::new(0)),
            fired: Arc::new(Mutex::new(BTreeSet::new())),
            incarnation: Arc::new(AtomicU32::new(0)),
            finished: Arc::new(AtomicBool::new(false)),
            crashed_for_good: false,
        };
        let aimed: Vec<AimedFault> = scenario
            .faults
            .iter()
            .enumerate()
            .filter_map(|(index, spec)| {
                let (client, op, point) = spec.point()?;
                (client == i).then(|| AimedFault {
                    index,
                    op,
                    point,
                    spec: spec.clone(),
                })
            })
            .collect();
        let conn_config = ConnConfig {
            connect_timeout: Duration::from_millis(scenario.lock.response_timeout_ms),
            response_timeout: Duration::from_millis(scenario.lock.response_timeout_ms),
        };
        let lock_config = LockConfig {
            ttl: Duration::from_millis(scenario.lock.ttl_ms),
            max_wait: Duration::from_millis(scenario.lock.max_wait_ms),
            wait: WaitStrategy::Fixed {
                interval: Duration::from_millis(scenario.lock.retry_ms),
            },
            node_timeout: Duration::from_millis(scenario.lock.node_timeout_ms),
        };
        let targets = self.lock_targets();
        let key = scenario.lock.key.clone();
        let fenced = scenario.resource.kind == "fenced";
        let variant = variant.to_string();
        let recorder = self.recorder.clone();
        let (freeze, clock, cycle, fired, incarnation, finished) = (
            slot.freeze.clone(),
            slot.clock.clone(),
            slot.cycle.clone(),
            slot.fired.clone(),
            slot.incarnation.clone(),
            slot.finished.clone(),
        );
        // The closure runs again at every restart of the client's host:
        // a new process, with new connections and a new owner id, but the
        // same machine clock and the same place in its workload.
        self.sim.host(format!("client-{i}"), move || {
            let incarnation = incarnation.fetch_add(1, Ordering::SeqCst) + 1;
            freeze.thaw();
            let dial = |name: &str| {
                ReconnectingConnection::new(
                    SimDialer::new(name, recorder.clone(), freeze.clone()),
                    conn_config,
                )
            };
            let conns: Vec<_> = targets.iter().map(|t| dial(t)).collect();
            let hook = SimHook::new(
                i,
                cycle.clone(),
                aimed.clone(),
                fired.clone(),
                recorder.clone(),
                freeze.clone(),
                clock.clone(),
            );
            let ctx = LockContext::new(clock.clone(), client_seed(seed, i, incarnation))
                .with_hook(Arc::new(hook));
            let lock = locks::build(&variant, conns, ctx, lock_config);
            let client = lock.map(|lock| Client {
                index: i,
                group: group.clone(),
                key: key.clone(),
                lock,
                store: Store::new(dial("store"), fenced),
                owner: Owner::new(format!("client-{i}.{incarnation}"), 1),
                clock: clock.clone(),
                freeze: freeze.clone(),
                recorder: recorder.clone(),
                cycle: cycle.clone(),
            });
            let finished = finished.clone();
            async move {
                let client = client.map_err(|e| e.to_string())?;
                client.run().await;
                finished.store(true, Ordering::SeqCst);
                Ok(())
            }
        });
        self.clients.push(slot);
        Ok(())
    }

    fn now(&self) -> Duration {
        self.sim.elapsed()
    }

    fn now_us(&self) -> u64 {
        self.now().as_micros() as u64
    }

    fn schedule(&mut self, at: Duration, action: Action) {
        self.agenda_seq += 1;
        self.agenda
            .insert((at.as_micros() as u64, self.agenda_seq), action);
    }

    fn schedule_in(&mut self, after_ms: u64, action: Action) {
        let at = self.now() + Duration::from_millis(after_ms);
        self.schedule(at, action);
    }

    fn all_finished(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.crashed_for_good || c.finished.load(Ordering::SeqCst))
    }

    fn drive(&mut self) -> Result<(), RunError> {
        let end = Duration::from_millis(self.scenario.duration_ms);
        let max_steps = (end.as_micros() / TICK.as_micros()) as u64 + 1;
        for _step in 0..max_steps {
            self.run_due_actions();
            for request in self.recorder.take_requests() {
                self.handle_request(request);
            }
            if self.all_finished() && self.agenda.is_empty() {
                break;
            }
            self.sim
                .step()
                .map_err(|e| RunError::Simulation(e.to_string()))?;
            if self.now() >= end {
                break;
            }
        }
        Ok(())
    }

    fn run_due_actions(&mut self) {
        let now = self.now_us();
        while let Some((&(at, seq), _)) = self.agenda.iter().next() {
            if at > now {
                break;
            }
            if let Some(action) = self.agenda.remove(&(at, seq)) {
                self.act(action);
            }
        }
    }

    fn handle_request(&mut self, request: FaultRequest) {
        let spec = self.scenario.faults[request.fault].clone();
        match (&spec, request.started_us) {
            (FaultSpec::Pause { duration_ms, .. }, Some(_)) => {
                let target = spec.target_host().unwrap_or_default();
                self.schedule_in(*duration_ms, Action::EndPause(request.fault, target));
            }
            _ => self.start_fault(request.fault),
        }
    }

    fn fault_event(&self, fault: &str, target: &str, phase: &str, detail: String) {
        self.recorder.record_at(
            self.now_us(),
            EventKind::Fault {
                fault: fault.to_string(),
                target: target.to_string(),
                phase: phase.to_string(),
                detail,
            },
        );
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Start(i) => self.start_fault(i),
            Action::EndPause(_, target) => {
                self.fault_event("pause", &target, "end", String::new());
            }
            Action::Heal(i) => {
                if let FaultSpec::Partition { a, b, oneway, .. } = &self.scenario.faults[i] {
                    for (x, y) in self.pairs(a, b) {
                        if *oneway {
                            self.sim.repair_oneway(x.as_str(), y.as_str());
                        } else {
                            self.sim.repair(x.as_str(), y.as_str());
                        }
                    }
                    self.fault_event("partition", &describe_sides(a, b), "end", String::new());
                }
            }
            Action::Release(i) => {
                if let FaultSpec::Delay { a, b, .. } = &self.scenario.faults[i] {
                    for (x, y) in self.pairs(a, b) {
                        self.sim.release(x.as_str(), y.as_str());
                    }
                    self.fault_event("delay", &describe_sides(a, b), "end", String::new());
                }
            }
            Action::Unslow(i) => {
                if let FaultSpec::SlowLink { a, b, .. } = &self.scenario.faults[i] {
                    let base = Duration::from_millis(self.scenario.network.latency_ms);
                    for (x, y) in self.pairs(a, b) {
                        self.sim.set_link_latency(x.as_str(), y.as_str(), base);
                    }
                    self.fault_event("slow-link", &describe_sides(a, b), "end", String::new());
                }
            }
            Action::Restart(_, host) => self.restart(&host),
            Action::Promote(_) => self.promote(),
        }
    }

    /// Host pairs between two sides, names resolved (`master` follows failover).
    fn pairs(&self, a: &[String], b: &[String]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for x in a {
            for y in b {
                let (x, y) = (self.recorder.resolve(x), self.recorder.resolve(y));
                if self.host_exists(&x) && self.host_exists(&y) && x != y {
                    out.push((x, y));
                }
            }
        }
        out
    }

    fn host_exists(&self, host: &str) -> bool {
        host == "store"
            || host
                .strip_prefix("client-")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n < self.clients.len())
            || self.nodes.has(host)
    }

    fn client_index(host: &str) -> Option<usize> {
        host.strip_prefix("client-").and_then(|n| n.parse().ok())
    }

    fn start_fault(&mut self, i: usize) {
        let spec = self.scenario.faults[i].clone();
        let target = spec.target_host().map(|t| self.recorder.resolve(&t));
        match &spec {
            FaultSpec::Pause { duration_ms, .. } => {
                let Some(target) = target else { return };
                if let Some(c) = Self::client_index(&target).and_then(|c| self.clients.get(c)) {
                    c.freeze
                        .freeze_until(self.now() + Duration::from_millis(*duration_ms));
                    self.fault_event("pause", &target, "start", format!("{duration_ms} ms"));
                    self.schedule_in(*duration_ms, Action::EndPause(i, target));
                }
            }
            FaultSpec::Crash {
                how,
                restart_after_ms,
                ..
            } => {
                let Some(target) = target else { return };
                // A host that is already down cannot crash again; nor can
                // a client whose workload has finished (its process exited).
                if !self.host_exists(&target) || !self.sim.is_host_running(target.as_str()) {
                    return;
                }
                let phase = if restart_after_ms.is_some() {
                    "start"
                } else {
                    "instant"
                };
                self.fault_event("crash", &target, phase, how.clone());
                if let Some(c) = Self::client_index(&target) {
                    self.clients[c].freeze.freeze_forever();
                    if restart_after_ms.is_none() {
                        self.clients[c].crashed_for_good = true;
                    }
                } else {
                    self.nodes.prepare_crash(&target, how == "power-loss");
                    if how == "power-loss" {
                        // A machine that loses power sends no FIN or RST:
                        // its peers learn of it only by timeouts.
                        for other in self.all_hosts() {
                            if other != target {
                                self.sim.partition(target.as_str(), other.as_str());
                            }
                        }
                    }
                }
                self.sim.crash(target.as_str());
                if let Some(after) = restart_after_ms {
                    self.schedule_in(*after, Action::Restart(i, target));
                }
            }
            FaultSpec::Partition {
                a,
                b,
                oneway,
                duration_ms,
                ..
            } => {
                for (x, y) in self.pairs(a, b) {
                    if *oneway {
                        self.sim.partition_oneway(x.as_str(), y.as_str());
                    } else {
                        self.sim.partition(x.as_str(), y.as_str());
                    }
                }
                let detail = if *oneway { "one-way" } else { "two-way" };
                self.fault_event("partition", &describe_sides(a, b), "start", detail.into());
                if let Some(d) = duration_ms {
                    self.schedule_in(*d, Action::Heal(i));
                }
            }
            FaultSpec::Delay {
                a, b, duration_ms, ..
            } => {
                for (x, y) in self.pairs(a, b) {
                    self.sim.hold(x.as_str(), y.as_str());
                }
                self.fault_event(
                    "delay",
                    &describe_sides(a, b),
                    "start",
                    format!("{duration_ms} ms"),
                );
                self.schedule_in(*duration_ms, Action::Release(i));
            }
            FaultSpec::SlowLink {
                a,
                b,
                latency_ms,
                duration_ms,
                ..
            } => {
                for (x, y) in self.pairs(a, b) {
                    self.sim.set_link_latency(
                        x.as_str(),
                        y.as_str(),
                        Duration::from_millis(*latency_ms),
                    );
                }
                self.fault_event(
                    "slow-link",
                    &describe_sides(a, b),
                    "start",
                    format!("{latency_ms} ms"),
                );
                if let Some(d) = duration_ms {
                    self.schedule_in(*d, Action::Unslow(i));
                }
            }
            FaultSpec::ClockJump { jump_ms, .. } => {
                let Some(target) = target else { return };
                if let Some(c) = Self::client_index(&target).and_then(|c| self.clients.get(c)) {
                    c.clock.jump(*jump_ms);
                } else if self.nodes.has(&target) {
                    self.nodes.jump_clock(&target, *jump_ms);
                } else {
                    return;
                }
                self.fault_event("clock-jump", &target, "instant", format!("{jump_ms:+} ms"));
            }
            FaultSpec::ClockDrift { ppm, .. } => {
                let Some(target) = target else { return };
                if let Some(c) = Self::client_index(&target).and_then(|c| self.clients.get(c)) {
                    c.clock.set_drift(*ppm);
                } else if self.nodes.has(&target) {
                    self.nodes.set_drift(&target, *ppm);
                } else {
                    return;
                }
                self.fault_event("clock-drift", &target, "instant", format!("{ppm:+} ppm"));
            }
            FaultSpec::Failover {
                promote_after_ms, ..
            } => {
                if self.topology.kind != TopologyKind::Replicated || self.topology.replicas == 0 {
                    // No replica to promote: in its own deployment the same
                    // fault is the loss of the first master, for good.
                    self.fault_event(
                        "failover",
                        "redis-0",
                        "instant",
                        "no replica: master lost".into(),
                    );
                    self.nodes.prepare_crash("redis-0", false);
                    self.sim.crash("redis-0");
                    return;
                }
                let master = self.recorder.resolve("master");
                self.fault_event(
                    "failover",
                    &master,
                    "start",
                    format!("promote after {promote_after_ms} ms"),
                );
                self.nodes.prepare_crash(&master, false);
                self.sim.crash(master.as_str());
                self.schedule_in(*promote_after_ms, Action::Promote(i));
            }
        }
    }

    fn all_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = (0..self.clients.len())
            .map(|c| format!("client-{c}"))
            .collect();
        hosts.extend(self.nodes.names());
        hosts.push("store".into());
        hosts
    }

    fn restart(&mut self, host: &str) {
        // Restarting a running host would kill it unrecorded (a second
        // crash fault may have restarted it already).
        if self.sim.is_host_running(host) {
            return;
        }
        if self.nodes.has(host) {
            for other in self.all_hosts() {
                if other != host {
                    self.sim.repair(host, other.as_str());
                }
            }
        }
        self.sim.bounce(host);
        self.fault_event("crash", host, "end", "restarted".into());
    }

    fn promote(&mut self) {
        let old = self.recorder.resolve("master");
        let Some(replica) = self.nodes.names().into_iter().find(|n| *n != old) else {
            return;
        };
        self.nodes.promote(&replica);
        self.recorder.point_name("master", &replica);
        self.fault_event("failover", &replica, "end", format!("{replica} promoted"));
    }

    /// Puts the initial stock on the store before any client starts.
    fn stock_the_store(&mut self, stock: i64) -> Result<(), RunError> {
        let done = Arc::new(AtomicBool::new(false));
        let done2 = done.clone();
        let recorder = self.recorder.clone();
        self.sim.client("stocker", async move {
            let mut conn = ReconnectingConnection::new(
                SimDialer::new("store", recorder, Arc::new(Freeze::new())),
                ConnConfig::default(),
            );
            let _: () = redis::cmd("SET")
                .arg(STOCK_KEY)
                .arg(stock)
                .query_async(&mut conn)
                .await?;
            done2.store(true, Ordering::SeqCst);
            Ok(())
        });
        self.step_until(&done, AUDIT_LIMIT)?;
        if done.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(RunError::Simulation(
                "the store did not take the initial stock".into(),
            ))
        }
    }

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

    /// Reads the resource's final state with a fresh client.
    fn audit(&mut self) -> Result<(), RunError> {
        let recorder = self.recorder.clone();
        let done = Arc::new(AtomicBool::new(false));
        let done2 = done.clone();
        self.sim.client("auditor", async move {
            let freeze = Arc::new(Freeze::new());
            let conn = ReconnectingConnection::new(
                SimDialer::new("store", recorder.clone(), freeze),
                ConnConfig::default(),
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
        self.step_until(&done, AUDIT_LIMIT)
    }
}

fn describe_sides(a: &[String], b: &[String]) -> String {
    format!("{}|{}", a.join(","), b.join(","))
}

/// A client's token seed: distinct per run seed, client and incarnation.
fn client_seed(seed: u64, client: usize, incarnation: u32) -> u64 {
    let mut x = seed ^ ((client as u64) << 32) ^ (incarnation as u64).rotate_left(17);
    // splitmix64 finaliser: nearby inputs give unrelated seeds.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
