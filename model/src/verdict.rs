//! A cell's verdict: what the checkers concluded about one rung in one
//! scenario. The rules that combine the checkers' results are the
//! judge's; the scenario file's `[expect]` names verdicts, so the word
//! itself lives here.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The verdict of a cell.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every checker found the run correct.
    Safe,
    /// A safety checker found a violation.
    Violated,
    /// Liveness failed: the lock could not be taken again.
    Deadlock,
    /// Some checker could not decide.
    Unknown,
}

impl Verdict {
    /// Every verdict, in the order above.
    pub const ALL: [Verdict; 4] = [
        Verdict::Safe,
        Verdict::Violated,
        Verdict::Deadlock,
        Verdict::Unknown,
    ];

    /// `safe`, `violated`, `deadlock` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Violated => "violated",
            Verdict::Deadlock => "deadlock",
            Verdict::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Verdict {
    type Err = String;

    fn from_str(s: &str) -> Result<Verdict, String> {
        Verdict::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                format!("unknown verdict {s:?}; expected safe, violated, deadlock or unknown")
            })
    }
}
