//! `locklab run SCENARIO`: a scenario file on the simulator (or with
//! `--real`, on real servers: [`super::real`]), every rung it names judged.

use super::{Outcome, choose_runs, print_notes, run_exit, worst};
use crate::exporting::{self, Export};
use crate::json::{RunEntry, RunResult};
use report::output;
use sim::cell::run_cell;
use sim::exit::ExitCode;
use sim::run::RunError;
use std::path::{Path, PathBuf};

/// The arguments of `locklab run`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The scenario file (TOML), or the name of a built-in scenario
    /// (`locklab scenarios` lists them) when no such file exists.
    pub scenario: PathBuf,
    /// Only this rung (default: every rung the file names).
    #[arg(long, alias = "variant")]
    pub rung: Option<String>,
    /// Only this rung, defined in a rung file (`rungs/README.md`); in
    /// a scenario that names the rung it `plays`, it takes that part.
    #[arg(long, value_name = "FILE", conflicts_with = "rung")]
    pub rung_file: Option<PathBuf>,
    /// Only this seed (default: the file's seeds).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where run folders go (`<out>/runs/...`; real runs:
    /// `<out>/real-runs/...`).
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
    /// Run on real redis-server processes with real faults instead of
    /// the simulator (each rung `--repeat` times; not with --json).
    #[arg(long, conflicts_with = "json")]
    pub real: bool,
    /// Real mode: runs per rung.
    #[arg(long, default_value_t = real::cell::DEFAULT_REPEAT, requires = "real")]
    pub repeat: u32,
    /// Real mode: this server binary instead of `redis-server` (one
    /// that speaks its protocol and options, such as `valkey-server`).
    #[arg(long, value_name = "PATH", requires = "real")]
    pub server_bin: Option<PathBuf>,
    /// Also write the run's history in Jepsen's format
    /// (`jepsen-edn` or `jepsen-json`) to FILE, for Knossos, elle-cli or
    /// `locklab check` (docs/check.md); one run only: name the rung and
    /// the seed.
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], conflicts_with = "real")]
    pub export: Option<Vec<String>>,
}

/// `locklab run SCENARIO [--rung ID | --rung-file FILE] [--seed N]
/// [--real ...]`: the runs, for the document, when any could be run.
pub fn execute(args: Args) -> Outcome<RunResult> {
    if args.real {
        return Outcome::failed(super::real::run(
            &args.scenario,
            args.rung.as_deref(),
            args.rung_file.as_deref(),
            args.seed,
            &args.out,
            args.repeat,
            args.server_bin.as_deref(),
        ));
    }
    let export = match args.export.as_deref().map(Export::parse).transpose() {
        Ok(export) => export,
        Err(e) => {
            crate::error!("{e}");
            return Outcome::failed(ExitCode::BadInput);
        }
    };
    let mut result = RunResult::default();
    let code = on_simulator(
        &args.scenario,
        args.rung.as_deref(),
        args.rung_file.as_deref(),
        args.seed,
        &args.out,
        export.as_ref(),
        &mut result,
    );
    let ran = !result.scenario.is_empty();
    Outcome::new(code, ran.then_some(result))
}

/// `locklab run` on the simulator; `result` gets what `--json` prints (its
/// scenario stays empty when nothing could be run).
fn on_simulator(
    path: &Path,
    rung: Option<&str>,
    rung_file: Option<&Path>,
    seed: Option<u64>,
    out: &Path,
    export: Option<&Export>,
    result: &mut RunResult,
) -> ExitCode {
    let (scenario, text, rungs) = match choose_runs(path, rung, rung_file) {
        Ok(chosen) => (chosen.scenario, chosen.text, chosen.rungs),
        Err(code) => return code,
    };
    print_notes(&[&scenario]);
    if let Some(s) = seed
        && s >= 1 << 53
    {
        crate::error!("--seed {s}: seeds must be below 2^53");
        return ExitCode::BadInput;
    }
    let seeds = seed
        .map(|s| vec![s])
        .unwrap_or_else(|| scenario.seeds.clone());
    if let Some(note) =
        sim::estimate::run_note(&path.display().to_string(), &scenario, &rungs, seeds.len())
    {
        eprintln!("note: {note}");
    }
    if export.is_some() && rungs.len() * seeds.len() != 1 {
        crate::error!(
            "--export writes one run, and this is {} ({} rungs × {} seeds): name one with \
             --rung and --seed",
            rungs.len() * seeds.len(),
            rungs.len(),
            seeds.len()
        );
        return ExitCode::BadInput;
    }
    result.scenario = scenario.name.clone();
    result.runs_planned = rungs.len() * seeds.len();
    // A failure of one cell (or of writing its folder) neither stops the
    // others nor hides their verdicts.
    let mut verdicts = Vec::new();
    let mut failed = false;
    let mut interrupted = None;
    'cells: for rung in &rungs {
        for &seed in &seeds {
            let judged = match run_cell(&scenario, rung, seed) {
                Ok(j) => j,
                Err(RunError::Interrupted(cause)) => {
                    interrupted = Some((cause, format!("{rung} seed {seed}")));
                    break 'cells;
                }
                Err(e) => {
                    crate::error!("{}: {rung} seed {seed}: {e}", path.display());
                    failed = true;
                    continue;
                }
            };
            out!("{}", output::describe(&judged));
            verdicts.push(judged.verdict);
            let dir = output::run_dir(out, &judged);
            let written = output::write_run(&dir, &judged, &text)
                .and_then(|()| rung_file.map_or(Ok(()), |f| crate::rung_files::keep(&dir, f)));
            match &written {
                Ok(()) => outln!("  written to {}\n", dir.display()),
                Err(e) => {
                    crate::error!("cannot write {}: {e}", dir.display());
                    failed = true;
                }
            }
            if let Some(export) = export {
                let config = judge::check::CheckConfig {
                    cut_short: judged.results.cut_short.clone(),
                    ..sim::cell::check_config(&scenario, rung)
                };
                let header = interchange::export::Header::of_cell(
                    &scenario,
                    rung,
                    seed,
                    &config,
                    &judged.history,
                );
                match exporting::write(&judged.history, &header, export) {
                    Ok(()) => outln!("  exported to {}\n", export.file.display()),
                    Err(e) => {
                        crate::error!("cannot export: {e}");
                        failed = true;
                    }
                }
            }
            result.runs.push(RunEntry {
                folder: written.ok().map(|()| dir.display().to_string()),
                verdict_json: judge::verdict::VerdictDoc::new(
                    &judged.results,
                    &judged.scenario,
                    &judged.rung,
                    judged.seed,
                ),
            });
        }
    }
    if let Some((cause, abandoned)) = interrupted {
        result.interrupted_by = Some(cause);
        eprintln!(
            "run: interrupted by {cause}: PARTIAL: {} of {} runs finished (their folders are \
             under {}); {abandoned} abandoned, no folder written for it",
            verdicts.len(),
            rungs.len() * seeds.len(),
            out.join("runs").display()
        );
        return ExitCode::Interrupted;
    }
    run_exit(worst(&verdicts), failed)
}
