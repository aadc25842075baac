//! What each `locklab` subcommand does, in terms of the library crates.

use sim::cell::run_cell;
use sim::output;
use sim::scenario::Scenario;
use sim::verdict::Verdict;
use std::path::Path;

/// Exit code for bad input or a harness error.
pub const EXIT_BAD_INPUT: u8 = 3;

/// `locklab ladder [--json]`.
pub fn ladder(json: bool) -> u8 {
    if json {
        match serde_json::to_string(&locks::LADDER) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    } else {
        println!("{:>2}  {:<14} {:<62} flaw", "#", "id", "fixes");
        for rung in locks::LADDER {
            println!(
                "{:>2}  {:<14} {:<62} {}",
                rung.number, rung.id, rung.fixes, rung.flaw
            );
        }
    }
    0
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

/// `locklab run SCENARIO [--variant ID] [--seed N]`.
pub fn run(path: &Path, variant: Option<&str>, seed: Option<u64>, out: &Path) -> u8 {
    let scenario = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let variants: Vec<String> = match variant {
        Some(v) if scenario.variants.iter().any(|x| x == v) => vec![v.to_string()],
        Some(v) => {
            eprintln!(
                "error: {}: rung {v:?} is not in this scenario; it names {}",
                path.display(),
                scenario.variants.join(", ")
            );
            return EXIT_BAD_INPUT;
        }
        None => scenario.variants.clone(),
    };
    if let Some(s) = seed
        && s >= 1 << 53
    {
        eprintln!("error: --seed {s}: seeds must be below 2^53");
        return EXIT_BAD_INPUT;
    }
    let seeds = seed.map(|s| vec![s]).unwrap_or_else(|| scenario.seeds.clone());
    let mut verdicts = Vec::new();
    for variant in &variants {
        for &seed in &seeds {
            let judged = match run_cell(&scenario, variant, seed) {
                Ok(j) => j,
                Err(e) => {
                    eprintln!("error: {}: {variant}: {e}", path.display());
                    return EXIT_BAD_INPUT;
                }
            };
            print!("{}", output::describe(&judged));
            let dir = output::run_dir(out, &judged);
            if let Err(e) = output::write_run(&dir, &judged, &text) {
                eprintln!("error: cannot write {}: {e}", dir.display());
                return EXIT_BAD_INPUT;
            }
            println!("  written to {}\n", dir.display());
            verdicts.push(judged.verdict);
        }
    }
    worst(&verdicts).exit_code() as u8
}
