//! Blocking commands (`BLPOP`, `BLMOVE`, `BLMPOP`, `BZPOPMIN`, `BZMPOP`...):
//! clients that wait for a key to be ready, in simulated time.
//!
//! A blocking command has two forms. Its keyspace handler is the form that
//! never blocks: what a script or a transaction runs, answering as if the
//! timeout had already passed. For a client, the command's [`BlockFn`]
//! (set with `Command::blocking` in the command table) runs instead: it
//! serves the client at once if it can, or returns a [`Block`] that names
//! the keys to wait on, how long, and how to serve the client later.
//!
//! Waking is not tied to any type: every key a committed command, script
//! or served waiter *wrote* and that has waiters is "ready"; once the
//! command (or script) that wrote it has ended, the node offers each ready
//! key to its waiters in the order they blocked. Each waiter's [`ServeFn`]
//! decides whether the key serves it (a list waiter wants a non-empty list,
//! a sorted-set waiter a non-empty sorted set) and, if so, takes
//! its element and answers; a waiter the key does not serve keeps waiting,
//! as Redis 7.0 leaves a client blocked on a key re-created with another
//! type. A served pop is committed like any command (events, disk,
//! replicas), and what it writes (`BLMOVE`'s destination) may wake others.
//!
//! The connection of a blocked client waits on [`Ticket::woken`]: the
//! reply a waker sends, or its timeout, measured in tokio time (simulated
//! time under turmoil), as `WAIT` measures its own. A RESP3 client's reply
//! then takes its command's RESP3 form (`BZPOPMIN`'s score a double), as
//! a reply served at once does.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::client::Client;
use crate::commands::Out;
use crate::commands::resp3::Resp3Fn;
use crate::events::Origin;
use crate::keyspace::{Change, Keyspace};
use crate::node::Node;
use crate::resp::{Protocol, Reply};

/// What a blocking command does for a client: serve it now, block it, or
/// answer an error.
pub(crate) type BlockFn = fn(&mut Keyspace, &[Vec<u8>]) -> Result<Attempt, Reply>;

/// Offers a ready `key` to a waiter whose command was `args`: `None` if
/// the key does not serve it (absent, empty, another type: it keeps
/// waiting), else its reply (an error reply unblocks it too, as Redis's
/// `BLMOVE` onto a key of another type).
pub(crate) type ServeFn = fn(&mut Keyspace, args: &[Vec<u8>], key: &[u8]) -> Option<Reply>;

/// What a blocking command's first attempt found.
pub(crate) enum Attempt {
    /// The client is answered at once (an element was there).
    Served(Reply),
    /// Nothing to take: the client blocks.
    Block(Block),
}

/// How a client blocks.
pub(crate) struct Block {
    /// The keys it waits on.
    pub(crate) keys: Vec<Vec<u8>>,
    /// How long it waits, in ms (Redis rounds the seconds up to a ms);
    /// 0 waits for ever.
    pub(crate) timeout_ms: i64,
    /// How a ready key serves it.
    pub(crate) serve: ServeFn,
    /// What it gets when the timeout passes.
    pub(crate) timed_out: Reply,
}

/// A blocking command's answer when it may not block (a script, a
/// transaction): as if its timeout had passed.
pub(crate) fn without_blocking(attempt: Result<Attempt, Reply>) -> Result<Reply, Reply> {
    match attempt? {
        Attempt::Served(reply) => Ok(reply),
        Attempt::Block(b) => Ok(b.timed_out),
    }
}

/// `UNBLOCKED ...`: Redis 7.0's answer to clients blocked on a master that
/// becomes a replica.
pub(crate) const UNBLOCKED_BY_FAILOVER: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";

/// `CLIENT UNBLOCK ... ERROR`'s answer to the client it unblocks.
pub(crate) const UNBLOCKED_BY_CLIENT: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// One blocked client.
struct Waiter {
    /// Its client id (its connection's end removes it).
    client: u64,
    /// The database its keys are in (its client's selected one).
    db: usize,
    /// The keys it waits on.
    keys: Vec<Vec<u8>>,
    /// Its command, as sent.
    args: Vec<Vec<u8>>,
    /// How a ready key serves it.
    serve: ServeFn,
    /// What it gets if it times out (or `CLIENT UNBLOCK` times it out).
    timed_out: Reply,
    /// Where its reply goes, with the replication offset after the write
    /// that served it (what its `WAIT` then waits for).
    reply: oneshot::Sender<(Reply, u64)>,
}

