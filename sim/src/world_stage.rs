//! The simulator's stage for the nemesis: what each fault's effect is on
//! turmoil's world (see [`crate::nemesis`] for what a fault means).
//!
//! A pause shuts a client's gate until a true simulated instant; a crash
//! is turmoil's crash of the host (after the node learns how it died, so
//! that a power loss loses what it had not synced); a node's clock and a
//! promotion are the lock service's ([`crate::service::SimDeployment`]); links are turmoil's
//! partitions, holds and latencies, except one-way holds, which turmoil
//! cannot make and the clients' own sockets do.

use crate::client_host::SimClientState;
use crate::directory::Directory;
use crate::freeze::{Direction, sim_now};
use crate::hook::SimHook;
use crate::links::LinkCall;
use crate::mailbox::FaultRequest;
use crate::nemesis::{ClientStage, ClockChange, Nemesis, Stage, StageError};
use crate::recorder::Recorder;
use crate::world::World;
use model::fault::CrashKind;
use model::host::Host;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Stage for World<'_> {
    fn nemesis(&mut self) -> &mut Nemesis {
        &mut self.nemesis
    }

    fn now(&self) -> Duration {
        self.sim.elapsed()
    }

    fn recorder(&self) -> &Recorder {
        &self.shared.recorder
    }

    fn directory(&self) -> &Directory {
        &self.shared.directory
    }

    fn client_count(&self) -> usize {
        self.clients.len()
    }

    fn node_hosts(&self) -> Vec<Host> {
        self.nodes.hosts()
    }

    fn is_running(&mut self, host: Host) -> bool {
        self.sim.is_host_running(self.machines.name(host))
            && !self.shared.directory.killed().is_killed(host)
    }

    fn is_down(&mut self, host: Host) -> bool {
        !self.is_running(host)
    }

    fn pause_client(&mut self, index: usize, duration: Duration) {
        let until = Stage::now(self) + duration;
        self.clients[index].machine.freeze.freeze_until(until);
    }

    fn crash_client(&mut self, index: usize, for_good: bool) {
        let client = &self.clients[index];
        client.machine.freeze.freeze_forever();
        if for_good {
            client.crashed_for_good.store(true, Ordering::SeqCst);
        }
        self.sim.crash(self.machines.name(client.host()));
    }

    fn crash_node(&mut self, node: Host, how: CrashKind) {
        self.nodes.prepare_crash(node, how);
        self.sim.crash(self.machines.name(node));
        if how == CrashKind::ProcessKill {
            // The machine outlives its process: it refuses connections
            // and resets old ones (`crate::killed_servers`).
            self.shared.directory.killed().kill(node);
            self.sim.bounce(self.machines.name(node));
        }
    }

    fn lose_unsent_replication(&mut self, _master: Host) {
        // A simulated node keeps its replication buffer in its own
        // process: the crash that follows loses it.
    }

    fn restart_client(&mut self, index: usize) -> Result<(), StageError> {
        self.sim.bounce(self.machines.name(Host::Client(index)));
        Ok(())
    }

    fn restart_node(&mut self, node: Host) -> Result<(), StageError> {
        self.shared.directory.killed().revive(node);
        self.sim.bounce(self.machines.name(node));
        Ok(())
    }

    fn make(&mut self, calls: Vec<LinkCall>) {
        for call in calls {
            let name = |h: Host| self.machines.name(h);
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

    fn hold_one_way(&mut self, from: Host, to: Host, until: Duration) {
        // Scenario validation put clients on exactly one side: the hold is
        // in their sockets.
        if let Some(client) = self.client(from) {
            client.machine.links.hold(to, Direction::Requests, until);
        } else if let Some(client) = self.client(to) {
            client.machine.links.hold(from, Direction::Replies, until);
        }
    }

    fn release_one_way(&mut self, _from: Host, _to: Host) {
        // A one-way hold opens by itself at its deadline.
    }

    fn set_latency(&mut self, x: Host, y: Host, latency: Duration) {
        let (x, y) = (self.machines.name(x), self.machines.name(y));
        self.sim.set_link_latency(x, y, latency);
    }

    fn move_clock(&mut self, host: Host, change: ClockChange) -> Result<bool, StageError> {
        if let Some(client) = self.client(host) {
            match change {
                ClockChange::JumpMs(ms) => client.clock.jump(ms),
                ClockChange::DriftPpm(ppm) => client.clock.set_drift(ppm),
            }
        } else if self.nodes.has(host) {
            self.nodes.move_clock(host, change);
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    fn promote(&mut self, replica: Host, _old: Host) -> Result<(), StageError> {
        self.nodes.promote(replica);
        Ok(())
    }
}

impl ClientStage for SimHook {
    fn host(&self) -> Host {
        self.state().host()
    }

    fn now_us(&self) -> u64 {
        sim_now().as_micros() as u64
    }

    fn recorder(&self) -> &Recorder {
        &self.shared().recorder
    }

    fn pause_here(&self, duration: Duration) {
        self.state()
            .machine
            .freeze
            .freeze_until(sim_now() + duration);
    }

    fn jump_own_clock(&self, jump_ms: i64) {
        self.state().clock.jump(jump_ms);
    }

    fn hold_own_link_at_once(&self, remote: Host, requests: bool, until_us: u64) {
        let direction = if requests {
            Direction::Requests
        } else {
            Direction::Replies
        };
        let until = Duration::from_micros(until_us);
        let remote = self.shared().directory.resolve(remote);
        self.state().machine.links.hold(remote, direction, until);
    }

    fn stop_for_good(&self) {
        // Nothing more may run or leave this process: the gate shuts for
        // good; the driver crashes the host after this step.
        self.state().machine.freeze.freeze_forever();
    }

    fn request(&self, request: FaultRequest) {
        self.shared().mailbox.request(request);
    }
}

impl World<'_> {
    /// The client a host is, if it is one of the world's clients.
    fn client(&self, host: Host) -> Option<&SimClientState> {
        host.client()
            .and_then(|c| self.clients.get(c))
            .map(|c| &**c)
    }
}
