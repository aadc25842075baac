//! A node's clock jump or drift in real mode: the node's clock as an
//! offset from the machine's, and how much of it the node already
//! carries.
//!
//! A real server's clock cannot be moved (see `crate::stage`), so the
//! lock service stages the offset on what its node keeps by that clock
//! ([`RealDeployment::shift_clock`]; for Redis, the deadlines of its
//! keys, `crate::service::redis::deadlines`). A jump is one shift. Drift
//! at `ppm` is the same offset growing with time (offset = ppm × elapsed
//! / 1e6, exactly the simulator's formula): every [`DRIFT_TICK`] of real
//! time the whole milliseconds the offset has grown by since the last
//! shift are applied. A node that is down when its clock moves (or while
//! it drifts) gets the shift it missed as soon as it is restarted, before
//! any link to it is repaired, so what it reloads from its disk ages by
//! the moved clock, as in the simulator.

use crate::service::RealDeployment;
use model::host::Host;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often a drifting node's deadlines are shifted.
pub const DRIFT_TICK: Duration = Duration::from_millis(10);

/// One node's clock as an offset from the machine's clock, and how much
/// of it the node's deadlines already carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockOffset {
    /// The offset (node clock minus the machine's) at `base_at_ns`.
    base_offset_ns: i128,
    /// Run time (since the workload started) of the last re-base.
    base_at_ns: i128,
    drift_ppm: i64,
    /// Offset already moved into the node's deadlines.
    applied_ms: i64,
}

impl ClockOffset {
    /// The offset at run time `at`, in ns.
    pub fn offset_ns_at(&self, at: Duration) -> i128 {
        let since = at.as_nanos() as i128 - self.base_at_ns;
        self.base_offset_ns + since * i128::from(self.drift_ppm) / 1_000_000
    }

    /// Moves the clock by `jump_ms` (negative: backward), at once.
    pub fn jump(&mut self, jump_ms: i64) {
        self.base_offset_ns += i128::from(jump_ms) * 1_000_000;
    }

    /// Changes the drift from run time `at` on (the clock is continuous).
    pub fn set_drift(&mut self, ppm: i64, at: Duration) {
        self.base_offset_ns = self.offset_ns_at(at);
        self.base_at_ns = at.as_nanos() as i128;
        self.drift_ppm = ppm;
    }

    /// Whether the clock drifts.
    pub fn drifts(&self) -> bool {
        self.drift_ppm != 0
    }

    /// Whole milliseconds of offset the deadlines do not carry yet.
    pub fn pending_ms(&self, at: Duration) -> i64 {
        self.offset_ns_at(at).div_euclid(1_000_000) as i64 - self.applied_ms
    }

    /// Records that `shift_ms` more was moved into the deadlines.
    pub fn applied(&mut self, shift_ms: i64) {
        self.applied_ms += shift_ms;
    }
}

/// The moved clocks of a run's nodes.
#[derive(Debug, Default)]
pub struct NodeClocks {
    clocks: BTreeMap<Host, ClockOffset>,
    prefixes: Vec<String>,
    last_tick: Duration,
}

impl NodeClocks {
    /// No clock moved yet; `prefixes` name locklab's keys.
    pub fn new(prefixes: Vec<String>) -> NodeClocks {
        NodeClocks {
            clocks: BTreeMap::new(),
            prefixes,
            last_tick: Duration::ZERO,
        }
    }

    /// Jumps `host`'s clock by `jump_ms` at run time `at`.
    pub fn jump(
        &mut self,
        host: Host,
        jump_ms: i64,
        at: Duration,
        nodes: &dyn RealDeployment,
    ) -> Result<(), String> {
        self.clocks.entry(host).or_default().jump(jump_ms);
        self.sync(host, at, nodes)
    }

    /// Sets `host`'s drift to `ppm` from run time `at` on.
    pub fn set_drift(
        &mut self,
        host: Host,
        ppm: i64,
        at: Duration,
        nodes: &dyn RealDeployment,
    ) -> Result<(), String> {
        self.clocks.entry(host).or_default().set_drift(ppm, at);
        self.sync(host, at, nodes)
    }

    /// Shifts the drifting nodes' deadlines, at most once per
    /// [`DRIFT_TICK`].
    pub fn tick(&mut self, at: Duration, nodes: &dyn RealDeployment) -> Result<(), String> {
        if at < self.last_tick + DRIFT_TICK {
            return Ok(());
        }
        self.last_tick = at;
        let drifting: Vec<Host> = (self.clocks.iter())
            .filter(|(_, c)| c.drifts())
            .map(|(h, _)| *h)
            .collect();
        for host in drifting {
            self.sync(host, at, nodes)?;
        }
        Ok(())
    }

    /// Moves into `host`'s deadlines whatever offset they do not carry
    /// yet; nothing while it is down (its restart calls this again).
    pub fn sync(
        &mut self,
        host: Host,
        at: Duration,
        nodes: &dyn RealDeployment,
    ) -> Result<(), String> {
        let Some(clock) = self.clocks.get_mut(&host) else {
            return Ok(());
        };
        let pending = clock.pending_ms(at);
        if pending == 0 || !nodes.running(host) {
            return Ok(());
        }
        nodes.shift_clock(host, pending, &self.prefixes)?;
        clock.applied(pending);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_is_pending_until_applied() {
        let mut c = ClockOffset::default();
        c.jump(3_000);
        assert_eq!(c.pending_ms(Duration::from_secs(5)), 3_000);
        c.applied(3_000);
        assert_eq!(c.pending_ms(Duration::from_secs(9)), 0);
        c.jump(-500);
        assert_eq!(c.pending_ms(Duration::from_secs(9)), -500);
    }

    #[test]
    fn drift_grows_the_offset_like_the_simulated_node_clock() {
        let mut c = ClockOffset::default();
        c.set_drift(1_000, Duration::from_secs(2));
        // 1000 ppm over 10 s is 10 ms; nothing before the drift started.
        assert_eq!(c.pending_ms(Duration::from_secs(12)), 10);
        assert_eq!(c.pending_ms(Duration::from_millis(2_999)), 0);
        c.applied(10);
        c.set_drift(0, Duration::from_secs(12));
        assert_eq!(c.pending_ms(Duration::from_secs(100)), 0);
        // A slow clock moves deadlines later, in whole milliseconds.
        c.set_drift(-500, Duration::from_secs(100));
        assert_eq!(c.pending_ms(Duration::from_millis(100_001)), -1);
    }
}
