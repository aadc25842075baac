//! `locklab ladder`: every rung, what it fixes and its flaw.

use super::Outcome;
use crate::json::LadderResult;
use sim::exit::ExitCode;

/// The arguments of `locklab ladder`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

/// `locklab ladder`: the table (with `--json`, on standard error), and
/// every rung for the document.
pub fn execute(_args: Args) -> Outcome<LadderResult> {
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
    // The locks on etcd: another service, so another group.
    outln!("\netcd:");
    for rung in locks::etcd::rungs::RUNGS {
        outln!(" -  {:<14} {:<62} {}", rung.id, rung.fixes, rung.flaw);
    }
    // The locks on ZooKeeper: a third service.
    outln!("\nzookeeper:");
    for rung in locks::zookeeper::rungs::RUNGS {
        outln!(" -  {:<14} {:<62} {}", rung.id, rung.fixes, rung.flaw);
    }
    // The locks on a database: the fourth service.
    outln!("\ndatabases:");
    for rung in locks::database::rungs::RUNGS {
        outln!(" -  {:<14} {:<62} {}", rung.id, rung.fixes, rung.flaw);
    }
    let rungs = locks::LADDER.iter().map(|rung| **rung).collect();
    Outcome::new(ExitCode::Success, Some(LadderResult { rungs }))
}
