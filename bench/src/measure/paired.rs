//! The targets' comparisons, measured in pairs. The stage is cut into
//! batches, each its share of the time budget and, in `locklab bench`,
//! each in a fresh client process ([`batch`](super::batch)): a batch
//! connects anew and measures rounds until its share ends, every round
//! giving every comparison one pair, so that each comparison's pairs are
//! spread over the whole stage and over processes. The machine's state
//! drifts over seconds, and part of what sets a ratio is fixed for a
//! process; pairs bunched in one stretch or one process would stand for
//! that one only. An uncontended pair is a window in which the two
//! sides' cycles alternate one by one ([`workload::uncontended_interleaved`]):
//! slices of each side back to back let a shift of the machine between the
//! two slices pass for a difference between the sides, which made the
//! ratios of separate slices spread by ±10% on a shared machine. A
//! contention pair, whose sixteen workers cannot share a window with the
//! other side's, is one slice of each side back to back, in an order drawn
//! per pair, each slice ending after the same number of hand-offs
//! ([`SliceEnd::AtHandoff`]): fairness and the tail in hand-offs are then
//! read over the same share of the lock's work on both sides and in every
//! run, where a slice of fixed time held more of it when the machine ran
//! faster, and a waiter starved to the slice's end waited longer. Each
//! round begins with a reference `PING` slice in each placement it uses,
//! so the machine's state is sampled all along.

use super::batch::{BatchEvent, BatchSpec, Launcher, RefSample};
use super::{Session, Stage, StageEnd, TTL};
use crate::client::{Client, Floor};
use crate::interval::BATCHES;
use crate::rng::Seeded;
use crate::servers::Servers;
use crate::targets::{
    COMPARISONS, Comparison, ComparisonRecord, PairSample, Placement, SideSample, Work,
};
use crate::workload::{self, SliceEnd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The seed of the pairs' orders (each batch's its own, from it).
const PAIR_SEED: u64 = 0x7061_6972;

/// One comparison ready to measure: its two sides, connected.
struct Ready {
    comparison: &'static Comparison,
    a: Arc<Client>,
    b: Arc<Client>,
}

impl Session {
    /// Why this run cannot measure `c`, if it cannot: too few nodes, or
    /// node 0 not movable beside the client for the same-CPU ones.
    fn cannot_measure(&self, c: &Comparison) -> Option<String> {
        if c.nodes() > self.nodes.len() {
            Some(format!(
                "needs {} nodes, the run has {}",
                c.nodes(),
                self.nodes.len()
            ))
        } else if c.placement() == Placement::SameCpu && !self.pinning.can_move_node0() {
            Some("needs node 0 pinned beside the client (own servers, pinning on)".to_string())
        } else {
            None
        }
    }

    /// The time the pairs may take: the sizes' budget, cut so that the
    /// whole run stays within its total budget when it has one.
    fn pair_budget(&self) -> Duration {
        let budget = self.sizes.target_budget;
        match self.sizes.total_budget {
            Some(total) => budget.min(
                total
                    .saturating_sub(self.elapsed())
                    .saturating_sub(self.planned_after_pairs()),
            ),
            None => budget,
        }
    }

