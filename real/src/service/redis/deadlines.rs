//! A Redis node's clock jump or drift, staged on a real server by
//! shifting the deadlines of the keys already there.
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
//! moves them by +J. Drift is a run of such shifts, and a node that was
//! down gets the shift it missed when it restarts, before any link to it
//! is repaired, so keys it reloads from its AOF expire by the moved clock
//! ([`crate::node_clock`]).
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
//! - drift is applied in whole milliseconds every
//!   [`DRIFT_TICK`](crate::node_clock::DRIFT_TICK), so a key set between
//!   two shifts is moved by up to one millisecond more than
//!   its own lifetime's share;
//! - a node with replicas, or a replica: Redis propagates absolute
//!   deadlines, so the shift would move the replicas' deadlines too, and
//!   keys set after the fault would carry the machine's clock to the
//!   replicas where the simulator carries the jumped one; a replica is
//!   read-only besides. Those cells stay "not stageable"
//!   ([`crate::stage`]).

use crate::nodes::command;
use std::net::SocketAddr;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_pattern_escapes_glob_characters() {
        assert_eq!(prefix_pattern("lock:stock"), "lock:stock*");
        assert_eq!(prefix_pattern("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\*");
    }
}
