//! The nemesis: what every fault *means*, written once for every engine.
//!
//! A fault is triggered either by the agenda at its `at_ms`, or by a
//! client's fault hook when the client reaches the fault point it is aimed
//! at. What the fault then does (which events it records, in which order,
//! what it schedules next, how a crash, a restart or a failover unfolds,
//! how overlapping link faults end one at a time) is decided here, over
//! two narrow traits each engine implements with its effects only:
//!
//! - [`Stage`], the driver's side: pause, crash and restart a client or a
//!   node, make link calls, hold or slow a link, move a clock, promote a
//!   replica. The simulator's is its turmoil world (`world_stage.rs`);
//!   real mode's is its processes and fault proxy.
//! - [`ClientStage`], the side inside a client that reached a fault point:
//!   what must happen at once, in the client itself (a pause or clock jump
//!   of its own, stopping before it crashes). The rest goes to the driver
//!   through the [`Mailbox`](crate::mailbox::Mailbox).
//!
//! Every fault writes `fault` events (`start`, `end` or `instant`) into the
//! history; their meaning is in `docs/ladder.md`.

use crate::agenda::{Action, Agenda};
use crate::directory::Directory;
use crate::hook::AimedFault;
use crate::links::{LinkCall, Links};
use crate::mailbox::FaultRequest;
use crate::recorder::Recorder;
use locks::FaultPoint;
use model::fault::{
    ClockJump, CrashKind, Delay, FaultAction, FaultKind, FaultSpec, Partition, Pause, SlowLink,
    crash_name,
};
use model::history::{EventKind, FaultTarget, Phase};
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use std::collections::BTreeSet;
use std::time::Duration;

/// An effect a stage could not carry out (a real server that did not
/// restart, a command it refused): the run has no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageError(pub String);

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StageError {}

/// A change of a machine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockChange {
    /// The clock jumps by this many ms (negative: backwards).
    JumpMs(i64),
    /// The clock runs this many ppm fast (negative: slow) from now on.
    DriftPpm(i64),
}

/// The world as the driver's side of the nemesis sees it: facts about its
/// hosts and the effects a fault can have on them. An engine implements
/// it with its effects only; what a fault means is decided in this file.
pub trait Stage {
    /// The nemesis's own state in this world.
    fn nemesis(&mut self) -> &mut Nemesis;
    /// True time since the run began.
    fn now(&self) -> Duration;
    /// Where every event goes.
    fn recorder(&self) -> &Recorder;
    /// Where aliases such as `master` point.
    fn directory(&self) -> &Directory;
    /// How many clients the world has (`client-0` ..).
    fn client_count(&self) -> usize;
    /// The deployment's nodes (not the store).
    fn node_hosts(&self) -> Vec<Host>;
    /// Whether a host's process is running now (a client whose workload
    /// has finished is not).
    fn is_running(&mut self, host: Host) -> bool;
    /// Whether a host is down from a crash and may be restarted.
    fn is_down(&mut self, host: Host) -> bool;
    /// Stops client `index` whole for `duration` (a stop-the-world pause).
    fn pause_client(&mut self, index: usize, duration: Duration);
    /// Kills client `index`'s process; `for_good` when no restart follows.
    fn crash_client(&mut self, index: usize, for_good: bool);
    /// Kills a node (or the store) the way `how` says.
    fn crash_node(&mut self, node: Host, how: CrashKind);
    /// Writes the old master had not yet sent its replicas are lost with
    /// it: where an engine keeps them outside the node's process, it drops
    /// them here, before the kill.
    fn lose_unsent_replication(&mut self, master: Host);
    /// Starts a new process of a crashed client.
    fn restart_client(&mut self, index: usize) -> Result<(), StageError>;
    /// Starts a crashed node again, on its own data.
    fn restart_node(&mut self, node: Host) -> Result<(), StageError>;
    /// Makes link calls (counted by [`Links`], so each is the link's
    /// whole new state).
    fn make(&mut self, calls: Vec<LinkCall>);
    /// Holds the messages from `from` to `to` until `until` (true time),
    /// the other direction untouched.
    fn hold_one_way(&mut self, from: Host, to: Host, until: Duration);
    /// The hold of [`Stage::hold_one_way`] is over.
    fn release_one_way(&mut self, from: Host, to: Host);
    /// Sets the latency of the link between two hosts.
    fn set_latency(&mut self, x: Host, y: Host, latency: Duration);
    /// Changes a host's clock; false when the host has no clock this
    /// engine moves (nothing happened).
    fn move_clock(&mut self, host: Host, change: ClockChange) -> Result<bool, StageError>;
    /// Makes `replica` the master (`REPLICAOF NO ONE`), the other replicas
    /// following it; `old` is the master that failed.
    fn promote(&mut self, replica: Host, old: Host) -> Result<(), StageError>;
}

