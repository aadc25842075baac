//! Every rung's assumptions, explicit: the fault schedules and workloads
//! under which the rung claims to be safe. `--faults assumed` draws only
//! schedules these admit, and the property tests check that no such
//! schedule ever gives anything but `safe`.
//!
//! Some terms used below:
//!
//! - *allowance* = TTL/100 + 2 ms, the clock drift Redlock allows for;
//! - *margin* = TTL/20 + 10 ms, room for network latency and the 1 ms
//!   simulation tick;
//! - *lease budget* = TTL − allowance − margin: a holder's longest hold
//!   (its critical sections plus the round trips of a cycle) **plus** the sum
//!   of every pause and every message delay, the extra latency of slow links
//!   over a cycle's round trips, and any forward clock jump of a node must
//!   fit in it (counted over the whole schedule, not per holder: a simple,
//!   conservative bound);
//! - *renewal budget* (`watchdog`) = 2·TTL/3 − margin: a renewal re-arms the
//!   TTL every TTL/3, so a holder whose renewals stop for less than 2·TTL/3
//!   keeps its key;
//! - a partition between clients and Redis costs nothing in the budget (a
//!   lost acquire or release is harmless to a lease), except when clients
//!   nest acquires: a lost nested acquire stalls its holder for the reply
//!   timeout, so it costs the reply timeout plus the partition (found by
//!   this search on `reentrant`; kept in the property tests' regressions);
//!   likewise a node crash while clients nest acquires costs the outage, and
//!   a reply timeout more for a power loss (found by this search);
//! - where no reply may come later than the reply timeout, the delays and
//!   slow links on the clients' links count together, and for a rung that
//!   admits no client crash the clients' pauses too: a request delayed one
//!   way and its reply the other add up, and a client paused while its
//!   reply waits reads it late (found by this search);
//! - a *partition* loses messages for good (the simulated TCP does not
//!   retransmit): for a rung whose every reply matters (`setnx`,
//!   `setnx-expire`, the watchdog's renewals) it is a lost reply, not a pause.
//!
//! The rungs, in ladder order (see [`assumptions`] for the table in code):
//!
//! | rung | assumptions |
//! |---|---|
//! | `no-lock` | one client: without a lock only a lone buyer is safe; any client fault |
//! | `setnx` | no crash of a client; no lost reply: no partition between clients and Redis, delays and slow links shorter than the reply timeout, all together, no node crash (even with AOF `always`, a crash loses the reply of a SETNX in flight and the key stays for ever); no failover; no nested acquire |
//! | `setnx-expire` | as `setnx`, and the lease budget |
//! | `set-timestamp` | every lock released by its holder: no client crash, no lost message (as `setnx`), no node crash: its stale-lock path (GET, judge, DEL) races the expiry of a lock nobody released, even with perfect clocks; the lease budget; client clocks within the allowance (jumps ≤ TTL/200, drift ≤ 1000 ppm) |
//! | `set-nx-px`, `get-check-del`, `lua-release` | the lease budget; no failover; node restarts only with AOF `always` or delayed ≥ TTL + margin; no node crash for good; node clocks: forward jumps ≤ TTL/200 (counted in the budget), backward ≤ TTL/2, drift ≤ 1000 ppm; no nested acquire |
//! | `reentrant` | as `lua-release`, nested acquires allowed; a node crash spends the budget (the outage, and a reply timeout more for a power loss) |
//! | `watchdog` | the renewal budget for pauses, delays and slow links (each delay also shorter than the reply timeout); critical sections of any length; no partition between clients and Redis and no node crash, not even a restart with AOF `always` (one failed renewal stops the watchdog for good; the holder learns it only at its next check, after the key may have expired and been taken: found by this search); no failover; nested allowed |
//! | `redlock` | no pause at `before-write` (after the validity check); no partition between clients and masters (it wedges the simulated connection, and Redlock's 50 ms per-node timeout cancels every request before the connection's reply timeout can reconnect it: the master is lost for good, found by this search); delays within the reply timeout; node clock jumps forward ≤ TTL/200, backward ≤ TTL/2, drift ≤ 1000 ppm (clients too); node restarts only with AOF `always` or delayed ≥ TTL + margin; at most a minority of masters lost for good; no nested acquire |
//! | `fenced` | a fenced resource; the token source monotonic: no failover, no node restart unless AOF `always`, no node crash for good; node clocks backward ≤ TTL/2; otherwise any pause, delay, partition, slow link or clock fault, also on the store's links; no nested acquire |
//!
//! The library rungs' assumptions are what each library itself documents or
//! promises (sources in docs/ladder.md §12, "The libraries"); a fault the
//! library promises nothing about is left out. One more budget there: the
//! *late renewal budget* = TTL/3 − margin, for a key renewed every 2·TTL/3.
//!
//! | rung | assumptions |
//! |---|---|
//! | `redisson` | the renewal budget, each delay shorter than the reply timeout; no partition between clients and Redis; no node crash; no failover (Redisson's replica propagation would admit one; not expressible here); client crashes and nested acquires allowed |
//! | `redisson-fair` | as `redisson`, but no client crash (Redisson documents that the queue waits for a dead waiter for its wait time); client clocks within the allowance (the queue's deadlines) |
//! | `redisson-rw` | as `redisson` |
//! | `redisson-semaphore` | the lease budget; client clocks within the allowance (the lease ends); no partition between clients and Redis; no node crash; no failover; no nested acquire |
//! | `python-redis-lock` | the late renewal budget, each delay shorter than the reply timeout; no client crash (only a release wakes the waiters); no partition between clients and Redis; no node crash; no failover; no nested acquire |
//! | `redsync`, `node-redlock`, `rslock` | as `redlock` for clocks, restarts, lost masters and links, and the lease budget (nothing checks the validity before writing; `using()`'s extension is not in this vocabulary); no nested acquire |
//!
//! Every schedule ends: partitions heal and slow links recover (a fault that
//! never ends leaves liveness unclaimed, which is no test at all).

