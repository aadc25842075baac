//! The search itself: run many cases, count what they find, shrink the
//! first counterexample, write it out as a scenario file.
//!
//! Case `k` of shard `I/N` started at seed `S` has seed `S + k·N + I`, so
//! shards never overlap and together cover `S, S+1, S+2, ...` in order.
//! Cases run on worker threads (each simulation is single-threaded and
//! independent); with `--cases` the outcome does not depend on the number
//! of workers: the first counterexample is the one with the lowest case
//! index (a violation before any deadlock).

use super::case::Case;
use super::generate::{SEED_LIMIT, generate};
use super::kinds::FaultMode;
use super::shrink::shrink;
use crate::cell::{Judged, run_cell};
use crate::exit::ExitCode;
use crate::interrupt::{self, Cause};
use crate::run::{RunError, panic_text};
use model::cut_short::CutShort;
use model::scenario_text::scenario_toml;
pub use model::search::{Limit, Stats};
use model::verdict::Verdict;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to search.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// The rung.
    pub rung: String,
    /// Which faults to draw.
    pub mode: FaultMode,
    /// How long.
    pub limit: Limit,
    /// The first seed.
    pub seed: u64,
    /// This shard's index and the number of shards.
    pub shard: (u64, u64),
    /// Worker threads.
    pub workers: usize,
    /// Shrink the first counterexample.
    pub shrink: bool,
    /// Most runs the shrinker may spend.
    pub shrink_runs: usize,
}

/// A counterexample: the case as found, and as shrunk.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The case's seed (also the run's).
    pub seed: u64,
    /// Its verdict (`violated` or `deadlock`).
    pub verdict: Verdict,
    /// The case as generated.
    pub original: Case,
    /// The case after shrinking (the original when not shrunk).
    pub shrunk: Case,
    /// Runs the shrinker spent.
    pub shrink_runs: usize,
    /// Set when an interruption cut the shrinking short (or kept it from
    /// starting): `shrunk` is as small as it got, not as small as it gets.
    pub shrink_interrupted: Option<Cause>,
    /// The shrunk case, run and judged.
    pub judged: Judged,
}

/// A case whose run a node cut short (its verdict is `unknown`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutShortCase {
    /// The case's seed.
    pub seed: u64,
    /// Why its run ended early.
    pub cut_short: CutShort,
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The totals.
    pub stats: Stats,
    /// The first counterexample, if any.
    pub first: Option<Finding>,
    /// Set when the user asked the search to stop, while it searched or
    /// while it shrunk: the totals count the cases finished before.
    pub interrupted: Option<Cause>,
    /// The first case (lowest index) whose run was cut short, if any.
    pub first_cut_short: Option<CutShortCase>,
    /// The first case (lowest index) the simulator could not run, if any.
    pub first_error: Option<ErrorCase>,
    /// Every counterexample in case order, up to
    /// [`MAX_LISTED_COUNTEREXAMPLES`].
    pub counterexamples: Vec<Counterexample>,
}

/// A case the simulator could not run: its seed and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorCase {
    /// The case's seed.
    pub seed: u64,
    /// The error, as the simulator gave it.
    pub error: String,
}

/// One counterexample a search counted: its seed and verdict, enough to
/// run it again with `locklab run` or to shrink it with another search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Counterexample {
    /// The case's seed.
    pub seed: u64,
    /// `violated` or `deadlock`.
    pub verdict: Verdict,
}

/// The most counterexamples a search lists (the ones of lowest case
/// index); the totals count every one.
pub const MAX_LISTED_COUNTEREXAMPLES: usize = 1_000;

impl Outcome {
    /// How the search ends: interrupted when it was asked to stop (what it
    /// found is kept all the same), else a violation when one was found, a
    /// deadlock when only deadlocks were, success when nothing was.
    pub fn exit_code(&self) -> ExitCode {
        if self.interrupted.is_some() {
            ExitCode::Interrupted
        } else if self.stats.violations > 0 {
            ExitCode::Violated
        } else if self.stats.deadlocks > 0 {
            ExitCode::Deadlock
        } else {
            ExitCode::Success
        }
    }

    /// The line that names the first case cut short, when there was one:
    /// its verdict counts as unknown, and the reason is not a lock's.
    pub fn cut_short_note(&self) -> Option<String> {
        self.first_cut_short.as_ref().map(|c| {
            format!(
                "a run was cut short (counted as unknown): first at seed {}: {}",
                c.seed, c.cut_short
            )
        })
    }
}

