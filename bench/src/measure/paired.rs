//! The targets' comparisons, measured in pairs, round after round until
//! each is precise enough ([`StopRule`](crate::interval::StopRule)) or the
//! time budget runs out. In a round every comparison gets one pair, as
//! long as any of them still needs pairs, so that every comparison's pairs
//! are spread over the whole stage: the machine's state drifts over
//! seconds, and pairs bunched in one stretch of it would stand for that
//! stretch only. An uncontended pair is a window in which the two
//! sides' cycles alternate one by one ([`workload::uncontended_interleaved`]):
//! slices of each side back to back let a shift of the machine between the
//! two slices pass for a difference between the sides, which made the
//! ratios of separate slices spread by ±10% on a shared machine. A
//! contention pair, whose sixteen workers cannot share a window with the
//! other side's, is one slice of each side back to back, in an order drawn
//! per pair. Each round begins with a reference `PING` slice in
//! each placement it uses, so the machine's state is sampled all along.

use super::{RefPhase, Session, Stage, StageEnd, TTL};
use crate::client::{Client, Floor};
use crate::rng::Seeded;
use crate::targets::{
    COMPARISONS, Comparison, ComparisonRecord, PairSample, Placement, SideSample, Work,
};
use crate::workload;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The seed of the pairs' orders.
const PAIR_SEED: u64 = 0x7061_6972;

/// One comparison ready to measure: its two sides, connected.
struct Ready {
    comparison: &'static Comparison,
    a: Arc<Client>,
    b: Arc<Client>,
    /// Its place in the progress record's comparisons.
    record: usize,
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

