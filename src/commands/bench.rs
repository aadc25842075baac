//! `locklab bench`: every rung against real redis-server, beside the floor
//! and rslock, and the etcd, ZooKeeper, PostgreSQL and MariaDB rungs on
//! real servers beside Redis (the `bench` crate), and its HTML page.

use super::Outcome;
use sim::exit::ExitCode;
use std::path::{Path, PathBuf};

/// The arguments of `locklab bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Short slices and few rounds (under two minutes).
    #[arg(long)]
    pub quick: bool,
    /// Use these servers (redis://host:port) instead of starting five;
    /// only keys under a unique prefix are touched, and deleted after.
    #[arg(long = "redis", value_name = "URL")]
    pub redis: Vec<String>,
    /// Where the report goes.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Print one JSON document on standard output, its result what
    /// bench.json holds (docs/json.md); the human text goes to
    /// standard error.
    #[arg(long)]
    pub json: bool,
    /// Do not pin the client and servers to CPUs.
    #[arg(long)]
    pub no_pin: bool,
}

/// `locklab bench`: the report, written; the document's result is what
/// `bench.json` holds.
pub fn execute(args: Args) -> Outcome<bench::report::Report> {
    let mut report = None;
    let options = bench::BenchOptions {
        quick: args.quick,
        redis: args.redis,
        out: args.out.clone(),
        pin: !args.no_pin,
        progress: crate::progress::BenchBar::sink(),
        // Each batch of pairs in a fresh locklab process.
        batch_exe: std::env::current_exe().ok(),
        ..Default::default()
    };
    let code = match bench::run_keeping(options, &mut report) {
        Ok(_) if write_page(&args.out) => ExitCode::Success,
        Ok(_) => ExitCode::BadInput,
        Err(bench::BenchError::Interrupted) => {
            eprintln!("bench: interrupted; servers stopped");
            ExitCode::Interrupted
        }
        Err(e) => {
            eprintln!("bench: error: {e}");
            crate::json::record_error(e.to_string());
            ExitCode::BadInput
        }
    };
    Outcome::new(code, report)
}

/// Writes `bench.html` beside `bench.json` in `out` after a bench run,
/// saying where on standard error; `false` (the error printed) when it
/// cannot.
fn write_page(out: &Path) -> bool {
    let plots: Vec<(&str, &str)> = bench::write::PLOTS
        .iter()
        .map(|p| (p.file, p.what))
        .collect();
    match bench::page::write_page(out, "bench", &plots) {
        Ok(page) => {
            eprintln!("bench: report {}", page.display());
            true
        }
        Err(e) => {
            eprintln!("bench: error: cannot write the HTML report: {e}");
            crate::json::record_error(format!("cannot write the HTML report: {e}"));
            false
        }
    }
}
