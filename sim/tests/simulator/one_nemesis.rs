//! One nemesis for both engines: what a fault means is decided once
//! (`sim::nemesis`), and each engine only carries out its effects.
//!
//! The same fault schedule (every fault kind, at times and at fault
//! points) is driven through two stand-in stages that record their effects
//! instead of making them: one with the simulator's capabilities (a
//! client holds its own link at once; a killed node's unsent replication
//! dies in its process) and one with real mode's (the proxy holds links a
//! step later; the proxy's replication delay is cut at a failover). Their
//! histories' fault records must be identical, event for event, while
//! their effects differ exactly where the engines do.

use model::fault::CrashKind;
use model::fault::FaultKind;
use model::history::{EventKind, Phase};
use model::host::Host;
use model::scenario::Scenario;
use sim::client_state::ClientState;
use sim::directory::Directory;
use sim::hook::AimedFault;
use sim::links::LinkCall;
use sim::mailbox::FaultRequest;
use sim::nemesis::{self, ClientStage, ClockChange, Nemesis, Stage, StageError};
use sim::recorder::Recorder;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::time::Duration;

/// Every fault kind, at times and at fault points, in a deployment with a
/// replica.
const SCHEDULE: &str = r#"
description = "every fault kind, at times and at points"
rungs = ["watchdog"]
duration_ms = 2000

[topology]
kind = "replicated"
replicas = 1
replication_delay_ms = 100

[lock]
ttl_ms = 1000

[[clients]]
count = 2
cycles = 3

[[faults]]
kind = "pause"
target = "client-0"
at_ms = 100
duration_ms = 50

[[faults]]
kind = "pause"
on = { client = 1, cycle = 1, point = "after-acquire" }
duration_ms = 30

[[faults]]
kind = "crash"
target = "client-1"
at_ms = 200
restart_after_ms = 100

[[faults]]
kind = "crash"
target = "redis-1"
how = "power-loss"
at_ms = 300
restart_after_ms = 50

[[faults]]
kind = "partition"
a = ["client-0"]
b = ["master"]
at_ms = 400
duration_ms = 60

[[faults]]
kind = "partition"
a = ["client-1"]
b = ["redis-0"]
oneway = true
at_ms = 420

[[faults]]
kind = "delay"
a = ["client-1"]
b = ["redis-0"]
at_ms = 500
duration_ms = 40

[[faults]]
kind = "delay"
a = ["client-0"]
b = ["master"]
oneway = true
on = { client = 0, cycle = 1, point = "release-start" }
duration_ms = 40

[[faults]]
kind = "slow-link"
a = ["client-0"]
b = ["redis-0"]
latency_ms = 20
at_ms = 600
duration_ms = 50

[[faults]]
kind = "clock-jump"
target = "redis-0"
jump_ms = 500
at_ms = 650

[[faults]]
kind = "clock-jump"
target = "client-0"
jump_ms = -200
on = { client = 0, cycle = 2, point = "acquire-reply" }

[[faults]]
kind = "clock-drift"
target = "client-1"
ppm = 1000
at_ms = 700

[[faults]]
kind = "failover"
at_ms = 800
promote_after_ms = 100

[[faults]]
kind = "crash"
on = { client = 1, cycle = 3, point = "before-write" }
"#;

/// When each client reaches a fault point in the stand-in run: (ms,
/// client, cycle, point).
const REACHED: [(u64, usize, u32, &str); 5] = [
    (150, 1, 1, "after-acquire"),
    (260, 0, 1, "release-start"),
    (700, 0, 2, "acquire-reply"),
    (1000, 1, 3, "acquire-reply"),
    (1010, 1, 3, "before-write"),
];

/// Which engine's capabilities a stand-in has.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Engine {
    Sim,
    Real,
}

/// A stand-in for an engine's stage: it records each effect instead of
/// making it, and keeps which hosts are down.
struct Standin {
    engine: Engine,
    nemesis: Nemesis,
    now: Duration,
    recorder: Recorder,
    directory: Directory,
    clients: usize,
    nodes: Vec<Host>,
    down: BTreeSet<Host>,
    effects: Vec<String>,
}

