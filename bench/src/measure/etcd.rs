//! etcd beside Redis: each etcd rung on a real etcd member, uncontended
//! beside the floor and `lua-release` on redis-server node 0 in the same
//! rounds, and in a hand-off between clients of their own beside Redis
//! rungs that poll and that are woken by pub/sub, with the wake-ups the
//! lock code counts.

use super::{COMMON, Session, TTL, shuffled, subject};
use crate::client::{Client, Impl, Node, Wait};
use crate::etcd_member::Metrics;
use crate::interval::Estimate;
use crate::options::Sizes;
use crate::physics::ETCD_ROWS;
use crate::report::{Etcd, EtcdUncontendedRow, HandoffRow};
use crate::rng::Seeded;
use crate::stats::{median, quantile_us, round3};
use crate::workload::{self, HandoffSample, WARMUP_CYCLES};
use locks::Wakeups;
use std::sync::Arc;
use std::time::Duration;

/// Where the etcd rows are measured, or why they are not.
#[derive(Debug, Clone)]
pub enum EtcdAt {
    /// On the member at this node.
    Member(Node),
    /// Not at all, for this reason (etcd not installed, or the member
    /// did not start).
    Skipped(String),
}

/// Clients in the hand-off, each with connections of its own.
pub const HANDOFF_CLIENTS: usize = 16;

/// What the report says of the etcd rows.
pub const NOTE: &str = "The etcd rungs on one real etcd member this run started (a one-member \
     cluster on 127.0.0.1, its write-ahead log on this machine's disk), beside the floor and \
     lua-release on redis-server node 0, interleaved round by round in a shuffled order, \
     intervals over rounds; × floor is to the Redis floor in the same rounds. etcd pays for its \
     guarantees: every write is a Raft entry the member fsyncs to its write-ahead log before it \
     answers, and every acquire opens a session (a lease grant) that its release revokes, so an \
     uncontended cycle is 4 requests and 4 fsynced writes where Redis answers 2 commands from \
     memory. The hand-off: 16 clients, each with connections of its own, acquire one key and \
     release it at once; a hand-off is the lock passing to another client (taking it straight \
     back is none); wake-ups are counted by the lock code: each retry of a polling waiter, each \
     release message a notified waiter hears, each watch response an etcd waiter receives. An \
     etcd Mutex waiter watches only the key just before its own, so a release wakes one waiter; \
     etcd-lock-rpc waits inside the member (the Lock request returns once the lock is granted), \
     so its client has no wake-ups to count (–).";

/// The uncontended group: the Redis floor and `lua-release` on node 0,
/// then each etcd rung.
fn uncontended_group() -> Vec<Impl> {
    let mut impls = vec![Impl::Floor, Impl::Rung("lua-release", Wait::Fixed)];
    impls.extend(ETCD_ROWS.map(Impl::Etcd));
    impls
}

/// The hand-off group: each etcd rung, then `set-nx-px` polling every
/// 50 ms and `lua-release` woken by pub/sub on redis-server.
fn handoff_group() -> Vec<Impl> {
    let mut impls: Vec<Impl> = ETCD_ROWS.map(Impl::Etcd).to_vec();
    impls.push(Impl::Rung("set-nx-px", Wait::Fixed));
    impls.push(Impl::Rung("lua-release", Wait::Notify));
    impls
}

/// About how long the etcd rows take with `sizes`: what the run plans its
/// time with. An etcd cycle takes milliseconds (four fsyncs), so each
/// slice's warm-up cycles count; each hand-off slice drains its waiters.
pub(super) fn planned(sizes: &Sizes) -> Duration {
    let etcd_warm_up = Duration::from_millis(5) * WARMUP_CYCLES;
    let uncontended =
        (sizes.slice + etcd_warm_up) * (uncontended_group().len() as u32 * sizes.rounds);
    let drain = Duration::from_millis(150);
    let handoff =
        (sizes.contention_slice + drain) * (handoff_group().len() as u32 * sizes.contention_rounds);
    // The member's start and every client's connections.
    uncontended + handoff + Duration::from_secs(2)
}

