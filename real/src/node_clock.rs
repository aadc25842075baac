//! A node's clock jump or drift, staged on a real server by shifting the
//! deadlines of the keys already there.
//!
//! Redis keeps a key's deadline as an absolute time of its own clock
//! (`mstime()`), and so does the simulated node (`simredis::clock`, whose
//! clock reads `epoch + offset + elapsed × (1 + ppm / 1e6)`). Moving the
//! node's clock by J ms therefore moves, in real time, the expiry of every
//! key that is already there by -J, and nothing else about later keys set
//! with a relative TTL (`PX`): their deadline is the node's now plus the
//! TTL either way. So a jump forward by J is staged as one Lua script on
//! that node (sent straight to its port, past the proxy, so no network
//! fault delays it) that moves every volatile key's deadline by -J
//! (`PEXPIRETIME`, then `PEXPIREAT`; a key whose deadline is then past is
//! deleted at once, as the jumped clock would expire it); a jump backward
//! moves them by +J. Drift at `ppm` is the same offset growing with time
//! (offset = ppm × elapsed / 1e6, exactly the simulator's formula): every
//! [`DRIFT_TICK`] of real time the whole milliseconds the offset has grown
//! by since the last shift are applied. A node that is down when its clock
//! moves (or while it drifts) gets the shift it missed as soon as it is
//! restarted, before any link to it is repaired, so keys it reloads from
//! its AOF expire by the moved clock, as in the simulator.
//!
//! Only locklab's keys are shifted: the scenario's lock key and every key
//! whose name starts with it (what the rungs derive from it, such as
//! `<key>:fence`, which has no deadline and is left as it is).
//!
//! What this reproduces: when each lock key expires, the `PTTL` replies
//! (deadline minus the node's now, as in the simulator), and the keys a
//! forward jump expires at once. What it does not:
//! - `TIME`, and scripts reading the node's clock, still see the machine's
//!   clock (no rung reads either);
//! - a deadline a client gives as an absolute time (`PXAT`, `PEXPIREAT`)
//!   after the fault is not moved (no rung sets one);
//! - drift is applied in whole milliseconds every [`DRIFT_TICK`], so a key
//!   set between two shifts is moved by up to one millisecond more than
//!   its own lifetime's share;
//! - a node with replicas, or a replica: Redis propagates absolute
//!   deadlines, so the shift would move the replicas' deadlines too, and
//!   keys set after the fault would carry the machine's clock to the
//!   replicas where the simulator carries the jumped one; a replica is
//!   read-only besides. Those cells stay "not stageable"
//!   ([`crate::stage`]).

use crate::nodes::{Nodes, command};
use model::host::Host;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// How often a drifting node's deadlines are shifted.
pub const DRIFT_TICK: Duration = Duration::from_millis(10);

/// Moves the deadline of every volatile key matching one of the patterns
/// (`ARGV[2..]`) by `-ARGV[1]` ms; a deadline then past deletes the key.
/// Answers "<shifted> <expired>".
const SHIFT_SCRIPT: &str = r#"
local shift = tonumber(ARGV[1])
local seen, shifted, expired = {}, 0, 0
for i = 2, #ARGV do
  for _, key in ipairs(redis.call('KEYS', ARGV[i])) do
    if not seen[key] then
      seen[key] = true
      local at = redis.call('PEXPIRETIME', key)
      if at > 0 then
        local moved = at - shift
        if moved < 1 then moved = 1 end
        redis.call('PEXPIREAT', key, moved)
        if redis.call('EXISTS', key) == 1 then
          shifted = shifted + 1
        else
          expired = expired + 1
        end
      end
    end
  end
end
return shifted .. ' ' .. expired
"#;

/// What one shift did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShiftCount {
    /// Keys whose deadline moved and that still exist.
    pub shifted: u64,
    /// Keys the move put past their deadline, deleted at once.
    pub expired: u64,
}

/// The glob pattern matching `prefix` and every name starting with it.
pub fn prefix_pattern(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('*');
    pattern
}

/// Atomically moves the deadline of every volatile key of the node at
/// `addr` whose name starts with one of `prefixes` by `-shift_ms` (the
/// node's clock moved forward by `shift_ms`; negative: backward).
pub fn shift_deadlines(
    addr: SocketAddr,
    shift_ms: i64,
    prefixes: &[String],
) -> Result<ShiftCount, String> {
    let shift = shift_ms.to_string();
    let patterns: Vec<String> = prefixes.iter().map(|p| prefix_pattern(p)).collect();
    let mut args = vec!["EVAL", SHIFT_SCRIPT, "0", &shift];
    args.extend(patterns.iter().map(String::as_str));
    let reply = command(addr, &args)?;
    let text = reply.split("\r\n").nth(1).unwrap_or_default();
    let mut counts = text.split(' ').map(str::parse::<u64>);
    match (counts.next(), counts.next()) {
        (Some(Ok(shifted)), Some(Ok(expired))) => Ok(ShiftCount { shifted, expired }),
        _ => Err(format!(
            "{addr}: the deadline shift answered {:?}, expected \"<shifted> <expired>\"",
            reply.trim_end()
        )),
    }
}

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
        nodes: &Nodes,
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
        nodes: &Nodes,
    ) -> Result<(), String> {
        self.clocks.entry(host).or_default().set_drift(ppm, at);
        self.sync(host, at, nodes)
    }

    /// Shifts the drifting nodes' deadlines, at most once per
    /// [`DRIFT_TICK`].
    pub fn tick(&mut self, at: Duration, nodes: &Nodes) -> Result<(), String> {
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
    pub fn sync(&mut self, host: Host, at: Duration, nodes: &Nodes) -> Result<(), String> {
        let Some(clock) = self.clocks.get_mut(&host) else {
            return Ok(());
        };
        let pending = clock.pending_ms(at);
        if pending == 0 || !nodes.running(host) {
            return Ok(());
        }
        let addr = nodes
            .addr(host)
            .ok_or_else(|| format!("{host} is not a node of this run"))?;
        shift_deadlines(addr, pending, &self.prefixes)
            .map_err(|e| format!("shifting the deadlines of {host}: {e}"))?;
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

    #[test]
    fn a_prefix_pattern_escapes_glob_characters() {
        assert_eq!(prefix_pattern("lock:stock"), "lock:stock*");
        assert_eq!(prefix_pattern("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\*");
    }
}