impl Stage for Standin {
    fn nemesis(&mut self) -> &mut Nemesis {
        &mut self.nemesis
    }
    fn now(&self) -> Duration {
        self.now
    }
    fn recorder(&self) -> &Recorder {
        &self.recorder
    }
    fn directory(&self) -> &Directory {
        &self.directory
    }
    fn client_count(&self) -> usize {
        self.clients
    }
    fn node_hosts(&self) -> Vec<Host> {
        self.nodes.clone()
    }
    fn is_running(&mut self, host: Host) -> bool {
        !self.down.contains(&host)
    }
    fn is_down(&mut self, host: Host) -> bool {
        self.down.contains(&host)
    }
    fn pause_client(&mut self, index: usize, duration: Duration) {
        self.effects
            .push(format!("pause client-{index} {duration:?}"));
    }
    fn crash_client(&mut self, index: usize, for_good: bool) {
        self.down.insert(Host::Client(index));
        self.effects
            .push(format!("crash client-{index} for good: {for_good}"));
    }
    fn crash_node(&mut self, node: Host, how: CrashKind) {
        self.down.insert(node);
        self.effects.push(format!("crash {node} {how:?}"));
    }
    fn lose_unsent_replication(&mut self, master: Host) {
        if self.engine == Engine::Real {
            for replica in self.nodes.clone().into_iter().filter(|h| *h != master) {
                let calls = self.nemesis.links().partition(master, replica, false);
                self.effects.push(format!("cut replication {calls:?}"));
            }
        }
    }
    fn restart_client(&mut self, index: usize) -> Result<(), StageError> {
        self.down.remove(&Host::Client(index));
        self.effects.push(format!("restart client-{index}"));
        Ok(())
    }
    fn restart_node(&mut self, node: Host) -> Result<(), StageError> {
        self.down.remove(&node);
        self.effects.push(format!("restart {node}"));
        Ok(())
    }
    fn make(&mut self, calls: Vec<LinkCall>) {
        self.effects.push(format!("links {calls:?}"));
    }
    fn hold_one_way(&mut self, from: Host, to: Host, until: Duration) {
        self.effects
            .push(format!("hold {from}->{to} until {until:?}"));
    }
    fn release_one_way(&mut self, from: Host, to: Host) {
        if self.engine == Engine::Real {
            self.effects.push(format!("release {from}->{to}"));
        }
    }
    fn set_latency(&mut self, x: Host, y: Host, latency: Duration) {
        self.effects.push(format!("latency {x}-{y} {latency:?}"));
    }
    fn move_clock(&mut self, host: Host, change: ClockChange) -> Result<bool, StageError> {
        self.effects.push(format!("clock {host} {change:?}"));
        Ok(true)
    }
    fn promote(&mut self, replica: Host, old: Host) -> Result<(), StageError> {
        self.effects.push(format!("promote {replica} over {old}"));
        Ok(())
    }
}

/// A stand-in for the client-side stage of a client that reached a point.
struct StandinClient<'a> {
    engine: Engine,
    host: Host,
    now_us: u64,
    recorder: &'a Recorder,
    effects: RefCell<Vec<String>>,
    requests: RefCell<Vec<FaultRequest>>,
}

impl ClientStage for StandinClient<'_> {
    fn host(&self) -> Host {
        self.host
    }
    fn now_us(&self) -> u64 {
        self.now_us
    }
    fn recorder(&self) -> &Recorder {
        self.recorder
    }
    fn pause_here(&self, duration: Duration) {
        let me = self.host;
        self.effects
            .borrow_mut()
            .push(format!("{me} pauses itself {duration:?}"));
    }
    fn jump_own_clock(&self, jump_ms: i64) {
        let me = self.host;
        self.effects
            .borrow_mut()
            .push(format!("{me} jumps its clock {jump_ms}"));
    }
    fn hold_own_link_at_once(&self, remote: Host, requests: bool, until_us: u64) {
        if self.engine == Engine::Sim {
            let me = self.host;
            self.effects.borrow_mut().push(format!(
                "{me} holds its link to {remote} (requests: {requests}) until {until_us}"
            ));
        }
    }
    fn stop_for_good(&self) {
        let me = self.host;
        self.effects.borrow_mut().push(format!("{me} stops"));
    }
    fn request(&self, request: FaultRequest) {
        self.requests.borrow_mut().push(request);
    }
}

