//! `locklab explore`: the swarm search for fault schedules that break a
//! rung; the first counterexample shrunk and written as a scenario file,
//! its page, and a JUnit report if asked (`--bench`: the search's speed).

use super::{Outcome, workers, write_junit};
use report::output;
use sim::exit::ExitCode;
use sim::explore::FaultMode;
use sim::explore::search::{self as s, Limit, SearchConfig, Summary};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The arguments of `locklab explore`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
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
/// were, 0 when nothing was, 3 on bad input; the search's summary for the
/// document.
pub fn execute(args: Args) -> Outcome<Summary> {
    let workers = workers(args.jobs);
    if args.bench {
        return Outcome::failed(measure_speed(&args.out, workers));
    }
    let config = match search_config(&args, workers) {
        Ok(config) => config,
        Err(code) => return Outcome::failed(code),
    };
    let mode = &config.mode;
    let rung = &config.rung;
    let what = match config.limit {
        Limit::Cases(n) => format!("{n} cases"),
        Limit::Time(d) => format!("{:.0} s", d.as_secs_f64()),
    };
    eprintln!(
        "explore {rung}: faults {mode}, {what}, seeds from {} (shard {}/{}), {workers} workers",
        args.seed, config.shard.0, config.shard.1
    );
    let shown = SearchProgress::new(rung, config.limit);
    let outcome = s::search(&config, &|p| shown.report(p));
    shown.bar.finish();
    show_totals(&config, &outcome);
    let path = match &outcome.first {
        Some(first) => match keep_finding(&args, &config, first) {
            Ok(path) => Some(path),
            Err(code) => return Outcome::failed(code),
        },
        None => {
            outln!("no counterexample found");
            None
        }
    };
    say_how_it_stopped(&outcome, path.as_deref());
    let code = write_reports(&args, &config, &outcome, path.as_deref());
    Outcome::new(code, Some(s::summary(&config, &outcome, path.as_deref())))
}

/// The search `args` ask for, checked: unknown rungs, fault lists, limits,
/// shards and seeds are bad input (said, exit 3).
fn search_config(args: &Args, workers: usize) -> Result<SearchConfig, ExitCode> {
    let bad = |msg: String| {
        crate::error!("{msg}");
        ExitCode::BadInput
    };
    let from_file = args
        .rung_file
        .as_deref()
        .map(crate::rung_files::load)
        .transpose()?;
    let rung = from_file.map_or_else(|| args.rung.clone().unwrap_or_default(), str::to_string);
    if locks::rung(&rung).is_none() {
        return Err(bad(format!(
            "--rung {rung:?}: unknown rung; expected one of {}",
            locks::ids().join(", ")
        )));
    }
    // A search "within the assumptions" of a rung whose assumptions are
    // not written would search everything and say otherwise.
    let written = from_file.is_none() && sim::explore::assumptions::assumptions(&rung).is_some();
    if args.faults == "assumed" && !written {
        return Err(bad(format!(
            "--faults assumed: no assumptions are written for {rung} (only for the ladder's \
             rungs and some libraries', docs/ladder.md §12); use all or a list"
        )));
    }
    let mode = FaultMode::parse(&args.faults).map_err(|e| bad(format!("--faults: {e}")))?;
    let limit = match (&args.time, args.cases) {
        (Some(t), _) => Limit::Time(s::parse_duration(t).map_err(|e| bad(format!("--time {e}")))?),
        (None, Some(0)) => return Err(bad("--cases must be at least 1".into())),
        (None, Some(n)) => Limit::Cases(n),
        (None, None) => Limit::Cases(256),
    };
    let shard = s::parse_shard(&args.shard).map_err(bad)?;
    if args.seed >= sim::explore::generate::SEED_LIMIT {
        return Err(bad(format!(
            "--seed {}: seeds must be below 2^53",
            args.seed
        )));
    }
    Ok(SearchConfig {
        rung,
        mode,
        limit,
        seed: args.seed,
        shard,
        workers,
        shrink: !args.no_shrink,
        shrink_runs: 600,
    })
}

/// What the search shows while it runs: a bar (or a line a second) of the
/// totals, and the shrinker's steps, shown when it starts and then at most
/// once a second.
struct SearchProgress {
    bar: crate::progress::Progress,
    limit: Limit,
    shrink_shown: Mutex<Instant>,
}

impl SearchProgress {
    fn new(rung: &str, limit: Limit) -> SearchProgress {
        let (total, unit) = match limit {
            Limit::Cases(n) => (n, crate::progress::Unit::Steps),
            Limit::Time(d) => (d.as_secs().max(1), crate::progress::Unit::Seconds),
        };
        SearchProgress {
            bar: crate::progress::Progress::new(&format!("explore {rung}"), total, unit),
            limit,
            shrink_shown: Mutex::new(Instant::now()),
        }
    }

    fn report(&self, p: s::Progress<'_>) {
        match p {
            s::Progress::Searching(st) => self.searching(st),
            s::Progress::Shrinking {
                case,
                verdict,
                runs,
            } => {
                let mut shown = self.shrink_shown.lock().unwrap_or_else(|p| p.into_inner());
                if runs == 0 || shown.elapsed() >= Duration::from_secs(1) {
                    *shown = Instant::now();
                    let state = format!(
                        "{} faults, {} clients after {runs} runs",
                        case.faults.len(),
                        case.clients.len()
                    );
                    self.bar.note(&format!("shrinking: {state}"), || {
                        format!(
                            "  shrinking the first counterexample (seed {}, {verdict}): {state}",
                            case.seed
                        )
                    });
                }
            }
        }
    }