/// What the nemesis keeps during a run: the rung's faults, the agenda of
/// what they do next, the link faults in force and the powered-off hosts.
#[derive(Debug)]
pub struct Nemesis {
    faults: Vec<FaultSpec>,
    agenda: Agenda,
    links: Links,
    powered_off: BTreeSet<Host>,
    topology: Topology,
    base_latency: Duration,
}

impl Nemesis {
    /// The nemesis of a run with these faults, in this deployment, on a
    /// network whose links take `base_latency` when nothing slows them.
    pub fn new(faults: Vec<FaultSpec>, topology: Topology, base_latency: Duration) -> Self {
        Nemesis {
            faults,
            agenda: Agenda::new(),
            links: Links::new(),
            powered_off: BTreeSet::new(),
            topology,
            base_latency,
        }
    }

    /// Puts every timed fault on the agenda: `at_ms` counts from `origin`
    /// (true time).
    pub fn schedule_timed_faults(&mut self, origin: Duration) {
        for (i, fault) in self.faults.iter().enumerate() {
            if let (Some(at_ms), None) = (fault.when.at_ms, &fault.when.on) {
                let at = origin + Duration::from_millis(at_ms);
                self.agenda.schedule(at, Action::Start(i));
            }
        }
    }

    /// Takes the earliest action due at or before `now_us`, if any.
    pub fn pop_due(&mut self, now_us: u64) -> Option<Action> {
        self.agenda.pop_due(now_us)
    }

    /// Whether nothing is left on the agenda.
    pub fn is_idle(&self) -> bool {
        self.agenda.is_empty()
    }

    /// The link faults in force, for a stage whose effect is itself a
    /// counted link fault.
    pub fn links(&mut self) -> &mut Links {
        &mut self.links
    }
}

/// Records a fault event at `at_us`.
pub fn record(
    recorder: &Recorder,
    at_us: u64,
    fault: FaultKind,
    target: FaultTarget,
    phase: Phase,
    detail: String,
) {
    recorder.record_at(
        at_us,
        EventKind::Fault {
            fault,
            target,
            phase,
            detail,
        },
    );
}

/// The target of a link fault between two sides, as the scenario names
/// them.
pub fn sides(a: &[Host], b: &[Host]) -> FaultTarget {
    FaultTarget::Sides {
        a: a.to_vec(),
        b: b.to_vec(),
    }
}

/// Carries out an action of the agenda.
pub fn act<S: Stage>(stage: &mut S, action: Action) -> Result<(), StageError> {
    match action {
        Action::Start(i) => apply(stage, i)?,
        Action::EndPause(target) => {
            record_now(
                stage,
                FaultKind::Pause,
                FaultTarget::Host(target),
                Phase::End,
                "",
            );
        }
        Action::Heal(i) => heal(stage, i),
        Action::Release(i) => release(stage, i),
        Action::Unslow(i) => unslow(stage, i),
        Action::Restart(host) => restart(stage, host)?,
        Action::Promote => promote(stage)?,
    }
    Ok(())
}