/// The seed of case `k` of a shard.
pub fn case_seed(start: u64, shard: (u64, u64), k: u64) -> Option<u64> {
    let seed = start
        .checked_add(k.checked_mul(shard.1)?)?
        .checked_add(shard.0)?;
    (seed < SEED_LIMIT).then_some(seed)
}

/// Whether `verdict` is what a counterexample of `wanted` looks like.
pub fn same_failure(wanted: Verdict, verdict: Verdict) -> bool {
    wanted == verdict
}

/// Runs and judges one case. A panic inside the simulation (a harness
/// bug, e.g. turmoil running out of ephemeral ports when a client
/// reconnects without pause) is an error, not a verdict.
pub fn run_case(case: &Case) -> Result<Judged, String> {
    attempt(case).map_err(|failure| match failure {
        Unjudged::Interrupted(cause) => RunError::Interrupted(cause).to_string(),
        Unjudged::Failed(message) => message,
    })
}

/// Why a case has no verdict.
enum Unjudged {
    /// The user asked the process to stop: the case was abandoned.
    Interrupted(Cause),
    /// The simulator could not run it (a harness error), named.
    Failed(String),
}

/// [`run_case`], telling an abandoned case from one that failed.
fn attempt(case: &Case) -> Result<Judged, Unjudged> {
    let scenario = case.to_scenario();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_cell(&scenario, &case.rung, case.seed)
    }));
    match run {
        Ok(Ok(judged)) => Ok(judged),
        Ok(Err(RunError::Interrupted(cause))) => Err(Unjudged::Interrupted(cause)),
        Ok(Err(e)) => Err(Unjudged::Failed(e.to_string())),
        Err(panic) => {
            let what = panic_text(panic.as_ref()).unwrap_or_else(|| "a panic".into());
            Err(Unjudged::Failed(format!(
                "the simulation panicked (seed {}): {what}",
                case.seed
            )))
        }
    }
}

/// The first counterexample found: its case index, verdict, case, and
/// the case run and judged.
type Found = (u64, Verdict, Case, Judged);

/// What a search tells while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The totals so far: about once a second, and once when the cases are
    /// done.
    Searching(&'a Stats),
    /// Shrinking the first counterexample: when it starts, then after each
    /// step that made it smaller; `runs` is what shrinking has spent.
    Shrinking {
        /// The smallest case that still fails the same way, so far.
        case: &'a Case,
        /// Its verdict.
        verdict: Verdict,
        /// Runs spent shrinking.
        runs: usize,
    },
}

/// What a search's workers share while it runs.
#[derive(Default)]
struct Shared {
    /// The index of the next case to run.
    next: AtomicU64,
    /// The running totals.
    stats: Mutex<Stats>,
    /// Simulated time of the cases finished, µs (added under `stats`' lock).
    sim_us: AtomicU64,
    /// The earliest violation and deadlock.
    firsts: Mutex<[Option<Found>; 2]>,
    /// Set by a worker that stopped for a signal with cases left to run.
    stopped: Mutex<Option<Cause>>,
    /// (case index, the case cut short) of the earliest run cut short.
    first_cut: Mutex<Option<(u64, CutShortCase)>>,
    /// (case index, the case) of the earliest case that could not run.
    first_error: Mutex<Option<(u64, ErrorCase)>>,
    /// The counterexamples of lowest case index, by index, at most
    /// [`MAX_LISTED_COUNTEREXAMPLES`]: the same set however the workers
    /// interleave.
    counterexamples: Mutex<BTreeMap<u64, Counterexample>>,
}