    /// Measures every comparison this run can, in rounds of one pair of
    /// each, until none needs more or the budget is spent.
    pub(super) async fn paired(&self, reference: &Floor) -> anyhow::Result<()> {
        let budget = self.pair_budget();
        let started = Instant::now();
        let deadline = started + budget;
        let mut ready = Vec::new();
        for (seed, comparison) in (400..).step_by(2).zip(&COMPARISONS) {
            if let Some(why) = self.cannot_measure(comparison) {
                self.with(|p| {
                    p.comparisons.push(ComparisonRecord {
                        skipped: Some(why),
                        ..ComparisonRecord::new(comparison.id)
                    })
                });
                continue;
            }
            let clients = self
                .connect_all(&[comparison.a, comparison.b], comparison.nodes(), seed)
                .await?;
            let record = self.with(|p| {
                p.comparisons.push(ComparisonRecord::new(comparison.id));
                p.comparisons.len() - 1
            });
            ready.push(Ready {
                comparison,
                a: clients[0].clone(),
                b: clients[1].clone(),
                record,
            });
        }
        let mut stage = Stage {
            budget,
            ..Stage::default()
        };
        self.with(|p| p.stage = Some(stage));
        self.progress(&format!(
            "targets: {} comparisons in pairs, for at most {:.0} s",
            ready.len(),
            budget.as_secs_f64()
        ));
        let mut rng = Seeded::new(PAIR_SEED);
        let (mut round, mut serial) = (0u32, 0u64);
        // Each comparison has its own aim (first the cap on an interval's
        // width); one that reaches it goes on to a finer one while time
        // remains, without waiting for the others. The stage ends when
        // none needs pairs for its aim.
        let mut aims = vec![self.sizes.stop.precision; ready.len()];
        // The finest aim each comparison has reached.
        let mut reached: Vec<Option<f64>> = vec![None; ready.len()];
        let end = loop {
            let time_left = Instant::now() < deadline;
            for ((r, aim), reached) in ready.iter().zip(&mut aims).zip(&mut reached) {
                // By the interval's width alone, never by where it lies.
                let (next, now_reached) = self
                    .sizes
                    .stop
                    .next_aim(*aim, time_left, |aim| self.needs_more(r, aim));
                *aim = next;
                *reached = now_reached.or(*reached);
            }
            let all_within = reached
                .iter()
                .copied()
                .try_fold(0.0, |coarsest: f64, r| r.map(|r| coarsest.max(r)));
            if let Some(within) = all_within
                && stage.reached.is_none_or(|(before, _)| within < before)
            {
                stage.reached = Some((within, started.elapsed()));
                self.progress(&format!(
                    "targets: every interval within ±{:.0}%",
                    within * 100.0
                ));
            }
            if !ready
                .iter()
                .zip(&aims)
                .any(|(r, aim)| self.needs_more(r, *aim))
            {
                break StageEnd::Precise;
            }
            if Instant::now() >= deadline {
                break StageEnd::Budget;
            }
            // While any comparison needs pairs, every one gets its pair of
            // the round (up to its most): one precise early would
            // otherwise have all its pairs from the first seconds, and its
            // interval would hide how far the machine drifted afterwards.
            let pending: Vec<&Ready> = ready.iter().filter(|r| self.below_most(r)).collect();
            round += 1;
            for placement in [Placement::Split, Placement::SameCpu] {
                let here: Vec<&Ready> = pending
                    .iter()
                    .copied()
                    .filter(|r| r.comparison.placement() == placement)
                    .collect();
                if here.is_empty() {
                    continue;
                }
                // Node 0 beside the client until the guard is dropped.
                let _beside =
                    (placement == Placement::SameCpu).then(|| self.pinning.node0_beside_client());
                self.reference_slice(
                    reference,
                    RefPhase::BetweenPairs,
                    placement,
                    self.sizes.pair_slice,
                )
                .await;
                for i in rng.permutation(here.len()) {
                    if Instant::now() >= deadline {
                        break;
                    }
                    serial += 1;
                    self.one_pair(here[i], &mut rng, serial).await;
                }
            }
            self.report_round(round, &ready);
            stage.took = started.elapsed();
            self.with(|p| p.stage = Some(stage));
        };
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

    /// Whether `r` still needs pairs: its warm-up, or more to reach `aim`.
    fn needs_more(&self, r: &Ready, aim: f64) -> bool {
        self.with(|p| {
            let record = &p.comparisons[r.record];
            record.warmup_pairs < self.sizes.warmup_pairs
                || record.needs_more(&self.sizes.stop.aiming_at(aim))
        })
    }

    /// Whether `r` has fewer pairs than the most a comparison may have.
    fn below_most(&self, r: &Ready) -> bool {
        self.with(|p| p.comparisons[r.record].pairs.len() < self.sizes.stop.max_pairs)
    }

    /// One pair of `r`, the run's pair number `serial`: both sides back to
    /// back, the side to go first drawn from `rng`; kept, or counted as
    /// warm-up.
    async fn one_pair(&self, r: &Ready, rng: &mut Seeded, serial: u64) {
        let t0 = Instant::now();
        let a_first = rng.coin();
        let (a, b) = match r.comparison.work {
            Work::Uncontended { nodes, .. } => self.interleaved(r, nodes, a_first).await,
            Work::Contention { workers } => {
                let (first, second) = if a_first { (&r.a, &r.b) } else { (&r.b, &r.a) };
                let one = self
                    .side(r.comparison, workers, first, a_first, serial)
                    .await;
                let two = self
                    .side(r.comparison, workers, second, !a_first, serial)
                    .await;
                if a_first { (one, two) } else { (two, one) }
            }
        };
        let warmup = self.sizes.warmup_pairs;
        self.with(|p| {
            let record = &mut p.comparisons[r.record];
            if record.warmup_pairs < warmup {
                record.warmup_pairs += 1;
            } else {
                record.pairs.push(PairSample { a, b, a_first });
            }
            record.seconds += t0.elapsed().as_secs_f64();
        });
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
    /// `c` or its side `b`, in pair number `serial` (its keys are the
    /// pair's own).
    async fn side(
        &self,
        c: &Comparison,
        workers: usize,
        client: &Arc<Client>,
        is_a: bool,
        serial: u64,
    ) -> SideSample {
        let which = if is_a { c.a } else { c.b };
        let prefix = format!("{}pc:{workers}:{}:{serial}:", self.prefix, which.label());
        let s = workload::contention(
            client.clone(),
            &prefix,
            workers,
            1,
            TTL,
            self.sizes.contention_pair_slice,
        )
        .await;
        let p999 = s.waits.quantile(0.999);
        SideSample {
            rate: s.rate(),
            wait_p999_us: p999.us,
            wait_p999_lower_bound: p999.lower_bound,
            fairness: s.fairness(),
        }
    }

    /// One progress line per round: each comparison's pairs and its first
    /// target's figure so far.
    fn report_round(&self, round: u32, ready: &[Ready]) {
        let line = self.with(|p| {
            ready
                .iter()
                .map(|r| {
                    let record = &p.comparisons[r.record];
                    let figure = record
                        .estimates()
                        .first()
                        .copied()
                        .flatten()
                        .map_or("–".to_string(), |e| {
                            format!("{:.3} ±{:.1}%", e.median, e.relative_half_width() * 100.0)
                        });
                    format!("{} {figure} ({})", r.comparison.id, record.pairs.len())
                })
                .collect::<Vec<_>>()
                .join("; ")
        });
        self.progress(&format!("targets round {round}: {line}"));
    }
}