    fn searching(&self, st: &s::Stats) {
        self.bar.step(
            match self.limit {
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
        )
    }
}

/// The search's totals, and why cases were cut short if any were.
fn show_totals(config: &SearchConfig, outcome: &s::Outcome) {
    let st = outcome.stats;
    let partial = outcome
        .interrupted
        .map(|cause| format!("; PARTIAL: interrupted by {cause}"))
        .unwrap_or_default();
    outln!(
        "explore {} (faults {}{partial}): {} cases, {} violations, {} deadlocks, {} unknown, \
         {} errors; {:.1} cases/s, {:.0} simulated s per wall s",
        config.rung,
        config.mode,
        st.cases,
        st.violations,
        st.deadlocks,
        st.unknown,
        st.errors,
        st.cases_per_s(),
        st.sim_per_wall()
    );
    if let Some(e) = &outcome.first_error {
        outln!(
            "the first case that could not run: seed {}: {}",
            e.seed,
            e.error
        );
    }
    if let Some(note) = outcome.cut_short_note() {
        outln!("{note}");
    }
    if let Some(line) = counterexample_line(&outcome.counterexamples, st.violations + st.deadlocks)
    {
        outln!("{line}");
    }
}

/// The seeds of the counterexamples counted, the first ten in case order
/// (`--json` lists up to a thousand).
fn counterexample_line(found: &[s::Counterexample], total: u64) -> Option<String> {
    const SHOWN: usize = 10;
    if found.is_empty() {
        return None;
    }
    let shown: Vec<String> = (found.iter().take(SHOWN))
        .map(|c| format!("{} ({})", c.seed, c.verdict))
        .collect();
    let more = total.saturating_sub(shown.len() as u64);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "counterexamples at seeds {}{tail}",
        shown.join(", ")
    ))
}

/// Writes the first counterexample under `<out>/found/` and shows it with
/// its replay command: where it was written.
fn keep_finding(args: &Args, config: &SearchConfig, f: &s::Finding) -> Result<PathBuf, ExitCode> {
    let dir = args.out.join("found");
    let p = s::write_finding(&dir, f, &config.mode).map_err(|e| {
        crate::error!("cannot write to {}: {e}", dir.display());
        ExitCode::BadInput
    })?;
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
        Some(file) => s::replay_command(&p, f).replace(
            &format!("--rung {} ", config.rung),
            &format!("--rung-file {} ", file.display()),
        ),
        None => s::replay_command(&p, f),
    };
    outln!("  replay: {replay}");
    Ok(p)
}

/// On standard error: an interrupted search's partial totals and where its
/// counterexample is, and seeds that ran out.
fn say_how_it_stopped(outcome: &s::Outcome, path: Option<&Path>) {
    if let Some(cause) = outcome.interrupted {
        let kept = match (&outcome.first, path) {
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
}

/// Writes the search's pages and the JUnit report if asked: the exit code,
/// the search's own unless a report it needed could not be written.
fn write_reports(
    args: &Args,
    config: &SearchConfig,
    outcome: &s::Outcome,
    path: Option<&Path>,
) -> ExitCode {
    let search = crate::present::search(config, outcome, path);
    let page_written = match report::html::explore::write_pages(&args.out, &search, path) {
        Ok(page) => {
            eprintln!("explore: report {}", page.display());
            true
        }
        Err(e) => {
            crate::error!(
                "cannot write the search's report to {}: {e}",
                args.out.display()
            );
            false
        }
    };
    if let Some(file) = &args.junit {
        let xml = report::junit::explore_xml(&search, path);
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

/// The client sweep's table: how the cost grows with the clients.
fn sweep_table() -> Result<String, String> {
    use sim::explore::speed;
    let points = speed::SWEEP_CLIENTS
        .iter()
        .map(|&clients| speed::sweep_point(clients))
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = format!(
        "\nClient sweep (standalone Redis, `set-nx-px`, every client one cycle with a 100 ms \
         critical section, {} simulated s, one thread):\n\n\
         | clients | wall time | history events | µs per event | µs per client-second |\n\
         |---|---|---|---|---|\n",
        speed::SWEEP_SIM_S
    );
    for p in &points {
        text.push_str(&format!(
            "| {} | {:.3} s | {} | {:.1} | {:.1} |\n",
            p.clients,
            p.wall_s,
            p.events,
            p.us_per_event(),
            p.us_per_client_s()
        ));
    }
    if let Some(k) = speed::fitted_exponent(&points) {
        text.push_str(&format!(
            "\nWall time grows as clients^{k:.2} (least squares on the logarithms).\n"
        ));
    }
    Ok(text)
}

/// `locklab explore --bench`: the speed figures, written to
/// `<out>/explore-speed.md`.
fn measure_speed(out: &Path, workers: usize) -> ExitCode {
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
    match sweep_table() {
        Ok(table) => text.push_str(&table),
        Err(e) => {
            crate::error!("the client sweep failed: {e}");
            return ExitCode::BadInput;
        }
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