/// The node's blocked clients, and the keys ready to serve them.
#[derive(Default)]
pub(crate) struct Blocked {
    /// The id the next waiter gets: ids grow, so an id order is the order
    /// clients blocked in.
    next_id: u64,
    /// The waiters, by id.
    waiters: BTreeMap<u64, Waiter>,
    /// Each key's waiters, by database and key, first blocked first.
    by_key: BTreeMap<(usize, Vec<u8>), VecDeque<u64>>,
    /// Keys written since they were last offered, with their database, in
    /// the order written.
    ready: VecDeque<(usize, Vec<u8>)>,
    /// Whether the node is offering ready keys now (serving a waiter
    /// commits, and a commit must not start serving again).
    serving: bool,
}

impl Blocked {
    /// Adds a waiter; returns its id.
    fn add(&mut self, waiter: Waiter) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        for k in &waiter.keys {
            self.by_key
                .entry((waiter.db, k.clone()))
                .or_default()
                .push_back(id);
        }
        self.waiters.insert(id, waiter);
        id
    }

    /// Removes a waiter; returns it if it was still waiting.
    fn remove(&mut self, id: u64) -> Option<Waiter> {
        let w = self.waiters.remove(&id)?;
        for k in &w.keys {
            let at = (w.db, k.clone());
            if let Some(q) = self.by_key.get_mut(&at) {
                q.retain(|&i| i != id);
                if q.is_empty() {
                    self.by_key.remove(&at);
                }
            }
        }
        Some(w)
    }

    /// Notes the keys of database `db` written that have waiters as ready.
    fn note_written(&mut self, db: usize, changes: &[Change]) {
        for c in changes {
            if let Change::Written(k) = c {
                let at = (db, k.clone());
                if self.by_key.contains_key(&at) && !self.ready.contains(&at) {
                    self.ready.push_back(at);
                }
            }
        }
    }

    /// The waiters on `key` of database `db`, first blocked first.
    fn waiting_on(&self, db: usize, key: &[u8]) -> Vec<u64> {
        self.by_key
            .get(&(db, key.to_vec()))
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// A blocked client's side: what its connection waits on.
pub(crate) struct Ticket {
    /// Its waiter's id.
    id: u64,
    /// Where the waker's reply arrives.
    reply: oneshot::Receiver<(Reply, u64)>,
    /// When it times out, if ever.
    deadline: Option<Instant>,
    /// What it answers then.
    timed_out: Reply,
    /// For a RESP3 client, its command's RESP3 form and arguments: a
    /// served reply takes that form (`BZPOPMIN`'s score a double).
    resp3: Option<(Resp3Fn, Vec<Vec<u8>>)>,
}

impl Ticket {
    /// Waits until a ready key serves the client, the node unblocks it, or
    /// its timeout passes; the reply, and the replication offset after the
    /// write that served it, if one did.
    pub(crate) async fn woken(mut self, node: &Node) -> (Reply, Option<u64>) {
        let resp3 = self.resp3.take();
        let (reply, offset) = self.wait(node).await;
        (in_resp3_form(resp3.as_ref(), reply), offset)
    }

    /// [`Ticket::woken`]'s wait, before the reply takes its RESP3 form.
    async fn wait(mut self, node: &Node) -> (Reply, Option<u64>) {
        let Some(deadline) = self.deadline else {
            return received(self.reply.await);
        };
        tokio::select! {
            biased;
            r = &mut self.reply => received(r),
            () = tokio::time::sleep_until(deadline) => {
                if node.blocked.borrow_mut().remove(self.id).is_some() {
                    (self.timed_out, None)
                } else {
                    // Served at the same instant: the reply is there.
                    received(self.reply.await)
                }
            }
        }
    }
}

/// `reply` in the RESP3 form `resp3` names, if any (an error stays as it
/// is, as the node's other replies do).
fn in_resp3_form(resp3: Option<&(Resp3Fn, Vec<Vec<u8>>)>, reply: Reply) -> Reply {
    match resp3 {
        Some((form, args)) if !reply.is_error() => form(args, reply),
        _ => reply,
    }
}

/// A waker's reply as the connection takes it.
fn received(r: Result<(Reply, u64), oneshot::error::RecvError>) -> (Reply, Option<u64>) {
    match r {
        Ok((reply, offset)) => (reply, Some(offset)),
        // The waiter was dropped without a reply: only a node going away
        // does that; its connection ends with it.
        Err(_) => (Reply::err(UNBLOCKED_BY_FAILOVER), None),
    }
}

impl Node {
    /// Runs a blocking command for a client (see the module docs); a
    /// RESP3 client's reply takes the command's RESP3 form `resp3`, if it
    /// has one.
    pub(crate) fn execute_blocking(
        &self,
        c: &mut Client,
        args: &[Vec<u8>],
        run: BlockFn,
        resp3: Option<Resp3Fn>,
    ) -> Out {
        let resp3 = resp3
            .filter(|_| c.proto == Protocol::Resp3)
            .map(|form| (form, args.to_vec()));
        let attempt = {
            let mut st = self.state.borrow_mut();
            st.dbs.set_now(self.handle.now_ms());
            run(st.dbs.db_mut(c.db), args)
        };
        self.commit(Origin::Client);
        c.woff = self.state.borrow().offset;
        let block = match attempt {
            Ok(Attempt::Served(reply)) | Err(reply) => {
                return Out::Reply(in_resp3_form(resp3.as_ref(), reply));
            }
            Ok(Attempt::Block(b)) => b,
        };
        let deadline = match block.timeout_ms {
            0 => None,
            ms => Instant::now().checked_add(Duration::from_millis(ms as u64)),
        };
        let (tx, rx) = oneshot::channel();
        let id = self.blocked.borrow_mut().add(Waiter {
            client: c.id,
            db: c.db,
            keys: block.keys,
            args: args.to_vec(),
            serve: block.serve,
            timed_out: block.timed_out.clone(),
            reply: tx,
        });
        Out::Block(Ticket {
            id,
            reply: rx,
            deadline,
            timed_out: block.timed_out,
            resp3,
        })
    }

    /// Notes the keys of database `db` a commit wrote that have waiters.
    pub(crate) fn note_ready_keys(&self, db: usize, changes: &[Change]) {
        self.blocked.borrow_mut().note_written(db, changes);
    }

    /// Offers every ready key to its waiters, first blocked first, until
    /// no key is ready. Runs after each commit, so after the command or
    /// script that pushed, as Redis's `handleClientsBlockedOnKeys`.
    pub(crate) fn serve_ready_keys(&self) {
        if std::mem::replace(&mut self.blocked.borrow_mut().serving, true) {
            return;
        }
        loop {
            let Some((db, key)) = self.blocked.borrow_mut().ready.pop_front() else {
                break;
            };
            let waiting = self.blocked.borrow().waiting_on(db, &key);
            for id in waiting {
                self.offer(db, &key, id);
            }
        }
        self.blocked.borrow_mut().serving = false;
    }

    /// Offers the ready `key` of database `db` to waiter `id`; serves and
    /// removes it if the key serves it.
    fn offer(&self, db: usize, key: &[u8], id: u64) {
        let Some((serve, args)) = self
            .blocked
            .borrow()
            .waiters
            .get(&id)
            .map(|w| (w.serve, w.args.clone()))
        else {
            return;
        };
        let reply = {
            let mut st = self.state.borrow_mut();
            st.dbs.set_now(self.handle.now_ms());
            serve(st.dbs.db_mut(db), &args, key)
        };
        let Some(reply) = reply else {
            return;
        };
        let waiter = self.blocked.borrow_mut().remove(id);
        self.commit(Origin::Client);
        let offset = self.state.borrow().offset;
        if let Some(w) = waiter {
            // A client gone at this instant just misses its reply.
            let _ = w.reply.send((reply, offset));
        }
    }

    /// Unblocks every blocked client with `UNBLOCKED ...`: the node became
    /// a replica (Redis's `disconnectAllBlockedClients`).
    pub(crate) fn unblock_all_for_failover(&self) {
        let waiters = std::mem::take(&mut *self.blocked.borrow_mut());
        let offset = self.state.try_borrow().map_or(0, |st| st.offset);
        for (_, w) in waiters.waiters {
            let _ = w.reply.send((Reply::err(UNBLOCKED_BY_FAILOVER), offset));
        }
        self.blocked.borrow_mut().next_id = waiters.next_id;
    }

    /// `CLIENT UNBLOCK`: ends the wait of client `client` if it is blocked
    /// on keys, with the answer of a timeout or, if `with_error`, the
    /// `UNBLOCKED` error (counted against its command, as Redis counts
    /// it); whether it was blocked.
    pub(crate) fn unblock_client(&self, client: u64, with_error: bool) -> bool {
        let waiter = {
            let mut b = self.blocked.borrow_mut();
            let id = b
                .waiters
                .iter()
                .find(|(_, w)| w.client == client)
                .map(|(&id, _)| id);
            id.and_then(|id| b.remove(id))
        };
        let Some(w) = waiter else {
            return false;
        };
        let reply = if with_error {
            let name = crate::commands::lookup(&w.args[0]).map(|c| c.name);
            let mut st = self.state.borrow_mut();
            if let Some(name) = name {
                st.stats.failed_while_blocked(name, UNBLOCKED_BY_CLIENT);
            }
            Reply::err(UNBLOCKED_BY_CLIENT)
        } else {
            w.timed_out
        };
        let offset = self.state.borrow().offset;
        let _ = w.reply.send((reply, offset));
        true
    }

    /// How many clients are blocked on keys (`INFO`'s `blocked_clients`).
    pub(crate) fn blocked_clients(&self) -> usize {
        self.blocked.borrow().waiters.len()
    }

    /// Whether client `client` is blocked on keys (`CLIENT LIST`'s `b`).
    pub(crate) fn is_blocked(&self, client: u64) -> bool {
        self.blocked
            .borrow()
            .waiters
            .values()
            .any(|w| w.client == client)
    }

    /// Forgets the waiters of a client whose connection ended.
    pub(crate) fn unblock_disconnected(&self, client: u64) {
        let mut b = self.blocked.borrow_mut();
        let ids: Vec<u64> = b
            .waiters
            .iter()
            .filter(|(_, w)| w.client == client)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            b.remove(id);
        }
    }
}

