//! `cargo run --release --example own_lock`: a lock written outside the
//! `locks` crate (`lock.rs`), registered as a rung and tested by locklab's
//! suite and search through the public API.

mod lock;

use std::path::Path;

fn main() -> std::process::ExitCode {
    let scenarios_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let scenarios = match sim::suite::load_all(&scenarios_dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(3);
        }
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let suite = match lock::suite(&scenarios, workers) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(3);
        }
    };
    let grid = sim::suite::Grid::Named;
    println!("{}", report::suite::markdown(grid, &suite.cells));
    let outcome = lock::explore(64, workers);
    let st = &outcome.stats;
    println!(
        "explore {}: {} cases, {} violations, {} deadlocks",
        lock::RUNG.id,
        st.cases,
        st.violations,
        st.deadlocks
    );
    if let Some(found) = &outcome.first {
        println!(
            "first counterexample: seed {} ({}), shrunk to {} faults: {}",
            found.seed,
            found.judged.verdict,
            found.shrunk.faults.len(),
            found.shrunk.fault_names().join(", ")
        );
    }
    std::process::ExitCode::SUCCESS
}
