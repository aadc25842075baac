//! `--faults`: which fault kinds ([`FaultKind`]) a swarm search draws from.

pub use model::fault::FaultKind;
use std::fmt;

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
