//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, as
//! Redis 7.0.15's `multi.c` runs them.
//!
//! After `MULTI`, a client's commands are checked as usual (unknown
//! command, arity, `READONLY`, subscribed mode, commands not allowed in a
//! transaction) and queued (`+QUEUED`); a refused one flags the
//! transaction, and its `EXEC` answers `EXECABORT`. `EXEC` runs the queue
//! atomically: the keyspace clock frozen once, and every change committed
//! together at the end, as one replication batch (as a script's are).
//!
//! `WATCH`ed keys are checked at `EXEC`: a key written, deleted or expired
//! since (by anyone, through the node's commit path: clients, scripts,
//! replication, flushes, expiry) makes `EXEC` answer a null array. As in
//! Redis, a key already expired when it was watched is not "changed" by
//! its deletion, and a watched key that expires while watched counts as
//! changed even if nobody noticed it yet.

use std::collections::{BTreeMap, BTreeSet};

use super::command_info::has_flag;
use super::{Out, Resolved};
use crate::busy::FrontMulti;
use crate::client::Client;
use crate::events::Origin;
use crate::handle::Role;
use crate::node::Node;
use crate::resp::Reply;

/// A client's open transaction (between `MULTI` and `EXEC`/`DISCARD`).
#[derive(Debug, Default)]
pub(crate) struct Transaction {
    /// The queued commands, in order.
    queued: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queueing (Redis's `CLIENT_DIRTY_EXEC`).
    refused: bool,
    /// A queued command writes (`EXEC` is then a write: refused on a
    /// replica).
    writes: bool,
    /// A queued command may grow memory (`EXEC` is then refused over
    /// `maxmemory`).
    grows_memory: bool,
}

/// One client's watch on one key.
#[derive(Debug, Clone, Copy)]
struct Watch {
    /// The key was already expired (stale) when watched: its deletion is
    /// no change.
    stale: bool,
}

/// Every client's watched keys, and the clients whose watched keys changed.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    /// Watchers of each (database, key), by client id.
    by_key: BTreeMap<(usize, Vec<u8>), BTreeMap<u64, Watch>>,
    /// Each watching client's keys, to unwatch them all at once.
    by_client: BTreeMap<u64, Vec<(usize, Vec<u8>)>>,
    /// Clients whose `EXEC` must fail (Redis's `CLIENT_DIRTY_CAS`).
    dirty: BTreeSet<u64>,
}

impl Watches {
    /// `client` watches `key` of database `db`; `stale` if it exists but is
    /// already expired.
    fn watch(&mut self, client: u64, db: usize, key: &[u8], stale: bool) {
        let watchers = self.by_key.entry((db, key.to_vec())).or_default();
        if watchers.contains_key(&client) {
            return;
        }
        watchers.insert(client, Watch { stale });
        self.by_client
            .entry(client)
            .or_default()
            .push((db, key.to_vec()));
    }

    /// Forgets every key `client` watches, and its dirty flag.
    pub(crate) fn unwatch_all(&mut self, client: u64) {
        for k in self.by_client.remove(&client).unwrap_or_default() {
            if let Some(w) = self.by_key.get_mut(&k) {
                w.remove(&client);
                if w.is_empty() {
                    self.by_key.remove(&k);
                }
            }
        }
        self.dirty.remove(&client);
    }

    /// `key` of database `db` changed (`present`: it still exists): its
    /// watchers' transactions fail, except those who watched it stale and
    /// see it merely deleted.
    pub(crate) fn touch(&mut self, db: usize, key: &[u8], present: bool) {
        let Some(watchers) = self.by_key.get_mut(&(db, key.to_vec())) else {
            return;
        };
        for (client, w) in watchers.iter_mut() {
            if w.stale && !present {
                w.stale = false;
            } else {
                self.dirty.insert(*client);
            }
        }
    }

    /// Whether any watched key changed for `client`.
    fn is_dirty(&self, client: u64) -> bool {
        self.dirty.contains(&client)
    }

    /// The keys `client` watches that were live when watched.
    fn live_watched(&self, client: u64) -> Vec<(usize, Vec<u8>)> {
        let keys = self.by_client.get(&client).cloned().unwrap_or_default();
        keys.into_iter()
            .filter(|k| {
                self.by_key
                    .get(k)
                    .and_then(|w| w.get(&client))
                    .is_some_and(|w| !w.stale)
            })
            .collect()
    }
}

