//! The nemesis: the one place where a scenario's faults are carried out,
//! whoever triggers them.
//!
//! A fault is triggered either by the agenda at its `at_ms`, or by a
//! client's fault hook when the client reaches the fault point it is aimed
//! at. In the second case the part that must happen at once, inside the
//! client, is done by [`fire_at_point`] (a pause or clock jump of the
//! client itself, or stopping it before it crashes); the rest needs the
//! turmoil simulation, which only the driver holds, so it goes through the
//! [`Mailbox`](crate::mailbox::Mailbox) and is done by `World::apply`
//! after the step. Every fault writes `fault` events (`start`, `end` or
//! `instant`) into the history; their meaning is in `docs/ladder.md`.

use crate::agenda::Action;
use crate::client_clock::SimClock;
use crate::client_host::ClientState;
use crate::fault::{FaultSpec, crash_name};
use crate::freeze::Direction;
use crate::freeze::sim_now;
use crate::history::{EventKind, FaultName, FaultTarget, Phase};
use crate::hook::AimedFault;
use crate::host::Host;
use crate::links::LinkCall;
use crate::mailbox::FaultRequest;
use crate::nodes::Nodes;
use crate::recorder::Recorder;
use crate::scenario::TopologyKind;
use crate::world::{Shared, World};
use locks::FaultPoint;
use simredis::CrashKind;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Records a fault event at `at_us` (real mode records its faults the
/// same way).
pub fn record(
    recorder: &Recorder,
    at_us: u64,
    fault: FaultName,
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

/// Fires `fault` inside the client of `state`, which has just reached
/// `reached`. Returns whether the client must stop here for good (it is
/// about to be crashed).
pub fn fire_at_point(
    state: &ClientState,
    shared: &Shared,
    fault: &AimedFault,
    reached: FaultPoint,
) -> bool {
    let me = state.host();
    let aimed_at_me = fault.spec.target_host() == Some(me);
    let detail = format!("at {} of cycle {}", reached, fault.cycle);
    let now_us = sim_now().as_micros() as u64;
    let request = |started_us| {
        shared.mailbox.request(FaultRequest {
            fault: fault.index,
            started_us,
        })
    };
    match &fault.spec {
        FaultSpec::Pause { duration_ms, .. } if aimed_at_me => {
            record(
                &shared.recorder,
                now_us,
                FaultName::Pause,
                FaultTarget::Host(me),
                Phase::Start,
                format!("{duration_ms} ms {detail}"),
            );
            state
                .freeze
                .freeze_until(sim_now() + Duration::from_millis(*duration_ms));
            // The driver records the end when the pause is over.
            request(Some(sim_now().as_micros() as u64));
            false
        }
        FaultSpec::ClockJump { jump_ms, .. } if aimed_at_me => {
            state.clock.jump(*jump_ms);
            record(
                &shared.recorder,
                now_us,
                FaultName::ClockJump,
                FaultTarget::Host(me),
                Phase::Instant,
                format!("{jump_ms:+} ms {detail}"),
            );
            false
        }
        FaultSpec::Delay {
            a,
            b,
            oneway: true,
            duration_ms,
            ..
        } => {
            // This client's own requests must not leave before the driver
            // gets to the hold after this step: hold them (or the replies
            // it is about to read) on its own socket at once.
            let until = sim_now() + Duration::from_millis(*duration_ms);
            let resolve = |h: &Host| shared.directory.resolve(*h);
            if a.contains(&me) {
                for &node in b {
                    state.links.hold(resolve(&node), Direction::Requests, until);
                }
            } else if b.contains(&me) {
                for &node in a {
                    state.links.hold(resolve(&node), Direction::Replies, until);
                }
            }
            request(None);
            false
        }
        FaultSpec::Crash { .. } if aimed_at_me => {
            // Nothing more may run or leave this process: shut the gate
            // for good; the driver crashes the host after this step.
            state.freeze.freeze_forever();
            request(None);
            true
        }
        _ => {
            request(None);
            false
        }
    }
}

impl World<'_> {
    /// Carries out what a client asked for at a fault point.
    pub(crate) fn handle_request(&mut self, request: FaultRequest) {
        let spec = self.faults[request.fault].clone();
        match (&spec, request.started_us) {
            (FaultSpec::Pause { duration_ms, .. }, Some(_)) => {
                if let Some(target) = spec.target_host() {
                    self.schedule_in(*duration_ms, Action::EndPause(target));
                }
            }
            _ => self.apply(request.fault),
        }
    }

    /// Carries out an action of the agenda.
    pub(crate) fn act(&mut self, action: Action) {
        match action {
            Action::Start(i) => self.apply(i),
            Action::EndPause(target) => {
                self.record(FaultName::Pause, FaultTarget::Host(target), Phase::End, "");
            }
            Action::Heal(i) => self.heal(i),
            Action::Release(i) => {
                if let FaultSpec::Delay { a, b, oneway, .. } = self.faults[i].clone() {
                    // A one-way hold opens by itself at its deadline.
                    if !oneway {
                        for (x, y) in self.host_pairs(&a, &b) {
                            let calls = self.links.release(x, y);
                            self.make(calls);
                        }
                    }
                    self.record(FaultName::Delay, sides(&a, &b), Phase::End, "");
                }
            }
            Action::Unslow(i) => {
                if let FaultSpec::SlowLink { a, b, .. } = &self.faults[i] {
                    let base = Duration::from_millis(self.scenario.network.latency_ms);
                    for (x, y) in self.pairs(a, b) {
                        self.sim.set_link_latency(x.as_str(), y.as_str(), base);
                    }
                    self.record(FaultName::SlowLink, sides(a, b), Phase::End, "");
                }
            }
            Action::Restart(host) => self.restart(host),
            Action::Promote => self.promote(),
        }
    }

    /// Records a fault event now.
    fn record(&self, fault: FaultName, target: FaultTarget, phase: Phase, detail: &str) {
        let now_us = self.now_us();
        record(
            &self.shared.recorder,
            now_us,
            fault,
            target,
            phase,
            detail.to_string(),
        );
    }

    /// Applies scenario fault `i` to the world now.
    pub(crate) fn apply(&mut self, i: usize) {
        let spec = self.faults[i].clone();
        let target = spec.target_host().map(|t| self.shared.directory.resolve(t));
        match &spec {
            FaultSpec::Pause { duration_ms, .. } => {
                let Some(client) = target.and_then(|t| self.client(t)) else {
                    return;
                };
                client
                    .freeze
                    .freeze_until(self.now() + Duration::from_millis(*duration_ms));
                let host = client.host();
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
                    self.make(calls);
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
                if *oneway {
                    let until = self.now() + Duration::from_millis(*duration_ms);
                    self.hold_one_way(a, b, until);
                } else {
                    for (x, y) in self.host_pairs(a, b) {
                        let calls = self.links.hold(x, y);
                        self.make(calls);
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
                let slow = Duration::from_millis(*latency_ms);
                for (x, y) in self.pairs(a, b) {
                    self.sim.set_link_latency(x.as_str(), y.as_str(), slow);
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
                |nodes, node| nodes.jump_clock(node, *jump_ms),
            ),
            FaultSpec::ClockDrift { ppm, .. } => self.change_clock(
                target,
                FaultName::ClockDrift,
                &format!("{ppm:+} ppm"),
                |clock| clock.set_drift(*ppm),
                |nodes, node| nodes.set_drift(node, *ppm),
            ),
            FaultSpec::Failover {
                promote_after_ms, ..
            } => self.fail_over(*promote_after_ms),
        }
    }

    /// Changes the clock of a client (`on_client`) or a node (`on_node`)
    /// and records the instant; a host this world lacks is left alone.
    fn change_clock(
        &self,
        target: Option<Host>,
        fault: FaultName,
        detail: &str,
        on_client: impl FnOnce(&SimClock),
        on_node: impl FnOnce(&Nodes, Host),
    ) {
        let Some(target) = target else { return };
        if let Some(client) = self.client(target) {
            on_client(&client.clock);
        } else if self.nodes.has(target) {
            on_node(&self.nodes, target);
        } else {
            return;
        }
        self.record(fault, FaultTarget::Host(target), Phase::Instant, detail);
    }

    /// Crashes a host; it restarts after `restart_after_ms` if given.
    fn crash(&mut self, target: Host, how: CrashKind, restart_after_ms: Option<u64>) {
        // A host that is already down cannot crash again; nor can a client
        // whose workload has finished (its process exited).
        if !self.host_exists(target) || !self.sim.is_host_running(target.to_string()) {
            return;
        }
        let phase = if restart_after_ms.is_some() {
            Phase::Start
        } else {
            Phase::Instant
        };
        self.record(
            FaultName::Crash,
            FaultTarget::Host(target),
            phase,
            crash_name(how),
        );
        if let Some(client) = self.client(target) {
            client.freeze.freeze_forever();
            if restart_after_ms.is_none() {
                client.crashed_for_good.store(true, Ordering::SeqCst);
            }
        } else {
            self.nodes.prepare_crash(target, how);
            if how == CrashKind::PowerLoss {
                // A machine that loses power sends no FIN or RST: its
                // peers learn of it only by timeouts.
                self.powered_off.insert(target);
                for other in self.all_hosts() {
                    if other != target {
                        let calls = self.links.partition(target, other, false);
                        self.make(calls);
                    }
                }
            }
        }
        self.sim.crash(target.to_string());
        if let Some(after) = restart_after_ms {
            self.schedule_in(after, Action::Restart(target));
        }
    }

    /// Kills the master and schedules the promotion of its first replica.
    fn fail_over(&mut self, promote_after_ms: u64) {
        let first = Host::Node(0);
        if self.topology.kind != TopologyKind::Replicated || self.topology.replicas == 0 {
            // No replica to promote: in its own deployment the same fault
            // is the loss of the first master, for good.
            self.record(
                FaultName::Failover,
                FaultTarget::Host(first),
                Phase::Instant,
                "no replica: master lost",
            );
            self.nodes.prepare_crash(first, CrashKind::ProcessKill);
            self.sim.crash(first.to_string());
            return;
        }
        let master = self.shared.directory.resolve(Host::Master);
        self.record(
            FaultName::Failover,
            FaultTarget::Host(master),
            Phase::Start,
            &format!("promote after {promote_after_ms} ms"),
        );
        self.nodes.prepare_crash(master, CrashKind::ProcessKill);
        self.sim.crash(master.to_string());
        self.schedule_in(promote_after_ms, Action::Promote);
    }

    /// Heals the partition of scenario fault `i`.
    fn heal(&mut self, i: usize) {
        if let FaultSpec::Partition { a, b, oneway, .. } = self.faults[i].clone() {
            for (x, y) in self.host_pairs(&a, &b) {
                let calls = self.links.heal(x, y, oneway);
                self.make(calls);
            }
            self.record(FaultName::Partition, sides(&a, &b), Phase::End, "");
        }
    }

    /// Makes turmoil's link calls.
    fn make(&mut self, calls: Vec<LinkCall>) {
        for call in calls {
            let name = |h: Host| h.to_string();
            match call {
                LinkCall::Partition(x, y) => self.sim.partition(name(x), name(y)),
                LinkCall::PartitionOneway(x, y) => self.sim.partition_oneway(name(x), name(y)),
                LinkCall::Repair(x, y) => self.sim.repair(name(x), name(y)),
                LinkCall::RepairOneway(x, y) => self.sim.repair_oneway(name(x), name(y)),
                LinkCall::Hold(x, y) => self.sim.hold(name(x), name(y)),
                LinkCall::Release(x, y) => self.sim.release(name(x), name(y)),
            }
        }
    }

    /// Holds the messages from side `a` to side `b` until `until`, in the
    /// sockets of the clients (validation made one side clients).
    fn hold_one_way(&self, a: &[Host], b: &[Host], until: Duration) {
        for (x, y) in self.host_pairs(a, b) {
            if let Some(client) = self.client(x) {
                client.links.hold(y, Direction::Requests, until);
            } else if let Some(client) = self.client(y) {
                client.links.hold(x, Direction::Replies, until);
            }
        }
    }

    /// Host pairs between two sides, aliases resolved (`master` follows
    /// failover); hosts this rung's world lacks are left out.
    fn host_pairs(&self, a: &[Host], b: &[Host]) -> Vec<(Host, Host)> {
        let mut out = Vec::new();
        for &x in a {
            for &y in b {
                let (x, y) = (
                    self.shared.directory.resolve(x),
                    self.shared.directory.resolve(y),
                );
                if self.host_exists(x) && self.host_exists(y) && x != y {
                    out.push((x, y));
                }
            }
        }
        out
    }

    /// The same pairs by turmoil name.
    fn pairs(&self, a: &[Host], b: &[Host]) -> Vec<(String, String)> {
        self.host_pairs(a, b)
            .into_iter()
            .map(|(x, y)| (x.to_string(), y.to_string()))
            .collect()
    }

    /// Restarts a crashed host.
    fn restart(&mut self, host: Host) {
        // Restarting a running host would kill it unrecorded (a second
        // crash fault may have restarted it already).
        let name = host.to_string();
        if self.sim.is_host_running(name.as_str()) {
            return;
        }
        if self.nodes.has(host) {
            // The silence of a power loss ends; partitions and delays of
            // scenario faults still in force stay.
            let powered_off = self.powered_off.remove(&host);
            for other in self.all_hosts() {
                if other != host {
                    let calls = if powered_off {
                        self.links.heal(host, other, false)
                    } else {
                        self.links.repair_all(host, other)
                    };
                    self.make(calls);
                }
            }
        }
        self.sim.bounce(name.as_str());
        self.record(
            FaultName::Crash,
            FaultTarget::Host(host),
            Phase::End,
            "restarted",
        );
    }

    /// Promotes the first node that is not the old master, and points
    /// `master` at it.
    fn promote(&mut self) {
        let old = self.shared.directory.resolve(Host::Master);
        let Some(replica) = self.nodes.hosts().into_iter().find(|n| *n != old) else {
            return;
        };
        self.nodes.promote(replica);
        self.shared.directory.point(Host::Master, replica);
        self.record(
            FaultName::Failover,
            FaultTarget::Host(replica),
            Phase::End,
            &format!("{replica} promoted"),
        );
    }
}

/// The target of a link fault between two sides, as the scenario names
/// them.
pub fn sides(a: &[Host], b: &[Host]) -> FaultTarget {
    FaultTarget::Sides {
        a: a.to_vec(),
        b: b.to_vec(),
    }
}
