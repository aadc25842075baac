//! The `locklab` command line: argument parsing and dispatch only.
//!
//! Exit codes, one per kind of outcome, are [`sim::exit::ExitCode`]: 0 safe
//! (or success), 1 a safety violation was found, 2 unknown, 3 bad input or
//! harness error, 4 deadlock, 130 interrupted (SIGINT or SIGTERM; partial
//! results kept, see [`signals`]).

use clap::{Parser, Subcommand};
use sim::exit::ExitCode;
use std::path::PathBuf;

mod builtin;
mod commands;
mod json;
mod present;
mod progress;
mod real_cmd;
mod rung_files;
mod signals;

/// Deterministic simulation and benchmark testbed for Redis distributed locks.
#[derive(Debug, Parser)]
#[command(name = "locklab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lists the lock ladder: every rung, what it fixes and its flaw.
    Ladder {
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
    },
    /// Runs a scenario file on the simulator and judges every rung it names.
    Run {
        /// The scenario file (TOML), or the name of a built-in scenario
        /// (`locklab scenarios` lists them) when no such file exists.
        scenario: PathBuf,
        /// Only this rung (default: every rung the file names).
        #[arg(long, alias = "variant")]
        rung: Option<String>,
        /// Only this rung, defined in a rung file (`rungs/README.md`); in
        /// a scenario that names the rung it `plays`, it takes that part.
        #[arg(long, value_name = "FILE", conflicts_with = "rung")]
        rung_file: Option<PathBuf>,
        /// Only this seed (default: the file's seeds).
        #[arg(long)]
        seed: Option<u64>,
        /// Where run folders go (`<out>/runs/...`; real runs:
        /// `<out>/real-runs/...`).
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
        /// Run on real redis-server processes with real faults instead of
        /// the simulator (each rung `--repeat` times; not with --json).
        #[arg(long, conflicts_with = "json")]
        real: bool,
        /// Real mode: runs per rung.
        #[arg(long, default_value_t = real::cell::DEFAULT_REPEAT, requires = "real")]
        repeat: u32,
        /// Real mode: this server binary instead of `redis-server` (one
        /// that speaks its protocol and options, such as `valkey-server`).
        #[arg(long, value_name = "PATH", requires = "real")]
        server_bin: Option<PathBuf>,
    },
    /// Re-runs a recorded run from its folder and compares the histories.
    Replay {
        /// A run folder written by `locklab run`.
        dir: PathBuf,
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
    },
    /// Runs every scenario against every rung it names: the safety matrix
    /// (with --all, against every rung).
    Suite {
        /// Where the scenario files are, subfolders too (default:
        /// `scenarios/` when it exists here, else the built-in ones).
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Where `safety-matrix.{md,svg,json}` go.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Simulations run at once, at least 1 (default: the number of
        /// CPUs).
        #[arg(long)]
        jobs: Option<std::num::NonZeroUsize>,
        /// Every rung against every scenario, not only the rungs each names;
        /// writes `safety-matrix-all.{md,svg,json}`. Cells with no stated
        /// expectation are shown as found and do not decide the exit code.
        #[arg(long)]
        all: bool,
        /// Also write a JUnit XML report here: a test case per cell
        /// (classname the scenario, name the rung), failing when the cell
        /// differs from its expectation.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
        /// Also run the rung this rung file defines, in every scenario
        /// that names the rung it `plays` (with --all, in every scenario).
        #[arg(long, value_name = "FILE")]
        rung_file: Vec<PathBuf>,
        /// Also run every cell on real redis-server processes with real
        /// faults (`--repeat` times each) and write `reality.{md,json}`:
        /// the simulator's verdicts beside the real ones.
        #[arg(long, conflicts_with_all = ["all", "junit", "json"])]
        real: bool,
        /// Real mode: runs per cell.
        #[arg(long, default_value_t = real::cell::DEFAULT_REPEAT, requires = "real")]
        repeat: u32,
        /// Real mode: this server binary instead of `redis-server`.
        #[arg(long, value_name = "PATH", requires = "real")]
        server_bin: Option<PathBuf>,
    },
    /// Serves one simulated Redis node on a real TCP port (real time), so
    /// redis-cli or any client can check its fidelity by hand.
    ///
    /// A long script behaves as in Redis 7.0: other clients wait, and once
    /// it has run past the busy threshold they get `BUSY`; `SCRIPT KILL`
    /// stops it unless it wrote, `SHUTDOWN NOSAVE` stops the server. The
    /// server stops on Ctrl-C, SIGTERM or `SHUTDOWN`, even mid-script.
    SimServer {
        /// The port to listen on.
        #[arg(long, default_value_t = 6390)]
        port: u16,
        /// The address to bind (loopback unless you say otherwise).
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// How long a script runs before other clients get `BUSY` (Redis's
        /// `busy-reply-threshold`, in ms).
        #[arg(long, default_value_t = 5000, value_name = "MS")]
        busy_reply_threshold_ms: u64,
        /// Print one JSON document on standard output once the server
        /// listens (its address, port and pid; docs/json.md); the human
        /// text goes to standard error.
        #[arg(long)]
        json: bool,
    },
    /// The ladder told rung by rung from live simulator runs (no Redis needed).
    Tour {
        /// Where the scenario files are, subfolders too (default:
        /// `scenarios/` when it exists here, else the built-in ones).
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Only this rung's stop.
        #[arg(long, alias = "variant")]
        rung: Option<String>,
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
    },
    /// Lists the built-in scenarios (embedded in the binary), or writes
    /// them out to edit.
    Scenarios {
        /// Write the built-in scenario files into this folder (created if
        /// need be; no existing file is overwritten).
        #[arg(long, value_name = "DIR")]
        export: Option<PathBuf>,
        /// Print one JSON document on standard output (docs/json.md); the
        /// human text goes to standard error.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks every rung against real redis-server, beside the floor
    /// and rslock, and writes bench.md, bench.json and SVG plots.
    Bench {
        /// Short slices and few rounds (under two minutes).
        #[arg(long)]
        quick: bool,
        /// Use these servers (redis://host:port) instead of starting five;
        /// only keys under a unique prefix are touched, and deleted after.
        #[arg(long = "redis", value_name = "URL")]
        redis: Vec<String>,
        /// Where the report goes.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Print one JSON document on standard output, its result what
        /// bench.json holds (docs/json.md); the human text goes to
        /// standard error.
        #[arg(long)]
        json: bool,
        /// Do not pin the client and servers to CPUs.
        #[arg(long)]
        no_pin: bool,
    },
    /// Swarm search for fault schedules that break a rung; shrinks the
    /// first counterexample and writes it as a scenario file.
    Explore(commands::ExploreArgs),
}

impl Command {
    /// Whether `--json` was given.
    fn json(&self) -> bool {
        match self {
            Command::Ladder { json }
            | Command::Run { json, .. }
            | Command::Replay { json, .. }
            | Command::Suite { json, .. }
            | Command::SimServer { json, .. }
            | Command::Tour { json, .. }
            | Command::Scenarios { json, .. }
            | Command::Bench { json, .. } => *json,
            Command::Explore(args) => args.json,
        }
    }
}

fn main() -> std::process::ExitCode {
    // A batch of `bench`'s pairs, in a client process of its own.
    if let Some(code) = bench::batch_child_main() {
        return code;
    }
    // Bad arguments are bad input (exit 3), as everywhere in locklab.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::BadInput
            } else {
                ExitCode::Success
            }
            .into();
        }
    };
    // The long simulator commands stop cleanly on SIGINT/SIGTERM; bench and
    // sim-server handle Ctrl-C themselves, and the rest are short.
    let long = match &cli.command {
        Command::Run { .. } | Command::Suite { .. } | Command::Tour { .. } => true,
        Command::Explore(args) => !args.bench,
        _ => false,
    };
    if long && let Err(e) = signals::install() {
        eprintln!(
            "warning: cannot handle SIGINT/SIGTERM ({e}); a signal will end the process without keeping partial results"
        );
    }
    if cli.command.json() {
        json::enable();
    }
    use json::CommandName as Name;
    let code = match cli.command {
        Command::Ladder { .. } => {
            let code = commands::ladder();
            let rungs = locks::LADDER.iter().map(|rung| **rung).collect();
            json::finish(Name::Ladder, code, Some(json::LadderResult { rungs }))
        }
        Command::Run {
            scenario,
            rung,
            rung_file,
            seed,
            out,
            real: true,
            repeat,
            server_bin,
            ..
        } => real_cmd::run(
            &scenario,
            rung.as_deref(),
            rung_file.as_deref(),
            seed,
            &out,
            repeat,
            server_bin.as_deref(),
        ),
        Command::Run {
            scenario,
            rung,
            rung_file,
            seed,
            out,
            ..
        } => {
            let mut result = json::RunResult::default();
            let code = commands::run(
                &scenario,
                rung.as_deref(),
                rung_file.as_deref(),
                seed,
                &out,
                &mut result,
            );
            let ran = !result.scenario.is_empty();
            json::finish(Name::Run, code, ran.then_some(result))
        }
        Command::Replay { dir, .. } => {
            let (code, result) = commands::replay(&dir);
            json::finish(Name::Replay, code, result)
        }
        Command::Suite {
            scenarios,
            out,
            rung_file,
            real: true,
            repeat,
            server_bin,
            ..
        } => real_cmd::suite(
            scenarios.as_deref(),
            &out,
            repeat,
            &rung_file,
            server_bin.as_deref(),
        ),
        Command::Suite {
            scenarios,
            out,
            jobs,
            all,
            junit,
            rung_file,
            ..
        } => {
            let mut result = None;
            let code = commands::suite(
                scenarios.as_deref(),
                &out,
                jobs.map(|n| n.get()),
                all,
                junit.as_deref(),
                &mut result,
                &rung_file,
            );
            json::finish(Name::Suite, code, result)
        }
        Command::SimServer {
            port,
            bind,
            busy_reply_threshold_ms,
            ..
        } => {
            let code = commands::sim_server(bind, port, busy_reply_threshold_ms);
            json::finish(Name::SimServer, code, None::<json::SimServerResult>)
        }
        Command::Tour {
            scenarios, rung, ..
        } => {
            let mut result = None;
            let code = commands::tour(scenarios.as_deref(), rung.as_deref(), &mut result);
            json::finish(Name::Tour, code, result)
        }
        Command::Scenarios { export, .. } => {
            let mut result = json::ScenariosResult::default();
            let code = commands::scenarios(export.as_deref(), &mut result);
            let listed = code == ExitCode::Success;
            json::finish(Name::Scenarios, code, listed.then_some(result))
        }
        Command::Bench {
            quick,
            redis,
            out,
            no_pin,
            ..
        } => {
            let mut report = None;
            let options = bench::BenchOptions {
                quick,
                redis,
                out: out.clone(),
                pin: !no_pin,
                progress: progress::BenchBar::sink(),
                // Each batch of pairs in a fresh locklab process.
                batch_exe: std::env::current_exe().ok(),
                ..Default::default()
            };
            let code = match bench::run_keeping(options, &mut report) {
                Ok(_) if commands::bench_page(&out) => ExitCode::Success,
                Ok(_) => ExitCode::BadInput,
                Err(bench::BenchError::Interrupted) => {
                    eprintln!("bench: interrupted; servers stopped");
                    ExitCode::Interrupted
                }
                Err(e) => {
                    eprintln!("bench: error: {e}");
                    json::record_error(e.to_string());
                    ExitCode::BadInput
                }
            };
            json::finish(Name::Bench, code, report)
        }
        Command::Explore(args) => {
            let mut result = None;
            let code = commands::explore(args, &mut result);
            json::finish(Name::Explore, code, result)
        }
    };
    code.into()
}
