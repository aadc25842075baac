//! `locklab replay DIR`: runs a recorded cell again from its folder and
//! compares what it writes now with what the folder holds.
//!
//! A run folder ([`crate::output::write_run`]) holds `scenario.toml` (the
//! input), `history.jsonl`, `verdict.json` and `timeline.svg`. The replay
//! reads the scenario, the rung and the seed, runs the cell again (on the
//! engine the caller gives: this crate runs nothing itself), and
//! requires every file the run wrote to be what it writes now, byte for
//! byte: the history, then `verdict.json` (all but the `locklab` version
//! that wrote it), then the timeline. A changed `scenario.toml` shows only
//! through what it changes: an edit that runs the same cell (a comment, the
//! description, CRLF line endings) replays identically.
//!
//! Every error names the file it is about, and every read is bounded
//! ([`MAX_RUN_FILE_BYTES`]), so a damaged folder gives an error or a
//! difference, never a panic or an endless read.

use crate::output;
use judge::judged::Judged;
use model::scenario::Scenario;
use std::fmt::Display;
use std::path::Path;

/// The largest run file `replay` reads: far more than any history of an
/// hour's run, and a bound on what a damaged folder can make it load.
pub const MAX_RUN_FILE_BYTES: u64 = 512 << 20;

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replayed {
    /// Every file is what the run writes now.
    Identical,
    /// The first difference, for people.
    Differs(String),
}

/// Which cell a run folder recorded, as its `verdict.json` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The scenario's name (`replay` when the file gives none).
    pub scenario: String,
    /// The rung's id.
    pub rung: String,
    /// The seed.
    pub seed: u64,
}

/// The cell the run folder `dir` recorded, read from its `verdict.json`;
/// the error names the file.
pub fn recorded(dir: &Path) -> Result<Recorded, String> {
    let path = dir.join("verdict.json");
    let text = read_run_file(&path)?;
    let path = path.display().to_string();
    let verdict: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    recorded_cell(&verdict, &path)
}

/// The cell a parsed `verdict.json` (at `path`) names.
fn recorded_cell(verdict: &serde_json::Value, path: &str) -> Result<Recorded, String> {
    // Schema 1 of verdict.json spells the rung `variant`.
    let rung = verdict["variant"].as_str().ok_or(format!(
        "{path}: expected a string field \"variant\" (the rung)"
    ))?;
    let seed = verdict["seed"]
        .as_u64()
        .ok_or(format!("{path}: expected an integer field \"seed\""))?;
    if seed >= 1 << 53 {
        return Err(format!("{path}: \"seed\" is {seed}; seeds are below 2^53"));
    }
    Ok(Recorded {
        scenario: verdict["scenario"].as_str().unwrap_or("replay").to_string(),
        rung: rung.to_string(),
        seed,
    })
}

/// Replays the run recorded in `dir`, running the cell with `run`: the
/// engine's (`sim::cell::run_cell`), or the way a test recorded it.
pub fn replay_with<E: Display>(
    dir: &Path,
    run: impl FnOnce(&Scenario, &str, u64) -> Result<Judged, E>,
) -> Result<Replayed, String> {
    replay_adapting(dir, |scenario, _| Ok(scenario), run)
}

