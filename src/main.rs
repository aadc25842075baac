//! The `locklab` command line: argument parsing and dispatch only.
//!
//! Exit codes, one per kind of outcome: 0 safe (or success), 1 a safety
//! violation was found, 2 unknown, 3 bad input or harness error, 4 deadlock.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod commands;

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
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Runs a scenario file on the simulator and judges every rung it names.
    Run {
        /// The scenario file (TOML).
        scenario: PathBuf,
        /// Only this rung (default: every rung the file names).
        #[arg(long)]
        variant: Option<String>,
        /// Only this seed (default: the file's seeds).
        #[arg(long)]
        seed: Option<u64>,
        /// Where run folders go (`<out>/runs/...`).
        #[arg(long, default_value = "reports")]
        out: PathBuf,
    },
    /// Re-runs a recorded run from its folder and compares the histories.
    Replay {
        /// A run folder written by `locklab run`.
        dir: PathBuf,
    },
    /// Runs every scenario against every rung it names: the safety matrix.
    Suite {
        /// Where the scenario files are.
        #[arg(long, default_value = "scenarios")]
        scenarios: PathBuf,
        /// Where `safety-matrix.{md,svg,json}` go.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Simulations run at once (default: the number of CPUs).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// The ladder told rung by rung from live simulator runs (no Redis needed).
    Tour {
        /// Where the scenario files are.
        #[arg(long, default_value = "scenarios")]
        scenarios: PathBuf,
        /// Only this rung's stop.
        #[arg(long)]
        variant: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Ladder { json } => commands::ladder(json),
        Command::Run {
            scenario,
            variant,
            seed,
            out,
        } => commands::run(&scenario, variant.as_deref(), seed, &out),
        Command::Replay { dir } => commands::replay(&dir),
        Command::Suite {
            scenarios,
            out,
            jobs,
        } => commands::suite(&scenarios, &out, jobs),
        Command::Tour { scenarios, variant } => commands::tour(&scenarios, variant.as_deref()),
    };
    ExitCode::from(code)
}
