//! `min-replicas-to-write` and `min-replicas-max-lag`, as Redis 7.0
//! enforces them (`checkGoodReplicasStatus`): a master with fewer "good"
//! replicas than asked (replicas whose last acknowledgement is at most
//! the lag, in whole seconds, old) refuses writes with `NOREPLICAS`: write
//! commands, an `EXEC` that queued one, a script whose shebang lacks
//! `no-writes`, and a script's first write (a script that already wrote
//! finishes). Either setting at 0 turns the check off; replicas never
//! refuse for it. A setting some deployments use to bound what a failover
//! can lose, and what a lock's writes see when replicas fall away.

use crate::client::Client;
use crate::commands::{Resolved, transactions};
use crate::handle::Role;
use crate::node::Node;
use crate::resp::Reply;

/// Redis's `shared.noreplicaserr`.
pub(crate) fn no_replicas_error() -> Reply {
    Reply::err("NOREPLICAS Not enough good replicas to write.")
}

impl Node {
    /// Whether writes may run: `checkGoodReplicasStatus`.
    fn enough_good_replicas(&self) -> bool {
        let st = self.state.borrow();
        let wanted = st.config.int("min-replicas-to-write");
        let max_lag_s = st.config.int("min-replicas-max-lag");
        if st.role != Role::Master || wanted == 0 || max_lag_s == 0 {
            return true;
        }
        let now_s = self.handle.now_ms().div_euclid(1000);
        let good = st
            .replicas
            .values()
            .filter(|l| now_s - l.ack_at_ms.div_euclid(1000) <= max_lag_s)
            .count();
        i64::try_from(good).unwrap_or(i64::MAX) >= wanted
    }

    /// `processCommand`'s check: the `NOREPLICAS` refusal of a write from
    /// `c` when too few replicas are good.
    pub(crate) fn refuse_write_without_replicas(
        &self,
        c: &Client,
        resolved: Resolved,
        args: &[Vec<u8>],
    ) -> Option<Reply> {
        if !self.writes_as_called(c, resolved, args) || self.enough_good_replicas() {
            return None;
        }
        Some(no_replicas_error())
    }

    /// Whether Redis flags the command, as called, a write: its own flag,
    /// an `EXEC` whose queue writes, a script declaring writes.
    fn writes_as_called(&self, c: &Client, resolved: Resolved, args: &[Vec<u8>]) -> bool {
        let name = resolved.full_name();
        if name == "exec" {
            return transactions::queued_writes(c);
        }
        match self.declared_script_flags(name, args) {
            Some(flags) => flags.declared && !flags.no_writes,
            None => resolved.cmd.write,
        }
    }

    /// `scriptVerifyWriteCommandAllow`'s check for a script's write: the
    /// refusal when too few replicas are good and the script has not
    /// written yet.
    pub(crate) fn refuse_script_write_without_replicas(&self) -> Option<Reply> {
        (!self.lua.has_written() && !self.enough_good_replicas()).then(no_replicas_error)
    }
}
