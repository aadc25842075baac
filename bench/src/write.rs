//! Writes a report into its folder: `bench.json`, `bench.md` and the plots.

use crate::plot::{self, LatencySeries, PlotResult};
use crate::report::Report;
use std::path::Path;

/// What a plot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shows {
    /// Uncontended latency CDF per implementation.
    LatencyCdf,
    /// Contention: acquisitions per second against workers.
    Throughput,
    /// Contention: p99.9 wait against workers.
    WaitP999,
    /// Uncontended cycles per second against nodes.
    RedlockScaling,
}

/// One plot file of the report.
#[derive(Debug, Clone, Copy)]
pub struct Plot {
    /// Its file name in the report folder.
    pub file: &'static str,
    /// What it shows, in words (its alt text in `bench.md`).
    pub what: &'static str,
    /// What it shows.
    pub shows: Shows,
}

/// Every plot, in report order.
pub const PLOTS: [Plot; 4] = [
    Plot {
        file: "bench-latency-cdf.svg",
        what: "latency CDF per rung",
        shows: Shows::LatencyCdf,
    },
    Plot {
        file: "bench-throughput.svg",
        what: "acquisitions/s vs workers",
        shows: Shows::Throughput,
    },
    Plot {
        file: "bench-wait-p999.svg",
        what: "p99.9 wait vs workers",
        shows: Shows::WaitP999,
    },
    Plot {
        file: "bench-redlock-scaling.svg",
        what: "Redlock scaling with N",
        shows: Shows::RedlockScaling,
    },
];

/// Writes `bench.json`, `bench.md` and every plot into `out`; returns the
/// JSON written. A plot that fails is reported on standard error and
/// skipped: the figures are in the JSON and the Markdown all the same.
pub fn report_files(
    out: &Path,
    report: &Report,
    latency_cdf: &[LatencySeries],
) -> std::io::Result<String> {
    std::fs::create_dir_all(out)?;
    let json = serde_json::to_string(report)?;
    std::fs::write(out.join("bench.json"), format!("{json}\n"))?;
    std::fs::write(out.join("bench.md"), report.markdown())?;
    for p in &PLOTS {
        if let Err(e) = draw(p.shows, &out.join(p.file), report, latency_cdf) {
            eprintln!("bench: plot {}: {e}", p.file);
        }
    }
    eprintln!(
        "bench: wrote {}/bench.md, bench.json and {} plots",
        out.display(),
        PLOTS.len()
    );
    Ok(json)
}

fn draw(shows: Shows, path: &Path, report: &Report, latency_cdf: &[LatencySeries]) -> PlotResult {
    match shows {
        Shows::LatencyCdf => plot::latency_cdf(path, latency_cdf),
        Shows::Throughput => plot::throughput(path, report),
        Shows::WaitP999 => plot::wait_p999(path, report),
        Shows::RedlockScaling => plot::redlock_scaling(path, report),
    }
}
