//! What each `locklab` subcommand does, in terms of the library crates.

/// `print!` that ends the process quietly when standard output is closed
/// (`locklab run ... | head`), instead of panicking on a broken pipe.
macro_rules! out {
    ($($arg:tt)*) => { $crate::commands::emit(format_args!($($arg)*), false) };
}

/// `println!` with the same care for a closed standard output.
macro_rules! outln {
    () => { $crate::commands::emit(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::commands::emit(format_args!($($arg)*), true) };
}

use model::scenario::Scenario;
use model::verdict::Verdict;
use report::output;
use sim::cell::run_cell;
use sim::exit::ExitCode;
use sim::interrupt::Cause;
use sim::run::RunError;
use std::path::Path;

/// `locklab ladder`: the table (with `--json`, on standard error).
pub fn ladder() -> ExitCode {
    outln!("{:>2}  {:<14} {:<62} flaw", "#", "id", "fixes");
    for rung in locks::LADDER {
        outln!(
            "{:>2}  {:<14} {:<62} {}",
            rung.number,
            rung.id,
            rung.fixes,
            rung.flaw
        );
    }
    // The libraries' algorithms, beside the ladder rather than on it: a
    // group of their own, unnumbered.
    outln!("\nlibraries:");
    for rung in locks::LIBRARIES {
        outln!(" -  {:<14} {:<62} {}", rung.id, rung.fixes, rung.flaw);
    }
    ExitCode::Success
}

/// The worst verdict decides the exit code: violated, then deadlock, then
/// unknown, then safe.
pub fn worst(verdicts: &[Verdict]) -> Verdict {
    let rank = |v: &Verdict| match v {
        Verdict::Violated => 3,
        Verdict::Deadlock => 2,
        Verdict::Unknown => 1,
        Verdict::Safe => 0,
    };
    verdicts
        .iter()
        .copied()
        .max_by_key(rank)
        .unwrap_or(Verdict::Safe)
}

/// `locklab run SCENARIO [--rung ID | --rung-file FILE] [--seed N]`;
/// `result` gets what `--json` prints (its scenario stays empty when
/// nothing could be run).
pub fn run(
    path: &Path,
    rung: Option<&str>,
    rung_file: Option<&Path>,
    seed: Option<u64>,
    out: &Path,
    result: &mut crate::json::RunResult,
) -> ExitCode {
    // A rung file first: a scenario may name its rung.
    let from_file = match rung_file.map(crate::rung_files::load).transpose() {
        Ok(id) => id,
        Err(code) => return code,
    };
    let rung = rung.or(from_file);
    // Read once: the run folder keeps exactly the text that was run, even
    // when the scenario comes from a pipe that cannot be read again.
    let (scenario, text) = match load_scenario_arg(path) {
        Ok(s) => s,
        Err(e) => {
            crate::error!("{e}");
            return ExitCode::BadInput;
        }
    };
    let scenario = match from_file.map(|id| crate::rung_files::adopt(&scenario, id)) {
        Some(Ok(adopted)) => adopted,
        Some(Err(code)) => return code,
        None => scenario,
    };
    print_notes(&[&scenario]);
    let rungs: Vec<String> = match rung {
        Some(v) if scenario.rungs.iter().any(|x| x == v) => vec![v.to_string()],
        Some(v) => {
            crate::error!(
                "{}: rung {v:?} is not in this scenario; it names {}",
                path.display(),
                scenario.rungs.join(", ")
            );
            return ExitCode::BadInput;
        }
        None => scenario.rungs.clone(),
    };
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
            result.runs.push(crate::json::RunEntry {
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

/// The exit of `run`: a violation, deadlock or unknown verdict is never
/// hidden by a failure elsewhere; a failure turns a safe run into bad input.
pub(crate) fn run_exit(worst: Verdict, failed: bool) -> ExitCode {
    match (worst, failed) {
        (Verdict::Safe, true) => ExitCode::BadInput,
        (verdict, _) => ExitCode::of_verdict(verdict),
    }
}

/// `locklab replay DIR`: 0 when every file the run wrote is what it
/// writes now, 1 when not (naming the first difference), 3 when the folder
/// is unusable; with what `--json` prints.
pub fn replay(dir: &Path) -> (ExitCode, Option<crate::json::ReplayResult>) {
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
            (code, Some(replayed))
        }
        Err(e) => {
            crate::error!("{e}");
            (ExitCode::BadInput, None)
        }
    }
}

/// Replays the run in `dir`: its identity and the first difference, if any.
fn replay_inner(dir: &Path) -> Result<crate::json::ReplayResult, String> {
    use report::replay::Replayed;
    if dir.join(real::cell::MARKER).exists() {
        return recheck_real(dir);
    }
    let found = report::replay::replay_adapting(
        dir,
        |scenario, rung| crate::rung_files::recorded(dir, scenario, rung),
        run_cell,
    )?;
    let cell = report::replay::recorded(dir)?;
    let difference = match found {
        Replayed::Identical => None,
        Replayed::Differs(diff) => Some(diff),
    };
    Ok(crate::json::ReplayResult {
        folder: dir.display().to_string(),
        scenario: cell.scenario,
        variant: cell.rung,
        seed: cell.seed,
        identical: difference.is_none(),
        difference,
    })
}

/// `replay` of a real run (its folder has the real-run marker): the
/// recorded history judged again must get the recorded verdict; the run
/// itself cannot be repeated.
fn recheck_real(dir: &Path) -> Result<crate::json::ReplayResult, String> {
    let read = |name: &str| report::replay::read_run_file(&dir.join(name));
    let cell = report::replay::recorded(dir)?;
    let file = dir.join("scenario.toml").display().to_string();
    let scenario = Scenario::parse(&read("scenario.toml")?, &file, &cell.scenario)
        .map_err(|e| e.to_string())?;
    // A rung file's run: its kept file gives the rung its part again.
    let scenario = crate::rung_files::recorded(dir, scenario, &cell.rung)?;
    let difference = real::cell::recheck(
        &scenario,
        &cell.rung,
        cell.seed,
        &read("history.jsonl")?,
        &read("verdict.json")?,
    )?;
    Ok(crate::json::ReplayResult {
        folder: dir.display().to_string(),
        scenario: cell.scenario,
        variant: cell.rung,
        seed: cell.seed,
        identical: difference.is_none(),
        difference,
    })
}

/// `locklab suite [--all]`: the safety matrix, or with `all` the full grid
/// (every rung in every scenario). Exit 1 when a cell differs from a
/// stated expectation; cells without one judge nothing.
pub fn suite(
    dir: Option<&Path>,
    out: &Path,
    jobs: Option<usize>,
    all: bool,
    junit: Option<&Path>,
    result: &mut Option<crate::json::SuiteResult>,
    rung_files: &[std::path::PathBuf],
) -> ExitCode {
    use judge::matrix::Grid;
    let grid = if all { Grid::All } else { Grid::Named };
    let scenarios = match crate::rung_files::suite_scenarios(dir, rung_files, all) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let workers = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    for scenario in &scenarios {
        let rungs = sim::suite::rungs_of(grid, scenario);
        if let Some(note) = sim::estimate::suite_note(&scenario.name, scenario, &rungs, workers) {
            eprintln!("note: {note}");
        }
    }
    let bar = crate::progress::Progress::new(
        if all { "suite --all" } else { "suite" },
        0,
        crate::progress::Unit::Steps,
    );
    let progress = |cell: &judge::matrix::Cell, done: usize, total: usize| {
        let judged = match cell.expected {
            None => "(no expectation)".to_string(),
            Some(e) if e == cell.verdict => format!("(expected {e}) ok"),
            Some(e) => format!("(expected {e}) UNEXPECTED"),
        };
        let cut = cell
            .cut_short
            .as_ref()
            .map(|c| format!(": cut short: {}", c.why))
            .unwrap_or_default();
        let line = format!(
            "[{done}/{total}] {} / {}: {} {judged}{cut}",
            cell.scenario,
            cell.rung,
            cell.verdict.as_str(),
        );
        bar.set_total(total as u64);
        let cell_name = format!("{} / {}", cell.scenario, cell.rung);
        bar.step(done as u64, &cell_name, || line.clone());
        // A cell that differs from its expectation stays on screen.
        if bar.drawn() && cell.differs() {
            bar.println(&line);
        }
    };
    // Each cell's run gets its folder and page, which the suite page links.
    let unwritten = std::sync::Mutex::new(Vec::new());
    let keep = |scenario: &Scenario, judged: &sim::cell::Judged| {
        if let Err(e) = report::suite::write_cell_run(out, scenario, judged) {
            let dir = output::run_dir(out, judged);
            let mut errors = unwritten.lock().unwrap_or_else(|p| p.into_inner());
            errors.push(format!("{}: {e}", dir.display()));
        }
    };
    let suite = sim::suite::run_suite_keeping(&scenarios, grid, workers, &progress, &keep);
    bar.finish();
    let suite = match suite {
        Ok(run) => run,
        Err(e) => {
            crate::error!("{e}");
            return ExitCode::BadInput;
        }
    };
    let junit_written = junit.is_none_or(|file| {
        write_junit(
            file,
            &report::junit::suite_xml(&suite),
            suite.interrupted.is_some(),
        )
    });
    let summary = result.insert(crate::json::SuiteResult {
        grid: match grid {
            Grid::Named => crate::json::GridName::Named,
            Grid::All => crate::json::GridName::All,
        },
        cells: suite.cells.clone(),
        cells_planned: suite.planned.len(),
        unexpected: suite.cells.iter().filter(|c| c.differs()).count(),
        matrix: None,
        junit: junit
            .filter(|_| junit_written)
            .map(|file| file.display().to_string()),
        interrupted_by: suite.interrupted,
        not_run: suite
            .not_run()
            .into_iter()
            .map(|(scenario, variant)| crate::json::NotRun { variant, scenario })
            .collect(),
    });
    if let Some(cause) = suite.interrupted {
        let (code, md) = suite_interrupted(out, &suite, cause);
        summary.matrix = md.map(|md| md.display().to_string());
        return code;
    }
    let cells = suite.cells;
    match report::suite::write_matrix(out, grid, &cells) {
        Ok(removed) => {
            let md = out.join(format!("{}.md", report::suite::stem(grid)));
            summary.matrix = Some(md.display().to_string());
            for stale in removed {
                eprintln!(
                    "note: removed {}: an interrupted suite's matrix, older than this one",
                    stale.display()
                );
            }
        }
        Err(e) => {
            crate::error!("cannot write the matrix to {}: {e}", out.display());
            return ExitCode::BadInput;
        }
    }
    let unwritten = unwritten.into_inner().unwrap_or_else(|p| p.into_inner());
    for error in &unwritten {
        eprintln!("error: cannot write the run folder {error}");
    }
    eprintln!(
        "suite: report {} (each cell links its run under {})",
        out.join(report::html::suite::file_name(grid)).display(),
        out.join("runs").display()
    );
    out!("{}", report::suite::markdown(grid, &cells));
    let unexpected = cells.iter().filter(|c| c.differs()).count();
    outln!(
        "written to {}",
        out.join(format!("{}.md", report::suite::stem(grid)))
            .display()
    );
    if unexpected > 0 {
        ExitCode::Violated
    } else if !junit_written || !unwritten.is_empty() {
        ExitCode::BadInput
    } else {
        ExitCode::Success
    }
}

/// Writes a JUnit report whole (write, then rename), saying where on
/// standard error; `false` (the error printed) when it cannot be written.
fn write_junit(file: &Path, xml: &str, partial: bool) -> bool {
    let written = file
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| harness::atomic::write_whole(file, xml));
    match written {
        Ok(()) => {
            let partial = if partial { " (PARTIAL)" } else { "" };
            eprintln!("JUnit report{partial} written to {}", file.display());
            true
        }
        Err(e) => {
            crate::error!("--junit: cannot write {}: {e}", file.display());
            false
        }
    }
}

/// The end of an interrupted suite: the finished cells go to the partial
/// matrix (a complete `safety-matrix.md` is left alone), and it says so;
/// returns the partial markdown's path too, when written.
fn suite_interrupted(
    out: &Path,
    suite: &judge::matrix::SuiteRun,
    cause: Cause,
) -> (ExitCode, Option<std::path::PathBuf>) {
    let (done, planned) = (suite.cells.len(), suite.planned.len());
    match report::suite::write_partial_matrix(out, suite, cause) {
        Ok(md) => {
            out!("{}", report::suite::partial_markdown(suite, cause));
            outln!("written to {}", md.display());
            eprintln!(
                "suite: interrupted by {cause}: {done} of {planned} cells finished; the matrix is \
                 PARTIAL: {} and .json ({}.md, if any, left as it was)",
                md.display(),
                report::suite::stem(suite.grid)
            );
            (ExitCode::Interrupted, Some(md))
        }
        Err(e) => {
            eprintln!(
                "suite: interrupted by {cause} after {done} of {planned} cells; error: cannot \
                 write the partial matrix to {}: {e}",
                out.display()
            );
            crate::json::record_error(format!(
                "cannot write the partial matrix to {}: {e}",
                out.display()
            ));
            (ExitCode::Interrupted, None)
        }
    }
}

/// `locklab tour`; `result` gets what `--json` prints.
pub fn tour(
    dir: Option<&Path>,
    only: Option<&str>,
    result: &mut Option<crate::json::TourResult>,
) -> ExitCode {
    let Some(scenarios) = load_all(dir) else {
        return ExitCode::BadInput;
    };
    if let Some(id) = only
        && locks::rung(id).is_none()
    {
        crate::error!(
            "--rung {id:?}: unknown rung; expected one of {}",
            locks::ids().join(", ")
        );
        return ExitCode::BadInput;
    }
    let files = scenario_files(dir, &scenarios);
    outln!("The lock ladder, rung by rung, from live runs on simulated Redis nodes.\n");
    // Each stop is shown as soon as it has run, so an interrupted tour
    // keeps every stop it finished.
    let rungs: Vec<&'static locks::Rung> = locks::LADDER
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.id == id))
        .collect();
    let mut shown = 0;
    let summary = result.insert(crate::json::TourResult::default());
    for (i, rung) in rungs.iter().enumerate() {
        match sim::tour::stop(rung, &scenarios) {
            Ok(Some(stop)) => {
                let file = files.get(&stop.scenario).map_or("", String::as_str);
                out!(
                    "{}",
                    report::tour::render_stop(&crate::present::tour_stop(&stop), &scenarios, file)
                );
                summary.stops.push(crate::json::TourStop::of(&stop));
                shown += 1;
            }
            Ok(None) => {}
            Err(RunError::Interrupted(cause)) => {
                summary.interrupted_by = Some(cause);
                eprintln!(
                    "tour: interrupted by {cause}: PARTIAL: {shown} stop(s) shown; the stop of \
                     `{}` was abandoned and {} later rung(s) not reached",
                    rung.id,
                    rungs.len() - i - 1
                );
                return ExitCode::Interrupted;
            }
            Err(e) => {
                crate::error!("{e}");
                return ExitCode::BadInput;
            }
        }
    }
    tour_libraries(&scenarios, only, shown)
}

