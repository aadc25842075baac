//! A history that cannot be read or is not well formed: where, and what
//! was expected there.

use std::fmt;

/// Why a history was refused: the file, the line (from 1; 0 when the
/// whole file is at fault, as with one too large to read), what was
/// expected there and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct BadHistory {
    /// The file, as the user named it.
    pub file: String,
    /// The line, from 1; 0 for the file as a whole.
    pub line: usize,
    /// What was expected there.
    pub expected: String,
    /// What was found instead.
    pub found: String,
}

impl BadHistory {
    /// A refusal at `line` of `file`.
    pub fn at(
        file: impl Into<String>,
        line: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> BadHistory {
        BadHistory {
            file: file.into(),
            line,
            expected: expected.into(),
            found: found.into(),
        }
    }
}

impl fmt::Display for BadHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(
                f,
                "{}: expected {}, found {}",
                self.file, self.expected, self.found
            )
        } else {
            write!(
                f,
                "{} line {}: expected {}, found {}",
                self.file, self.line, self.expected, self.found
            )
        }
    }
}
