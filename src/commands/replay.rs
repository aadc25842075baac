//! `locklab replay DIR`: a recorded run again, compared byte for byte (a
//! real run: its recorded history judged again).

use super::Outcome;
use crate::exporting::{self, Export};
use crate::json::ReplayResult;
use model::scenario::Scenario;
use sim::cell::run_cell;
use sim::exit::ExitCode;
use std::path::{Path, PathBuf};

/// The arguments of `locklab replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A run folder written by `locklab run`.
    pub dir: PathBuf,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
    /// Also write the recorded history in Jepsen's format (`jepsen-edn`
    /// or `jepsen-json`) to FILE, for Knossos, elle-cli or `locklab
    /// check` (docs/check.md).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"])]
    pub export: Option<Vec<String>>,
}

/// `locklab replay DIR`: 0 when every file the run wrote is what it
/// writes now, 1 when not (naming the first difference), 3 when the folder
/// is unusable; with what `--json` prints.
pub fn execute(args: Args) -> Outcome<ReplayResult> {
    let dir = args.dir.as_path();
    if let Some(values) = &args.export
        && let Err(e) = Export::parse(values).and_then(|export| export_recorded(dir, &export))
    {
        crate::error!("{e}");
        return Outcome::failed(ExitCode::BadInput);
    }
    match replay_inner(dir) {
        Ok(replayed) => {
            let code = match &replayed.difference {
                None if dir.join(real::cell::MARKER).exists() => {
                    outln!(
                        "replay of {}: a real run cannot be repeated byte for byte; its \
                         recorded history, checked again, gets the recorded verdict",
                        dir.display()
                    );
                    ExitCode::Success
                }
                None => {
                    outln!("replay of {}: identical history", dir.display());
                    ExitCode::Success
                }
                Some(diff) => {
                    outln!("replay of {}: histories differ\n{diff}", dir.display());
                    ExitCode::Violated
                }
            };
            Outcome::new(code, Some(replayed))
        }
        Err(e) => {
            crate::error!("{e}");
            Outcome::failed(ExitCode::BadInput)
        }
    }
}

/// Replays the run in `dir`: its identity and the first difference, if any.
fn replay_inner(dir: &Path) -> Result<ReplayResult, String> {
    use report::replay::Replayed;
    if dir.join(real::cell::MARKER).exists() {
        return recheck_real(dir);
    }
    let found = report::replay::replay_adapting(
        dir,
        |scenario, rung| crate::rung_files::recorded(dir, scenario, rung),
        run_cell,
    )?;
    let difference = match found {
        Replayed::Identical => None,
        Replayed::Differs(diff) => Some(diff),
    };
    Ok(replayed(dir, report::replay::recorded(dir)?, difference))
}

/// The document's result for the run in `dir`, recorded as `cell`, with
/// the first difference found, if any.
fn replayed(
    dir: &Path,
    cell: report::replay::Recorded,
    difference: Option<String>,
) -> ReplayResult {
    ReplayResult {
        folder: dir.display().to_string(),
        scenario: cell.scenario,
        variant: cell.rung,
        seed: cell.seed,
        identical: difference.is_none(),
        difference,
    }
}

/// Writes the history recorded in `dir` as `export` asks, with its cell's
/// header.
fn export_recorded(dir: &Path, export: &Export) -> Result<(), String> {
    let read = |name: &str| report::replay::read_run_file(&dir.join(name));
    let cell = report::replay::recorded(dir)?;
    let scenario = recorded_scenario(dir, &cell)?;
    let history = model::history::History::from_jsonl(&read("history.jsonl")?)?;
    let config = recorded_config(dir, &scenario, &cell.rung)?;
    let header =
        interchange::export::Header::of_cell(&scenario, &cell.rung, cell.seed, &config, &history);
    exporting::write(&history, &header, export)?;
    outln!(
        "replay of {}: history exported to {}",
        dir.display(),
        export.file.display()
    );
    Ok(())
}

/// How the run in `dir`, of `rung` in `scenario`, was judged: its cell's
/// configuration, cut short where its `verdict.json` says it was.
pub(crate) fn recorded_config(
    dir: &Path,
    scenario: &Scenario,
    rung: &str,
) -> Result<judge::check::CheckConfig, String> {
    let text = report::replay::read_run_file(&dir.join("verdict.json"))?;
    let verdict: judge::verdict::VerdictDoc = serde_json::from_str(&text)
        .map_err(|e| format!("verdict.json: expected a verdict document: {e}"))?;
    Ok(judge::check::CheckConfig {
        cut_short: verdict.cut_short.map(|entry| entry.cause),
        ..sim::cell::check_config(scenario, rung)
    })
}

/// The scenario a run folder ran, with a rung file's rung given its part.
pub(crate) fn recorded_scenario(
    dir: &Path,
    cell: &report::replay::Recorded,
) -> Result<Scenario, String> {
    let text = report::replay::read_run_file(&dir.join("scenario.toml"))?;
    let file = dir.join("scenario.toml").display().to_string();
    let scenario = Scenario::parse(&text, &file, &cell.scenario).map_err(|e| e.to_string())?;
    crate::rung_files::recorded(dir, scenario, &cell.rung)
}

/// `replay` of a real run (its folder has the real-run marker): the
/// recorded history judged again must get the recorded verdict; the run
/// itself cannot be repeated.
fn recheck_real(dir: &Path) -> Result<ReplayResult, String> {
    let read = |name: &str| report::replay::read_run_file(&dir.join(name));
    let cell = report::replay::recorded(dir)?;
    // A rung file's run: its kept file gives the rung its part again.
    let scenario = recorded_scenario(dir, &cell)?;
    let difference = real::cell::recheck(
        &scenario,
        &cell.rung,
        cell.seed,
        &read("history.jsonl")?,
        &read("verdict.json")?,
    )?;
    Ok(replayed(dir, cell, difference))
}