/// The tour's libraries chapter, after the ladder: each library rung (or
/// only the one asked for) in every scenario that names it.
fn tour_libraries(scenarios: &[Scenario], only: Option<&str>, mut shown: usize) -> ExitCode {
    let rungs: Vec<&'static locks::Rung> = locks::LIBRARIES
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.id == id))
        .collect();
    for (i, rung) in rungs.iter().enumerate() {
        match sim::tour::library_stop(rung, scenarios) {
            Ok(Some(stop)) => {
                if i == 0 {
                    outln!("{}", report::tour::LIBRARIES_HEADING);
                }
                out!(
                    "{}",
                    report::tour::render_library_stop(&crate::present::library_stop(&stop))
                );
                shown += 1;
            }
            Ok(None) => {}
            Err(RunError::Interrupted(cause)) => {
                eprintln!(
                    "tour: interrupted by {cause}: PARTIAL: {shown} stop(s) shown; the chapter \
                     of `{}` was abandoned and {} later librar(y/ies) not reached",
                    rung.id,
                    rungs.len() - i - 1
                );
                return ExitCode::Interrupted;
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::BadInput;
            }
        }
    }
    ExitCode::Success
}

/// The path of each scenario's file by scenario name, as the tour shows
/// it: the scenarios folder's name and the file's path inside it,
/// subfolders included (`scenarios/libraries/NAME.toml`), the same for the
/// built-in set and for the folder it was built from. Scenarios load in
/// file order, so the files and the scenarios pair up one to one.
fn scenario_files(
    dir: Option<&Path>,
    scenarios: &[Scenario],
) -> std::collections::BTreeMap<String, String> {
    let default = Path::new(DEFAULT_SCENARIOS);
    let folder = dir.or(default.is_dir().then_some(default));
    let files: Vec<String> = match folder {
        Some(folder) => {
            let name = folder
                .canonicalize()
                .ok()
                .and_then(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| DEFAULT_SCENARIOS.to_string());
            sim::suite::scenario_files(folder)
                .unwrap_or_default()
                .iter()
                .map(|f| {
                    let inside = f.strip_prefix(folder).unwrap_or(f);
                    let parts: Vec<String> = inside
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    format!("{name}/{}", parts.join("/"))
                })
                .collect()
        }
        None => crate::builtin::FILES
            .iter()
            .map(|(path, _)| format!("{DEFAULT_SCENARIOS}/{path}"))
            .collect(),
    };
    scenarios
        .iter()
        .zip(files)
        .map(|(s, file)| (s.name.clone(), file))
        .collect()
}

