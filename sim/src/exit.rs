//! The one set of exit codes every `locklab` command uses.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | safe, same, nothing found, success |
//! | 1 | a safety violation (or, for `replay`, a history that differs) |
//! | 2 | unknown: a checker could not decide |
//! | 3 | bad input, or a harness error (a server that would not start) |
//! | 4 | deadlock: the lock could not be taken again |
//! | 130 | interrupted by Ctrl-C (SIGINT) or SIGTERM, after stopping what it started and keeping what was finished |
//! | 141 | standard output was closed (a pipe reader went away) |

use model::verdict::Verdict;

/// How a `locklab` command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitCode {
    /// Safe, the same, nothing found, or plain success.
    Success,
    /// A safety violation was found, or a replay differs.
    Violated,
    /// Some checker could not decide.
    Unknown,
    /// Bad input or a harness error.
    BadInput,
    /// Liveness failed.
    Deadlock,
    /// Interrupted by Ctrl-C (SIGINT) or SIGTERM, after stopping every
    /// process it started and keeping what was finished.
    Interrupted,
    /// Standard output was closed under us.
    BrokenPipe,
}

impl ExitCode {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Violated => 1,
            ExitCode::Unknown => 2,
            ExitCode::BadInput => 3,
            ExitCode::Deadlock => 4,
            ExitCode::Interrupted => 130,
            ExitCode::BrokenPipe => 141,
        }
    }

    /// The exit of a cell's verdict.
    pub fn of_verdict(verdict: Verdict) -> ExitCode {
        match verdict {
            Verdict::Safe => ExitCode::Success,
            Verdict::Violated => ExitCode::Violated,
            Verdict::Unknown => ExitCode::Unknown,
            Verdict::Deadlock => ExitCode::Deadlock,
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(exit: ExitCode) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}