use super::case::Case;
use super::kinds::FaultKind;
use locks::FaultPoint;
use model::fault::{Bounds, Crash, FaultAction, FaultSpec};
use model::host::Host;
use model::scenario::Persistence;
use model::scenario::TopologyKind;

/// How long a holder's hold, and the faults that stretch it, may last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// No timing assumption (the rung does not rely on the lease's length,
    /// or checks the lease itself).
    None,
    /// The lease budget: hold + pauses + delays + ... ≤ TTL − allowance − margin.
    Lease,
    /// The watchdog's renewal budget: pauses + delays + ... ≤ 2·TTL/3 − margin.
    Renewal,
    /// A renewal every 2·TTL/3 (python-redis-lock's thread) leaves a third
    /// of the TTL: pauses + delays + ... ≤ TTL/3 − margin.
    LateRenewal,
}

/// What the network between clients and Redis may do to messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientLinks {
    /// Anything, within the budget (lost and late replies are harmless).
    Any,
    /// Late but never lost, and never later than the reply timeout.
    NoLossWithinTimeout,
    /// Late but never lost (within the budget).
    NoLoss,
}

/// What may happen to Redis nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFaults {
    /// Nodes never crash.
    Never,
    /// A node restarts only with AOF `always`.
    RestartIfPersistent,
    /// A node restarts only with AOF `always` or after TTL + margin.
    RestartIfPersistentOrDelayed,
    /// As `RestartIfPersistentOrDelayed`, and a minority may be lost for good.
    MinorityLost,
    /// An ensemble that keeps what it acknowledged (etcd, ZooKeeper): any
    /// member may crash and restart at any time, a minority may be lost
    /// for good (a failover is the loss of the first leader), and links
    /// among members may be cut or slowed. The holder's keep-alives stall
    /// while its member is down or cut off, so each such fault spends the
    /// budget (see [`Assumptions::spent_ms`]).
    Quorum,
}

/// One rung's assumptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assumptions {
    /// The rung.
    pub rung: &'static str,
    /// The assumptions in a sentence.
    pub summary: &'static str,
    /// Most clients (`no-lock`: one).
    pub max_clients: usize,
    /// Whether a client may take the lock again inside its cycle.
    pub nested: bool,
    /// The timing budget.
    pub budget: Budget,
    /// Whether clients may crash (and restart).
    pub client_crashes: bool,
    /// What links between clients and Redis may do.
    pub client_links: ClientLinks,
    /// Whether faults may touch the store's links (pauses of clients aside).
    pub store_links: bool,
    /// What may happen to nodes.
    pub nodes: NodeFaults,
    /// Whether client wall clocks must stay within the allowance.
    pub client_wall_clock: bool,
    /// Whether node clocks may jump forward arbitrarily (the resource, not
    /// the lease, decides safety).
    pub node_forward_jumps: bool,
    /// Fault points at which no pause may be aimed.
    pub no_pause_at: &'static [FaultPoint],
    /// Whether faults may cut, hold or slow the links among nodes.
    pub node_links: bool,
    /// Whether a node may lose power: it goes silent (no reset, no
    /// refusal), and a client learns it only through a timeout of its own.
    pub silent_nodes: bool,
}