/// A blocking command's timeout in seconds, as Redis's
/// `getTimeoutFromObjectOrReply` reads it: a float (C's `strtold`), ms
/// rounded up; values past what a 64-bit integer holds turn negative (C's
/// conversion), so Redis calls them negative.
pub(crate) fn timeout_seconds_arg(a: &[u8]) -> Result<i64, Reply> {
    let not_float = || Reply::err("ERR timeout is not a float or out of range");
    let starts_with_space = a.first().is_some_and(|b| b.is_ascii_whitespace());
    let parsed = if a.is_empty() || starts_with_space {
        None
    } else {
        crate::cjson::number::strtod(a)
    };
    let Some((secs, used)) = parsed else {
        return Err(not_float());
    };
    if used != a.len() || secs.is_nan() {
        return Err(not_float());
    }
    let mut ms = (secs * 1000.0).ceil();
    // A positive value so tiny that a double rounds it to zero is still
    // above zero in Redis's long double: rounded up, a ms.
    let mantissa = a
        .split(|b| b.eq_ignore_ascii_case(&b'e'))
        .next()
        .unwrap_or(a);
    let decimal = !a.iter().any(|b| b.eq_ignore_ascii_case(&b'x'));
    if ms == 0.0
        && decimal
        && !a.starts_with(b"-")
        && mantissa.iter().any(|b| (b'1'..=b'9').contains(b))
    {
        ms = 1.0;
    }
    if !(0.0..9.223_372_036_854_775e18).contains(&ms) {
        return Err(Reply::err("ERR timeout is negative"));
    }
    Ok(ms as i64)
}
