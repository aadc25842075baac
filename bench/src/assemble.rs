//! Turns what a session measured into the report: the targets' verdicts,
//! the bounds from the round trip, and what the machine was doing.

use crate::env::Machine;
use crate::measure::{Progress, StageEnd};
use crate::noise::CpuUse;
use crate::options::Sizes;
use crate::physics;
use crate::placement::Placement;
use crate::plot::LatencySeries;
use crate::report::{
    Method, Noise, Partial, PhaseRow, ReferenceRow, Report, RttRow, Settings, Touched,
    UncontendedRow,
};
use crate::stats::round3;
use crate::targets::{self, Placement as Where};

/// What the report is made of besides the measurement.
pub struct Context {
    /// The machine.
    pub machine: Machine,
    /// Where each process ran.
    pub placement: Placement,
    /// How the run was sized.
    pub settings: Settings,
    /// The sizes behind the settings.
    pub sizes: Sizes,
    /// Whether each batch of pairs ran in a client process of its own.
    pub batch_processes: bool,
    /// What the run touched.
    pub touched: Touched,
    /// The load average at the start and at the end.
    pub load_average: [f64; 2],
    /// Set when the run stopped before its end.
    pub partial: Option<Partial>,
}

/// The report of `progress`, and the latency series for the CDF plot.
pub fn report(progress: Progress, context: Context) -> (Report, Vec<LatencySeries>) {
    let Progress {
        versions,
        mut figures,
        latency_cdf,
        comparisons,
        stage,
        reference,
        phases,
        ..
    } = progress;
    figures.raw_rtt = reference.rtt_rows();
    fill_bounds(
        &mut figures.uncontended,
        reference.fast_rtt_us(Where::Split),
    );
    fill_bounds(
        &mut figures.uncontended_same_cpu,
        reference.fast_rtt_us(Where::SameCpu),
    );
    let sizes = context.sizes;
    let measured = stage.unwrap_or_default();
    let reached = measured.reached.map_or(String::new(), |within| {
        format!(
            "; after its last batch every interval was within ±{:.1}%",
            within * 100.0
        )
    });
    let method = Method {
        pair_slice_ms: (sizes.pair_slice * 2).as_millis() as u64,
        contention_pair_slice_ms: sizes.contention_pair_slice.as_millis() as u64,
        contention_pair_handoffs: sizes.contention_pair_handoffs,
        warmup_pairs: sizes.warmup_pairs,
        batches: sizes.batches,
        batch_processes: context.batch_processes,
        stop_rule: sizes.stop,
        budget_s: round3(measured.budget.as_secs_f64()),
        seconds: round3(measured.took.as_secs_f64()),
        ended: match measured.end {
            Some(StageEnd::Precise) => format!("the finest precision was reached{reached}"),
            Some(StageEnd::Budget) => format!("the time budget ran out{reached}"),
            None if stage.is_some() => format!("the run was stopped during the pairs{reached}"),
            None => "the pairs were not measured".to_string(),
        },
        reached: measured.reached,
    };
    let reference_rows = reference.rows();
    let summary = summary(&reference_rows, &phases, &figures.raw_rtt);
    let report = Report {
        partial: context.partial,
        machine: context.machine,
        placement: context.placement,
        versions,
        settings: context.settings,
        method,
        noise: Noise {
            reference: reference_rows,
            phases,
            load_average: context.load_average,
            summary,
        },
        targets: targets::evaluate(&comparisons, &sizes.stop),
        figures,
        comparisons,
        touched: context.touched,
    };
    (report, latency_cdf)
}

/// Sets each row's bound: 1 / (its round trips × the fast mode's round
/// trip), when both are known.
fn fill_bounds(rows: &mut [UncontendedRow], fast_rtt_us: Option<f64>) {
    let Some(rtt) = fast_rtt_us else { return };
    for row in rows {
        row.bound_per_s = row
            .round_trips
            .map(|trips| round3(physics::bound_per_s(trips, rtt)))
            .filter(|b| *b > 0.0);
    }
}

/// Largest spread of the reference loop's slices, as fastest ÷ slowest,
/// of a quiet machine.
const QUIET_SPREAD: f64 = 1.15;
/// Largest share of CPU time stolen on a quiet machine, %.
const QUIET_STEAL_PCT: f64 = 1.0;

/// What the machine was doing, in a sentence or three: quiet or noisy,
/// and the facts that say so.
fn summary(reference: &[ReferenceRow], phases: &[PhaseRow], rtt: &[RttRow]) -> String {
    let split: Vec<&ReferenceRow> = reference
        .iter()
        .filter(|r| r.placement == "split" && r.slices > 0)
        .collect();
    let slowest = split
        .iter()
        .map(|r| r.ping_per_s_min)
        .fold(f64::INFINITY, f64::min);
    let fastest = split.iter().map(|r| r.ping_per_s_max).fold(0.0, f64::max);
    let spread = if slowest > 0.0 && slowest.is_finite() {
        fastest / slowest
    } else {
        1.0
    };
    let all: Vec<&CpuUse> = phases
        .iter()
        .flat_map(|p| p.cpus.iter().filter(|c| c.cpu == "all"))
        .collect();
    let weighted = |f: fn(&CpuUse) -> f64| {
        let (mut sum, mut time) = (0.0, 0.0);
        for (phase, cpu) in phases.iter().zip(&all) {
            sum += f(cpu) * phase.seconds;
            time += phase.seconds;
        }
        if time > 0.0 { sum / time } else { 0.0 }
    };
    let (steal, busy) = (weighted(|c| c.steal_pct), weighted(|c| c.busy_pct));
    let bimodal: Vec<String> = rtt
        .iter()
        .filter(|r| r.modes.bimodal)
        .map(|r| {
            format!(
                "the {} round trip had two modes, {}",
                r.placement,
                r.modes.describe()
            )
        })
        .collect();
    let quiet = spread <= QUIET_SPREAD && steal < QUIET_STEAL_PCT && bimodal.is_empty();
    let mut facts = vec![
        format!(
            "the reference PING loop ran at {:.0}–{:.0}/s from slice to slice (fastest {:.2}× the slowest)",
            slowest.min(fastest),
            fastest,
            spread
        ),
        format!(
            "the CPUs were {busy:.0}% busy (this run included), {steal:.1}% stolen by the hypervisor"
        ),
    ];
    facts.extend(bimodal);
    format!(
        "{}: {}. {}",
        if quiet { "Quiet" } else { "Noisy" },
        facts.join("; "),
        if quiet {
            "Rates and ratios can both be read."
        } else {
            "Ratios taken pair by pair cancel most of this; absolute rates do not, read them as this run's only."
        }
    )
}
