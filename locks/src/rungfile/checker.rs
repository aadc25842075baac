//! The checks of each table against the text, every error located at
//! its line and column.

use super::arg::Arg;
use super::format::{Call, Drift, Interval, Nodes, Operation, OperationKind, Outcome, Quorum};
use super::raw::{
    ALL_OUTCOMES, NodesKind, OneOrMany, RawNodes, RawOperation, RawQuorum, RawRenewal, RawWait,
};
use super::reply::Pattern;
use super::{MAX_SETTING_MS, RungFileError, line_column};
use crate::lock::WaitStrategy;
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

/// Checks against the text, locating each error.
pub(super) struct Checker<'a> {
    pub(super) text: &'a str,
    pub(super) file: &'a str,
}

impl Checker<'_> {
    pub(super) fn at(&self, span: std::ops::Range<usize>, message: String) -> RungFileError {
        let (line, column) = line_column(self.text, span.start);
        RungFileError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }

    pub(super) fn operation(
        &self,
        kind: OperationKind,
        raw: &Spanned<RawOperation>,
    ) -> Result<Operation, RungFileError> {
        let name = kind.name();
        let op = raw.get_ref();
        let args = |list: &[Spanned<String>], field: &str| -> Result<Vec<Arg>, RungFileError> {
            list.iter()
                .map(|a| {
                    Arg::parse(a.get_ref())
                        .map_err(|e| self.at(a.span(), format!("`{name}.{field}`: {e}")))
                })
                .collect()
        };
        let call = match (&op.script, &op.command) {
            (Some(script), None) => Call::Script {
                script: Arc::new(redis::Script::new(script.get_ref())),
                keys: args(&op.keys, "keys")?,
                argv: args(&op.argv, "argv")?,
            },
            (None, Some(words)) => {
                if !op.keys.is_empty() || !op.argv.is_empty() {
                    return Err(self.at(
                        raw.span(),
                        format!("`{name}`: `keys` and `argv` belong to a `script`; a `command` carries its arguments itself"),
                    ));
                }
                if words.is_empty() {
                    return Err(self.at(
                        raw.span(),
                        format!("`{name}.command` is empty; expected a command name and its arguments, such as [\"SET\", \"{{key}}\", \"{{token}}\", \"NX\", \"PX\", \"{{ttl_ms}}\"]"),
                    ));
                }
                Call::Command(args(words, "command")?)
            }
            _ => {
                return Err(self.at(
                    raw.span(),
                    format!("`{name}`: expected exactly one of `script` (Lua) or `command` (one command)"),
                ));
            }
        };
        let (allowed, required) = kind.outcomes();
        for outcome in ALL_OUTCOMES {
            if let Some(given) = op.outcome(outcome)
                && !allowed.contains(&outcome)
            {
                return Err(self.at(
                    given.span(),
                    format!(
                        "`{name}.{}`: {name} has no such outcome; expected {}",
                        outcome.name(),
                        names(allowed)
                    ),
                ));
            }
        }
        let mut outcomes = Vec::new();
        for (i, outcome) in allowed.iter().enumerate() {
            let Some(given) = op.outcome(*outcome) else {
                if i < required {
                    return Err(self.at(
                        raw.span(),
                        format!(
                            "`{name}.{}` is missing: what {name}'s reply is when {}",
                            outcome.name(),
                            meaning(*outcome)
                        ),
                    ));
                }
                continue;
            };
            let texts: Vec<&String> = match given.get_ref() {
                OneOrMany::One(t) => vec![t],
                OneOrMany::Many(ts) => ts.iter().collect(),
            };
            if texts.is_empty() {
                return Err(self.at(
                    given.span(),
                    format!("`{name}.{}` is empty; expected a pattern", outcome.name()),
                ));
            }
            let patterns = texts
                .into_iter()
                .map(|t| {
                    Pattern::parse(t).map_err(|e| {
                        self.at(given.span(), format!("`{name}.{}`: {e}", outcome.name()))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            outcomes.push((*outcome, patterns));
        }
        Ok(Operation {
            kind,
            call,
            outcomes,
        })
    }
}

fn names(outcomes: &[Outcome]) -> String {
    outcomes
        .iter()
        .map(|o| format!("`{}`", o.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn meaning(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Granted => "the lock is granted",
        Outcome::Taken => "another owner holds the lock",
        Outcome::Released => "the lock is given back",
        Outcome::StillHeld => "a nested hold is given back",
        Outcome::NotMine => "the lock is not this owner's",
        Outcome::Extended => "the TTL is re-armed",
    }
}

impl Checker<'_> {
    pub(super) fn nodes(&self, raw: &Spanned<RawNodes>) -> Result<Nodes, RungFileError> {
        let n = raw.get_ref();
        if n.kind == NodesKind::Single {
            if n.quorum.is_some() || n.drift_factor.is_some() || n.drift_ms.is_some() {
                return Err(self.at(
                    raw.span(),
                    "`nodes`: `quorum`, `drift_factor` and `drift_ms` belong to `kind = \"independent\"`".into(),
                ));
            }
            return Ok(Nodes::Single);
        }
        let quorum = match &n.quorum {
            None => Quorum::Majority,
            Some(q) => match q.get_ref() {
                RawQuorum::Word(w) if w == "majority" => Quorum::Majority,
                RawQuorum::Count(c) if (1..=9).contains(c) => Quorum::AtLeast(*c as usize),
                _ => {
                    return Err(self.at(
                        q.span(),
                        "`nodes.quorum`: expected \"majority\" or a number of nodes from 1 to 9"
                            .into(),
                    ));
                }
            },
        };
        let (numerator, denominator) = match &n.drift_factor {
            None => (1, 100),
            Some(f) => fraction(*f.get_ref()).ok_or_else(|| {
                self.at(
                    f.span(),
                    "`nodes.drift_factor`: expected a decimal from 0 to 1 with at most 6 digits after the point, such as 0.01".into(),
                )
            })?,
        };
        let plus = n.drift_ms.unwrap_or(2);
        if plus > MAX_SETTING_MS {
            return Err(self.at(raw.span(), too_long("nodes.drift_ms")));
        }
        Ok(Nodes::Independent {
            quorum,
            drift: Drift {
                numerator,
                denominator,
                plus: Duration::from_millis(plus),
            },
        })
    }

    pub(super) fn wait(&self, raw: &Spanned<RawWait>) -> Result<WaitStrategy, RungFileError> {
        let ms = |field: &str, v: u64| {
            if (1..=MAX_SETTING_MS).contains(&v) {
                Ok(Duration::from_millis(v))
            } else {
                Err(self.at(
                    raw.span(),
                    format!("`wait.{field}`: expected 1 to {} ms", MAX_SETTING_MS),
                ))
            }
        };
        Ok(match *raw.get_ref() {
            RawWait::Fixed { interval_ms } => WaitStrategy::Fixed {
                interval: ms("interval_ms", interval_ms)?,
            },
            RawWait::Backoff { initial_ms, max_ms } => {
                let (initial, max) = (ms("initial_ms", initial_ms)?, ms("max_ms", max_ms)?);
                if max < initial {
                    return Err(self.at(
                        raw.span(),
                        "`wait.max_ms` is below `wait.initial_ms`".into(),
                    ));
                }
                WaitStrategy::Backoff { initial, max }
            }
            RawWait::Notify { fallback_ms } => WaitStrategy::Notify {
                fallback: ms("fallback_ms", fallback_ms)?,
            },
        })
    }

    pub(super) fn renewal(&self, raw: &Spanned<RawRenewal>) -> Result<Interval, RungFileError> {
        let r = raw.get_ref();
        match (&r.interval, r.interval_ms) {
            (Some(text), None) => text
                .get_ref()
                .strip_prefix("ttl/")
                .and_then(|n| n.trim().parse::<u32>().ok())
                .filter(|n| (1..=1000).contains(n))
                .map(Interval::TtlOver)
                .ok_or_else(|| {
                    self.at(
                        text.span(),
                        "`renewal.interval`: expected \"ttl/N\" with N from 1 to 1000, such as \"ttl/3\"".into(),
                    )
                }),
            (None, Some(ms)) if (1..=MAX_SETTING_MS).contains(&ms) => {
                Ok(Interval::Fixed(Duration::from_millis(ms)))
            }
            (None, Some(_)) => Err(self.at(raw.span(), too_long("renewal.interval_ms"))),
            _ => Err(self.at(
                raw.span(),
                "`renewal`: expected exactly one of `interval = \"ttl/N\"` or `interval_ms`"
                    .into(),
            )),
        }
    }
}

fn too_long(field: &str) -> String {
    format!("`{field}`: expected 1 to {} ms", MAX_SETTING_MS)
}

/// A decimal in [0, 1] as an exact fraction with a power-of-ten
/// denominator (`0.01` is 1/100), from its shortest decimal form.
fn fraction(f: f64) -> Option<(u32, u32)> {
    if !(0.0..=1.0).contains(&f) {
        return None;
    }
    let text = format!("{f}");
    let (whole, decimals) = text.split_once('.').unwrap_or((&text, ""));
    if decimals.len() > 6 {
        return None;
    }
    let denominator = 10u32.pow(decimals.len() as u32);
    let numerator = format!("{whole}{decimals}").parse::<u32>().ok()?;
    Some((numerator, denominator))
}