/// `locklab sim-server --port P`: one simulated node on real TCP, until
/// Ctrl-C, SIGTERM or a client's `SHUTDOWN` (even while a script runs).
/// `busy_reply_threshold_ms` is Redis's `busy-reply-threshold`.
pub fn sim_server(bind: std::net::IpAddr, port: u16, busy_reply_threshold_ms: u64) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::error!("cannot start a runtime: {e}");
            return ExitCode::BadInput;
        }
    };
    let asked = std::net::SocketAddr::new(bind, port);
    let mut config = simredis::NodeConfig::new("sim-server");
    config.busy_reply_threshold = std::time::Duration::from_millis(busy_reply_threshold_ms);
    // Bound here, so that the address said is the one listened on (the
    // system picks the port of `--port 0`).
    let bound = std::net::TcpListener::bind(asked).and_then(|l| Ok((l.local_addr()?, l)));
    let (addr, listener) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            crate::error!("cannot serve on {asked}: {e}");
            return ExitCode::BadInput;
        }
    };
    let port = addr.port();
    eprintln!("simulated Redis node on {addr} (real time); try: redis-cli -p {port} ping");
    if crate::json::active() {
        let ready = crate::json::SimServerResult {
            address: addr.to_string(),
            port,
            busy_reply_threshold_ms,
            pid: std::process::id(),
        };
        crate::json::print(crate::json::CommandName::SimServer, None, Some(ready));
    }
    // The signals are awaited on the server's socket thread: a script that
    // runs long blocks this one (the node's) inside Lua.
    let served = runtime.block_on(simredis::serve_bound_until(listener, config, stop_signal()));
    match served {
        Ok(()) => ExitCode::Success,
        Err(e) => {
            crate::error!("cannot serve on {addr}: {e}");
            ExitCode::BadInput
        }
    }
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The arguments of `locklab explore`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExploreArgs {
    /// The rung to search.
    #[arg(long, alias = "variant", required_unless_present_any = ["bench", "rung_file"])]
    pub rung: Option<String>,
    /// Search the rung this rung file defines (`rungs/README.md`).
    #[arg(long, value_name = "FILE", conflicts_with = "rung")]
    pub rung_file: Option<std::path::PathBuf>,
    /// `all`, `assumed` (within the rung's assumptions) or a list such
    /// as `pause,crash,restart,partition,delay,slow-link,clock-jump,clock-drift,failover`.
    #[arg(long, default_value = "all")]
    pub faults: String,
    /// How many cases (default 256).
    #[arg(long, conflicts_with = "time")]
    pub cases: Option<u64>,
    /// Search for this long instead, e.g. 90s or 10m.
    #[arg(long)]
    pub time: Option<String>,
    /// The first seed (case k of shard I/N has seed S + k*N + I).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// This machine's share of the seeds: I/N with 0 <= I < N.
    #[arg(long, default_value = "0/1")]
    pub shard: String,
    /// Print one JSON document, the search's summary, on standard output
    /// (docs/json.md); the human text goes to standard error.
    #[arg(long, conflicts_with = "bench")]
    pub json: bool,
    /// Where counterexamples go (`<out>/found/`).
    #[arg(long, default_value = "reports")]
    pub out: std::path::PathBuf,
    /// Simulations run at once (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Keep the first counterexample as found.
    #[arg(long)]
    pub no_shrink: bool,
    /// Measure speed on the standard case instead (writes
    /// `<out>/explore-speed.md`).
    #[arg(long)]
    pub bench: bool,
    /// Also write a JUnit XML report here: one test case for the rung,
    /// failing when a violation or deadlock was found.
    #[arg(long, value_name = "FILE", conflicts_with = "bench")]
    pub junit: Option<std::path::PathBuf>,
}

