//! What a run was asked to do, and how long each of its parts takes.

use crate::interval::{BATCHES, MIN_PER_BATCH, StopRule};
use std::path::PathBuf;
use std::time::Duration;

/// What `locklab bench` was asked to do.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Short slices, few rounds, intervals to ±10%: under three minutes.
    pub quick: bool,
    /// Servers to use instead of starting our own (`redis://host:port`).
    pub redis: Vec<String>,
    /// Where the report goes (`reports/` by default).
    pub out: PathBuf,
    /// Pin client and servers to CPUs (off in tests, which share the CPUs
    /// with other tests).
    pub pin: bool,
    /// Override the slice lengths: uncontended, pair and reference slices
    /// take this many ms, contention slices 8/5 of it (tests use a few ms).
    pub slice_ms: Option<u64>,
    /// Override the number of rounds of the descriptive tables.
    pub rounds: Option<u32>,
    /// Override the time the targets' pairs may take.
    pub target_budget: Option<Duration>,
    /// Where progress goes instead of a line per step on standard error
    /// (the command line's progress bar).
    pub progress: Option<std::sync::Arc<dyn crate::progress::ProgressSink>>,
    /// The program that measures each batch of the targets' pairs in a
    /// process of its own (locklab, which runs it with
    /// [`BATCH_ENV`](crate::BATCH_ENV) set); `None` measures them in this
    /// process, where what stays fixed for a process cannot show in the
    /// intervals.
    pub batch_exe: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            quick: false,
            redis: Vec::new(),
            out: PathBuf::from("reports"),
            pin: true,
            slice_ms: None,
            rounds: None,
            target_budget: None,
            progress: None,
            batch_exe: None,
        }
    }
}

/// How long each part of a run takes, from the options.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// One uncontended slice of the descriptive tables.
    pub slice: Duration,
    /// One contention or inventory slice of the descriptive tables.
    pub contention_slice: Duration,
    /// Rounds of the uncontended tables.
    pub rounds: u32,
    /// Rounds of contention and inventory (each round is many slices).
    pub contention_rounds: u32,
    /// The critical sections the watchdog holds its lease for, ms.
    pub watchdog_cs_ms: &'static [u64],
    /// Rounds of each watchdog section length.
    pub watchdog_rounds: u32,
    /// Half the window of an uncontended target pair (the time one side
    /// had when pairs were slices back to back; the window keeps the pair's
    /// length).
    pub pair_slice: Duration,
    /// The longest one contention slice of a target's pair may take.
    pub contention_pair_slice: Duration,
    /// The lock's acquisitions that end one contention slice of a
    /// target's pair, unless [`Sizes::contention_pair_slice`] ends it first.
    pub contention_pair_handoffs: u64,
    /// Pairs of each comparison measured first in each batch and
    /// discarded.
    pub warmup_pairs: usize,
    /// Batches of the targets' pairs, each its share of the budget.
    pub batches: u32,
    /// When a comparison has pairs enough.
    pub stop: StopRule,
    /// The most time the targets' pairs may take.
    pub target_budget: Duration,
    /// The most time the whole run should take (quick only): the pairs
    /// get less when the rest of the run needs it.
    pub total_budget: Option<Duration>,
    /// Slices of the reference `PING` loop before and after.
    pub reference_slices: u32,
    /// One reference slice.
    pub reference_slice: Duration,
}

impl Sizes {
    /// The sizes `options` ask for: quick or full, with its overrides.
    pub fn from(options: &BenchOptions) -> Sizes {
        let quick = options.quick;
        let ms = Duration::from_millis;
        let slice = ms(options
            .slice_ms
            .unwrap_or(if quick { 100 } else { 250 })
            .max(1));
        let rounds = options.rounds.unwrap_or(if quick { 8 } else { 20 }).max(1);
        // Overridden slices scale every slice of the run together.
        let scaled = options.slice_ms.map(|_| (slice, slice * 8 / 5));
        let (pair_slice, contention_pair_slice) = scaled.unwrap_or(if quick {
            (ms(50), ms(1_000))
        } else {
            (ms(100), ms(4_000))
        });
        Sizes {
            slice,
            contention_slice: scaled.map_or(if quick { ms(400) } else { ms(1_600) }, |s| s.1),
            rounds,
            contention_rounds: if quick { rounds.min(2) } else { rounds.min(3) },
            watchdog_cs_ms: if quick { &[20, 200] } else { &[10, 100, 1_000] },
            watchdog_rounds: if quick { 1 } else { rounds.min(3) },
            pair_slice,
            contention_pair_slice,
            // About 75 ms of lua-release+notify and 150 ms of rslock
            // (quick), eight times that in a full run.
            contention_pair_handoffs: if quick { 1_000 } else { 8_000 },
            warmup_pairs: 1,
            // Twelve batches, as the spread of their medians sets how far a
            // repeat run may land: from six, that spread is itself too
            // uncertain (five degrees of freedom).
            batches: 2 * BATCHES as u32,
            stop: if quick {
                StopRule {
                    // Enough for the batches that see drift.
                    min_pairs: 2 * BATCHES * MIN_PER_BATCH,
                    precision: 0.10,
                    finest: 0.01,
                    max_pairs: 400,
                }
            } else {
                StopRule {
                    min_pairs: BATCHES * (MIN_PER_BATCH + 1),
                    precision: 0.03,
                    finest: 0.01,
                    max_pairs: 2_000,
                }
            },
            target_budget: options.target_budget.unwrap_or(if quick {
                Duration::from_secs(90)
            } else {
                Duration::from_secs(420)
            }),
            total_budget: quick.then(|| Duration::from_secs(175)),
            reference_slices: if quick { 10 } else { 20 },
            reference_slice: scaled.map_or(if quick { ms(50) } else { ms(100) }, |s| s.0),
        }
    }
}