/// Slices of one implementation in the uncontended group.
struct Slices {
    /// WAL fsyncs and cycles (warm-up included) over the slices whose
    /// counters were read.
    fsyncs: f64,
    cycles: f64,
    /// Whether every slice's counters were read.
    counted: bool,
}

/// Whether the lock code of `which` counts its waiters' wake-ups: the
/// Lock RPC's wait is in the member, so its client has none to count.
fn counts_wakeups(which: Impl) -> bool {
    which != Impl::Etcd(locks::etcd::rungs::LOCK_RPC.id)
}

/// One implementation's rounds in the hand-off.
#[derive(Default)]
struct HandoffTally {
    handoffs_per_s: Vec<f64>,
    acq_per_s: Vec<f64>,
    /// Of the rounds with a hand-off.
    wakeups_per_handoff: Vec<f64>,
    /// Over all rounds.
    wakeups: u64,
    handoffs: u64,
    fairness: Vec<f64>,
    errors: u64,
    abandoned: u64,
}

impl HandoffTally {
    fn add(&mut self, s: &HandoffSample) {
        self.handoffs_per_s.push(s.handoffs_per_s());
        self.acq_per_s.push(s.acq_per_s());
        self.wakeups_per_handoff.extend(s.wakeups_per_handoff());
        self.wakeups += s.wakeups;
        self.handoffs += s.handoffs;
        self.fairness.push(s.fairness());
        self.errors += s.errors;
        self.abandoned += s.abandoned;
    }

    fn row(&self, which: Impl, seed: u64) -> HandoffRow {
        let interval = |values: &[f64], seed| Estimate::of(values, seed).map(Estimate::rounded);
        let counted = counts_wakeups(which);
        HandoffRow {
            subject: subject(which, 1),
            clients: HANDOFF_CLIENTS,
            handoffs_per_s: round3(median(&self.handoffs_per_s)),
            handoffs_per_s_interval: interval(&self.handoffs_per_s, seed),
            acq_per_s: round3(median(&self.acq_per_s)),
            handoffs: self.handoffs,
            wakeups: counted.then_some(self.wakeups),
            // Pooled, not a median of rounds: a round without a hand-off
            // has wake-ups all the same, which a median of per-round
            // ratios would leave out.
            wakeups_per_handoff: (counted && self.handoffs > 0)
                .then(|| round3(self.wakeups as f64 / self.handoffs as f64)),
            wakeups_per_handoff_interval: interval(&self.wakeups_per_handoff, seed ^ 0x77)
                .filter(|_| counted),
            fairness: round3(median(&self.fairness)),
            errors: self.errors,
            abandoned: self.abandoned,
        }
    }
}

impl Session {
    /// The etcd rows, or why there are none; `None` when this session
    /// measures no etcd rows at all (a batch of pairs).
    pub(crate) async fn etcd(&self) -> anyhow::Result<Option<Etcd>> {
        let member = match &self.etcd {
            None => return Ok(None),
            Some(EtcdAt::Skipped(why)) => {
                return Ok(Some(Etcd {
                    skipped: Some(why.clone()),
                    note: NOTE.to_string(),
                    uncontended: Vec::new(),
                    handoff: Vec::new(),
                }));
            }
            Some(EtcdAt::Member(member)) => member,
        };
        let uncontended = self.etcd_uncontended(member).await?;
        let handoff = self.etcd_handoff(member).await?;
        Ok(Some(Etcd {
            skipped: None,
            note: NOTE.to_string(),
            uncontended,
            handoff,
        }))
    }

    /// The node `which` runs on: the member for an etcd rung, else node 0.
    fn node_for<'a>(&'a self, which: Impl, member: &'a Node) -> &'a [Node] {
        match which {
            Impl::Etcd(_) => std::slice::from_ref(member),
            _ => &self.nodes[..1],
        }
    }