/// A lock on `m`, whether or not a worker panicked while holding it.
fn held<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// One worker: runs cases until the limit, the seeds or a signal says
    /// stop.
    fn work(&self, config: &SearchConfig, started: Instant) {
        loop {
            if let Limit::Time(t) = config.limit
                && started.elapsed() >= t
            {
                break;
            }
            let k = self.next.fetch_add(1, Ordering::SeqCst);
            if let Limit::Cases(n) = config.limit
                && k >= n
            {
                break;
            }
            let Some(seed) = case_seed(config.seed, config.shard, k) else {
                held(&self.stats).seeds_exhausted = true;
                break;
            };
            if let Some(cause) = interrupt::cause() {
                *held(&self.stopped) = Some(cause);
                break;
            }
            let case = generate(&config.rung, &config.mode, seed);
            match attempt(&case) {
                Err(Unjudged::Interrupted(cause)) => {
                    *held(&self.stopped) = Some(cause);
                    break;
                }
                Err(Unjudged::Failed(error)) => {
                    let mut s = held(&self.stats);
                    s.cases += 1;
                    s.errors += 1;
                    drop(s);
                    let mut f = held(&self.first_error);
                    if f.as_ref().is_none_or(|(i, _)| k < *i) {
                        *f = Some((k, ErrorCase { seed, error }));
                    }
                }
                Ok(judged) => self.count(k, case, judged),
            }
        }
    }

    /// Counts the judged case `k`, and keeps it when it is the earliest of
    /// its kind (violation, deadlock, cut short).
    fn count(&self, k: u64, case: Case, judged: Judged) {
        let mut s = held(&self.stats);
        s.cases += 1;
        // Summed in whole µs: the same total whatever order the workers
        // finish in (a sum of floats is not).
        let us = u64::try_from(judged.sim_elapsed.as_micros()).unwrap_or(u64::MAX);
        let total = self.sim_us.fetch_add(us, Ordering::SeqCst) + us;
        s.sim_s = total as f64 / 1e6;
        let slot = match judged.verdict {
            Verdict::Violated => {
                s.violations += 1;
                Some(0)
            }
            Verdict::Deadlock => {
                s.deadlocks += 1;
                Some(1)
            }
            Verdict::Unknown => {
                s.unknown += 1;
                if let Some(cut) = &judged.results.cut_short {
                    self.keep_cut_short(k, case.seed, cut);
                }
                None
            }
            Verdict::Safe => None,
        };
        drop(s);
        if slot.is_some() {
            let mut listed = held(&self.counterexamples);
            listed.insert(
                k,
                Counterexample {
                    seed: case.seed,
                    verdict: judged.verdict,
                },
            );
            if listed.len() > MAX_LISTED_COUNTEREXAMPLES {
                listed.pop_last();
            }
        }
        if let Some(slot) = slot {
            let mut f = held(&self.firsts);
            if f[slot].as_ref().is_none_or(|(i, ..)| k < *i) {
                f[slot] = Some((k, judged.verdict, case, judged));
            }
        }
    }

    /// Keeps case `k` (of `seed`) cut short when it is the earliest so.
    fn keep_cut_short(&self, k: u64, seed: u64, cut: &CutShort) {
        let mut f = held(&self.first_cut);
        if f.as_ref().is_none_or(|(i, _)| k < *i) {
            *f = Some((
                k,
                CutShortCase {
                    seed,
                    cut_short: cut.clone(),
                },
            ));
        }
    }
}

/// Runs a search; `progress` hears the totals about once a second (and
/// once at the end), then each step of the shrinking. When
/// [`crate::interrupt`] asks for a stop, no new case starts, the cases in
/// progress are abandoned (not counted), and the first counterexample is
/// kept as far as it was shrunk.
pub fn search(config: &SearchConfig, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Outcome {
    let started = Instant::now();
    let shared = Shared::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..config.workers.max(1))
            .map(|_| scope.spawn(|| shared.work(config, started)))
            .collect();
        let mut last = Instant::now();
        while workers.iter().any(|w| !w.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
            if last.elapsed() >= Duration::from_secs(1) {
                last = Instant::now();
                let mut s = *held(&shared.stats);
                s.wall_s = started.elapsed().as_secs_f64();
                progress(Progress::Searching(&s));
            }
        }
    });
    let mut totals = *held(&shared.stats);
    totals.wall_s = started.elapsed().as_secs_f64();
    progress(Progress::Searching(&totals));
    let [violation, deadlock] = shared
        .firsts
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let first = violation.or(deadlock).map(|(_, verdict, case, judged)| {
        if config.shrink {
            shrink_found(case, verdict, judged, config.shrink_runs, progress)
        } else {
            Finding {
                seed: case.seed,
                verdict,
                original: case.clone(),
                shrunk: case,
                shrink_runs: 0,
                shrink_interrupted: None,
                judged,
            }
        }
    });
    let stopped = shared
        .stopped
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let interrupted = stopped.or(first.as_ref().and_then(|f| f.shrink_interrupted));
    Outcome {
        stats: totals,
        first,
        interrupted,
        first_cut_short: shared
            .first_cut
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .map(|(_, c)| c),
        first_error: shared
            .first_error
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .map(|(_, c)| c),
        counterexamples: (shared.counterexamples.into_inner())
            .unwrap_or_else(|p| p.into_inner())
            .into_values()
            .collect(),
    }
}

