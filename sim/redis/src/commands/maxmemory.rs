//! `maxmemory` as Redis 7.0 enforces it with the default policy,
//! `noeviction` (`processCommand`'s out-of-memory check and the script
//! engine's `scriptVerifyOOM`).
//!
//! When a master's used memory is over `maxmemory`, a command that may
//! grow the dataset (Redis's `denyoom` flag: `SET`, `LPUSH`...) is refused
//! with `OOM`, as is anything but `EXEC`/`DISCARD`/`QUIT`/`RESET` inside a
//! transaction, an `EXEC` whose queue holds such a command, and a script
//! that declares a shebang without `no-writes` or `allow-oom`. A script in
//! compatibility mode (no shebang) starts, and its first growing
//! `redis.call` is refused, unless it already wrote: the state is taken
//! once, when the script's command starts, so that memory the script
//! itself uses cannot interfere. Replicas ignore `maxmemory`, as Redis's
//! `replica-ignore-maxmemory` (default yes) has them.
//!
//! Used memory is the node's estimate (`INFO memory`'s `used_memory`),
//! not a real allocator's, so the line is crossed at other sizes than in
//! Redis; and no policy evicts: every `maxmemory-policy` acts as
//! `noeviction` here.

use crate::client::Client;
use crate::commands::command_info::has_flag;
use crate::commands::{Resolved, transactions};
use crate::handle::Role;
use crate::node::Node;
use crate::resp::Reply;

/// Redis's `shared.oomerr`.
pub(crate) fn oom_error() -> Reply {
    Reply::err("OOM command not allowed when used memory > 'maxmemory'.")
}

impl Node {
    /// Whether a master's used memory is over a `maxmemory` set.
    fn out_of_memory(&self) -> bool {
        let st = self.state.borrow();
        let max = st.config.maxmemory_bytes();
        max > 0 && st.role == Role::Master && crate::commands::info::used_memory(&st) > max
    }

    /// `processCommand`'s check: the `OOM` refusal of `resolved` from
    /// `c`, if memory is over the limit and the command may grow it. Also
    /// records the state for the scripts the command may run.
    pub(crate) fn refuse_when_out_of_memory(
        &self,
        c: &Client,
        resolved: Resolved,
        args: &[Vec<u8>],
    ) -> Option<Reply> {
        let oom = self.out_of_memory();
        self.oom_at_command_start.set(oom);
        (oom && self.grows_memory(c, resolved, args)).then(oom_error)
    }

    /// Whether Redis refuses `resolved` when memory is over the limit.
    fn grows_memory(&self, c: &Client, resolved: Resolved, args: &[Vec<u8>]) -> bool {
        let name = resolved.full_name();
        if c.multi.is_some() && !matches!(name, "exec" | "discard" | "quit" | "reset") {
            return true;
        }
        if name == "exec" {
            return transactions::queued_grows_memory(c);
        }
        match self.declared_script_flags(name, args) {
            Some(flags) => flags.denies_oom(),
            None => has_flag(name, "denyoom"),
        }
    }

    /// `scriptVerifyOOM`: the refusal of a command a script calls, when
    /// memory was over the limit as the script's command started, the
    /// command may grow it, and the script has not written yet.
    pub(crate) fn refuse_script_call_when_out_of_memory(&self, name: &str) -> Option<Reply> {
        let refused = self.oom_at_command_start.get()
            && !self.lua.allows_oom()
            && !self.lua.has_written()
            && has_flag(name, "denyoom");
        refused.then(oom_error)
    }
}
