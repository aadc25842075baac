//! What asked a long command to stop: the signal's cause, which reports
//! (partial matrices, JUnit, search pages, `--json`) name. The flag a
//! signal handler sets is the engine's (`sim::interrupt`).

/// What asked a command to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
pub enum Cause {
    /// SIGINT: Ctrl-C at a terminal.
    #[serde(rename = "SIGINT")]
    Sigint,
    /// SIGTERM: `kill`, a job scheduler or a container runtime stopping it.
    #[serde(rename = "SIGTERM")]
    Sigterm,
}

impl Cause {
    /// The value stored in the cause flag (never 0, which means none).
    pub const fn code(self) -> usize {
        match self {
            Cause::Sigint => 1,
            Cause::Sigterm => 2,
        }
    }

    /// The signal's usual name, for messages and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::Sigint => "SIGINT",
            Cause::Sigterm => "SIGTERM",
        }
    }

    /// The cause stored as `code` ([`Cause::code`]); `None` for 0 or an
    /// unknown code.
    pub fn from_code(code: usize) -> Option<Cause> {
        [Cause::Sigint, Cause::Sigterm]
            .into_iter()
            .find(|c| c.code() == code)
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_round_trip_through_their_codes_and_none_is_zero() {
        for cause in [Cause::Sigint, Cause::Sigterm] {
            assert_ne!(cause.code(), 0);
            assert_eq!(Cause::from_code(cause.code()), Some(cause));
        }
        assert_eq!(Cause::from_code(0), None);
        assert_eq!(Cause::Sigterm.to_string(), "SIGTERM");
    }
}