/// `EXECABORT` for a transaction with a refused command.
fn exec_abort_previous_errors() -> Reply {
    Reply::err("EXECABORT Transaction discarded because of previous errors.")
}

/// `EXECABORT` naming why `EXEC` itself was refused: the refusal's text,
/// without the `ERR ` code Redis's formatted errors get only when sent
/// alone (`READONLY` and the like stay).
fn exec_abort(reason: &Reply) -> Reply {
    let text = match reason {
        Reply::Error(t) => t.strip_prefix("ERR ").unwrap_or(t),
        _ => "",
    };
    Reply::err(format!(
        "EXECABORT Transaction discarded because of: {text}"
    ))
}

/// A command refused before it ran (`rejectCommand`): it flags the
/// client's transaction, and a refused `EXEC` ends the transaction with
/// `EXECABORT` naming the refusal (even outside a transaction, as Redis
/// answers).
pub(crate) fn reject(node: &Node, c: &mut Client, is_exec: bool, error: Reply) -> Reply {
    if let Some(tx) = c.multi.as_mut() {
        tx.refused = true;
    }
    if is_exec {
        discard_transaction(node, c);
        return exec_abort(&error);
    }
    error
}

/// The commands Redis refuses inside a transaction (`CMD_NO_MULTI`).
pub(crate) fn not_allowed_in_multi(c: &Client, r: Resolved) -> Option<Reply> {
    let no_multi = matches!(r.cmd.name, "psync" | "shutdown");
    (c.multi.is_some() && no_multi)
        .then(|| Reply::err("ERR Command not allowed inside a transaction"))
}

/// Queues a client's command if it is in a transaction (every command but
/// the transaction's own and `QUIT`): `+QUEUED`.
pub(crate) fn queue(c: &mut Client, r: Resolved, args: &[Vec<u8>]) -> Option<Out> {
    let tx = c.multi.as_mut()?;
    if matches!(
        r.cmd.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    ) {
        return None;
    }
    tx.queued.push(args.to_vec());
    tx.writes |= r.cmd.write;
    tx.grows_memory |= has_flag(r.full_name(), "denyoom");
    Some(Out::Reply(Reply::Status("QUEUED".into())))
}

impl Transaction {
    /// How many commands are queued.
    pub(crate) fn queued_len(&self) -> usize {
        self.queued.len()
    }
}

/// Whether the client's transaction queued a write (`EXEC` is then a
/// write).
pub(crate) fn queued_writes(c: &Client) -> bool {
    c.multi.as_ref().is_some_and(|tx| tx.writes)
}

/// Whether the client's transaction queued a command that may grow
/// memory (Redis's `mstate.cmd_flags & CMD_DENYOOM`).
pub(crate) fn queued_grows_memory(c: &Client) -> bool {
    c.multi.as_ref().is_some_and(|tx| tx.grows_memory)
}

/// Ends the client's transaction and unwatches its keys
/// (`discardTransaction`).
fn discard_transaction(node: &Node, c: &mut Client) {
    c.multi = None;
    node.state.borrow_mut().watches.unwatch_all(c.id);
}

/// Applies what the real-TCP server's front did to the client's
/// transaction while a script kept the node busy (see
/// [`crate::busy::answer_while_busy_in_multi`]).
pub(crate) fn apply_front(node: &Node, c: &mut Client, front: FrontMulti) {
    match front {
        FrontMulti::Unchanged => {}
        FrontMulti::Closed => discard_transaction(node, c),
        FrontMulti::Open | FrontMulti::Refused => {
            let tx = c.multi.get_or_insert_with(Transaction::default);
            tx.refused |= front == FrontMulti::Refused;
        }
    }
}

/// `MULTI`
pub(crate) fn multi(_: &Node, c: &mut Client, _: &[Vec<u8>]) -> Out {
    if c.multi.is_some() {
        return Out::Reply(Reply::err("ERR MULTI calls can not be nested"));
    }
    c.multi = Some(Transaction::default());
    Out::Reply(Reply::ok())
}

/// `DISCARD`
pub(crate) fn discard(node: &Node, c: &mut Client, _: &[Vec<u8>]) -> Out {
    if c.multi.is_none() {
        return Out::Reply(Reply::err("ERR DISCARD without MULTI"));
    }
    discard_transaction(node, c);
    Out::Reply(Reply::ok())
}