/// `locklab explore`: 1 when a violation was found, 4 when only deadlocks
/// were, 0 when nothing was, 3 on bad input; `result` gets the summary
/// `--json` prints.
pub fn explore(args: ExploreArgs, result: &mut Option<sim::explore::search::Summary>) -> ExitCode {
    use sim::explore::search::{self as s, Limit, SearchConfig};
    let workers = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if args.bench {
        return explore_bench(&args.out, workers);
    }
    let bad = |msg: String| {
        crate::error!("{msg}");
        ExitCode::BadInput
    };
    let from_file = match args.rung_file.as_deref().map(crate::rung_files::load) {
        Some(Ok(id)) => Some(id),
        Some(Err(code)) => return code,
        None => None,
    };
    let rung = from_file.map_or_else(|| args.rung.clone().unwrap_or_default(), str::to_string);
    if from_file.is_some() && args.faults == "assumed" {
        return bad(format!(
            "--faults assumed: the assumptions are known for the ladder's rungs only, not for \
             {rung}; use all or a list"
        ));
    }
    if locks::rung(&rung).is_none() {
        return bad(format!(
            "--rung {rung:?}: unknown rung; expected one of {}",
            locks::ids().join(", ")
        ));
    }
    let mode = match sim::explore::FaultMode::parse(&args.faults) {
        Ok(m) => m,
        Err(e) => return bad(format!("--faults: {e}")),
    };
    let limit = match (&args.time, args.cases) {
        (Some(t), _) => match s::parse_duration(t) {
            Ok(d) => Limit::Time(d),
            Err(e) => return bad(format!("--time {e}")),
        },
        (None, Some(0)) => return bad("--cases must be at least 1".into()),
        (None, Some(n)) => Limit::Cases(n),
        (None, None) => Limit::Cases(256),
    };
    let shard = match s::parse_shard(&args.shard) {
        Ok(x) => x,
        Err(e) => return bad(e),
    };
    if args.seed >= sim::explore::generate::SEED_LIMIT {
        return bad(format!("--seed {}: seeds must be below 2^53", args.seed));
    }
    let config = SearchConfig {
        rung: rung.clone(),
        mode: mode.clone(),
        limit,
        seed: args.seed,
        shard,
        workers,
        shrink: !args.no_shrink,
        shrink_runs: 600,
    };
    let what = match limit {
        Limit::Cases(n) => format!("{n} cases"),
        Limit::Time(d) => format!("{:.0} s", d.as_secs_f64()),
    };
    eprintln!(
        "explore {rung}: faults {mode}, {what}, seeds from {} (shard {}/{}), {workers} workers",
        args.seed, shard.0, shard.1
    );
    // Shrinking reports every step it takes: shown when it starts, then at
    // most once a second, like the search's totals.
    let shrink_shown = std::sync::Mutex::new(std::time::Instant::now());
    let (total, unit) = match limit {
        Limit::Cases(n) => (n, crate::progress::Unit::Steps),
        Limit::Time(d) => (d.as_secs().max(1), crate::progress::Unit::Seconds),
    };
    let bar = crate::progress::Progress::new(&format!("explore {rung}"), total, unit);
    let progress = |p: s::Progress<'_>| match p {
        s::Progress::Searching(st) => bar.step(
            match limit {
                Limit::Cases(_) => st.cases,
                Limit::Time(_) => st.wall_s as u64,
            },
            &format!(
                "{} cases, {} violations, {} deadlocks",
                st.cases, st.violations, st.deadlocks
            ),
            || {
                format!(
                    "  {} cases, {:.1} cases/s, {:.0} sim s per wall s, {} violations, {} \
                     deadlocks",
                    st.cases,
                    st.cases_per_s(),
                    st.sim_per_wall(),
                    st.violations,
                    st.deadlocks
                )
            },
        ),
        s::Progress::Shrinking {
            case,
            verdict,
            runs,
        } => {
            let mut shown = shrink_shown.lock().unwrap_or_else(|p| p.into_inner());
            if runs == 0 || shown.elapsed() >= std::time::Duration::from_secs(1) {
                *shown = std::time::Instant::now();
                let state = format!(
                    "{} faults, {} clients after {runs} runs",
                    case.faults.len(),
                    case.clients.len()
                );
                bar.note(&format!("shrinking: {state}"), || {
                    format!(
                        "  shrinking the first counterexample (seed {}, {verdict}): {state}",
                        case.seed
                    )
                });
            }
        }
    };
    let outcome = s::search(&config, &progress);
    bar.finish();
    let st = outcome.stats;
    let partial = outcome
        .interrupted
        .map(|cause| format!("; PARTIAL: interrupted by {cause}"))
        .unwrap_or_default();
    outln!(
        "explore {rung} (faults {mode}{partial}): {} cases, {} violations, {} deadlocks, {} unknown, \
         {} errors; {:.1} cases/s, {:.0} simulated s per wall s",
        st.cases,
        st.violations,
        st.deadlocks,
        st.unknown,
        st.errors,
        st.cases_per_s(),
        st.sim_per_wall()
    );
    if let Some(note) = outcome.cut_short_note() {
        outln!("{note}");
    }
    let mut path = None;
    if let Some(f) = &outcome.first {
        let dir = args.out.join("found");
        match s::write_finding(&dir, f, &mode) {
            Ok(p) => path = Some(p),
            Err(e) => {
                crate::error!("cannot write to {}: {e}", dir.display());
                return ExitCode::BadInput;
            }
        }
        let p = path.as_deref().unwrap_or(&dir);
        outln!(
            "\nfirst counterexample: seed {}: {} (shrunk from {} faults, {} clients to {} faults \
             [{}], {} clients in {} runs)",
            f.seed,
            f.judged.verdict,
            f.original.faults.len(),
            f.original.clients.len(),
            f.shrunk.faults.len(),
            f.shrunk.fault_names().join(", "),
            f.shrunk.clients.len(),
            f.shrink_runs
        );
        out!("{}", output::describe(&f.judged));
        if let Some(note) = s::shrink_note(f) {
            outln!("  PARTIAL: {note}");
        }
        outln!("  written to {}", p.display());
        let replay = match &args.rung_file {
            Some(file) => s::replay_command(p, f).replace(
                &format!("--rung {rung} "),
                &format!("--rung-file {} ", file.display()),
            ),
            None => s::replay_command(p, f),
        };
        outln!("  replay: {replay}");
    } else {
        outln!("no counterexample found");
    }
    if let Some(cause) = outcome.interrupted {
        let kept = match (&outcome.first, &path) {
            (Some(f), Some(p)) if f.shrink_interrupted.is_some() => {
                format!(
                    "; the first counterexample, shrunk as far as it got, is in {}",
                    p.display()
                )
            }
            (Some(_), Some(p)) => format!("; the first counterexample is in {}", p.display()),
            _ => String::new(),
        };
        eprintln!(
            "explore: interrupted by {cause}: PARTIAL: the totals count the {} cases finished \
             before the stop{kept}",
            outcome.stats.cases
        );
    }
    if outcome.stats.seeds_exhausted {
        eprintln!(
            "note: the seeds ran out (each must be below 2^53) after {} cases; the search stopped early",
            outcome.stats.cases
        );
    }
    let search = crate::present::search(&config, &outcome, path.as_deref());
    let page_written = match report::html::explore::write_pages(&args.out, &search, path.as_deref())
    {
        Ok(page) => {
            eprintln!("explore: report {}", page.display());
            true
        }
        Err(e) => {
            eprintln!(
                "error: cannot write the search's report to {}: {e}",
                args.out.display()
            );
            false
        }
    };
    *result = Some(s::summary(&config, &outcome, path.as_deref()));
    if let Some(file) = &args.junit {
        let xml = report::junit::explore_xml(&search, path.as_deref());
        if !write_junit(file, &xml, outcome.interrupted.is_some())
            && outcome.exit_code() == ExitCode::Success
        {
            return ExitCode::BadInput;
        }
    }
    if !page_written && outcome.exit_code() == ExitCode::Success {
        return ExitCode::BadInput;
    }
    outcome.exit_code()
}

