//! The reference workload: `PING` back to back on node 0, before the
//! pairs, between them, in the descriptive groups and after. Its spread
//! says how steady the machine was; its round trips, their modes.

use super::{Session, TTL};
use crate::client::Floor;
use crate::interval::Estimate;
use crate::noise::{self, Modes};
use crate::report::{ReferenceRow, RttRow};
use crate::stats::{histogram, quantile_us, round3};
use crate::targets::Placement;
use crate::workload::{self, CycleSample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// When a reference slice ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefPhase {
    /// Before anything else.
    Before,
    /// Between the rounds of pairs of the targets.
    BetweenPairs,
    /// In the rounds of the descriptive uncontended groups.
    Groups,
    /// After everything else.
    After,
}

impl RefPhase {
    /// The phase as the report names it.
    pub fn label(self) -> &'static str {
        match self {
            RefPhase::Before => "before",
            RefPhase::BetweenPairs => "between pairs",
            RefPhase::Groups => "in the tables' rounds",
            RefPhase::After => "after",
        }
    }
}

/// One reference slice.
#[derive(Debug, Clone, Copy)]
struct RefSlice {
    phase: RefPhase,
    placement: Placement,
    rate: f64,
    p50_us: u64,
}

/// Every reference slice of a run, and every round trip by placement.
#[derive(Default)]
pub struct Reference {
    slices: Vec<RefSlice>,
    round_trips: BTreeMap<&'static str, Histogram<u64>>,
}

impl Reference {
    /// Adds one slice of `PING`s.
    pub fn add(&mut self, phase: RefPhase, placement: Placement, sample: &CycleSample) {
        self.slices.push(RefSlice {
            phase,
            placement,
            rate: sample.rate(),
            p50_us: quantile_us(&sample.hist, 0.5),
        });
        let merged = self
            .round_trips
            .entry(placement.label())
            .or_insert_with(histogram);
        // Same bounds on both sides: adding cannot fail.
        let _ = merged.add(&sample.hist);
    }

    /// The modes of every round trip measured in `placement`.
    pub fn modes(&self, placement: Placement) -> Option<Modes> {
        self.round_trips.get(placement.label()).map(noise::modes)
    }

    /// The fast mode's round trip in `placement`, µs: what the bounds on
    /// the cycle rates use.
    pub fn fast_rtt_us(&self, placement: Placement) -> Option<f64> {
        let modes = self.modes(placement)?;
        modes.modes.first().map(|m| m.median_us as f64)
    }

    /// One row per phase and placement measured, in phase order.
    pub fn rows(&self) -> Vec<ReferenceRow> {
        let mut keys: Vec<(RefPhase, Placement)> =
            self.slices.iter().map(|s| (s.phase, s.placement)).collect();
        keys.sort_by_key(|(phase, placement)| (*phase, placement.label()));
        keys.dedup();
        keys.into_iter()
            .enumerate()
            .map(|(i, (phase, placement))| {
                let of: Vec<&RefSlice> = self
                    .slices
                    .iter()
                    .filter(|s| s.phase == phase && s.placement == placement)
                    .collect();
                let rates: Vec<f64> = of.iter().map(|s| s.rate).collect();
                let modes = self.modes(placement);
                let slow_mode_slices = modes
                    .filter(|m| m.bimodal)
                    .map(|m| of.iter().filter(|s| s.p50_us >= m.split_us).count());
                ReferenceRow {
                    phase: phase.label().to_string(),
                    placement: placement.label().to_string(),
                    slices: of.len(),
                    ping_per_s: Estimate::of(&rates, 0x9e + i as u64).map(Estimate::rounded),
                    ping_per_s_min: round3(rates.iter().copied().fold(f64::INFINITY, f64::min)),
                    ping_per_s_max: round3(rates.iter().copied().fold(0.0, f64::max)),
                    slow_mode_slices,
                }
            })
            .collect()
    }

    /// The raw round trip of each placement.
    pub fn rtt_rows(&self) -> Vec<RttRow> {
        [Placement::Split, Placement::SameCpu]
            .into_iter()
            .filter_map(|placement| {
                let hist = self.round_trips.get(placement.label())?;
                let rates: Vec<f64> = self
                    .slices
                    .iter()
                    .filter(|s| s.placement == placement)
                    .map(|s| s.rate)
                    .collect();
                Some(RttRow {
                    placement: placement.label().to_string(),
                    slices: rates.len(),
                    rtt_p50_us: quantile_us(hist, 0.5),
                    rtt_p99_us: quantile_us(hist, 0.99),
                    ops_per_s: round3(crate::stats::median(&rates)),
                    modes: noise::modes(hist),
                })
            })
            .collect()
    }
}

impl Session {
    /// The connection the reference loop runs on.
    pub(super) async fn reference_floor(&self) -> anyhow::Result<Floor> {
        Floor::connect(&self.nodes[..1], TTL).await
    }

    /// One slice of `PING`s of `length`, recorded under `phase` and
    /// `placement` (which the caller has arranged).
    pub(super) async fn reference_slice(
        &self,
        floor: &Floor,
        phase: RefPhase,
        placement: Placement,
        length: std::time::Duration,
    ) -> CycleSample {
        let sample = workload::ping(floor, length).await;
        self.with(|p| p.reference.add(phase, placement, &sample));
        sample
    }

    /// The reference loop of `phase`: [`Sizes::reference_slices`] slices
    /// of `PING`s, client and node 0 split.
    ///
    /// [`Sizes::reference_slices`]: crate::options::Sizes::reference_slices
    pub(super) async fn reference_loop(&self, floor: &Floor, phase: RefPhase) {
        let mut rates = Vec::new();
        for _ in 0..self.sizes.reference_slices {
            let s = self
                .reference_slice(floor, phase, Placement::Split, self.sizes.reference_slice)
                .await;
            rates.push(s.rate());
        }
        let (low, high) = (
            rates.iter().copied().fold(f64::INFINITY, f64::min),
            rates.iter().copied().fold(0.0, f64::max),
        );
        self.progress(&format!(
            "reference {}: PING {:.0}/s median, slices {low:.0}–{high:.0}/s",
            phase.label(),
            crate::stats::median(&rates)
        ));
    }
}