/// `WATCH key [key ...]` (in the client's selected database).
pub(crate) fn watch(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    if c.multi.is_some() {
        return Out::Reply(Reply::err("ERR WATCH inside MULTI is not allowed"));
    }
    let now = node.handle.now_ms();
    let mut st = node.state.borrow_mut();
    for key in &a[1..] {
        let stale = is_stale(st.dbs.db(c.db).peek(key).and_then(|e| e.deadline), now);
        st.watches.watch(c.id, c.db, key, stale);
    }
    Out::Reply(Reply::ok())
}

/// Whether a key with this deadline is expired at `now` (without expiring
/// it: `WATCH` and `EXEC`'s check only look).
fn is_stale(deadline: Option<i64>, now: i64) -> bool {
    deadline.is_some_and(|d| now > d)
}

/// `UNWATCH`
pub(crate) fn unwatch(node: &Node, c: &mut Client, _: &[Vec<u8>]) -> Out {
    node.state.borrow_mut().watches.unwatch_all(c.id);
    Out::Reply(Reply::ok())
}

/// Whether a key the client watched live has expired since (Redis's
/// `isWatchedKeyExpired`), noticed or not.
fn watched_key_expired(node: &Node, c: &Client, now: i64) -> bool {
    let st = node.state.borrow();
    st.watches
        .live_watched(c.id)
        .iter()
        .any(|(db, k)| is_stale(st.dbs.db(*db).peek(k).and_then(|e| e.deadline), now))
}

/// `EXEC`: runs the queued commands atomically, or answers why not.
pub(crate) fn exec(node: &Node, c: &mut Client, _: &[Vec<u8>]) -> Out {
    let Some(tx) = c.multi.take() else {
        return Out::Reply(Reply::err("ERR EXEC without MULTI"));
    };
    // Redis counts EXEC as a write when a queued command writes, and
    // refuses it on a replica before running it.
    if tx.writes && node.state.borrow().role != Role::Master {
        discard_transaction(node, c);
        return Out::Reply(exec_abort(&super::readonly_error()));
    }
    let now = node.handle.now_ms();
    let dirty = watched_key_expired(node, c, now) || node.state.borrow().watches.is_dirty(c.id);
    discard_transaction(node, c);
    if tx.refused {
        return Out::Reply(exec_abort_previous_errors());
    }
    if dirty {
        return Out::Reply(Reply::NilArray);
    }
    Out::Reply(Reply::Array(run_queued(node, c, tx.queued, now)))
}

/// Runs a transaction's commands with the clock frozen at `now`, then
/// commits all their changes at once.
fn run_queued(node: &Node, c: &mut Client, queued: Vec<Vec<Vec<u8>>>, now: i64) -> Vec<Reply> {
    node.state.borrow_mut().dbs.set_now(now);
    node.in_exec.set(true);
    let mut replies = Vec::with_capacity(queued.len());
    for args in queued {
        // The table resolved these when they were queued.
        let Ok(r) = super::resolve(&args, node.handle.config().version) else {
            continue;
        };
        match node.dispatch(c, r.cmd, &args) {
            Out::Reply(reply) | Out::Quit(reply) => replies.push(reply),
            Out::Replies(rs) => replies.extend(rs),
            // Nothing blocks inside a transaction: `WAIT` answers the
            // count at once, as Redis's does in MULTI.
            Out::Wait { .. } => replies.push(Reply::Int(node.acked(c.woff))),
            // `PSYNC` and `SHUTDOWN` are refused while queueing; a
            // blocking command runs its form that never blocks here (only
            // a client's own `BLPOP` outside MULTI blocks).
            Out::Psync { .. } | Out::Shutdown | Out::Block(_) => {}
        }
    }
    node.in_exec.set(false);
    node.commit(Origin::Client);
    c.woff = node.state.borrow().offset;
    replies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_watched_key_deleted_is_no_change_but_written_is() {
        let mut w = Watches::default();
        w.watch(1, 0, b"k", true);
        w.touch(0, b"k", false);
        assert!(!w.is_dirty(1));
        w.touch(0, b"k", true);
        assert!(w.is_dirty(1));
        w.unwatch_all(1);
        assert!(!w.is_dirty(1));
        w.touch(0, b"k", true);
        assert!(!w.is_dirty(1));
    }

    #[test]
    fn a_watch_belongs_to_its_database() {
        let mut w = Watches::default();
        w.watch(1, 5, b"x", false);
        w.touch(1, b"x", true);
        assert!(!w.is_dirty(1));
        w.touch(5, b"x", true);
        assert!(w.is_dirty(1));
    }
}