/// `locklab explore --bench`: the speed figures, written to
/// `<out>/explore-speed.md`.
fn explore_bench(out: &Path, workers: usize) -> ExitCode {
    use sim::explore::speed;
    let mut runs = Vec::new();
    for seed in 1..=3 {
        match speed::standard_case(seed) {
            Ok(r) => runs.push(r),
            Err(e) => {
                crate::error!("the standard case failed: {e}");
                return ExitCode::BadInput;
            }
        }
    }
    runs.sort_by(|a, b| a.sim_per_wall().total_cmp(&b.sim_per_wall()));
    let median = runs[runs.len() / 2];
    let mut text = String::from(
        "# Exploration speed\n\nWritten by `locklab explore --bench` (release build). The \
         standard case: Redlock on 5 independent masters, 8 clients contending, 30 simulated \
         seconds, no faults; one thread; median of 3 seeds.\n\n",
    );
    text.push_str("| figure | value |\n|---|---|\n");
    text.push_str(&format!(
        "| standard case: wall time (run + checks) | {:.3} s ({:.3} + {:.3}) |\n",
        median.run_s + median.check_s,
        median.run_s,
        median.check_s
    ));
    text.push_str(&format!(
        "| standard case: simulated s per wall s | {:.1} |\n",
        median.sim_per_wall()
    ));
    text.push_str(&format!(
        "| standard cases per wall s (one thread) | {:.2} |\n",
        median.cases_per_s()
    ));
    text.push_str(&format!(
        "| standard case: history events | {} |\n",
        median.events
    ));
    text.push_str(&format!(
        "\nSearches (`--faults all`, 200 cases each, {workers} worker threads):\n\n\
         | rung | cases per s | simulated s per wall s |\n|---|---|---|\n"
    ));
    for rung in ["set-nx-px", "watchdog", "redlock", "fenced"] {
        let (cps, spw) = speed::search_rate(rung, 200, workers);
        text.push_str(&format!("| `{rung}` | {cps:.1} | {spw:.0} |\n"));
    }
    out!("{text}");
    if let Err(e) = std::fs::create_dir_all(out)
        .and_then(|_| harness::atomic::write_whole(&out.join("explore-speed.md"), &text))
    {
        crate::error!(
            "cannot write {}: {e}",
            out.join("explore-speed.md").display()
        );
        return ExitCode::BadInput;
    }
    outln!("written to {}", out.join("explore-speed.md").display());
    ExitCode::Success
}

