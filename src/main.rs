//! The `locklab` command line: argument parsing and dispatch only.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ladder { json } => ladder(json),
    }
}

fn ladder(json: bool) -> ExitCode {
    if json {
        match serde_json::to_string(&locks::LADDER) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(3);
            }
        }
    } else {
        println!("{:>2}  {:<14} {:<60} flaw", "#", "id", "fixes");
        for rung in locks::LADDER {
            println!("{:>2}  {:<14} {:<60} {}", rung.number, rung.id, rung.fixes, rung.flaw);
        }
    }
    ExitCode::SUCCESS
}