    /// Interleaved rounds of single-task acquire + release of the
    /// uncontended group, with the member's fsyncs counted over each etcd
    /// slice.
    async fn etcd_uncontended(&self, member: &Node) -> anyhow::Result<Vec<EtcdUncontendedRow>> {
        let impls = uncontended_group();
        let mut clients = Vec::new();
        for (seed, which) in (300..).zip(&impls) {
            let nodes = self.node_for(*which, member);
            clients.push(Client::connect(*which, nodes, COMMON, seed).await?);
        }
        let mut group = super::uncontended::Group::of(&impls);
        let mut slices: Vec<Slices> = impls
            .iter()
            .map(|_| Slices {
                fsyncs: 0.0,
                cycles: 0.0,
                counted: true,
            })
            .collect();
        let mut rng = Seeded::new(0x6574_6364);
        for round in 0..self.sizes.rounds {
            for i in shuffled(&mut rng, impls.len()) {
                let which = impls[i];
                let etcd = matches!(which, Impl::Etcd(_));
                let before = if etcd {
                    Metrics::read(&member.addr).await.ok()
                } else {
                    None
                };
                let key = format!("{}e:u:{}", self.prefix, which.label());
                let s = workload::uncontended(&clients[i], &key, TTL, self.sizes.slice).await;
                if etcd {
                    let after = Metrics::read(&member.addr).await.ok();
                    match (before, after) {
                        (Some(b), Some(a)) => {
                            slices[i].fsyncs += a.wal_fsyncs() - b.wal_fsyncs();
                            slices[i].cycles +=
                                (s.ops + s.errors + u64::from(WARMUP_CYCLES)) as f64;
                        }
                        _ => slices[i].counted = false,
                    }
                }
                self.progress(&format!(
                    "etcd beside redis, uncontended round {}/{}: {} {:.0} cycles/s p50 {} µs{}",
                    round + 1,
                    self.sizes.rounds,
                    which.label(),
                    s.rate(),
                    quantile_us(&s.hist, 0.5),
                    super::uncontended::errors_note(s.errors)
                ));
                group.add(i, &s);
            }
        }
        Ok(group
            .rows(1, 80)
            .into_iter()
            .zip(&impls)
            .zip(&slices)
            .map(|((figures, which), slices)| EtcdUncontendedRow {
                figures,
                wal_fsyncs_per_cycle: (matches!(which, Impl::Etcd(_))
                    && slices.counted
                    && slices.cycles > 0.0)
                    .then(|| round3(slices.fsyncs / slices.cycles)),
            })
            .collect())
    }

