//! Services beside Redis: the rungs of etcd, of ZooKeeper, of PostgreSQL
//! and of MariaDB, each on a real server of its own the run starts, uncontended beside the floor
//! and `lua-release` on redis-server node 0 in the same rounds, and in a
//! hand-off between clients of their own beside Redis rungs that poll and
//! that are woken by pub/sub, with the wake-ups the lock code counts. What
//! sets the services apart is only which rungs they have, what their
//! section says of them ([`etcd::NOTE`], [`zookeeper::NOTE`],
//! [`database::POSTGRES_NOTE`], [`database::MYSQL_NOTE`]), and how their
//! log fsyncs are counted: an etcd member's over each slice, a database's
//! in a counting pass of its own ([`database::FsyncCounter`]).

use super::{COMMON, Session, TTL, database, etcd, shuffled, subject, zookeeper};
use crate::client::{Client, Impl, Node, Service, Wait};
use crate::etcd_member::Metrics;
use crate::interval::Estimate;
use crate::options::Sizes;
use crate::physics::{ETCD_ROWS, MYSQL_ROWS, POSTGRES_ROWS, ZOOKEEPER_ROWS};
use crate::report::{BesideRedis, BesideUncontendedRow, HandoffRow};
use crate::rng::Seeded;
use crate::stats::{median, quantile_us, round3};
use crate::workload::{self, HandoffSample, WARMUP_CYCLES};
use locks::Wakeups;
use std::sync::Arc;
use std::time::Duration;

/// Where a service's rows are measured, or why they are not.
#[derive(Debug, Clone)]
pub enum ServerAt {
    /// On the server at this node.
    Server(Node),
    /// Not at all, for this reason (the service not installed, or its
    /// server did not start).
    Skipped(String),
}

/// Clients in the hand-off, each with connections of its own.
pub const HANDOFF_CLIENTS: usize = 16;

/// The rungs of `service` the bench measures.
fn rungs(service: Service) -> Vec<Impl> {
    let ids: &[&'static str] = match service {
        Service::Etcd => &ETCD_ROWS,
        Service::ZooKeeper => &ZOOKEEPER_ROWS,
        Service::Postgres => &POSTGRES_ROWS,
        Service::MySql => &MYSQL_ROWS,
    };
    ids.iter().map(|id| service.rung(id)).collect()
}

/// What the report says of the rows of `service`.
fn note(service: Service) -> &'static str {
    match service {
        Service::Etcd => etcd::NOTE,
        Service::ZooKeeper => zookeeper::NOTE,
        Service::Postgres => database::POSTGRES_NOTE,
        Service::MySql => database::MYSQL_NOTE,
    }
}

/// What tells the keys and the seeds of one service's rows from
/// another's.
fn tag(service: Service) -> (&'static str, u64) {
    match service {
        Service::Etcd => ("e", 0x6574_6364),
        Service::ZooKeeper => ("z", 0x7a6b_6364),
        Service::Postgres => ("p", 0x7067_6364),
        Service::MySql => ("m", 0x6d79_6364),
    }
}

/// The uncontended group: the Redis floor and `lua-release` on node 0,
/// then each rung of `service`.
fn uncontended_group(service: Service) -> Vec<Impl> {
    let mut impls = vec![Impl::Floor, Impl::Rung("lua-release", Wait::Fixed)];
    impls.extend(rungs(service));
    impls
}

/// The hand-off group: each rung of `service`, then `set-nx-px` polling
/// every 50 ms and `lua-release` woken by pub/sub on redis-server.
fn handoff_group(service: Service) -> Vec<Impl> {
    let mut impls = rungs(service);
    impls.push(Impl::Rung("set-nx-px", Wait::Fixed));
    impls.push(Impl::Rung("lua-release", Wait::Notify));
    impls
}