/// The scenarios folder used when none is given, if it exists in the
/// current folder.
pub const DEFAULT_SCENARIOS: &str = "scenarios";

/// The scenarios of `dir` (subfolders too), or when none is given, of
/// [`DEFAULT_SCENARIOS`] if it exists here, else the built-in ones (said
/// on standard error); their notes printed. `None` (the error printed)
/// when one cannot be loaded.
pub(crate) fn load_all(dir: Option<&Path>) -> Option<Vec<Scenario>> {
    let default = Path::new(DEFAULT_SCENARIOS);
    let loaded = match dir {
        Some(dir) => sim::suite::load_all(dir),
        None if default.is_dir() => sim::suite::load_all(default),
        None => {
            eprintln!(
                "note: no {DEFAULT_SCENARIOS}/ folder here: using the {} built-in scenarios \
                 (`locklab scenarios --export DIR` writes them out to edit; --scenarios DIR \
                 uses a folder)",
                crate::builtin::FILES.len()
            );
            crate::builtin::load()
        }
    };
    match loaded {
        Ok(all) => {
            print_notes(&all.iter().collect::<Vec<_>>());
            Some(all)
        }
        Err(e) => {
            crate::error!("{e}");
            None
        }
    }
}

/// The scenario `run` was given: a file, or when no such file exists and
/// the argument is a bare name, the built-in scenario of that name (so
/// `locklab run stop-the-world-pause` works from any folder). Returns the
/// text too, for the run folder.
pub(crate) fn load_scenario_arg(
    path: &Path,
) -> Result<(Scenario, String), model::scenario::ScenarioError> {
    let bare_name = path.components().count() == 1 && path.extension().is_none();
    let builtin = path
        .to_str()
        .filter(|_| bare_name && !path.exists())
        .and_then(|name| Some((name, crate::builtin::text_of(name)?)));
    match builtin {
        Some((name, text)) => {
            let file = crate::builtin::label(&format!("{name}.toml"));
            eprintln!("note: no file {name:?} here: running the built-in scenario {name}");
            Ok((Scenario::parse(text, &file, name)?, text.to_string()))
        }
        None => Scenario::load_text(path),
    }
}

