//! Real mode's stage for the nemesis: what each fault's effect is on real
//! processes and locklab's fault proxy (see `sim::nemesis` for what a
//! fault means; it is decided there, for both engines).
//!
//! A pause blocks a client's whole thread; a crash kills a client's
//! thread-process or a server by pid (`SIGKILL`); links are the proxy's
//! cuts, holds and latencies; a node's clock is moved by shifting the
//! lock service's way ([`crate::node_clock`]), as is a promotion
//! ([`crate::service::RealDeployment`]).

use crate::hook::RealHook;
use crate::run::RealWorld;
use model::fault::CrashKind;
use model::host::Host;
use sim::directory::Directory;
use sim::links::LinkCall;
use sim::mailbox::FaultRequest;
use sim::nemesis::{ClientStage, ClockChange, Nemesis, Stage, StageError};
use sim::recorder::Recorder;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn failed(e: impl std::fmt::Display) -> StageError {
    StageError(e.to_string())
}

impl Stage for RealWorld<'_> {
    fn nemesis(&mut self) -> &mut Nemesis {
        &mut self.nemesis
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn directory(&self) -> &Directory {
        &self.directory
    }

    fn client_count(&self) -> usize {
        self.clients.len()
    }

    fn node_hosts(&self) -> Vec<Host> {
        self.deployment.hosts()
    }

    fn is_running(&mut self, host: Host) -> bool {
        match host.client() {
            Some(c) => self.clients[c].process.running(),
            None => self.server_running(host),
        }
    }

    fn is_down(&mut self, host: Host) -> bool {
        match host.client() {
            Some(c) => self.clients[c].process.killed.load(Ordering::SeqCst),
            None => !self.server_running(host),
        }
    }

    fn pause_client(&mut self, index: usize, duration: Duration) {
        self.clients[index].process.pause(duration);
    }

    fn crash_client(&mut self, index: usize, for_good: bool) {
        let client = &self.clients[index];
        client.process.kill();
        if for_good {
            client.state.crashed_for_good.store(true, Ordering::SeqCst);
        }
    }

    fn crash_node(&mut self, node: Host, _how: CrashKind) {
        // A power loss's silence is the nemesis's cut links; what the
        // machine had not synced is lost only where the scenario's
        // persistence lets a killed process lose it (staging refuses the
        // rest before the run).
        match node {
            Host::Store => {
                self.store.kill(node);
            }
            _ => self.deployment.kill(node),
        }
    }

    fn lose_unsent_replication(&mut self, master: Host) {
        // The replication lag is the proxy's delay on the replication
        // links: what it still holds is what the old master had not sent.
        // Cutting those links loses it in flight instead of delivering it
        // to a replica after the kill.
        for replica in self.deployment.hosts().into_iter().filter(|h| *h != master) {
            let calls = self.nemesis.links().partition(master, replica, false);
            self.table.make(&calls);
        }
    }

    fn restart_client(&mut self, index: usize) -> Result<(), StageError> {
        self.start_process(index).map_err(failed)
    }

    fn restart_node(&mut self, node: Host) -> Result<(), StageError> {
        if node == Host::Store {
            return self.store.restart(node).map_err(failed);
        }
        self.deployment.restart(node).map_err(failed)?;
        // What it reloads ages by its moved clock, if it has one.
        let now = self.now();
        (self.node_clocks)
            .sync(node, now, &*self.deployment)
            .map_err(failed)
    }

    fn make(&mut self, calls: Vec<LinkCall>) {
        self.table.make(&calls);
    }

    fn hold_one_way(&mut self, from: Host, to: Host, _until: Duration) {
        // The nemesis releases it at the deadline.
        self.table.set_held(from, to, true);
    }

    fn release_one_way(&mut self, from: Host, to: Host) {
        self.table.set_held(from, to, false);
    }

    fn set_latency(&mut self, x: Host, y: Host, latency: Duration) {
        self.table.set_latency(x, y, latency);
    }

    fn move_clock(&mut self, host: Host, change: ClockChange) -> Result<bool, StageError> {
        if let Some(c) = host.client().filter(|&c| c < self.clients.len()) {
            let clock = &self.clients[c].state.clock;
            match change {
                ClockChange::JumpMs(ms) => clock.jump(ms),
                ClockChange::DriftPpm(ppm) => clock.set_drift(ppm),
            }
            return Ok(true);
        }
        // Only a node's clock is modelled (nodes with replicas were
        // refused before the run): its deadlines shift.
        if !(host.is_node() && self.deployment.hosts().contains(&host)) {
            return Ok(false);
        }
        let now = self.now();
        let clocks = &mut self.node_clocks;
        match change {
            ClockChange::JumpMs(ms) => clocks.jump(host, ms, now, &*self.deployment),
            ClockChange::DriftPpm(ppm) => clocks.set_drift(host, ppm, now, &*self.deployment),
        }
        .map_err(failed)?;
        Ok(true)
    }

    fn promote(&mut self, replica: Host, old: Host) -> Result<(), StageError> {
        (self.deployment)
            .promote(replica, old, &self.table)
            .map_err(failed)
    }
}

impl RealWorld<'_> {
    /// Whether the server of `host` (a node, or the store) is running.
    fn server_running(&self, host: Host) -> bool {
        match host {
            Host::Store => self.store.running(host),
            _ => self.deployment.running(host),
        }
    }
}

impl ClientStage for RealHook {
    fn host(&self) -> Host {
        self.state().host()
    }

    fn now_us(&self) -> u64 {
        self.recorder_ref().now_us()
    }

    fn recorder(&self) -> &Recorder {
        self.recorder_ref()
    }

    fn pause_here(&self, duration: Duration) {
        // Takes hold when the hook returns: the whole thread stands still
        // inside the lock code until the pause ends.
        self.process().pause(duration);
    }

    fn jump_own_clock(&self, jump_ms: i64) {
        self.state().clock.jump(jump_ms);
    }

    fn hold_own_link_at_once(&self, _remote: Host, _requests: bool, _until_us: u64) {
        // The driver holds the link in the proxy within its 1 ms step;
        // nothing here can hold it sooner.
    }

    fn stop_for_good(&self) {
        // Nothing more may leave this process; the driver records the
        // crash and restarts it if the scenario says so.
        self.process().dead.store(true, Ordering::SeqCst);
    }

    fn request(&self, request: FaultRequest) {
        self.mailbox().request(request);
    }
}
