//! The `locklab` command line: argument parsing and dispatch only; what
//! each command does is in [`commands`], one file per command.
//!
//! Exit codes, one per kind of outcome, are [`sim::exit::ExitCode`]: 0 safe
//! (or success), 1 a safety violation was found, 2 unknown, 3 bad input or
//! harness error, 4 deadlock, 130 interrupted (SIGINT or SIGTERM; partial
//! results kept, see [`signals`]).

use clap::{Parser, Subcommand};
use commands::{
    bench as bench_cmd, check, explore, ladder, replay, run, scenarios, sim_server, suite, tour,
};
use json::CommandName as Name;
use sim::exit::ExitCode;

#[macro_use]
mod say;
mod builtin;
mod commands;
mod exporting;
mod json;
mod present;
mod progress;
mod rung_files;
mod signals;

/// Deterministic simulation and benchmark testbed for distributed locks on
/// Redis, etcd and ZooKeeper.
#[derive(Debug, Parser)]
#[command(name = "locklab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lists the lock ladder: every rung, what it fixes and its flaw.
    Ladder(ladder::Args),
    /// Runs a scenario file on the simulator and judges every rung it names.
    Run(run::Args),
    /// Re-runs a recorded run from its folder and compares the histories.
    Replay(replay::Args),
    /// Runs every scenario against every rung it names: the safety matrix
    /// (with --all, against every rung).
    Suite(suite::Args),
    /// Serves one simulated Redis node (or etcd member, or ZooKeeper
    /// server) on a real TCP port (real time), so redis-cli (etcdctl,
    /// zkCli.sh) or any client can check its fidelity by hand.
    ///
    /// A long script behaves as in Redis 7.0: other clients wait, and once
    /// it has run past the busy threshold they get `BUSY`; `SCRIPT KILL`
    /// stops it unless it wrote, `SHUTDOWN NOSAVE` stops the server. The
    /// server stops on Ctrl-C, SIGTERM or `SHUTDOWN`, even mid-script.
    SimServer(sim_server::Args),
    /// The ladder told rung by rung from live simulator runs (no Redis needed).
    Tour(tour::Args),
    /// Lists the built-in scenarios (embedded in the binary), or writes
    /// them out to edit.
    Scenarios(scenarios::Args),
    /// Benchmarks every rung against real redis-server, beside the floor
    /// and rslock, and the etcd, ZooKeeper, PostgreSQL and MariaDB rungs
    /// on real servers beside Redis;
    /// writes bench.md, bench.json and SVG plots.
    Bench(bench_cmd::Args),
    /// Swarm search for fault schedules that break a rung; shrinks the
    /// first counterexample and writes it as a scenario file.
    Explore(explore::Args),
    /// Judges lock histories recorded anywhere (Jepsen's EDN or JSON, a
    /// service's own log, Porcupine's, a locklab run's) against a model,
    /// with the checkers of a simulated run.
    Check(check::Args),
}

impl Command {
    /// Whether `--json` was given.
    fn json(&self) -> bool {
        match self {
            Command::Ladder(a) => a.json,
            Command::Run(a) => a.json,
            Command::Replay(a) => a.json,
            Command::Suite(a) => a.json,
            Command::SimServer(a) => a.json,
            Command::Tour(a) => a.json,
            Command::Scenarios(a) => a.json,
            Command::Bench(a) => a.json,
            Command::Explore(a) => a.json,
            Command::Check(a) => a.json,
        }
    }

    /// Whether it is one of the long simulator commands, which stop
    /// cleanly on SIGINT/SIGTERM (bench and sim-server handle Ctrl-C
    /// themselves, and the rest are short).
    fn long(&self) -> bool {
        match self {
            Command::Run(_) | Command::Suite(_) | Command::Tour(_) => true,
            Command::Explore(args) => !args.bench,
            _ => false,
        }
    }

    /// Runs the command; with `--json`, its one document is printed.
    fn execute(self) -> ExitCode {
        match self {
            Command::Ladder(a) => ladder::execute(a).finish(Name::Ladder),
            Command::Run(a) => run::execute(a).finish(Name::Run),
            Command::Replay(a) => replay::execute(a).finish(Name::Replay),
            Command::Suite(a) => suite::execute(a).finish(Name::Suite),
            Command::SimServer(a) => sim_server::execute(a).finish(Name::SimServer),
            Command::Tour(a) => tour::execute(a).finish(Name::Tour),
            Command::Scenarios(a) => scenarios::execute(a).finish(Name::Scenarios),
            Command::Bench(a) => bench_cmd::execute(a).finish(Name::Bench),
            Command::Explore(a) => explore::execute(a).finish(Name::Explore),
            Command::Check(a) => check::execute(a).finish(Name::Check),
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
    if cli.command.long()
        && let Err(e) = signals::install()
    {
        eprintln!(
            "warning: cannot handle SIGINT/SIGTERM ({e}); a signal will end the process without keeping partial results"
        );
    }
    if cli.command.json() {
        json::enable();
    }
    cli.command.execute().into()
}