/// `locklab scenarios [--export DIR]`: lists the built-in scenarios, or
/// writes them out (overwriting nothing); `result` gets what `--json`
/// prints.
pub fn scenarios(export: Option<&Path>, result: &mut crate::json::ScenariosResult) -> ExitCode {
    let Some(dir) = export else {
        let all = match crate::builtin::load() {
            Ok(all) => all,
            Err(e) => {
                crate::error!("{e}");
                return ExitCode::BadInput;
            }
        };
        outln!("{:<36} rungs", "built-in scenario");
        for scenario in all {
            outln!("{:<36} {}", scenario.name, scenario.rungs.join(", "));
            result.scenarios.push(crate::json::ScenarioEntry {
                name: scenario.name,
                rungs: scenario.rungs,
            });
        }
        return ExitCode::Success;
    };
    match crate::builtin::export(dir) {
        Ok(written) => {
            for path in &written {
                outln!("{}", path.display());
            }
            result.exported_to = Some(dir.display().to_string());
            result.written = written.iter().map(|p| p.display().to_string()).collect();
            eprintln!(
                "{} scenario files written to {}; `locklab suite --scenarios {}` runs them",
                written.len(),
                dir.display(),
                dir.display()
            );
            ExitCode::Success
        }
        Err(e) => {
            crate::error!("--export {}: {e}", dir.display());
            ExitCode::BadInput
        }
    }
}