/// Carries out what a client asked for at a fault point.
pub fn handle_request<S: Stage>(stage: &mut S, request: FaultRequest) -> Result<(), StageError> {
    let spec = stage.nemesis().faults[request.fault].clone();
    match (&spec.action, request.started_us) {
        // The client paused itself; only the end is left.
        (FaultAction::Pause(pause), Some(_)) => {
            if let Some(target) = spec.target_host() {
                schedule_in(stage, pause.duration_ms, Action::EndPause(target));
            }
            Ok(())
        }
        _ => apply(stage, request.fault),
    }
}

/// Applies fault `i` of the rung to the world now.
pub fn apply<S: Stage>(stage: &mut S, i: usize) -> Result<(), StageError> {
    let spec = stage.nemesis().faults[i].clone();
    let target = spec.target_host().map(|t| stage.directory().resolve(t));
    match &spec.action {
        FaultAction::Pause(p) => pause(stage, target, p.duration_ms),
        FaultAction::Crash(c) => {
            if let Some(target) = target {
                crash(stage, target, c.how, c.restart_after_ms);
            }
        }
        FaultAction::Partition(p) => partition(stage, i, p),
        FaultAction::Delay(d) => delay(stage, i, d),
        FaultAction::SlowLink(s) => slow_link(stage, i, s),
        FaultAction::ClockJump(j) => move_clock(
            stage,
            target,
            FaultKind::ClockJump,
            ClockChange::JumpMs(j.jump_ms),
            &format!("{:+} ms", j.jump_ms),
        )?,
        FaultAction::ClockDrift(d) => move_clock(
            stage,
            target,
            FaultKind::ClockDrift,
            ClockChange::DriftPpm(d.ppm),
            &format!("{:+} ppm", d.ppm),
        )?,
        FaultAction::Failover(f) => fail_over(stage, f.promote_after_ms),
    }
    Ok(())
}

/// Starts partition `i`: messages between its sides are lost until it
/// heals.
fn partition<S: Stage>(stage: &mut S, i: usize, p: &Partition) {
    for (x, y) in host_pairs(stage, &p.a, &p.b) {
        let calls = stage.nemesis().links.partition(x, y, p.oneway);
        stage.make(calls);
    }
    let detail = if p.oneway { "one-way" } else { "two-way" };
    let target = sides(&p.a, &p.b);
    record_now(stage, FaultKind::Partition, target, Phase::Start, detail);
    if let Some(d) = p.duration_ms {
        schedule_in(stage, d, Action::Heal(i));
    }
}

/// Starts delay `i`: messages between its sides are held until it ends.
fn delay<S: Stage>(stage: &mut S, i: usize, d: &Delay) {
    let until = stage.now() + Duration::from_millis(d.duration_ms);
    for (x, y) in host_pairs(stage, &d.a, &d.b) {
        if d.oneway {
            stage.hold_one_way(x, y, until);
        } else {
            let calls = stage.nemesis().links.hold(x, y);
            stage.make(calls);
        }
    }
    let way = if d.oneway { " one-way" } else { "" };
    let detail = format!("{} ms{way}", d.duration_ms);
    record_now(
        stage,
        FaultKind::Delay,
        sides(&d.a, &d.b),
        Phase::Start,
        &detail,
    );
    schedule_in(stage, d.duration_ms, Action::Release(i));
}

/// Starts slow link `i`: its links take `latency_ms` until it ends.
fn slow_link<S: Stage>(stage: &mut S, i: usize, s: &SlowLink) {
    for (x, y) in host_pairs(stage, &s.a, &s.b) {
        stage.set_latency(x, y, Duration::from_millis(s.latency_ms));
    }
    let detail = format!("{} ms", s.latency_ms);
    let target = sides(&s.a, &s.b);
    record_now(stage, FaultKind::SlowLink, target, Phase::Start, &detail);
    if let Some(d) = s.duration_ms {
        schedule_in(stage, d, Action::Unslow(i));
    }
}