/// Shrinks a counterexample found by the search, keeping the judged run of
/// the smallest case that still fails (the same, byte for byte, as running
/// that case again). An interruption ends the shrinking where it is: the
/// finding is then as small as it got.
fn shrink_found(
    case: Case,
    verdict: Verdict,
    judged: Judged,
    max_runs: usize,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Finding {
    let mut smallest = judged;
    let mut runs = 0;
    let mut interrupted = interrupt::cause();
    if interrupted.is_none() {
        progress(Progress::Shrinking {
            case: &case,
            verdict,
            runs,
        });
    }
    let (shrunk, _) = shrink(&case, max_runs, |candidate| {
        // Once interrupted, every candidate left is refused unrun, which
        // ends the shrinking with the smallest case so far.
        if interrupted.is_some() {
            return false;
        }
        match attempt(candidate) {
            Err(Unjudged::Interrupted(cause)) => {
                interrupted = Some(cause);
                false
            }
            result => {
                runs += 1;
                match result {
                    Ok(j) if same_failure(verdict, j.verdict) => {
                        smallest = j;
                        progress(Progress::Shrinking {
                            case: candidate,
                            verdict,
                            runs,
                        });
                        true
                    }
                    _ => false,
                }
            }
        }
    });
    Finding {
        seed: case.seed,
        verdict,
        original: case,
        shrunk,
        shrink_runs: runs,
        shrink_interrupted: interrupted,
        judged: smallest,
    }
}

/// Where a finding goes: `<dir>/<rung>-<seed>.toml`.
pub fn finding_path(dir: &Path, finding: &Finding) -> PathBuf {
    dir.join(format!("{}-{}.toml", finding.shrunk.rung, finding.seed))
}

/// The command line that reproduces a finding written to `path`.
pub fn replay_command(path: &Path, finding: &Finding) -> String {
    format!(
        "locklab run {} --rung {} --seed {}",
        path.display(),
        finding.shrunk.rung,
        finding.shrunk.seed
    )
}

/// Writes a finding as a scenario file (expecting the verdict it got) and
/// returns its path.
pub fn write_finding(dir: &Path, finding: &Finding, mode: &FaultMode) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = finding_path(dir, finding);
    let mut scenario = finding.shrunk.to_scenario();
    scenario.description = format!(
        "Found by `locklab explore --rung {} --faults {mode}` at seed {}: {}. Shrunk from {} \
         faults and {} clients to {} and {} in {} runs.",
        finding.shrunk.rung,
        finding.seed,
        finding.judged.verdict,
        finding.original.faults.len(),
        finding.original.clients.len(),
        finding.shrunk.faults.len(),
        finding.shrunk.clients.len(),
        finding.shrink_runs
    );
    if let Some(note) = shrink_note(finding) {
        scenario.description.push(' ');
        scenario.description.push_str(&note);
    }
    scenario
        .expect
        .insert(finding.shrunk.rung.clone(), finding.judged.verdict);
    let mut header = format!(
        "Counterexample found by locklab explore (not committed: reports/found/ is ignored).\n\
         Replay: {}",
        replay_command(&path, finding)
    );
    if let Some(note) = shrink_note(finding) {
        header = format!("PARTIAL: {note}\n{header}");
    }
    harness::atomic::write_whole(&path, scenario_toml(&scenario, &header))?;
    Ok(path)
}

/// What to say of a finding whose shrinking an interruption cut short.
pub fn shrink_note(finding: &Finding) -> Option<String> {
    finding.shrink_interrupted.map(|cause| {
        format!(
            "Shrinking was interrupted by {cause} after {} runs: the case is as small as it got, \
             and may shrink further.",
            finding.shrink_runs
        )
    })
}

/// The first counterexample of a search, as the `--json` summary gives it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct FirstSummary {
    /// The case's seed (also the run's).
    pub seed: u64,
    /// Its verdict: `violated` or `deadlock`.
    pub verdict: Verdict,
    /// The kinds of the shrunk case's faults, in order (`pause`, `crash`, ...).
    pub faults: Vec<String>,
    /// The `locklab run` command that replays it from the written scenario
    /// file.
    pub replay: String,
    /// Present (and true) only when an interruption cut its shrinking
    /// short: the case is as small as it got, not as small as it gets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shrink_interrupted: bool,
}