/// [`replay_with`], giving the recorded scenario to `adapt` first (with
/// the rung): a run of a rung from outside the ladder gives that rung its
/// part in the scenario again, as the run did.
pub fn replay_adapting<E: Display>(
    dir: &Path,
    adapt: impl FnOnce(Scenario, &str) -> Result<Scenario, String>,
    run: impl FnOnce(&Scenario, &str, u64) -> Result<Judged, E>,
) -> Result<Replayed, String> {
    let read = |name: &str| read_run_file(&dir.join(name));
    let scenario_text = read("scenario.toml")?;
    let recorded = read("history.jsonl")?;
    let verdict_path = dir.join("verdict.json").display().to_string();
    let verdict_text = read("verdict.json")?;
    let verdict: serde_json::Value =
        serde_json::from_str(&verdict_text).map_err(|e| format!("{verdict_path}: {e}"))?;
    let Recorded {
        scenario: name,
        rung,
        seed,
    } = recorded_cell(&verdict, &verdict_path)?;
    let (name, rung) = (name.as_str(), rung.as_str());
    let file = dir.join("scenario.toml").display().to_string();
    let scenario = Scenario::parse(&scenario_text, &file, name).map_err(|e| e.to_string())?;
    let scenario = adapt(scenario, rung)?;
    if !scenario.rungs.iter().any(|r| r == rung) {
        return Err(format!(
            "{verdict_path}: \"variant\" is {rung:?}, which {file} does not name; it names {}",
            scenario.rungs.join(", ")
        ));
    }
    let judged = run(&scenario, rung, seed).map_err(|e| format!("{file}: {e}"))?;
    let fresh = judged.history.to_jsonl();
    if fresh != recorded {
        return Ok(Replayed::Differs(first_difference(&recorded, &fresh)));
    }
    // The same history must get the same judgement: a verdict.json edited
    // by hand (or by a checker that changed) is a difference too. Only the
    // version of locklab that wrote it may differ.
    let mut rejudged = output::verdict_doc(&judged);
    if let Some(version) = verdict["locklab"].as_str() {
        rejudged.locklab = version.to_string();
    }
    let rejudged_text = output::verdict_file_text(&rejudged);
    if rejudged_text != verdict_text {
        return Ok(Replayed::Differs(format!(
            "the history is the same, but {verdict_path} is not what it gets now:\n  recorded: {}\n  replayed: {}\n{}",
            verdict["verdict"],
            serde_json::json!(rejudged.verdict),
            first_line_difference(&verdict_text, &rejudged_text)
        )));
    }
    if let Some(svg) = output::timeline_svg(&judged) {
        let timeline_path = dir.join("timeline.svg").display().to_string();
        if read("timeline.svg")? != svg {
            return Ok(Replayed::Differs(format!(
                "the history and the verdict are the same, but {timeline_path} is not the timeline they draw"
            )));
        }
    }
    Ok(Replayed::Identical)
}

/// Reads one file of a run folder, bounded, naming it in every error.
pub fn read_run_file(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let name = path.display();
    let too_large = || format!("{name}: file too large: more than 512 MiB");
    let mut file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    // A regular file says its size: no need to read 512 MiB to refuse it.
    if file.metadata().is_ok_and(|m| m.len() > MAX_RUN_FILE_BYTES) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.by_ref()
        .take(MAX_RUN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > MAX_RUN_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8 text ({e})"))
}

/// Where two histories first differ, for people.
pub fn first_difference(recorded: &str, fresh: &str) -> String {
    let mut old = recorded.lines();
    let mut new = fresh.lines();
    for i in 0.. {
        match (old.next(), new.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => break,
            (a, b) => {
                return format!(
                    "first difference at event {i}:\n  recorded: {}\n  replayed: {}",
                    a.unwrap_or("(end of history)"),
                    b.unwrap_or("(end of history)")
                );
            }
        }
    }
    // Every event is the same: only the bytes between them differ.
    if recorded.contains("\r\n") {
        "the same events, but history.jsonl has CRLF line endings: the file was changed after it was written (a checkout that converts line endings?)".into()
    } else {
        "the same events, but the bytes of history.jsonl differ (white space or the final newline)"
            .into()
    }
}

/// The first line at which two texts differ, for people.
fn first_line_difference(recorded: &str, fresh: &str) -> String {
    let mut old = recorded.split('\n');
    let mut new = fresh.split('\n');
    for line in 1.. {
        match (old.next(), new.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => break,
            (a, b) => {
                let show =
                    |l: Option<&str>| l.map_or("(end of file)".to_string(), |l| format!("{l:?}"));
                return format!(
                    "  first different line: {line}\n    recorded: {}\n    replayed: {}",
                    show(a),
                    show(b)
                );
            }
        }
    }
    String::new()
}
