//! One real cell: a rung in a scenario, run R times on real servers, each
//! run judged by the simulator's checkers; its verdict counts, and its run
//! folders.
//!
//! A real run's folder holds what a simulated run's does (`scenario.toml`,
//! `history.jsonl`, `verdict.json`, `timeline.svg`) plus [`MARKER`], which
//! says the run was real: `locklab replay` then re-checks the recorded
//! history (the checkers are deterministic) and says that the run itself
//! cannot be repeated byte for byte.

use crate::nodes::ServerBin;
use crate::run::{RealOutcome, run_real};
use crate::stage;
use judge::verdict::VerdictDoc;
use model::history::History;
use model::scenario::Scenario;
use model::verdict::Verdict;
use serde::{Deserialize, Serialize};
use sim::cell::{Judged, judge};
use sim::run::RunError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file that marks a run folder as a real run.
pub const MARKER: &str = "real.json";

/// The default number of runs per real cell.
pub const DEFAULT_REPEAT: u32 = 3;

/// What a real cell gave.
#[derive(Debug, Clone)]
pub enum CellOutcome {
    /// Every run, judged, in the order they ran.
    Runs(Vec<Judged>),
    /// What real mode cannot stage in this cell.
    NotStageable(Vec<String>),
}

impl CellOutcome {
    /// How many runs gave each verdict (empty when not stageable).
    pub fn counts(&self) -> BTreeMap<Verdict, u32> {
        let mut counts = BTreeMap::new();
        if let CellOutcome::Runs(runs) = self {
            for run in runs {
                *counts.entry(run.verdict).or_insert(0) += 1;
            }
        }
        counts
    }
}

/// Runs `rung` in `scenario` `repeat` times on real `redis-server`s
/// (`seed` seeds the tokens, as in the simulator), calling `each` after
/// every run.
pub fn run_real_cell(
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    repeat: u32,
    each: &mut dyn FnMut(u32, &Judged),
) -> Result<CellOutcome, RunError> {
    let bin = ServerBin::redis_server().map_err(RunError::BadInput)?;
    run_real_cell_on(&bin, scenario, rung, seed, repeat, each)
}

/// [`run_real_cell`] on servers of binary `bin`.
pub fn run_real_cell_on(
    bin: &ServerBin,
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    repeat: u32,
    each: &mut dyn FnMut(u32, &Judged),
) -> Result<CellOutcome, RunError> {
    let mut runs = Vec::new();
    for k in 1..=repeat.max(1) {
        match run_real(scenario, rung, seed, bin)? {
            RealOutcome::NotStageable(refused) => return Ok(CellOutcome::NotStageable(refused)),
            RealOutcome::Ran { history, elapsed } => {
                let (results, verdict) = judge(scenario, rung, &history);
                let judged = Judged {
                    scenario: scenario.name.clone(),
                    rung: rung.to_string(),
                    seed,
                    history,
                    results,
                    verdict,
                    sim_elapsed: elapsed,
                };
                each(k, &judged);
                runs.push(judged);
            }
        }
    }
    Ok(CellOutcome::Runs(runs))
}

/// The words for counts: `2 violated, 1 safe`.
pub fn describe_counts(counts: &BTreeMap<Verdict, u32>) -> String {
    counts
        .iter()
        .map(|(v, n)| format!("{n} {}", v.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The outcome's words: the counts, or why it is not stageable.
pub fn describe_outcome(outcome: &CellOutcome) -> String {
    match outcome {
        CellOutcome::Runs(_) => describe_counts(&outcome.counts()),
        CellOutcome::NotStageable(refused) => stage::not_stageable(refused),
    }
}

/// The marker file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealMarker {
    /// Always `real`.
    pub mode: String,
    /// Which run of the cell, from 1.
    pub run: u32,
    /// How many runs the cell had.
    pub of: u32,
    /// The server that ran it, as its `--version` names it
    /// (`redis-server 7.0.15`, `valkey-server 8.1.8`).
    pub server: String,
    /// Why `replay` cannot repeat it.
    pub note: String,
}

/// The folder of real run `k` of a cell under `root`.
pub fn run_dir(root: &Path, judged: &Judged, k: u32) -> PathBuf {
    root.join("real-runs")
        .join(&judged.scenario)
        .join(&judged.rung)
        .join(format!("run-{k}"))
}

/// Writes a real run's marker into its folder `dir` (beside the files
/// every run folder holds, which the caller writes first), naming `server`
/// ([`ServerBin::description`]).
pub fn write_marker(dir: &Path, k: u32, of: u32, server: &str) -> std::io::Result<()> {
    let marker = RealMarker {
        mode: "real".into(),
        run: k,
        of,
        server: server.to_string(),
        note: "a real run cannot be repeated byte for byte; `locklab replay` re-checks its \
               recorded history"
            .into(),
    };
    let text = serde_json::to_string_pretty(&marker).unwrap_or_default() + "\n";
    harness::atomic::write_whole(&dir.join(MARKER), &text)
}

/// `replay` of a real run: judges the recorded history again and compares
/// the judgement with the recorded `verdict.json`. `Ok(None)` when they
/// agree, `Ok(Some(difference))` when not.
pub fn recheck(
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    history_text: &str,
    verdict_text: &str,
) -> Result<Option<String>, String> {
    let history = History::from_jsonl(history_text)?;
    let (results, _) = judge(scenario, rung, &history);
    let fresh = VerdictDoc::new(&results, &scenario.name, rung, seed);
    let mut recorded: VerdictDoc = serde_json::from_str(verdict_text)
        .map_err(|e| format!("verdict.json: expected a verdict document: {e}"))?;
    recorded.locklab.clone_from(&fresh.locklab);
    if recorded == fresh {
        Ok(None)
    } else {
        Ok(Some(format!(
            "the recorded history now gets {} where verdict.json says {}",
            fresh.verdict.as_str(),
            recorded.verdict.as_str()
        )))
    }
}
