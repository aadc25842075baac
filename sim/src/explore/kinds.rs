//! The fault kinds a swarm search draws from, and `--faults` parsing.

use std::fmt;

/// One kind of fault, as `--faults` names it. `restart` is a crash that
/// comes back (`crash` with `restart_after_ms`); `crash` alone never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// Stop-the-world pause of a client.
    Pause,
    /// Crash of a client or node, for good.
    Crash,
    /// Crash of a client or node that restarts after a while.
    Restart,
    /// Network partition (messages lost while it lasts).
    Partition,
    /// Messages held, then delivered at once.
    Delay,
    /// A link gets slower for a while.
    SlowLink,
    /// A wall clock jumps.
    ClockJump,
    /// A clock drifts.
    ClockDrift,
    /// The master dies and its replica is promoted.
    Failover,
}

impl FaultKind {
    /// Every kind, in a fixed order (the order the generator draws them).
    pub const ALL: [FaultKind; 9] = [
        FaultKind::Pause,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::Partition,
        FaultKind::Delay,
        FaultKind::SlowLink,
        FaultKind::ClockJump,
        FaultKind::ClockDrift,
        FaultKind::Failover,
    ];

    /// The name `--faults` takes.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
            FaultKind::Partition => "partition",
            FaultKind::Delay => "delay",
            FaultKind::SlowLink => "slow-link",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::ClockDrift => "clock-drift",
            FaultKind::Failover => "failover",
        }
    }

    /// Looks a kind up by name.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the generator may draw: `--faults all`, `--faults assumed`, or a
/// comma-separated list of kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultMode {
    /// Every kind, unrestricted.
    All,
    /// Only schedules within the rung's stated assumptions.
    Assumed,
    /// Only these kinds, unrestricted.
    Only(Vec<FaultKind>),
}

impl FaultMode {
    /// Parses `all`, `assumed` or `pause,crash,...` (an empty list means
    /// no faults: `none`).
    pub fn parse(text: &str) -> Result<FaultMode, String> {
        match text.trim() {
            "all" => Ok(FaultMode::All),
            "assumed" => Ok(FaultMode::Assumed),
            "none" | "" => Ok(FaultMode::Only(Vec::new())),
            list => {
                let mut kinds = Vec::new();
                for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let kind = FaultKind::from_name(name).ok_or_else(|| {
                        format!(
                            "unknown fault kind {name:?}; expected all, assumed, none or a \
                             comma-separated list of {}",
                            FaultKind::ALL.map(FaultKind::name).join(", ")
                        )
                    })?;
                    if !kinds.contains(&kind) {
                        kinds.push(kind);
                    }
                }
                kinds.sort();
                Ok(FaultMode::Only(kinds))
            }
        }
    }

    /// The kinds it draws from (before a rung's assumptions narrow them).
    pub fn kinds(&self) -> Vec<FaultKind> {
        match self {
            FaultMode::All | FaultMode::Assumed => FaultKind::ALL.to_vec(),
            FaultMode::Only(kinds) => kinds.clone(),
        }
    }
}

impl fmt::Display for FaultMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultMode::All => f.write_str("all"),
            FaultMode::Assumed => f.write_str("assumed"),
            FaultMode::Only(kinds) if kinds.is_empty() => f.write_str("none"),
            FaultMode::Only(kinds) => {
                f.write_str(&kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_rejects_unknown_kinds() {
        assert_eq!(FaultMode::parse("all"), Ok(FaultMode::All));
        assert_eq!(
            FaultMode::parse("pause, failover,pause"),
            Ok(FaultMode::Only(vec![FaultKind::Pause, FaultKind::Failover]))
        );
        assert!(FaultMode::parse("pause,bogus").is_err());
        assert_eq!(FaultMode::parse("none").unwrap().to_string(), "none");
    }
}