/// Pauses a client for `duration_ms`; a host that is not one of the
/// world's clients is left alone.
fn pause<S: Stage>(stage: &mut S, target: Option<Host>, duration_ms: u64) {
    let Some(index) = target.and_then(|t| client_index(stage, t)) else {
        return;
    };
    stage.pause_client(index, Duration::from_millis(duration_ms));
    let host = Host::Client(index);
    let detail = format!("{duration_ms} ms");
    record_now(
        stage,
        FaultKind::Pause,
        FaultTarget::Host(host),
        Phase::Start,
        &detail,
    );
    schedule_in(stage, duration_ms, Action::EndPause(host));
}

/// Changes a host's clock and records the instant; a host this world
/// lacks, or whose clock the engine does not model, is left alone.
fn move_clock<S: Stage>(
    stage: &mut S,
    target: Option<Host>,
    fault: FaultKind,
    change: ClockChange,
    detail: &str,
) -> Result<(), StageError> {
    let Some(target) = target else {
        return Ok(());
    };
    let exists = client_index(stage, target).is_some() || stage.node_hosts().contains(&target);
    if exists && stage.move_clock(target, change)? {
        record_now(
            stage,
            fault,
            FaultTarget::Host(target),
            Phase::Instant,
            detail,
        );
    }
    Ok(())
}

/// Crashes a host; it restarts after `restart_after_ms` if given.
fn crash<S: Stage>(stage: &mut S, target: Host, how: CrashKind, restart_after_ms: Option<u64>) {
    // A host that is already down cannot crash again; nor can a client
    // whose workload has finished (its process exited).
    if !host_exists(stage, target) || !stage.is_running(target) {
        return;
    }
    let phase = if restart_after_ms.is_some() {
        Phase::Start
    } else {
        Phase::Instant
    };
    let target_of = FaultTarget::Host(target);
    record_now(stage, FaultKind::Crash, target_of, phase, crash_name(how));
    if let Some(index) = client_index(stage, target) {
        stage.crash_client(index, restart_after_ms.is_none());
    } else {
        if how == CrashKind::PowerLoss {
            // A machine that loses power sends no FIN or RST: its peers
            // learn of it only by timeouts.
            stage.nemesis().powered_off.insert(target);
            for other in all_hosts(stage) {
                if other != target {
                    let calls = stage.nemesis().links.partition(target, other, false);
                    stage.make(calls);
                }
            }
        }
        stage.crash_node(target, how);
    }
    if let Some(after) = restart_after_ms {
        schedule_in(stage, after, Action::Restart(target));
    }
}

/// Restarts a crashed host.
fn restart<S: Stage>(stage: &mut S, host: Host) -> Result<(), StageError> {
    // Restarting a running host would kill it unrecorded (a second crash
    // fault may have restarted it already).
    if !stage.is_down(host) {
        return Ok(());
    }
    if let Some(index) = client_index(stage, host) {
        stage.restart_client(index)?;
    } else {
        // The silence of a power loss ends; partitions and delays of
        // faults still in force stay.
        let powered_off = stage.nemesis().powered_off.remove(&host);
        for other in all_hosts(stage) {
            if other != host {
                let links = &mut stage.nemesis().links;
                let calls = if powered_off {
                    links.heal(host, other, false)
                } else {
                    links.repair_all(host, other)
                };
                stage.make(calls);
            }
        }
        stage.restart_node(host)?;
    }
    let target = FaultTarget::Host(host);
    record_now(stage, FaultKind::Crash, target, Phase::End, "restarted");
    Ok(())
}

/// Kills the master and schedules the promotion of its first replica.
fn fail_over<S: Stage>(stage: &mut S, promote_after_ms: u64) {
    let first = Host::Node(0);
    let topology = &stage.nemesis().topology;
    if topology.kind != TopologyKind::Replicated || topology.replicas == 0 {
        // No replica to promote: in its own deployment the same fault is
        // the loss of the first master, for good.
        let target = FaultTarget::Host(first);
        let detail = "no replica: master lost";
        record_now(stage, FaultKind::Failover, target, Phase::Instant, detail);
        stage.crash_node(first, CrashKind::ProcessKill);
        return;
    }
    let master = stage.directory().resolve(Host::Master);
    let detail = format!("promote after {promote_after_ms} ms");
    let target = FaultTarget::Host(master);
    record_now(stage, FaultKind::Failover, target, Phase::Start, &detail);
    // Writes still waiting in the old master's replication buffer die with
    // it (docs/ladder.md, `failover`).
    stage.lose_unsent_replication(master);
    stage.crash_node(master, CrashKind::ProcessKill);
    schedule_in(stage, promote_after_ms, Action::Promote);
}

