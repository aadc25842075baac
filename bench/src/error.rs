//! Why a run did not complete. The command line turns each kind into its
//! exit code; the benchmark itself never decides one.

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
    /// The report could not be written.
    Write(std::io::Error),
    /// Ctrl-C stopped the run; servers were stopped and keys deleted.
    Interrupted,
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::BadUrl(e) | BenchError::Measure(e) => write!(f, "{e:#}"),
            BenchError::Servers(e) => write!(f, "{e}"),
            BenchError::Write(e) => write!(f, "writing the report: {e}"),
            BenchError::Interrupted => write!(f, "interrupted; servers stopped"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Servers(e) => Some(e),
            BenchError::Write(e) => Some(e),
            BenchError::BadUrl(_) | BenchError::Measure(_) | BenchError::Interrupted => None,
        }
    }
}

impl From<harness::Error> for BenchError {
    fn from(e: harness::Error) -> Self {
        BenchError::Servers(e)
    }
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Write(e)
    }
}