/// Drives [`SCHEDULE`] through a stand-in of `engine`, 1 ms at a time:
/// the agenda's actions, then the points clients reach, then what they
/// asked the driver for. Returns the stand-in (history and effects).
fn drive(engine: Engine) -> Standin {
    let scenario = Scenario::parse(SCHEDULE, "schedule.toml", "schedule").unwrap();
    let rung = "watchdog";
    let topology = scenario.topology_of(rung).clone();
    let faults = scenario.faults_of(rung).to_vec();
    let mut stage = Standin {
        engine,
        nemesis: Nemesis::new(faults.clone(), topology.clone(), Duration::from_millis(1)),
        now: Duration::ZERO,
        recorder: Recorder::new(),
        directory: Directory::new(),
        clients: scenario.client_count(),
        nodes: topology.nodes(),
        down: BTreeSet::new(),
        effects: Vec::new(),
    };
    stage.directory.point(Host::Master, Host::Node(0));
    stage.nemesis.schedule_timed_faults(Duration::ZERO);
    let states: Vec<ClientState<()>> = (0..stage.clients)
        .map(|i| ClientState::new(i, std::sync::Arc::new(()), ()))
        .collect();
    let aimed: Vec<Vec<AimedFault>> = (0..stage.clients)
        .map(|c| AimedFault::at_client(&faults, c))
        .collect();
    for ms in 0..=scenario.duration_ms {
        stage.now = Duration::from_millis(ms);
        while let Some(action) = stage.nemesis.pop_due(ms * 1_000) {
            nemesis::act(&mut stage, action).unwrap();
        }
        for &(at, client, cycle, point) in REACHED.iter().filter(|r| r.0 == ms) {
            let point = locks::FaultPoint::from_name(point).unwrap();
            let state = &states[client];
            state
                .cycle
                .store(cycle, std::sync::atomic::Ordering::SeqCst);
            let inside = StandinClient {
                engine,
                host: Host::Client(client),
                now_us: at * 1_000,
                recorder: &stage.recorder,
                effects: RefCell::new(Vec::new()),
                requests: RefCell::new(Vec::new()),
            };
            for fault in state.due(&aimed[client], point) {
                nemesis::fire_at_point(&inside, &fault, point);
            }
            stage.effects.extend(inside.effects.take());
            for request in inside.requests.take() {
                nemesis::handle_request(&mut stage, request).unwrap();
            }
        }
    }
    stage
}

/// The fault records of a history, as JSON lines.
fn fault_records(stage: &Standin) -> Vec<String> {
    let history = stage.recorder.history();
    history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[test]
fn the_same_schedule_leaves_the_same_fault_records_through_both_stages() {
    let sim = drive(Engine::Sim);
    let real = drive(Engine::Real);
    let (sim_records, real_records) = (fault_records(&sim), fault_records(&real));
    assert_eq!(sim_records, real_records);
    // Every kind left its records: the comparison is not of two empty
    // lists.
    let history = sim.recorder.history();
    let named: BTreeSet<&str> = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault { fault, .. } => Some(fault.name()),
            _ => None,
        })
        .collect();
    // Every kind a scenario can give (a restart is a crash's end).
    let every: BTreeSet<&str> = FaultKind::ALL
        .iter()
        .filter(|k| **k != FaultKind::Restart)
        .map(|f| f.name())
        .collect();
    assert_eq!(named, every);
}

#[test]
fn faults_fired_at_points_and_at_times_open_and_close_as_the_nemesis_says() {
    let sim = drive(Engine::Sim);
    let history = sim.recorder.history();
    let phases = |name: FaultKind| -> Vec<(u64, Phase)> {
        history
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Fault { fault, phase, .. } if *fault == name => {
                    Some((e.at_us / 1_000, *phase))
                }
                _ => None,
            })
            .collect()
    };
    // Timed pause 100..150 (its end is on the agenda, which runs before
    // the points reached in the same step), the point pause 150..180.
    assert_eq!(
        phases(FaultKind::Pause),
        vec![
            (100, Phase::Start),
            (150, Phase::End),
            (150, Phase::Start),
            (180, Phase::End)
        ]
    );
    // Failover: the master dies at 800, the replica is promoted at 900.
    assert_eq!(
        phases(FaultKind::Failover),
        vec![(800, Phase::Start), (900, Phase::End)]
    );
    // client-1 crashes and restarts; redis-1 loses power and restarts;
    // client-1 crashes for good at its point.
    assert_eq!(
        phases(FaultKind::Crash),
        vec![
            (200, Phase::Start),
            (300, Phase::Start),
            (300, Phase::End),
            (350, Phase::End),
            (1010, Phase::Instant)
        ]
    );
}

#[test]
fn the_two_stages_differ_only_in_the_effects_their_engines_make_differently() {
    let (sim, real) = (drive(Engine::Sim), drive(Engine::Real));
    let only = |a: &Standin, b: &Standin| -> Vec<String> {
        a.effects
            .iter()
            .filter(|e| !b.effects.contains(e))
            .cloned()
            .collect()
    };
    let sim_only = only(&sim, &real);
    let real_only = only(&real, &sim);
    assert!(
        sim_only.len() == 1 && sim_only[0].starts_with("client-0 holds its link to master"),
        "{sim_only:?}"
    );
    assert!(
        real_only.len() == 2
            && real_only.iter().any(|e| e.starts_with("cut replication"))
            && real_only
                .iter()
                .any(|e| e.starts_with("release client-0->")),
        "{real_only:?}"
    );
}