/// A lease on one node: what most rungs assume, and the base the others
/// change.
pub(super) const SINGLE_NODE_LEASE: Assumptions = Assumptions {
    rung: "",
    summary: "",
    max_clients: 8,
    nested: false,
    budget: Budget::Lease,
    client_crashes: true,
    client_links: ClientLinks::Any,
    store_links: false,
    nodes: NodeFaults::RestartIfPersistentOrDelayed,
    client_wall_clock: false,
    node_forward_jumps: false,
    no_pause_at: &[],
    node_links: true,
    silent_nodes: true,
};

/// The assumptions of `rung` (`None` for an unknown id).
pub fn assumptions(rung: &str) -> Option<Assumptions> {
    let a = match rung {
        "no-lock" => Assumptions {
            rung: "no-lock",
            summary: "one client only (no lock, no exclusion); any client fault",
            max_clients: 1,
            nested: true,
            budget: Budget::None,
            client_links: ClientLinks::Any,
            store_links: false,
            ..SINGLE_NODE_LEASE
        },
        "setnx" => Assumptions {
            rung: "setnx",
            summary: "no client crash; no lost reply (no partition between clients and Redis, \
                      delays and slow links within the reply timeout together, no node crash: a crash \
                      loses the reply of a SETNX in flight); no failover; no nested acquire",
            budget: Budget::None,
            client_crashes: false,
            client_links: ClientLinks::NoLossWithinTimeout,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        "setnx-expire" => Assumptions {
            rung: "setnx-expire",
            summary: "as setnx, and hold + pauses + delays within TTL - allowance - margin",
            client_crashes: false,
            client_links: ClientLinks::NoLossWithinTimeout,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        "set-timestamp" => Assumptions {
            rung: "set-timestamp",
            summary: "every lock is released by its holder (no client crash, no lost \
                      message, no node crash): its stale-lock path races the expiry; hold + \
                      pauses + delays within TTL - allowance - margin; client clocks within \
                      the allowance; no failover; no nested acquire",
            client_wall_clock: true,
            client_crashes: false,
            client_links: ClientLinks::NoLossWithinTimeout,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        "set-nx-px" | "get-check-del" | "lua-release" => Assumptions {
            rung: locks::rung(rung).map(|r| r.id).unwrap_or(""),
            summary: "hold + pauses + delays within TTL - allowance - margin; no failover; \
                      node restarts only persistent or delayed; no nested acquire",
            ..SINGLE_NODE_LEASE
        },
        "reentrant" => Assumptions {
            rung: "reentrant",
            summary: "as lua-release; nested acquires allowed, a node crash counted in the budget",
            nested: true,
            ..SINGLE_NODE_LEASE
        },
        "watchdog" => Assumptions {
            rung: "watchdog",
            summary: "pauses + delays within 2 TTL/3 - margin, each delay within the reply \
                      timeout; no partition between clients and Redis; no node crash (not even \
                      a persistent restart: one failed renewal gives the lease up); no \
                      failover; critical sections of any length",
            nested: true,
            budget: Budget::Renewal,
            client_links: ClientLinks::NoLoss,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        "redlock" => Assumptions {
            rung: "redlock",
            summary: "no pause between the validity check and the write; clocks within the \
                      allowance; node restarts only persistent or delayed; a minority of \
                      masters lost at most; no partition between clients and masters (a \
                      wedged connection is a lost master); no nested acquire",
            budget: Budget::None,
            client_links: ClientLinks::NoLoss,
            nodes: NodeFaults::MinorityLost,
            no_pause_at: &[FaultPoint::BeforeWrite],
            ..SINGLE_NODE_LEASE
        },
        "fenced" => Assumptions {
            rung: "fenced",
            summary: "a fenced resource and a monotonic token source: no failover, no node \
                      restart unless AOF always, no node lost; anything else",
            budget: Budget::None,
            store_links: true,
            nodes: NodeFaults::RestartIfPersistent,
            node_forward_jumps: true,
            ..SINGLE_NODE_LEASE
        },
        _ => return library_assumptions(rung),
    };
    Some(a)
}

/// The library rungs' assumptions: what each library itself documents or
/// promises (its sources are cited in docs/ladder.md §12, "The
/// libraries"), in this module's vocabulary. Where a library promises
/// nothing about a fault, the fault is left out; where it promises more
/// than the vocabulary can say, the narrower assumption is written and the
/// comment says what is left out. `None` for a rung without them.
fn library_assumptions(rung: &str) -> Option<Assumptions> {
    let a = match rung {
        // Redisson's javadoc of `Config.setLockWatchdogTimeout`: the lock
        // "expires after lockWatchdogTimeout if watchdog didn't extend it"
        // and the watchdog prolongs it "while lock holder Redisson instance
        // is alive"; it renews every timeout/3. It promises nothing about a
        // holder's pause, a lost renewal or a Redis crash. Its note on the
        // deprecated RedLock says RLock operations reach every replica,
        // which would admit a failover; a failover of a replicated single
        // master is not in this vocabulary (it exists only as the loss of
        // a minority of independent masters), so it is left out here.
        "redisson" => Assumptions {
            rung: "redisson",
            summary: "the watchdog keeps the lock while its renewals get through: pauses + \
                      delays within 2 TTL/3 - margin, each delay within the reply timeout; \
                      no partition between clients and Redis; no node crash; no failover \
                      (not expressible here); client crashes and nested acquires allowed",
            ..WATCHDOG_LIBRARY
        },
        // As `redisson`; the fair lock's queue deadlines are the clients'
        // own wall clocks, about which Redisson promises nothing: they stay
        // within the allowance. Redisson documents that the queue waits
        // for a dead waiter's turn for the wait time (5 s by default): a
        // client crash may hold every waiter up longer than the liveness
        // bound this project judges by, which Redisson never promised
        // (found by this search as a deadlock with a crashed waiter), so
        // client crashes are left out.
        "redisson-fair" => Assumptions {
            rung: "redisson-fair",
            summary: "as redisson, but no client crash (the queue waits for a dead waiter \
                      for its wait time, as Redisson documents); client clocks within the \
                      allowance (the queue's deadlines are the clients' wall clocks)",
            client_wall_clock: true,
            client_crashes: false,
            ..WATCHDOG_LIBRARY
        },
        // As `redisson`: both the read and the write lock are renewed by
        // the watchdog, and Redisson's javadoc of `RReadWriteLock` promises
        // nothing more about faults than `RLock`'s. Readers share the lock
        // by design; a crashed reader's hold must still end with the
        // watchdog timeout, as `Config.setLockWatchdogTimeout` promises,
        // so client crashes stay allowed.
        "redisson-rw" => Assumptions {
            rung: "redisson-rw",
            summary: "as redisson (readers share the lock; a crashed reader's hold ends \
                      with the watchdog timeout)",
            ..WATCHDOG_LIBRARY
        },
        // Redisson's javadoc of `RPermitExpirableSemaphore.tryAcquire(
        // waitTime, leaseTime, unit)`: the permit is released
        // automatically after the lease time, and nothing renews it: the
        // holder's work must fit in the lease (the lease budget). The
        // lease ends are the clients' `System.currentTimeMillis()`, about
        // which Redisson promises nothing: client clocks within the
        // allowance. It promises nothing about lost replies or a Redis
        // crash either: both left out. A semaphore is not reentrant.
        "redisson-semaphore" => Assumptions {
            rung: "redisson-semaphore",
            summary: "the holder works within the lease (hold + pauses + delays within TTL - \
                      allowance - margin); client clocks within the allowance (the lease ends \
                      are the clients' wall clocks); no partition between clients and Redis; \
                      no node crash; no failover; no nested acquire",
            client_wall_clock: true,
            client_links: ClientLinks::NoLoss,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        // python-redis-lock's README: with `auto_renewal` the lock "will
        // automatically renew the lock so that it doesn't expire for as
        // long as the lock is held", by a thread every expire × 2/3: a
        // third of the expiry is left for whatever stalls a renewal. It
        // promises nothing about a renewal that fails (its thread ends:
        // no lost reply, no Redis crash) nor about failover. Its README
        // says the signal list wakes the waiters "when the lock is
        // released": a holder that crashes wakes nobody, and its waiters
        // sleep through their whole timeout, longer than the liveness
        // bound this project judges by (found by this search as a
        // deadlock); no promise covers it, so client crashes are left out.
        // A `Lock` acquired twice raises `AlreadyAcquired`: no nested
        // acquire.
        "python-redis-lock" => Assumptions {
            rung: "python-redis-lock",
            summary: "pauses + delays within TTL/3 - margin (renewed every 2 TTL/3), each \
                      delay within the reply timeout; no client crash (only a release wakes \
                      the waiters); no partition between clients and Redis; \
                      no node crash; no failover; critical sections of any length; no nested \
                      acquire",
            budget: Budget::LateRenewal,
            client_crashes: false,
            client_links: ClientLinks::NoLoss,
            nodes: NodeFaults::Never,
            ..SINGLE_NODE_LEASE
        },
        // redsync implements the Redlock page it cites: safety while the
        // holder works within the validity (`Until()`), clocks that advance
        // at about the same rate (drift factor 0.01), and a majority of
        // masters up; a restarted master must have fsync always or stay
        // down past the TTL. redsync's `Lock` returns only with a quorum
        // and a positive validity, but nothing extends the lock and the
        // caller is not told when it ends: the lease budget. Its mutex is
        // not reentrant.
        "redsync" => redlock_library("redsync"),
        // node-redlock's README: quorum of N/2+1, driftFactor 0.01 of the
        // duration, and "we can safely take out or fail-over a minority of
        // nodes without invalidating active locks". The take-out is written
        // (a minority lost for good, a failover of an independent master is
        // its loss); a fail-over that forgets the key is a restart without
        // persistence, which the vocabulary allows only delayed past the
        // TTL: the README's wider promise is narrowed here (it is broken:
        // see scenarios/libraries/redsync-quorum-loss.toml). The automatic
        // extension of `using()` would allow long routines; a budget
        // counted from its 500 ms threshold is not in this vocabulary, so
        // the whole routine is held to the lease budget.
        "node-redlock" => redlock_library("node-redlock"),
        // rslock's README: "an implementation of Redlock, the distributed
        // locking mechanism" of the Redlock page; `src/lock.rs`: drift
        // ttl × 0.01 + 2 ms, quorum N/2+1, 3 tries. It sets no per-node
        // timeout, which the page asks for: a master that is down and
        // silent (without power) costs every round its reply timeout, and
        // within these assumptions the search finds rslock deadlocked by
        // it (scenarios/findings/rslock-master-without-power.toml).
        "rslock" => redlock_library("rslock"),
        _ => return super::service_assumptions::service_assumptions(rung),
    };
    Some(a)
}

/// A Redisson lock renewed by its watchdog (`lockWatchdogTimeout` = the
/// scenario's TTL, renewed every TTL/3).
const WATCHDOG_LIBRARY: Assumptions = Assumptions {
    rung: "",
    summary: "",
    nested: true,
    budget: Budget::Renewal,
    client_links: ClientLinks::NoLoss,
    nodes: NodeFaults::Never,
    ..SINGLE_NODE_LEASE
};

/// A library that implements the Redlock page for its caller: the lease
/// budget, Redlock's clock bounds (as the ladder's `redlock`), a minority
/// of masters lost at most, restarts persistent or delayed; no partition
/// between clients and masters (a wedged connection is a lost master,
/// which the generator cannot count against the minority).
const fn redlock_library(rung: &'static str) -> Assumptions {
    Assumptions {
        rung,
        summary: "the holder works within the lease budget (hold + pauses + delays within \
                  TTL - allowance - margin); clocks within the allowance; node restarts only \
                  persistent or delayed; a minority of masters lost at most; no partition \
                  between clients and masters; no nested acquire",
        client_links: ClientLinks::NoLoss,
        nodes: NodeFaults::MinorityLost,
        ..SINGLE_NODE_LEASE
    }
}

/// Redlock's drift allowance: TTL/100 + 2 ms.
pub fn allowance_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 100 + 2
}

/// Room for latency and the tick: TTL/20 + 10 ms.
pub fn margin_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 20 + 10
}

/// Round trips of one lock cycle of a client that writes `writes` times.
pub fn round_trips(writes: u32) -> u64 {
    2 * u64::from(writes) + 6
}

/// The largest client or node clock drift the assumptions allow, ppm.
pub const MAX_DRIFT_PPM: i64 = 1_000;

fn is_client(host: Host) -> bool {
    host.client().is_some()
}

/// How late every delay and slow link between clients and nodes could
/// make one reply, were they all to fall on it; with `pauses`, every pause
/// of a client too (it reads its reply only when it resumes).
fn client_link_lateness_ms(case: &Case, pauses: bool) -> u64 {
    (case.faults.iter())
        .map(|f| match &f.action {
            FaultAction::Pause(p) if pauses => p.duration_ms,
            FaultAction::Delay(d) if link_touches(&d.a, &d.b).0 => d.duration_ms,
            FaultAction::SlowLink(s) if link_touches(&s.a, &s.b).0 => 2 * s.latency_ms,
            _ => 0,
        })
        .sum()
}

/// Whether a link fault's sides connect nodes to nodes.
fn links_among_nodes(a: &[Host], b: &[Host]) -> bool {
    a.iter().any(|x| x.is_node()) && b.iter().any(|y| y.is_node())
}

/// What a fault of the ensemble costs a holder's keep-alives
/// ([`NodeFaults::Quorum`]): a member cut off from the others, or down,
/// stalls the keep-alives of the clients it serves until the link heals or
/// they move to another member. A partition among members costs its
/// length and a keep-alive period (TTL/3) to notice; a killed member (its
/// machine refuses connections at once) or a failover a period and a reply
/// timeout; a member that loses power is heard from by nobody, and its
/// clients wait out their read timeout, 2·TTL/3.
fn member_fault_spent_ms(case: &Case, f: &FaultSpec) -> u64 {
    let ttl = case.lock.ttl_ms;
    let period = ttl / 3;
    let reply = case.lock.response_timeout_ms;
    match &f.action {
        FaultAction::Partition(p) if links_among_nodes(&p.a, &p.b) => {
            p.duration_ms.unwrap_or(0) + period
        }
        FaultAction::Crash(c) if f.target_host().is_some_and(|h| h.is_node()) => match c.how {
            model::fault::CrashKind::ProcessKill => period + reply,
            model::fault::CrashKind::PowerLoss => 2 * ttl / 3,
        },
        FaultAction::Failover(_) => period + reply,
        _ => 0,
    }
}

/// Which kinds of link a fault's sides connect.
fn link_touches(a: &[Host], b: &[Host]) -> (bool, bool) {
    let mut client_node = false;
    let mut store = false;
    for &x in a {
        for &y in b {
            if (is_client(x) && y.is_node()) || (x.is_node() && is_client(y)) {
                client_node = true;
            }
            if x == Host::Store || y == Host::Store {
                store = true;
            }
        }
    }
    (client_node, store)
}

impl Assumptions {
    /// Whether the assumptions allow faults of this kind at all.
    pub fn allows_kind(&self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::Failover => self.loses_minority(),
            FaultKind::Crash => self.client_crashes || self.loses_minority(),
            FaultKind::Restart => self.client_crashes || self.nodes != NodeFaults::Never,
            _ => true,
        }
    }

    /// Whether a minority of nodes may be lost for good.
    fn loses_minority(&self) -> bool {
        matches!(self.nodes, NodeFaults::MinorityLost | NodeFaults::Quorum)
    }

    /// The timing budget for `ttl_ms`, if the rung has one.
    pub fn budget_ms(&self, ttl_ms: u64) -> Option<u64> {
        let m = margin_ms(ttl_ms);
        match self.budget {
            Budget::None => None,
            Budget::Lease => Some(ttl_ms.saturating_sub(allowance_ms(ttl_ms) + m)),
            Budget::Renewal => Some((2 * ttl_ms / 3).saturating_sub(m)),
            Budget::LateRenewal => Some((ttl_ms / 3).saturating_sub(m)),
        }
    }

    /// What a case spends of the budget: the longest hold (lease budget
    /// only), and the time every fault may add to a hold.
    pub fn spent_ms(&self, case: &Case) -> u64 {
        let writes = case.clients.iter().map(|c| c.writes).max().unwrap_or(1);
        let hold = if self.budget == Budget::Lease {
            case.clients
                .iter()
                .map(|c| {
                    u64::from(c.writes) * (c.critical_section_ms + 4)
                        + 8
                        + if c.nested { 4 } else { 0 }
                })
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let faults = (case.faults.iter())
            .map(|f| self.fault_spent_ms(case, f, writes))
            .fold(0u64, u64::saturating_add);
        // Clock drift (at most 1000 ppm) stretches a hold by 0.1 %: the
        // margin covers it.
        hold + faults
    }

    /// The time fault `f` may add to a hold of a case whose longest cycle
    /// writes `writes` times.
    fn fault_spent_ms(&self, case: &Case, f: &FaultSpec, writes: u32) -> u64 {
        match &f.action {
            FaultAction::Pause(p) => p.duration_ms,
            FaultAction::Delay(d) if link_touches(&d.a, &d.b).0 => d.duration_ms,
            FaultAction::SlowLink(s) if link_touches(&s.a, &s.b).0 => {
                s.latency_ms.saturating_sub(1) * 2 * round_trips(writes)
            }
            // A lost request inside a hold (a nested acquire) stalls the
            // holder until the reply timeout gives up on it.
            FaultAction::Partition(p)
                if link_touches(&p.a, &p.b).0 && case.clients.iter().any(|c| c.nested) =>
            {
                case.lock.response_timeout_ms + p.duration_ms.unwrap_or(0)
            }
            // A node down inside a hold stalls a nested acquire for the
            // whole outage, and a silent node for a reply timeout more.
            FaultAction::Crash(c)
                if self.nodes != NodeFaults::Quorum
                    && f.target_host().is_some_and(|h| h.is_node())
                    && case.clients.iter().any(|c| c.nested) =>
            {
                let silent = match c.how {
                    model::fault::CrashKind::PowerLoss => case.lock.response_timeout_ms,
                    model::fault::CrashKind::ProcessKill => 0,
                };
                c.restart_after_ms.map_or(u64::MAX, |after| after + silent)
            }
            FaultAction::ClockJump(j)
                if j.target.is_node() && j.jump_ms > 0 && !self.node_forward_jumps =>
            {
                j.jump_ms as u64
            }
            FaultAction::ClockJump(j) if is_client(j.target) && self.client_wall_clock => {
                j.jump_ms.unsigned_abs()
            }
            _ if self.nodes == NodeFaults::Quorum => member_fault_spent_ms(case, f),
            _ => 0,
        }
    }

    /// What these assumptions bound in each fault the generator draws for
    /// a lock of `ttl_ms`.
    pub fn bounds(&self, ttl_ms: u64) -> Bounds {
        Bounds {
            no_pause_at: self.no_pause_at,
            client_crashes: self.client_crashes,
            lossy_client_links: self.client_links == ClientLinks::Any,
            store_links: self.store_links,
            node_forward_jumps: self.node_forward_jumps,
            client_wall_clock: self.client_wall_clock,
            node_restart_floor_ms: ttl_ms + margin_ms(ttl_ms) + 1,
            max_drift_ppm: MAX_DRIFT_PPM,
        }
    }

    /// Whether a case lies within these assumptions; if not, why.
    pub fn admits(&self, case: &Case) -> Result<(), String> {
        self.admits_workload(case)?;
        let masters = case.topology.node_count();
        let mut lost_nodes: Vec<Host> = Vec::new();
        for (i, fault) in case.faults.iter().enumerate() {
            self.admits_fault(case, fault, &mut lost_nodes)
                .map_err(|why| format!("faults[{i}] ({}): {why}", fault.name()))?;
        }
        if self.client_links == ClientLinks::NoLossWithinTimeout {
            // Each fault alone is checked above; together, a delay of the
            // request and one of its reply (or a slow link) add up. Where
            // nothing removes a lock its taker lost track of (no client
            // crash is admitted), so does a pause of the client while its
            // reply waits; a session lock ends with the connection its
            // client gives up, so a pause costs it nothing.
            let late = client_link_lateness_ms(case, !self.client_crashes);
            if late + 20 > case.lock.response_timeout_ms {
                return Err(format!(
                    "delays on the clients' links adding up to {late} ms, as long as the \
                     reply timeout"
                ));
            }
        }
        if self.loses_minority() && lost_nodes.len() > (masters.saturating_sub(1)) / 2 {
            return Err(format!(
                "{} of {masters} masters lost for good; at most a minority",
                lost_nodes.len()
            ));
        }
        Ok(())
    }

    /// The workload and the timing budget.
    fn admits_workload(&self, case: &Case) -> Result<(), String> {
        if case.rung != self.rung {
            return Err(format!("the case is for {}, not {}", case.rung, self.rung));
        }
        if case.clients.len() > self.max_clients {
            return Err(format!(
                "{} clients; at most {}",
                case.clients.len(),
                self.max_clients
            ));
        }
        if !self.nested && case.clients.iter().any(|c| c.nested) {
            return Err("a nested acquire on a rung that is not reentrant".into());
        }
        if locks::rung(self.rung).is_some_and(|r| r.fencing) && !case.fenced {
            return Err("fenced needs a fenced resource".into());
        }
        if let Some(budget) = self.budget_ms(case.lock.ttl_ms) {
            let spent = self.spent_ms(case);
            if spent > budget {
                return Err(format!("timing budget: {spent} ms spent of {budget} ms"));
            }
        }
        Ok(())
    }

    /// One fault; the nodes it loses for good join `lost_nodes`.
    fn admits_fault(
        &self,
        case: &Case,
        fault: &FaultSpec,
        lost_nodes: &mut Vec<Host>,
    ) -> Result<(), &'static str> {
        let ttl = case.lock.ttl_ms;
        let timeout = case.lock.response_timeout_ms;
        match &fault.action {
            FaultAction::Pause(_) => match fault.trigger() {
                Some(t) if self.no_pause_at.contains(&t.point) => {
                    Err("a pause at a point the rung cannot check after")
                }
                _ => Ok(()),
            },
            FaultAction::Crash(c) => self.admits_crash(case, fault.target_host(), c, lost_nodes),
            FaultAction::Failover(_) => {
                let loses = match self.nodes {
                    NodeFaults::MinorityLost => case.topology.kind == TopologyKind::Independent,
                    NodeFaults::Quorum => case.topology.kind == TopologyKind::Cluster,
                    _ => false,
                };
                if !loses {
                    return Err("no failover");
                }
                if !lost_nodes.contains(&Host::Node(0)) {
                    lost_nodes.push(Host::Node(0));
                }
                Ok(())
            }
            FaultAction::Partition(p) => {
                let (client_node, store) = link_touches(&p.a, &p.b);
                if p.duration_ms.is_none() {
                    return Err("every partition heals");
                }
                self.admits_store_link(store)?;
                self.admits_node_link(&p.a, &p.b)?;
                if client_node && self.client_links != ClientLinks::Any {
                    return Err("no lost messages between clients and Redis");
                }
                Ok(())
            }
            FaultAction::Delay(d) => {
                let (client_node, store) = link_touches(&d.a, &d.b);
                self.admits_store_link(store)?;
                self.admits_node_link(&d.a, &d.b)?;
                if client_node
                    && self.client_links != ClientLinks::Any
                    && d.duration_ms + 20 > timeout
                {
                    return Err("a delay as long as the reply timeout");
                }
                Ok(())
            }
            FaultAction::SlowLink(s) => {
                let (client_node, store) = link_touches(&s.a, &s.b);
                if s.duration_ms.is_none() {
                    return Err("every slow link recovers");
                }
                self.admits_store_link(store)?;
                self.admits_node_link(&s.a, &s.b)?;
                if client_node
                    && self.client_links != ClientLinks::Any
                    && 2 * s.latency_ms + 20 > timeout
                {
                    return Err("a round trip as long as the reply timeout");
                }
                Ok(())
            }
            FaultAction::ClockJump(j) => self.admits_jump(j.target, j.jump_ms, ttl),
            FaultAction::ClockDrift(d) if d.ppm.abs() > MAX_DRIFT_PPM => {
                Err("drift beyond 1000 ppm")
            }
            FaultAction::ClockDrift(_) => Ok(()),
        }
    }

    /// A fault on the store's links, when `store` says it touches them.
    fn admits_store_link(&self, store: bool) -> Result<(), &'static str> {
        if store && !self.store_links {
            return Err("no faults on the store's links");
        }
        Ok(())
    }

    /// A fault on links among nodes, when its sides are both nodes.
    fn admits_node_link(&self, a: &[Host], b: &[Host]) -> Result<(), &'static str> {
        if !self.node_links && links_among_nodes(a, b) {
            return Err("no faults on the links among nodes");
        }
        Ok(())
    }

    /// A crash of `target`; a node it loses for good joins `lost_nodes`.
    fn admits_crash(
        &self,
        case: &Case,
        target: Option<Host>,
        crash: &Crash,
        lost_nodes: &mut Vec<Host>,
    ) -> Result<(), &'static str> {
        let ttl = case.lock.ttl_ms;
        let Some(target) = target else {
            return Err("a crash of no host");
        };
        if target == Host::Store {
            return Err("the store never crashes");
        }
        if is_client(target) {
            return match self.client_crashes {
                true => Ok(()),
                false => Err("no client crashes"),
            };
        }
        if crash.how == model::fault::CrashKind::PowerLoss && !self.silent_nodes {
            return Err("no node loses power (its clients would not notice)");
        }
        match crash.restart_after_ms {
            None => {
                if !self.loses_minority() {
                    return Err("no node lost for good");
                }
                if !lost_nodes.contains(&target) {
                    lost_nodes.push(target);
                }
            }
            Some(_) if self.nodes == NodeFaults::Never => return Err("no node crashes"),
            Some(_) if self.nodes == NodeFaults::Quorum => {}
            Some(after) => {
                let persistent = case.topology.persistence == Persistence::AofAlways;
                let delayed = after >= ttl + margin_ms(ttl);
                if !(persistent || (delayed && self.nodes != NodeFaults::RestartIfPersistent)) {
                    return Err("a node restart that may forget what it granted");
                }
            }
        }
        Ok(())
    }

    /// A clock jump of `target` by `jump_ms`.
    fn admits_jump(&self, target: Host, jump_ms: i64, ttl: u64) -> Result<(), &'static str> {
        if target.is_node() {
            if jump_ms > 0 && !self.node_forward_jumps && jump_ms as u64 > ttl / 200 {
                return Err("a node clock jumps forward beyond TTL/200");
            }
            if jump_ms < 0 && jump_ms.unsigned_abs() > ttl / 2 {
                return Err("a node clock jumps back beyond TTL/2");
            }
        } else if self.client_wall_clock && jump_ms.unsigned_abs() > ttl / 200 {
            return Err("a client clock jumps beyond TTL/200");
        }
        Ok(())
    }
}