/// Promotes the first node that is not the old master, and points
/// `master` at it.
fn promote<S: Stage>(stage: &mut S) -> Result<(), StageError> {
    let old = stage.directory().resolve(Host::Master);
    let Some(replica) = stage.node_hosts().into_iter().find(|n| *n != old) else {
        return Ok(());
    };
    stage.promote(replica, old)?;
    stage.directory().point(Host::Master, replica);
    let detail = format!("{replica} promoted");
    let target = FaultTarget::Host(replica);
    record_now(stage, FaultKind::Failover, target, Phase::End, &detail);
    Ok(())
}

/// Heals the partition of fault `i`.
fn heal<S: Stage>(stage: &mut S, i: usize) {
    if let FaultAction::Partition(Partition { a, b, oneway, .. }) =
        stage.nemesis().faults[i].action.clone()
    {
        for (x, y) in host_pairs(stage, &a, &b) {
            let calls = stage.nemesis().links.heal(x, y, oneway);
            stage.make(calls);
        }
        record_now(stage, FaultKind::Partition, sides(&a, &b), Phase::End, "");
    }
}

/// Ends the delay of fault `i`: what it held moves on.
fn release<S: Stage>(stage: &mut S, i: usize) {
    if let FaultAction::Delay(Delay { a, b, oneway, .. }) = stage.nemesis().faults[i].action.clone()
    {
        for (x, y) in host_pairs(stage, &a, &b) {
            if oneway {
                stage.release_one_way(x, y);
            } else {
                let calls = stage.nemesis().links.release(x, y);
                stage.make(calls);
            }
        }
        record_now(stage, FaultKind::Delay, sides(&a, &b), Phase::End, "");
    }
}

/// Ends the slow link of fault `i`: the links take the network's latency
/// again.
fn unslow<S: Stage>(stage: &mut S, i: usize) {
    if let FaultAction::SlowLink(SlowLink { a, b, .. }) = stage.nemesis().faults[i].action.clone() {
        let base = stage.nemesis().base_latency;
        for (x, y) in host_pairs(stage, &a, &b) {
            stage.set_latency(x, y, base);
        }
        record_now(stage, FaultKind::SlowLink, sides(&a, &b), Phase::End, "");
    }
}

/// Records a fault event now.
fn record_now<S: Stage>(
    stage: &S,
    fault: FaultKind,
    target: FaultTarget,
    phase: Phase,
    detail: &str,
) {
    let now_us = stage.now().as_micros() as u64;
    record(
        stage.recorder(),
        now_us,
        fault,
        target,
        phase,
        detail.to_string(),
    );
}

/// Schedules `action` `after_ms` from now.
fn schedule_in<S: Stage>(stage: &mut S, after_ms: u64, action: Action) {
    let at = stage.now() + Duration::from_millis(after_ms);
    stage.nemesis().agenda.schedule(at, action);
}

/// The index of the client a host is, if it is one of the world's.
fn client_index<S: Stage>(stage: &S, host: Host) -> Option<usize> {
    host.client().filter(|&c| c < stage.client_count())
}

/// Whether the world has the host (a rung's deployment may have fewer
/// nodes than the scenario's largest).
fn host_exists<S: Stage>(stage: &S, host: Host) -> bool {
    match host {
        Host::Store => true,
        Host::Client(c) => c < stage.client_count(),
        Host::Node(_) => stage.node_hosts().contains(&host),
        Host::Master => false,
    }
}

