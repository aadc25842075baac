//! Why a run did not complete. The command line turns each kind into its
//! exit code; the benchmark itself never decides one.

use crate::write::{Saved, WriteError};
use std::fmt;

/// Why a run did not produce a report.
#[derive(Debug)]
pub enum BenchError {
    /// A `--redis` URL is not one the benchmark can use.
    BadUrl(anyhow::Error),
    /// Our own `redis-server` processes could not be started.
    Servers(harness::Error),
    /// Connecting, measuring or the client runtime failed.
    Measure(anyhow::Error),
    /// The report folder cannot be written: found before any server was
    /// started or anything measured.
    OutUnwritable(WriteError),
    /// The report could not be written after measuring; `bench.json` was
    /// kept where `saved` says instead.
    Write {
        /// The path that failed.
        failed: WriteError,
        /// Where `bench.json` went instead.
        saved: Saved,
    },
    /// Ctrl-C or `SIGTERM` stopped the run; servers were stopped, keys
    /// deleted, and what was measured written as a partial report.
    Interrupted,
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::BadUrl(e) | BenchError::Measure(e) => write!(f, "{e:#}"),
            BenchError::Servers(e) => write!(f, "{e}"),
            BenchError::OutUnwritable(e) => write!(
                f,
                "the report folder cannot be written (nothing was measured): {e}"
            ),
            BenchError::Write { failed, saved } => {
                write!(f, "writing the report: {failed}; ")?;
                match saved {
                    Saved::File(p) => write!(f, "bench.json kept in {}", p.display()),
                    Saved::Stdout => write!(f, "bench.json printed to standard output"),
                }
            }
            BenchError::Interrupted => write!(
                f,
                "interrupted; servers stopped; what was measured is in bench-partial.md"
            ),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Servers(e) => Some(e),
            BenchError::OutUnwritable(e) | BenchError::Write { failed: e, .. } => Some(&e.error),
            BenchError::BadUrl(_) | BenchError::Measure(_) | BenchError::Interrupted => None,
        }
    }
}

impl From<harness::Error> for BenchError {
    fn from(e: harness::Error) -> Self {
        BenchError::Servers(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_failed_write_names_the_path_that_failed_and_where_the_json_went() {
        let failed = || WriteError {
            path: PathBuf::from("/full/disk/bench.json"),
            error: std::io::Error::other("no space left on device"),
        };
        let kept = BenchError::Write {
            failed: failed(),
            saved: Saved::File(PathBuf::from("/tmp/locklab-bench-1-2.json")),
        }
        .to_string();
        assert!(kept.contains("/full/disk/bench.json"), "{kept}");
        assert!(kept.contains("/tmp/locklab-bench-1-2.json"), "{kept}");
        let printed = BenchError::Write {
            failed: failed(),
            saved: Saved::Stdout,
        }
        .to_string();
        assert!(printed.contains("/full/disk/bench.json"), "{printed}");
        assert!(printed.contains("standard output"), "{printed}");
    }
}
