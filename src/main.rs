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
    };
    ExitCode::from(code)
}
