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

use sim::cell::run_cell;
use sim::exit::ExitCode;
use sim::interrupt::Cause;
use sim::output;
use sim::run::RunError;
use sim::scenario::Scenario;
use sim::verdict::Verdict;
use std::path::Path;

/// `locklab ladder [--json]`.
pub fn ladder(json: bool) -> ExitCode {
    if json {
        match serde_json::to_string(&locks::LADDER) {
            Ok(text) => outln!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::BadInput;
            }
        }
    } else {
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

/// `locklab run SCENARIO [--rung ID] [--seed N]`.
pub fn run(path: &Path, rung: Option<&str>, seed: Option<u64>, out: &Path) -> ExitCode {
    // Read once: the run folder keeps exactly the text that was run, even
    // when the scenario comes from a pipe that cannot be read again.
    let (scenario, text) = match load_scenario_arg(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BadInput;
        }
    };
    print_notes(&[&scenario]);
    let rungs: Vec<String> = match rung {
        Some(v) if scenario.rungs.iter().any(|x| x == v) => vec![v.to_string()],
        Some(v) => {
            eprintln!(
                "error: {}: rung {v:?} is not in this scenario; it names {}",
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
        eprintln!("error: --seed {s}: seeds must be below 2^53");
        return ExitCode::BadInput;
    }
    let seeds = seed
        .map(|s| vec![s])
        .unwrap_or_else(|| scenario.seeds.clone());
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
                    eprintln!("error: {}: {rung} seed {seed}: {e}", path.display());
                    failed = true;
                    continue;
                }
            };
            out!("{}", output::describe(&judged));
            verdicts.push(judged.verdict);
            let dir = output::run_dir(out, &judged);
            match output::write_run(&dir, &judged, &text) {
                Ok(()) => outln!("  written to {}\n", dir.display()),
                Err(e) => {
                    eprintln!("error: cannot write {}: {e}", dir.display());
                    failed = true;
                }
            }
        }
    }
    if let Some((cause, abandoned)) = interrupted {
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

/// `locklab replay DIR`: 0 when the new history is byte-identical, 1 when
/// not (naming the first differing event), 3 when the folder is unusable.
pub fn replay(dir: &Path) -> ExitCode {
    match replay_inner(dir) {
        Ok(None) if dir.join(real::cell::MARKER).exists() => {
            outln!(
                "replay of {}: a real run cannot be repeated byte for byte; its recorded \
                 history, checked again, gets the recorded verdict",
                dir.display()
            );
            ExitCode::Success
        }
        Ok(None) => {
            outln!("replay of {}: identical history", dir.display());
            ExitCode::Success
        }
        Ok(Some(diff)) => {
            outln!("replay of {}: histories differ\n{diff}", dir.display());
            ExitCode::Violated
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::BadInput
        }
    }
}

fn replay_inner(dir: &Path) -> Result<Option<String>, String> {
    let read = |name: &str| read_run_file(&dir.join(name));
    let scenario_text = read("scenario.toml")?;
    let recorded = read("history.jsonl")?;
    let verdict_path = dir.join("verdict.json").display().to_string();
    let verdict_text = read("verdict.json")?;
    let verdict: serde_json::Value =
        serde_json::from_str(&verdict_text).map_err(|e| format!("{verdict_path}: {e}"))?;
    // Schema 1 of verdict.json spells the rung `variant`.
    let rung = verdict["variant"].as_str().ok_or(format!(
        "{verdict_path}: expected a string field \"variant\" (the rung)"
    ))?;
    let seed = verdict["seed"].as_u64().ok_or(format!(
        "{verdict_path}: expected an integer field \"seed\""
    ))?;
    let name = verdict["scenario"].as_str().unwrap_or("replay");
    let file = dir.join("scenario.toml").display().to_string();
    let scenario = Scenario::parse(&scenario_text, &file, name).map_err(|e| e.to_string())?;
    if dir.join(real::cell::MARKER).exists() {
        return real::cell::recheck(&scenario, rung, seed, &recorded, &verdict_text);
    }
    let judged = run_cell(&scenario, rung, seed).map_err(|e| format!("{file}: {e}"))?;
    let fresh = judged.history.to_jsonl();
    if fresh != recorded {
        return Ok(Some(first_difference(&recorded, &fresh)));
    }
    // The same history must get the same judgement: a verdict.json edited
    // by hand (or by a checker that changed) is a difference too.
    let rejudged = sim::verdict::VerdictDoc::new(&judged.results, name, rung, seed);
    let rejudged = serde_json::to_value(&rejudged).map_err(|e| e.to_string())?;
    let without_version = |v: &serde_json::Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("locklab");
        }
        v
    };
    if without_version(&verdict) != without_version(&rejudged) {
        return Ok(Some(format!(
            "the history is the same, but {verdict_path} is not what it gets now:\n  recorded: {}\n  replayed: {}",
            verdict["verdict"], rejudged["verdict"]
        )));
    }
    Ok(None)
}