/// Prints each scenario's notes (old spellings and the like) to standard
/// error: they do not stop a run, but the reader should know.
fn print_notes(scenarios: &[&Scenario]) {
    for scenario in scenarios {
        for note in &scenario.notes {
            eprintln!("note: scenario {}: {note}", scenario.name);
        }
    }
}

/// Writes to standard output; a reader that went away (a closed pipe) ends
/// the process at once, as a SIGPIPE would, with exit code 141.
/// With `--json`, standard output carries the JSON document only, so the
/// human text goes to standard error.
pub fn emit(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    if crate::json::active() {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_fmt(args);
        if newline {
            let _ = stderr.write_all(b"\n");
        }
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(ExitCode::BrokenPipe.code()));
    }
}

/// Writes `bench.html` beside `bench.json` in `out` after a bench run,
/// saying where on standard error; `false` (the error printed) when it
/// cannot.
pub fn bench_page(out: &Path) -> bool {
    let plots: Vec<(&str, &str)> = bench::write::PLOTS
        .iter()
        .map(|p| (p.file, p.what))
        .collect();
    match bench::page::write_page(out, "bench", &plots) {
        Ok(page) => {
            eprintln!("bench: report {}", page.display());
            true
        }
        Err(e) => {
            eprintln!("bench: error: cannot write the HTML report: {e}");
            false
        }
    }
}