    /// Rounds of the hand-off: [`HANDOFF_CLIENTS`] clients of each of the
    /// hand-off group on one key (a fresh one per slice), the group in a
    /// shuffled order each round.
    async fn etcd_handoff(&self, member: &Node) -> anyhow::Result<Vec<HandoffRow>> {
        let impls = handoff_group();
        let mut sets = Vec::new();
        for (set, which) in impls.iter().enumerate() {
            let wakeups = Arc::new(Wakeups::default());
            let nodes = self.node_for(*which, member);
            let mut clients = Vec::new();
            for c in 0..HANDOFF_CLIENTS {
                let seed = 400 + (set * HANDOFF_CLIENTS + c) as u64;
                let client =
                    Client::connect_counting(*which, nodes, COMMON, seed, wakeups.clone()).await?;
                clients.push(Arc::new(client));
            }
            let warm = format!("{}e:h:{}:warm", self.prefix, which.label());
            workload::warm_up(&clients, &warm, TTL).await;
            sets.push((clients, wakeups));
        }
        let mut tallies: Vec<HandoffTally> =
            impls.iter().map(|_| HandoffTally::default()).collect();
        let mut rng = Seeded::new(0x6574_6368);
        for round in 0..self.sizes.contention_rounds {
            for i in shuffled(&mut rng, impls.len()) {
                let which = impls[i];
                let (clients, wakeups) = &sets[i];
                let key = format!("{}e:h:{}:{round}", self.prefix, which.label());
                let s = workload::handoff(
                    clients,
                    &key,
                    TTL,
                    wakeups.clone(),
                    self.sizes.contention_slice,
                )
                .await;
                self.progress(&format!(
                    "etcd beside redis, {HANDOFF_CLIENTS}-client hand-off round {}/{}: {} {:.0} hand-offs/s, {} wake-ups per hand-off, fairness {:.2}{}",
                    round + 1,
                    self.sizes.contention_rounds,
                    which.label(),
                    s.handoffs_per_s(),
                    match s.wakeups_per_handoff() {
                        Some(w) if counts_wakeups(which) => format!("{w:.2}"),
                        Some(_) => "uncounted (the member waits)".to_string(),
                        None => format!("{} (no hand-off)", s.wakeups),
                    },
                    s.fairness(),
                    if s.errors + s.abandoned > 0 {
                        format!(" ({} errors, {} abandoned)", s.errors, s.abandoned)
                    } else {
                        String::new()
                    }
                ));
                tallies[i].add(&s);
            }
        }
        Ok((90..)
            .zip(impls.iter().zip(&tallies))
            .map(|(seed, (which, tally))| tally.row(*which, seed))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_etcd_rung_is_measured_both_ways_beside_redis() {
        let uncontended = uncontended_group();
        let handoff = handoff_group();
        for id in ETCD_ROWS {
            assert!(uncontended.contains(&Impl::Etcd(id)), "{id}");
            assert!(handoff.contains(&Impl::Etcd(id)), "{id}");
        }
        assert!(uncontended.contains(&Impl::Floor));
        assert!(handoff.contains(&Impl::Rung("set-nx-px", Wait::Fixed)));
    }

    #[test]
    fn without_a_member_the_rows_are_skipped_saying_why() {
        let options = crate::BenchOptions::default();
        let pinning = crate::placement::Pinning::apply(false, Vec::new(), 2);
        let why = "no etcd member could be started: etcd is not on PATH";
        let session = Session::new(Sizes::from(&options), Vec::new(), "t:".into(), pinning)
            .with_etcd(Some(EtcdAt::Skipped(why.to_string())));
        let rt = crate::client::runtime().unwrap();
        let etcd = rt
            .block_on(session.etcd())
            .unwrap()
            .expect("an etcd section");
        assert_eq!(etcd.skipped.as_deref(), Some(why));
        assert!(etcd.uncontended.is_empty() && etcd.handoff.is_empty());
        // A batch of pairs has no etcd section at all.
        let pinning = crate::placement::Pinning::apply(false, Vec::new(), 2);
        let batch = Session::new(Sizes::from(&options), Vec::new(), "t:".into(), pinning);
        assert!(rt.block_on(batch.etcd()).unwrap().is_none());
    }

    #[test]
    fn the_lock_rpc_row_shows_no_wakeups_it_cannot_count() {
        let mut tally = HandoffTally::default();
        tally.add(&HandoffSample {
            acquisitions: 10,
            handoffs: 10,
            wakeups: 0,
            errors: 0,
            abandoned: 0,
            elapsed: Duration::from_millis(100),
            per_client: vec![5, 5],
        });
        let rpc = tally.row(Impl::Etcd("etcd-lock-rpc"), 1);
        assert_eq!((rpc.wakeups_per_handoff, rpc.wakeups), (None, None));
        assert_eq!(rpc.handoffs, 10);
        assert!(rpc.wakeups_per_handoff_interval.is_none());
        assert_eq!(rpc.handoffs_per_s, 100.0);
        let mutex = tally.row(Impl::Etcd("etcd-mutex"), 1);
        assert_eq!(mutex.wakeups_per_handoff, Some(0.0));
    }

    #[test]
    fn wakeups_of_a_round_without_a_handoff_still_count() {
        let round = |handoffs, wakeups| HandoffSample {
            acquisitions: 100,
            handoffs,
            wakeups,
            errors: 0,
            abandoned: 0,
            elapsed: Duration::from_millis(100),
            per_client: vec![100, 0],
        };
        let mut tally = HandoffTally::default();
        tally.add(&round(0, 60));
        tally.add(&round(2, 40));
        let polling = tally.row(Impl::Rung("set-nx-px", Wait::Fixed), 1);
        assert_eq!(polling.wakeups_per_handoff, Some(50.0));
        assert_eq!((polling.handoffs, polling.wakeups), (2, Some(100)));
        let mut none = HandoffTally::default();
        none.add(&round(0, 60));
        let row = none.row(Impl::Rung("set-nx-px", Wait::Fixed), 1);
        assert_eq!((row.wakeups_per_handoff, row.wakeups), (None, Some(60)));
    }
}