    /// Measures every comparison this run can, in batches of rounds of
    /// one pair of each (each batch in a client process of its own when
    /// the session has a launcher), until every interval is as fine as
    /// the stop rule's finest after [`BATCHES`] batches, or the budget is
    /// spent.
    pub(super) async fn paired(&self) -> anyhow::Result<()> {
        let budget = self.pair_budget();
        let started = Instant::now();
        let mut measurable = Vec::new();
        for comparison in &COMPARISONS {
            let skipped = self.cannot_measure(comparison);
            if skipped.is_none() {
                measurable.push(comparison);
            }
            self.with(|p| {
                p.comparisons.push(ComparisonRecord {
                    skipped,
                    ..ComparisonRecord::new(comparison.id)
                })
            });
        }
        let mut stage = Stage {
            budget,
            ..Stage::default()
        };
        self.with(|p| p.stage = Some(stage));
        let batches = self.sizes.batches;
        self.progress(&format!(
            "targets: {} comparisons in pairs, {batches} batches{}, for at most {:.0} s",
            measurable.len(),
            if self.launcher.is_some() {
                " each in a client process of its own"
            } else {
                ""
            },
            budget.as_secs_f64()
        ));
        let finest = self.sizes.stop.aiming_at(self.sizes.stop.finest);
        let mut end = StageEnd::Budget;
        for batch in 0..batches {
            // Equal shares of the budget, each ending where its share does.
            let until = started + budget * (batch + 1) / batches;
            let now = Instant::now();
            if now >= until {
                continue;
            }
            // Fresh servers for each batch when the run's are ours: what
            // stays fixed for a server process (where its memory landed)
            // then varies between batches too. Killed when dropped.
            let fresh = if self.fresh_servers {
                Some(Servers::start_fresh(self.nodes.len()).map_err(anyhow::Error::from)?)
            } else {
                None
            };
            let batch_session = Session::new(
                self.sizes,
                fresh
                    .as_ref()
                    .map_or_else(|| self.nodes.clone(), |s| s.nodes().to_vec()),
                self.prefix.clone(),
                fresh.as_ref().map_or_else(
                    || self.pinning.clone(),
                    |s| self.pinning.with_servers(s.pids()),
                ),
            );
            match &self.launcher {
                Some(launcher) => {
                    let spec = batch_session.batch_spec(launcher, batch, until - now, &measurable);
                    let measured = self.batch_in_child(launcher, &spec).await;
                    // The child may have been stopped with node 0 beside it.
                    batch_session.pinning.node0_home();
                    measured?;
                }
                None => {
                    let mut apply = |event| {
                        self.apply(event);
                        Ok(())
                    };
                    let reference = batch_session.reference_floor().await?;
                    batch_session
                        .batch(batch, until, &measurable, &reference, &mut apply)
                        .await?;
                }
            }
            drop(fresh);
            let coarsest = self.with(|p| coarsest_half_width(&p.comparisons));
            if let Some(within) = coarsest {
                stage.reached = Some(within);
                self.progress(&format!(
                    "targets: batch {} of {batches} done; every interval within ±{:.1}%",
                    batch + 1,
                    within * 100.0
                ));
            }
            stage.took = started.elapsed();
            self.with(|p| p.stage = Some(stage));
            let precise = self.with(|p| p.comparisons.iter().all(|r| !r.needs_more(&finest)));
            if batch + 1 >= BATCHES as u32 && precise {
                end = StageEnd::Precise;
                break;
            }
        }
        stage.took = started.elapsed();
        stage.end = Some(end);
        self.with(|p| p.stage = Some(stage));
        self.progress(&format!(
            "targets: {} after {:.0} s",
            match end {
                StageEnd::Precise => "every interval is precise enough",
                StageEnd::Budget => "time budget spent",
            },
            stage.took.as_secs_f64()
        ));
        Ok(())
    }