/// The largest run file `replay` reads: far more than any history of an
/// hour's run, and a bound on what a damaged folder can make it load.
const MAX_RUN_FILE_BYTES: u64 = 512 << 20;

/// Reads one file of a run folder, bounded, naming it in every error.
fn read_run_file(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let name = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_RUN_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > MAX_RUN_FILE_BYTES {
        return Err(format!("{name}: file too large: more than 512 MiB"));
    }
    String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8 text ({e})"))
}

/// Where two histories first differ, for people.
fn first_difference(recorded: &str, fresh: &str) -> String {
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

/// `locklab suite`: exit 0 only when every cell is as expected.
/// `locklab suite [--all]`: the safety matrix, or with `all` the full grid
/// (every rung in every scenario). Exit 1 when a cell differs from a
/// stated expectation; cells without one judge nothing.
pub fn suite(
    dir: Option<&Path>,
    out: &Path,
    jobs: Option<usize>,
    all: bool,
    junit: Option<&Path>,
) -> ExitCode {
    use sim::suite::Grid;
    let grid = if all { Grid::All } else { Grid::Named };
    let Some(scenarios) = load_all(dir) else {
        return ExitCode::BadInput;
    };
    let workers = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let progress = |cell: &sim::matrix::Cell, done: usize, total: usize| {
        let judged = match cell.expected {
            None => "(no expectation)".to_string(),
            Some(e) if e == cell.verdict => format!("(expected {e}) ok"),
            Some(e) => format!("(expected {e}) UNEXPECTED"),
        };
        eprintln!(
            "[{done}/{total}] {} / {}: {} {judged}",
            cell.scenario,
            cell.rung,
            cell.verdict.as_str(),
        );
    };
    let suite = match sim::suite::run_suite(&scenarios, grid, workers, &progress) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BadInput;
        }
    };
    let junit_written = junit.is_none_or(|file| {
        write_junit(
            file,
            &sim::junit::suite_xml(&suite),
            suite.interrupted.is_some(),
        )
    });
    if let Some(cause) = suite.interrupted {
        return suite_interrupted(out, &suite, cause);
    }
    let cells = suite.cells;
    match sim::suite::write_matrix(out, grid, &cells) {
        Ok(removed) => {
            for stale in removed {
                eprintln!(
                    "note: removed {}: an interrupted suite's matrix, older than this one",
                    stale.display()
                );
            }
        }
        Err(e) => {
            eprintln!("error: cannot write the matrix to {}: {e}", out.display());
            return ExitCode::BadInput;
        }
    }
    out!("{}", grid.markdown(&cells));
    let unexpected = cells.iter().filter(|c| c.differs()).count();
    outln!(
        "written to {}",
        out.join(format!("{}.md", grid.stem())).display()
    );
    if unexpected > 0 {
        ExitCode::Violated
    } else if !junit_written {
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
        .and_then(|()| output::write_whole(file, xml));
    match written {
        Ok(()) => {
            let partial = if partial { " (PARTIAL)" } else { "" };
            eprintln!("JUnit report{partial} written to {}", file.display());
            true
        }
        Err(e) => {
            eprintln!("error: --junit: cannot write {}: {e}", file.display());
            false
        }
    }
}

/// The end of an interrupted suite: the finished cells go to the partial
/// matrix (a complete `safety-matrix.md` is left alone), and it says so.
fn suite_interrupted(out: &Path, suite: &sim::suite::SuiteRun, cause: Cause) -> ExitCode {
    let (done, planned) = (suite.cells.len(), suite.planned.len());
    match sim::suite::write_partial_matrix(out, suite, cause) {
        Ok(md) => {
            out!("{}", sim::suite::partial_markdown(suite, cause));
            outln!("written to {}", md.display());
            eprintln!(
                "suite: interrupted by {cause}: {done} of {planned} cells finished; the matrix is \
                 PARTIAL: {} and .json ({}.md, if any, left as it was)",
                md.display(),
                suite.grid.stem()
            );
        }
        Err(e) => eprintln!(
            "suite: interrupted by {cause} after {done} of {planned} cells; error: cannot write \
             the partial matrix to {}: {e}",
            out.display()
        ),
    }
    ExitCode::Interrupted
}