/// The `--json` summary of a search: the totals, the search's settings and
/// the first counterexample. An interrupted search adds `partial` and
/// `interrupted_by`; an uninterrupted one has neither.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// The rung searched (schema 1 spells the rung `variant`).
    pub variant: String,
    /// Cases run.
    pub cases: u64,
    /// Cases that violated safety.
    pub violations: u64,
    /// Cases that deadlocked (and did not violate safety).
    pub deadlocks: u64,
    /// Cases no checker could decide.
    pub unknown: u64,
    /// Cases the simulator could not run (harness errors).
    pub errors: u64,
    /// The first of them (lowest case index) and its error; present only
    /// when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<ErrorCase>,
    /// Whether the search stopped because its seeds ran out (each must be
    /// below 2^53), before its case count or time limit.
    pub seeds_exhausted: bool,
    /// Cases per wall second, rounded to 0.01.
    pub cases_per_s: f64,
    /// Simulated seconds per wall second, rounded to 0.01.
    pub sim_s_per_wall_s: f64,
    /// Simulated time of all cases, s, rounded to 0.01.
    pub sim_s: f64,
    /// Wall time of the search, s, rounded to 0.01.
    pub wall_s: f64,
    /// The faults drawn: `all`, `assumed` or a comma-separated list of kinds.
    pub faults: String,
    /// The first seed of the search.
    pub seed: u64,
    /// This shard and the number of shards, as `I/N`.
    pub shard: String,
    /// The first counterexample (lowest case index), `null` when none was
    /// found.
    pub first: Option<FirstSummary>,
    /// Every counterexample counted, in case order (the first 1,000): its
    /// seed and verdict, for `locklab run` or another search.
    pub counterexamples: Vec<Counterexample>,
    /// Present (and true) only when the search was interrupted: the totals
    /// count the cases finished before the stop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The signal that interrupted the search; present only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<Cause>,
}

/// The `--json` summary of a search; `path` is where its first
/// counterexample was written (no `first` without it).
pub fn summary(config: &SearchConfig, outcome: &Outcome, path: Option<&Path>) -> Summary {
    let s = &outcome.stats;
    let first = match (&outcome.first, path) {
        (Some(f), Some(p)) => Some(FirstSummary {
            seed: f.seed,
            verdict: f.judged.verdict,
            faults: f.shrunk.fault_names(),
            replay: replay_command(p, f),
            shrink_interrupted: f.shrink_interrupted.is_some(),
        }),
        _ => None,
    };
    let round = |x: f64| (x * 100.0).round() / 100.0;
    Summary {
        variant: config.rung.clone(),
        cases: s.cases,
        violations: s.violations,
        deadlocks: s.deadlocks,
        unknown: s.unknown,
        errors: s.errors,
        first_error: outcome.first_error.clone(),
        seeds_exhausted: s.seeds_exhausted,
        cases_per_s: round(s.cases_per_s()),
        sim_s_per_wall_s: round(s.sim_per_wall()),
        sim_s: round(s.sim_s),
        wall_s: round(s.wall_s),
        faults: config.mode.to_string(),
        seed: config.seed,
        shard: format!("{}/{}", config.shard.0, config.shard.1),
        first,
        counterexamples: outcome.counterexamples.clone(),
        partial: outcome.interrupted.is_some(),
        interrupted_by: outcome.interrupted,
    }
}

/// Parses `90s`, `10m`, `1h`, `500ms` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((t, "s"), |i| (&t[..i], &t[i..]));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{text:?}: expected a duration such as 90s, 10m or 1h"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; expected ms, s, m or h"
            ));
        }
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("{text:?}: expected a positive duration"));
    }
    if secs > MAX_SEARCH_SECS {
        return Err(format!(
            "{text:?}: too long; expected at most 8784h (a year), such as 90s, 10m or 1h"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The longest search `--time` takes: a year, far below what a `Duration`
/// can hold, so no time a user gives can overflow it.
pub const MAX_SEARCH_SECS: f64 = 8784.0 * 3600.0;

/// Parses `I/N` with 0 ≤ I < N.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let err = || format!("--shard {text:?}: expected I/N with 0 <= I < N, e.g. 0/4");
    let (i, n) = text.split_once('/').ok_or_else(err)?;
    let i: u64 = i.trim().parse().map_err(|_| err())?;
    let n: u64 = n.trim().parse().map_err(|_| err())?;
    if n == 0 || i >= n {
        return Err(err());
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_shards_parse() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("0s").is_err());
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("4/4").is_err());
        assert!(parse_shard("1/0").is_err());
    }

    #[test]
    fn shards_split_the_seed_space() {
        let seeds: Vec<u64> = (0..3)
            .flat_map(|k| (0..4).map(move |i| case_seed(10, (i, 4), k).unwrap()))
            .collect();
        assert_eq!(seeds, (10..22).collect::<Vec<_>>());
        assert_eq!(case_seed(SEED_LIMIT - 1, (1, 2), 0), None);
    }
}