    /// What batch `batch`'s process is to do: measure `comparisons` for
    /// `duration` on this session's servers, under its prefix and pinning.
    fn batch_spec(
        &self,
        launcher: &Launcher,
        batch: u32,
        duration: Duration,
        comparisons: &[&'static Comparison],
    ) -> BatchSpec {
        BatchSpec {
            batch,
            duration_ms: duration.as_millis() as u64,
            asked: launcher.asked,
            nodes: self.nodes.iter().map(|n| n.url.clone()).collect(),
            prefix: self.prefix.clone(),
            pinned: self.pinning.pinned,
            cpus: self.pinning.cpus,
            server_pids: self.pinning.server_pids().to_vec(),
            comparisons: comparisons.iter().map(|c| c.id.to_string()).collect(),
        }
    }

    /// Batch number `batch`: fresh connections for `comparisons`, then
    /// rounds until `until`, each beginning with a reference slice in each
    /// placement it uses and giving every comparison one pair (the first
    /// [`Sizes::warmup_pairs`](crate::options::Sizes::warmup_pairs) of each
    /// discarded), in an order drawn per round, as long as any comparison
    /// has fewer than its share of the most pairs. Every comparison keeps
    /// at least one pair from every batch, past `until` if it must: the
    /// repeat interval is the spread of the batches' medians, and a batch
    /// that measured a comparison only as warm-up (a short budget, a slow
    /// machine) would leave it out by chance. Everything measured goes to
    /// `emit` as soon as it is.
    pub(super) async fn batch(
        &self,
        batch: u32,
        until: Instant,
        comparisons: &[&'static Comparison],
        reference: &Floor,
        emit: &mut dyn FnMut(BatchEvent) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut ready = Vec::new();
        for (seed, comparison) in (400..).step_by(2).zip(comparisons) {
            let seed = seed + 1_000 * u64::from(batch);
            let clients = self
                .connect_all(&[comparison.a, comparison.b], comparison.nodes(), seed)
                .await?;
            ready.push(Ready {
                comparison,
                a: clients[0].clone(),
                b: clients[1].clone(),
            });
        }
        let most = self
            .sizes
            .stop
            .max_pairs
            .div_ceil(self.sizes.batches as usize)
            + self.sizes.warmup_pairs;
        let mut measured = vec![0usize; ready.len()];
        // One kept pair past the warm-up, whatever the time.
        let floor = (self.sizes.warmup_pairs + 1).min(most);
        let below_floor = |measured: &[usize]| measured.iter().any(|m| *m < floor);
        let mut rng = Seeded::new(PAIR_SEED ^ (u64::from(batch) << 32));
        let (mut round, mut serial) = (0u32, 0u64);
        while (Instant::now() < until || below_floor(&measured))
            && measured.iter().any(|m| *m < most)
        {
            round += 1;
            for placement in [Placement::Split, Placement::SameCpu] {
                let here: Vec<usize> = (0..ready.len())
                    .filter(|i| ready[*i].comparison.placement() == placement)
                    .filter(|i| measured[*i] < most)
                    .collect();
                if here.is_empty() {
                    continue;
                }
                // Node 0 beside the client until the guard is dropped.
                let _beside =
                    (placement == Placement::SameCpu).then(|| self.pinning.node0_beside_client());
                let sample = workload::ping(reference, self.sizes.pair_slice).await;
                emit(BatchEvent::Reference(RefSample::of(placement, &sample)))?;
                for k in rng.permutation(here.len()) {
                    let i = here[k];
                    if Instant::now() >= until && measured[i] >= floor {
                        continue;
                    }
                    serial += 1;
                    let t0 = Instant::now();
                    let pair = self.one_pair(&ready[i], &mut rng, batch, serial).await;
                    let comparison = ready[i].comparison.id.to_string();
                    let seconds = t0.elapsed().as_secs_f64();
                    measured[i] += 1;
                    emit(if measured[i] <= self.sizes.warmup_pairs {
                        BatchEvent::Warmup {
                            comparison,
                            seconds,
                        }
                    } else {
                        BatchEvent::Pair {
                            comparison,
                            pair,
                            seconds,
                        }
                    })?;
                }
            }
            emit(BatchEvent::Round { batch, round })?;
        }
        Ok(())
    }

    /// One pair of `r`, pair number `serial` of batch `batch`: both sides
    /// back to back, the side to go first drawn from `rng`.
    async fn one_pair(&self, r: &Ready, rng: &mut Seeded, batch: u32, serial: u64) -> PairSample {
        let a_first = rng.coin();
        let (a, b) = match r.comparison.work {
            Work::Uncontended { nodes, .. } => self.interleaved(r, nodes, a_first).await,
            Work::Contention { workers } => {
                let (first, second) = if a_first { (&r.a, &r.b) } else { (&r.b, &r.a) };
                let serial = format!("{batch}-{serial}");
                let one = self
                    .side(r.comparison, workers, first, a_first, &serial)
                    .await;
                let two = self
                    .side(r.comparison, workers, second, !a_first, &serial)
                    .await;
                if a_first { (one, two) } else { (two, one) }
            }
        };
        PairSample {
            a,
            b,
            a_first,
            batch,
        }
    }

    /// One uncontended pair of `r` on `nodes` nodes: the two sides'
    /// cycles interleaved one by one for two slices' time (what a pair of
    /// back-to-back slices would take), `a` first when `a_first`.
    async fn interleaved(
        &self,
        r: &Ready,
        nodes: usize,
        a_first: bool,
    ) -> (SideSample, SideSample) {
        let c = r.comparison;
        let key_a = format!("{}p:{nodes}:{}", self.prefix, c.a.label());
        let key_b = format!("{}p:{nodes}:{}", self.prefix, c.b.label());
        let (a, b) = workload::uncontended_interleaved(
            &r.a,
            &r.b,
            (&key_a, &key_b),
            TTL,
            self.sizes.pair_slice * 2,
            a_first,
        )
        .await;
        let rate = |s: workload::CycleSample| SideSample {
            rate: s.typical_rate(),
            ..SideSample::default()
        };
        (rate(a), rate(b))
    }

    /// One contention slice of `workers` workers on `client`, side `a` of
    /// `c` or its side `b`, in the pair named `serial` (its keys are the
    /// pair's own).
    async fn side(
        &self,
        c: &Comparison,
        workers: usize,
        client: &Arc<Client>,
        is_a: bool,
        serial: &str,
    ) -> SideSample {
        let which = if is_a { c.a } else { c.b };
        let prefix = format!("{}pc:{workers}:{}:{serial}:", self.prefix, which.label());
        let s = workload::contention(
            client.clone(),
            &prefix,
            workers,
            1,
            TTL,
            SliceEnd::AtHandoff {
                handoffs: self.sizes.contention_pair_handoffs,
                at_most: self.sizes.contention_pair_slice,
            },
        )
        .await;
        let p999 = s.waits.quantile(0.999);
        // `Waits` counts in µs; these are hand-offs.
        let handoffs = s.handoffs.quantile(0.999);
        SideSample {
            rate: s.rate(),
            wait_p999_us: p999.us,
            wait_p999_lower_bound: p999.lower_bound,
            wait_p999_handoffs: handoffs.us,
            wait_p999_handoffs_lower_bound: handoffs.lower_bound,
            fairness: s.fairness(),
        }
    }

    /// One progress line per round: each comparison's pairs and its first
    /// target's figure so far.
    pub(super) fn report_round(&self, batch: u32, round: u32) {
        let line = self.with(|p| {
            p.comparisons
                .iter()
                .filter(|record| record.skipped.is_none())
                .map(|record| {
                    let figure = record.estimates().first().copied().flatten().map_or(
                        "–".to_string(),
                        |e| {
                            format!(
                                "{:.3} ±{:.1}%",
                                e.median,
                                e.outer_relative_half_width() * 100.0
                            )
                        },
                    );
                    format!("{} {figure} ({})", record.id, record.pairs.len())
                })
                .collect::<Vec<_>>()
                .join("; ")
        });
        self.progress(&format!(
            "targets round {round} of batch {}: {line}",
            batch + 1
        ));
    }
}

/// The widest relative half-width among the figures of `records`; `None`
/// while any measured one has no interval yet.
fn coarsest_half_width(records: &[ComparisonRecord]) -> Option<f64> {
    records
        .iter()
        .filter(|r| r.skipped.is_none())
        .flat_map(ComparisonRecord::estimates)
        .try_fold(0.0, |coarsest: f64, e| {
            let e = e.filter(|e| e.is_interval())?;
            Some(coarsest.max(e.outer_relative_half_width()))
        })
}