/// `locklab tour`.
pub fn tour(dir: Option<&Path>, only: Option<&str>) -> ExitCode {
    let Some(scenarios) = load_all(dir) else {
        return ExitCode::BadInput;
    };
    if let Some(id) = only
        && locks::rung(id).is_none()
    {
        eprintln!(
            "error: --rung {id:?}: unknown rung; expected one of {}",
            locks::ids().join(", ")
        );
        return ExitCode::BadInput;
    }
    outln!("The lock ladder, rung by rung, from live runs on simulated Redis nodes.\n");
    // Each stop is shown as soon as it has run, so an interrupted tour
    // keeps every stop it finished.
    let rungs: Vec<&'static locks::Rung> = locks::LADDER
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.id == id))
        .collect();
    let mut shown = 0;
    for (i, rung) in rungs.iter().enumerate() {
        match sim::tour::stop(rung, &scenarios) {
            Ok(Some(stop)) => {
                out!("{}", sim::tour::render_stop(&stop, &scenarios));
                shown += 1;
            }
            Ok(None) => {}
            Err(RunError::Interrupted(cause)) => {
                eprintln!(
                    "tour: interrupted by {cause}: PARTIAL: {shown} stop(s) shown; the stop of \
                     `{}` was abandoned and {} later rung(s) not reached",
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
            eprintln!("error: cannot start a runtime: {e}");
            return ExitCode::BadInput;
        }
    };
    let addr = std::net::SocketAddr::new(bind, port);
    let mut config = simredis::NodeConfig::new("sim-server");
    config.busy_reply_threshold = std::time::Duration::from_millis(busy_reply_threshold_ms);
    eprintln!("simulated Redis node on {addr} (real time); try: redis-cli -p {port} ping");
    // The signals are awaited on the server's socket thread: a script that
    // runs long blocks this one (the node's) inside Lua.
    let served = runtime.block_on(simredis::serve_tcp_until(addr, config, stop_signal()));
    match served {
        Ok(()) => ExitCode::Success,
        Err(e) => {
            eprintln!("error: cannot serve on {addr}: {e}");
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
    #[arg(long, alias = "variant", required_unless_present = "bench")]
    pub rung: Option<String>,
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
    /// Print a JSON summary as the last line of standard output.
    #[arg(long)]
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
/// were, 0 when nothing was, 3 on bad input.
pub fn explore(args: ExploreArgs) -> ExitCode {
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
        eprintln!("error: {msg}");
        ExitCode::BadInput
    };
    let rung = args.rung.clone().unwrap_or_default();
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
    let progress = |p: s::Progress<'_>| match p {
        s::Progress::Searching(st) => eprintln!(
            "  {} cases, {:.1} cases/s, {:.0} sim s per wall s, {} violations, {} deadlocks",
            st.cases,
            st.cases_per_s(),
            st.sim_per_wall(),
            st.violations,
            st.deadlocks
        ),
        s::Progress::Shrinking {
            case,
            verdict,
            runs,
        } => {
            let mut shown = shrink_shown.lock().unwrap_or_else(|p| p.into_inner());
            if runs == 0 || shown.elapsed() >= std::time::Duration::from_secs(1) {
                *shown = std::time::Instant::now();
                eprintln!(
                    "  shrinking the first counterexample (seed {}, {verdict}): {} faults, {} \
                     clients after {runs} runs",
                    case.seed,
                    case.faults.len(),
                    case.clients.len()
                );
            }
        }
    };
    let outcome = s::search(&config, &progress);
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
    let mut path = None;
    if let Some(f) = &outcome.first {
        let dir = args.out.join("found");
        match s::write_finding(&dir, f, &mode) {
            Ok(p) => path = Some(p),
            Err(e) => {
                eprintln!("error: cannot write to {}: {e}", dir.display());
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
        outln!("  replay: {}", s::replay_command(p, f));
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
    if args.json {
        outln!("{}", s::json_summary(&config, &outcome, path.as_deref()));
    }
    if let Some(file) = &args.junit {
        let xml = sim::junit::explore_xml(&config, &outcome, path.as_deref());
        if !write_junit(file, &xml, outcome.interrupted.is_some())
            && outcome.exit_code() == ExitCode::Success
        {
            return ExitCode::BadInput;
        }
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
                eprintln!("error: the standard case failed: {e}");
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
        .and_then(|_| sim::output::write_whole(&out.join("explore-speed.md"), &text))
    {
        eprintln!(
            "error: cannot write {}: {e}",
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
            eprintln!("error: {e}");
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
) -> Result<(Scenario, String), sim::scenario::ScenarioError> {
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
/// writes them out (overwriting nothing).
pub fn scenarios(export: Option<&Path>) -> ExitCode {
    let Some(dir) = export else {
        let all = match crate::builtin::load() {
            Ok(all) => all,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::BadInput;
            }
        };
        outln!("{:<36} rungs", "built-in scenario");
        for scenario in all {
            outln!("{:<36} {}", scenario.name, scenario.rungs.join(", "));
        }
        return ExitCode::Success;
    };
    match crate::builtin::export(dir) {
        Ok(written) => {
            for path in &written {
                outln!("{}", path.display());
            }
            eprintln!(
                "{} scenario files written to {}; `locklab suite --scenarios {}` runs them",
                written.len(),
                dir.display(),
                dir.display()
            );
            ExitCode::Success
        }
        Err(e) => {
            eprintln!("error: --export {}: {e}", dir.display());
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
pub fn emit(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
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