/// Every host: clients, nodes, store.
fn all_hosts<S: Stage>(stage: &S) -> Vec<Host> {
    let mut hosts: Vec<Host> = (0..stage.client_count()).map(Host::Client).collect();
    hosts.extend(stage.node_hosts());
    hosts.push(Host::Store);
    hosts
}

/// Host pairs between two sides, aliases resolved (`master` follows
/// failover); hosts this world lacks are left out.
fn host_pairs<S: Stage>(stage: &S, a: &[Host], b: &[Host]) -> Vec<(Host, Host)> {
    let mut out = Vec::new();
    for &x in a {
        for &y in b {
            let (x, y) = (stage.directory().resolve(x), stage.directory().resolve(y));
            if host_exists(stage, x) && host_exists(stage, y) && x != y {
                out.push((x, y));
            }
        }
    }
    out
}

/// The side of the nemesis inside a client that reached a fault point:
/// what must happen there at once, before the client goes on.
pub trait ClientStage {
    /// The client's host.
    fn host(&self) -> Host;
    /// True time since the run began, µs.
    fn now_us(&self) -> u64;
    /// Where every event goes.
    fn recorder(&self) -> &Recorder;
    /// Stops this client whole for `duration`, from right here.
    fn pause_here(&self, duration: Duration);
    /// Jumps this client's own clock.
    fn jump_own_clock(&self, jump_ms: i64);
    /// Holds, at once, this client's messages to `remote` (`requests`) or
    /// from it (replies) until `until_us` (true time), so that none leaves
    /// or arrives before the driver holds the link; `remote` as the
    /// scenario names it (`master` still to resolve). An engine whose
    /// driver holds the link within its step does nothing here.
    fn hold_own_link_at_once(&self, remote: Host, requests: bool, until_us: u64);
    /// Nothing more may run or leave this client: it is about to crash.
    fn stop_for_good(&self);
    /// Asks the driver to carry out the rest of a fault after this step.
    fn request(&self, request: FaultRequest);
}

/// Fires `fault` inside the client that has just reached `reached`.
/// Returns whether the client must stop here for good (it is about to be
/// crashed).
pub fn fire_at_point<C: ClientStage>(client: &C, fault: &AimedFault, reached: FaultPoint) -> bool {
    let me = client.host();
    let aimed_at_me = fault.spec.target_host() == Some(me);
    let detail = format!("at {} of cycle {}", reached, fault.cycle);
    let now_us = client.now_us();
    let request = |started_us| {
        client.request(FaultRequest {
            fault: fault.index,
            started_us,
        })
    };
    let record_mine = |fault: FaultKind, phase: Phase, detail: String| {
        let target = FaultTarget::Host(me);
        record(client.recorder(), now_us, fault, target, phase, detail);
    };
    match &fault.spec.action {
        FaultAction::Pause(Pause { duration_ms, .. }) if aimed_at_me => {
            let detail = format!("{duration_ms} ms {detail}");
            record_mine(FaultKind::Pause, Phase::Start, detail);
            client.pause_here(Duration::from_millis(*duration_ms));
            // The driver records the end when the pause is over.
            request(Some(now_us));
            false
        }
        FaultAction::ClockJump(ClockJump { jump_ms, .. }) if aimed_at_me => {
            client.jump_own_clock(*jump_ms);
            record_mine(
                FaultKind::ClockJump,
                Phase::Instant,
                format!("{jump_ms:+} ms {detail}"),
            );
            false
        }
        FaultAction::Delay(Delay {
            a,
            b,
            oneway: true,
            duration_ms,
        }) => {
            // This client's own requests must not leave before the driver
            // gets to the hold after this step.
            let until_us = now_us + duration_ms * 1_000;
            if a.contains(&me) {
                for &node in b {
                    client.hold_own_link_at_once(node, true, until_us);
                }
            } else if b.contains(&me) {
                for &node in a {
                    client.hold_own_link_at_once(node, false, until_us);
                }
            }
            request(None);
            false
        }
        FaultAction::Crash(_) if aimed_at_me => {
            client.stop_for_good();
            request(None);
            true
        }
        _ => {
            request(None);
            false
        }
    }
}
