//! Why a run ended before its scenario did: something no lock is meant to
//! face, after which the simulator stops being faithful. The history up
//! to the cut is kept and judged; the verdict is `unknown`.

use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Something that ended a run before its scenario did, which no lock is
/// meant to face: the history up to it is kept and judged, but the
/// verdict is `unknown` (`docs/ladder.md`, verdict rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CutShort {
    /// A node aborted a Lua script that ran past its instruction limit. In
    /// a simulation time stands still while a script runs, so an endless
    /// script would hang the run; Redis would instead stay busy (and answer
    /// `BUSY`) until someone killed it, which the simulator does not model.
    /// The run stops at the step in which the node aborted it.
    ScriptAborted {
        /// The node that aborted it (`redis-N` or `store`).
        #[schemars(with = "String")]
        node: Host,
        /// The node's limit, in Lua VM instructions.
        instruction_limit: u64,
        /// When the run stopped, µs of true simulated time since it began.
        at_us: u64,
    },
}

impl fmt::Display for CutShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CutShort::ScriptAborted {
                node,
                instruction_limit,
                ..
            } => write!(
                f,
                "{node} aborted a Lua script that ran past {instruction_limit} instructions: \
                 the run is cut short by something no lock is meant to face"
            ),
        }
    }
}
