//! Writes a report into its folder: `bench.json`, `bench.md` and the plots.
//!
//! Every file is written whole or not at all ([`harness::atomic`]), so a
//! full disk or a kill in the middle leaves the previous report, never
//! half of a new one.

use crate::plot::{self, LatencySeries, PlotResult};
use crate::report::Report;
use harness::atomic::{replace_with, write_whole};
use std::path::{Path, PathBuf};

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

/// A file or folder of the report that could not be written, and why.
#[derive(Debug)]
pub struct WriteError {
    /// The path that failed.
    pub path: PathBuf,
    /// What the system said.
    pub error: std::io::Error,
}

impl WriteError {
    fn at(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
        move |error| WriteError {
            path: path.to_path_buf(),
            error,
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

/// Where `bench.json` went when the report folder could not take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// A file in the system's temporary folder.
    File(PathBuf),
    /// Standard output (the temporary folder failed too).
    Stdout,
}

/// Creates `out` and writes and removes a probe file there, so that a
/// folder the report cannot go to is found before minutes of measuring,
/// not after.
pub fn check_writable(out: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(out).map_err(WriteError::at(out))?;
    let probe = out.join(format!(".locklab-bench-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe\n").map_err(WriteError::at(&probe))?;
    std::fs::remove_file(&probe).map_err(WriteError::at(&probe))
}

/// `bench.json`'s text: the report as one line of JSON.
pub fn json(report: &Report) -> String {
    // Every map key of the report is a string: this cannot fail, and if
    // it ever did the figures would still be in bench.md.
    serde_json::to_string(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Writes `bench.json` (the given `json`), `bench.md` and every plot into
/// `out`. A plot that fails is reported on standard error and skipped: the
/// figures are in the JSON and the Markdown all the same.
pub fn report_files(
    out: &Path,
    report: &Report,
    json: &str,
    latency_cdf: &[LatencySeries],
) -> Result<(), WriteError> {
    std::fs::create_dir_all(out).map_err(WriteError::at(out))?;
    let json_path = out.join("bench.json");
    write_whole(&json_path, format!("{json}\n").as_bytes()).map_err(WriteError::at(&json_path))?;
    let md_path = out.join("bench.md");
    write_whole(&md_path, report.markdown().as_bytes()).map_err(WriteError::at(&md_path))?;
    for p in &PLOTS {
        let drawn = replace_with(&out.join(p.file), |tmp| {
            draw(p.shows, tmp, report, latency_cdf)
                .map_err(|e| std::io::Error::other(e.to_string()))
        });
        if let Err(e) = drawn {
            eprintln!("bench: plot {}: {e}", p.file);
        }
    }
    // A complete report supersedes the partial one of an earlier run.
    for stale in PARTIAL_FILES {
        let _ = std::fs::remove_file(out.join(stale));
    }
    eprintln!(
        "bench: wrote {}/bench.md, bench.json and {} plots",
        out.display(),
        PLOTS.len()
    );
    Ok(())
}

/// The files of a partial report, which never replace a complete one.
pub const PARTIAL_FILES: [&str; 2] = ["bench-partial.json", "bench-partial.md"];

/// Writes a partial report (a run stopped before its end) as
/// `bench-partial.json` and `bench-partial.md` in `out`, leaving any
/// complete report there alone; returns the Markdown file's path.
pub fn partial_files(out: &Path, report: &Report, json: &str) -> Result<PathBuf, WriteError> {
    std::fs::create_dir_all(out).map_err(WriteError::at(out))?;
    let json_path = out.join(PARTIAL_FILES[0]);
    write_whole(&json_path, format!("{json}\n").as_bytes()).map_err(WriteError::at(&json_path))?;
    let md_path = out.join(PARTIAL_FILES[1]);
    write_whole(&md_path, report.markdown().as_bytes()).map_err(WriteError::at(&md_path))?;
    Ok(md_path)
}

/// Keeps `json` when the report folder failed after measuring (a full
/// disk): in a new file of the system's temporary folder, or else on
/// standard output, so that the measurement is never lost.
pub fn keep(json: &str) -> Saved {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let file = std::env::temp_dir().join(format!(
        "locklab-bench-{}-{nanos:x}.json",
        std::process::id()
    ));
    match write_whole(&file, format!("{json}\n").as_bytes()) {
        Ok(()) => Saved::File(file),
        Err(_) => {
            println!("{json}");
            Saved::Stdout
        }
    }
}

fn draw(shows: Shows, path: &Path, report: &Report, latency_cdf: &[LatencySeries]) -> PlotResult {
    match shows {
        Shows::LatencyCdf => plot::latency_cdf(path, latency_cdf),
        Shows::Throughput => plot::throughput(path, report),
        Shows::WaitP999 => plot::wait_p999(path, report),
        Shows::RedlockScaling => plot::redlock_scaling(path, report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path under a regular file: no folder can be made there, for any
    /// user (root included, unlike a read-only folder).
    fn under_a_file(name: &str) -> (PathBuf, PathBuf) {
        let file =
            std::env::temp_dir().join(format!("locklab-bench-write-{}-{name}", std::process::id()));
        std::fs::write(&file, b"not a folder").unwrap();
        let out = file.join("reports");
        (file, out)
    }

    #[test]
    fn an_unwritable_folder_is_named_by_the_check() {
        let (file, out) = under_a_file("check");
        let e = check_writable(&out).expect_err("no folder under a file");
        assert_eq!(e.path, out);
        assert!(e.to_string().contains(out.to_str().unwrap()), "{e}");
        let _ = std::fs::remove_file(file);
    }

    #[test]
    fn a_writable_folder_passes_the_check_and_keeps_no_probe() {
        let out = std::env::temp_dir().join(format!(
            "locklab-bench-write-{}-ok/reports",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
        check_writable(&out).expect("a fresh temporary folder is writable");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
    }

    #[test]
    fn kept_json_is_a_file_holding_exactly_that_json() {
        let json = r#"{"figures":[1,2,3]}"#;
        let Saved::File(file) = keep(json) else {
            panic!("the temporary folder is writable in tests")
        };
        assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{json}\n"));
        let _ = std::fs::remove_file(file);
    }
}