/// About how long the rows of `service` take with `sizes`: what the run
/// plans its time with. A cycle takes milliseconds (fsynced writes), so
/// each slice's warm-up cycles count; each hand-off slice drains its
/// waiters.
pub(super) fn planned(service: Service, sizes: &Sizes) -> Duration {
    let warm_up = Duration::from_millis(5) * WARMUP_CYCLES;
    let uncontended =
        (sizes.slice + warm_up) * (uncontended_group(service).len() as u32 * sizes.rounds);
    let drain = Duration::from_millis(150);
    let handoff = (sizes.contention_slice + drain)
        * (handoff_group(service).len() as u32 * sizes.contention_rounds);
    // A database's counting pass: its cycles and the wait for its
    // sessions to end, per rung.
    let counting = if is_database(service) {
        Duration::from_millis(400) * rungs(service).len() as u32
    } else {
        Duration::ZERO
    };
    // The server's start and every client's connections.
    uncontended + handoff + counting + Duration::from_secs(2)
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

/// Whether `service` is a database, whose log fsyncs are counted in a pass
/// of their own after the timed rounds.
fn is_database(service: Service) -> bool {
    matches!(service, Service::Postgres | Service::MySql)
}

/// Whether the lock code of `which` counts its waiters' wake-ups: etcd's
/// Lock RPC waits in the member, so its client has none to count.
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
    /// The rows of `service`, or why there are none; `None` when this
    /// session measures no rows of it at all (a batch of pairs).
    pub(crate) async fn beside(&self, service: Service) -> anyhow::Result<Option<BesideRedis>> {
        let server = match self.server_of(service) {
            None => return Ok(None),
            Some(ServerAt::Skipped(why)) => {
                return Ok(Some(BesideRedis {
                    skipped: Some(why.clone()),
                    note: note(service).to_string(),
                    uncontended: Vec::new(),
                    handoff: Vec::new(),
                }));
            }
            Some(ServerAt::Server(server)) => server,
        };
        let uncontended = self.beside_uncontended(service, server).await?;
        let handoff = self.beside_handoff(service, server).await?;
        Ok(Some(BesideRedis {
            skipped: None,
            note: note(service).to_string(),
            uncontended,
            handoff,
        }))
    }

    /// The node `which` runs on: the service's server for one of its
    /// rungs, else node 0.
    fn node_for<'a>(&'a self, which: Impl, server: &'a Node) -> &'a [Node] {
        match which.service() {
            Some(_) => std::slice::from_ref(server),
            None => &self.nodes[..1],
        }
    }

    /// Interleaved rounds of single-task acquire + release of the
    /// uncontended group of `service`, with an etcd member's fsyncs
    /// counted over each etcd slice.
    async fn beside_uncontended(
        &self,
        service: Service,
        server: &Node,
    ) -> anyhow::Result<Vec<BesideUncontendedRow>> {
        let (tag, seed) = tag(service);
        let impls = uncontended_group(service);
        let mut clients = Vec::new();
        for (seed, which) in (300..).zip(&impls) {
            let nodes = self.node_for(*which, server);
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
        let mut rng = Seeded::new(seed);
        for round in 0..self.sizes.rounds {
            for i in shuffled(&mut rng, impls.len()) {
                let which = impls[i];
                let etcd = which.service() == Some(Service::Etcd);
                let before = if etcd {
                    Metrics::read(&server.addr).await.ok()
                } else {
                    None
                };
                let key = format!("{}{tag}:u:{}", self.prefix, which.label());
                let s = workload::uncontended(&clients[i], &key, TTL, self.sizes.slice).await;
                if etcd {
                    let after = Metrics::read(&server.addr).await.ok();
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
                    "{} beside redis, uncontended round {}/{}: {} {:.0} cycles/s p50 {} µs{}",
                    service.name(),
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
        // The timed sessions end before a database's counts are read.
        drop(clients);
        let counted = if is_database(service) {
            self.count_fsyncs(service, server, &impls).await
        } else {
            vec![None; impls.len()]
        };
        Ok(group
            .rows(1, 80)
            .into_iter()
            .zip(&impls)
            .zip(slices.iter().zip(counted))
            .map(
                |((figures, which), (slices, counted))| BesideUncontendedRow {
                    figures,
                    wal_fsyncs_per_cycle: if which.service() == Some(Service::Etcd) {
                        (slices.counted && slices.cycles > 0.0)
                            .then(|| round3(slices.fsyncs / slices.cycles))
                    } else {
                        counted.map(round3)
                    },
                },
            )
            .collect())
    }

    /// Log fsyncs per cycle of each database rung among `impls` (`None`
    /// for the others, and where the server's counter could not be read:
    /// said in the progress, the row stays).
    async fn count_fsyncs(
        &self,
        service: Service,
        server: &Node,
        impls: &[Impl],
    ) -> Vec<Option<f64>> {
        let (tag, _) = tag(service);
        let counter = match database::FsyncCounter::open(service, server).await {
            Ok(counter) => counter,
            Err(e) => {
                self.progress(&format!(
                    "{} beside redis: fsyncs not counted: {e:#}",
                    service.name()
                ));
                return vec![None; impls.len()];
            }
        };
        let mut counted = Vec::new();
        for (seed, which) in (350..).zip(impls) {
            if which.service() != Some(service) {
                counted.push(None);
                continue;
            }
            let key = format!("{}{tag}:f:{}", self.prefix, which.label());
            let per_cycle = counter.per_cycle(*which, server, &key, seed).await;
            self.progress(&format!(
                "{} beside redis, log fsyncs over {} cycles: {} {}",
                service.name(),
                database::COUNTED_CYCLES,
                which.label(),
                match &per_cycle {
                    Ok(f) => format!("{f:.2} per cycle"),
                    Err(e) => format!("not counted: {e:#}"),
                }
            ));
            counted.push(per_cycle.ok());
        }
        counted
    }

    /// Rounds of the hand-off: [`HANDOFF_CLIENTS`] clients of each of the
    /// hand-off group of `service` on one key (a fresh one per slice), the
    /// group in a shuffled order each round.
    async fn beside_handoff(
        &self,
        service: Service,
        server: &Node,
    ) -> anyhow::Result<Vec<HandoffRow>> {
        let (tag, seed) = tag(service);
        let impls = handoff_group(service);
        let mut sets = Vec::new();
        for (set, which) in impls.iter().enumerate() {
            let wakeups = Arc::new(Wakeups::default());
            let nodes = self.node_for(*which, server);
            let mut clients = Vec::new();
            for c in 0..HANDOFF_CLIENTS {
                let seed = 400 + (set * HANDOFF_CLIENTS + c) as u64;
                let client =
                    Client::connect_counting(*which, nodes, COMMON, seed, wakeups.clone()).await?;
                clients.push(Arc::new(client));
            }
            let warm = format!("{}{tag}:h:{}:warm", self.prefix, which.label());
            workload::warm_up(&clients, &warm, TTL).await;
            sets.push((clients, wakeups));
        }
        let mut tallies: Vec<HandoffTally> =
            impls.iter().map(|_| HandoffTally::default()).collect();
        let mut rng = Seeded::new(seed ^ 0x0b);
        for round in 0..self.sizes.contention_rounds {
            for i in shuffled(&mut rng, impls.len()) {
                let which = impls[i];
                let (clients, wakeups) = &sets[i];
                let key = format!("{}{tag}:h:{}:{round}", self.prefix, which.label());
                let s = workload::handoff(
                    clients,
                    &key,
                    TTL,
                    wakeups.clone(),
                    self.sizes.contention_slice,
                )
                .await;
                self.progress(&format!(
                    "{} beside redis, {HANDOFF_CLIENTS}-client hand-off round {}/{}: {} {:.0} hand-offs/s, {} wake-ups per hand-off, fairness {:.2}{}",
                    service.name(),
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
    fn every_rung_of_each_service_is_measured_both_ways_beside_redis() {
        for (service, ids) in [
            (Service::Etcd, &ETCD_ROWS[..]),
            (Service::ZooKeeper, &ZOOKEEPER_ROWS[..]),
            (Service::Postgres, &POSTGRES_ROWS[..]),
            (Service::MySql, &MYSQL_ROWS[..]),
        ] {
            let uncontended = uncontended_group(service);
            let handoff = handoff_group(service);
            for id in ids {
                assert!(uncontended.contains(&service.rung(id)), "{id}");
                assert!(handoff.contains(&service.rung(id)), "{id}");
            }
            assert!(uncontended.contains(&Impl::Floor));
            assert!(handoff.contains(&Impl::Rung("set-nx-px", Wait::Fixed)));
            assert!(handoff.contains(&Impl::Rung("lua-release", Wait::Notify)));
        }
        // Their keys and rounds' orders are apart.
        let tags: std::collections::BTreeSet<_> = Service::ALL.into_iter().map(tag).collect();
        assert_eq!(tags.len(), Service::ALL.len());
    }

    #[test]
    fn without_a_server_the_rows_are_skipped_saying_why() {
        let options = crate::BenchOptions::default();
        let rt = crate::client::runtime().unwrap();
        for (service, why) in [
            (
                Service::Etcd,
                "no etcd member could be started: etcd is not on PATH",
            ),
            (
                Service::ZooKeeper,
                "no ZooKeeper server could be started: ZooKeeper is not installed",
            ),
            (
                Service::Postgres,
                "no PostgreSQL server could be started: PostgreSQL 15 is not installed",
            ),
            (
                Service::MySql,
                "no MariaDB server could be started: MariaDB is not installed",
            ),
        ] {
            let pinning = crate::placement::Pinning::apply(false, Vec::new(), 2);
            let skipped = Some(ServerAt::Skipped(why.to_string()));
            let session = Session::new(Sizes::from(&options), Vec::new(), "t:".into(), pinning)
                .with_beside(service, skipped);
            let section = rt
                .block_on(session.beside(service))
                .unwrap()
                .expect("a section");
            assert_eq!(section.skipped.as_deref(), Some(why));
            assert!(section.uncontended.is_empty() && section.handoff.is_empty());
            assert_eq!(section.note, note(service));
            // Only the service asked for is skipped: the others have no
            // section at all, as a batch of pairs has none.
            for other in Service::ALL.into_iter().filter(|s| *s != service) {
                assert!(rt.block_on(session.beside(other)).unwrap().is_none());
            }
        }
    }

    #[test]
    fn every_zookeeper_rung_counts_its_wakeups() {
        for id in ZOOKEEPER_ROWS {
            assert!(counts_wakeups(Impl::ZooKeeper(id)), "{id}");
        }
        let mut tally = HandoffTally::default();
        tally.add(&HandoffSample {
            acquisitions: 20,
            handoffs: 10,
            wakeups: 150,
            errors: 0,
            abandoned: 0,
            elapsed: Duration::from_millis(100),
            per_client: vec![10, 10],
        });
        let herd = tally.row(Impl::ZooKeeper("zk-herd"), 1);
        assert_eq!(herd.wakeups_per_handoff, Some(15.0));
        assert_eq!(herd.subject.wait, "watch-parent");
        assert_eq!(herd.clients, HANDOFF_CLIENTS);
    }

    #[test]
    fn every_database_rung_counts_its_polls_and_its_fsyncs_in_a_pass_of_their_own() {
        for id in POSTGRES_ROWS {
            assert!(counts_wakeups(Impl::Postgres(id)), "{id}");
        }
        assert!(counts_wakeups(Impl::MySql("mysql-get-lock")));
        assert!(is_database(Service::Postgres) && is_database(Service::MySql));
        assert!(!is_database(Service::Etcd) && !is_database(Service::ZooKeeper));
        let sizes = Sizes::from(&crate::BenchOptions::default());
        assert!(planned(Service::Postgres, &sizes) > planned(Service::MySql, &sizes));
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
