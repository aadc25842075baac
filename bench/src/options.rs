//! What a run was asked to do, and how long each of its parts takes.

use std::path::PathBuf;
use std::time::Duration;

/// What `locklab bench` was asked to do.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Short slices and few rounds (about a minute and a half).
    pub quick: bool,
    /// Servers to use instead of starting our own (`redis://host:port`).
    pub redis: Vec<String>,
    /// Where the report goes (`reports/` by default).
    pub out: PathBuf,
    /// Print `bench.json` as the last line of standard output.
    pub json: bool,
    /// Pin client and servers to CPUs (off in tests, which share the CPUs
    /// with other tests).
    pub pin: bool,
    /// Override the uncontended slice length, ms (tests use a few ms).
    pub slice_ms: Option<u64>,
    /// Override the number of rounds.
    pub rounds: Option<u32>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            quick: false,
            redis: Vec::new(),
            out: PathBuf::from("reports"),
            json: false,
            pin: true,
            slice_ms: None,
            rounds: None,
        }
    }
}

/// How long each part of a run takes, from the options.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// One uncontended slice.
    pub slice: Duration,
    /// One contention or inventory slice.
    pub contention_slice: Duration,
    /// Rounds of the uncontended groups.
    pub rounds: u32,
    /// Rounds of contention and inventory (each round is many slices).
    pub contention_rounds: u32,
    /// The critical sections the watchdog holds its lease for, ms.
    pub watchdog_cs_ms: &'static [u64],
    /// Rounds of each watchdog section length.
    pub watchdog_rounds: u32,
}

impl Sizes {
    /// The sizes `options` ask for: quick or full, with its overrides.
    pub fn from(options: &BenchOptions) -> Sizes {
        let (slice_ms, rounds) = if options.quick { (250, 3) } else { (1_000, 5) };
        let slice_ms = options.slice_ms.unwrap_or(slice_ms).max(1);
        let rounds = options.rounds.unwrap_or(rounds).max(1);
        Sizes {
            slice: Duration::from_millis(slice_ms),
            contention_slice: Duration::from_millis(slice_ms * 8 / 5),
            rounds,
            contention_rounds: if options.quick {
                rounds.min(2)
            } else {
                rounds.min(3)
            },
            watchdog_cs_ms: if options.quick {
                &[20, 200]
            } else {
                &[10, 100, 1_000]
            },
            watchdog_rounds: if options.quick { 1 } else { rounds.min(3) },
        }
    }
}
