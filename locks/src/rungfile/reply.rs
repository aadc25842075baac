//! What a reply means: the small pattern language of a rung file's
//! outcomes (`granted = "[1, depth]"`, `not_mine = "0"`).
//!
//! A pattern is `nil`, `ok` (the status reply `OK`), an integer such as
//! `1` or `-1`, a name that matches an integer and keeps it (`depth`: the
//! hold count, at least 1; `fence`: a fencing token, at least 0; `holds`:
//! holds left, at least 1; `pttl`: a remaining TTL; `int`: any integer),
//! `any` (any reply), or an array of patterns in brackets, `[0, pttl]`.

use redis::Value;

/// An integer a pattern keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// The owner's hold count after the acquire (at least 1).
    Depth,
    /// The lease's fencing token (at least 0).
    Fence,
    /// Holds left after a release (at least 1).
    Holds,
    /// The remaining TTL of someone else's lock, in ms (any integer).
    Pttl,
    /// Any integer.
    Int,
}

impl Capture {
    fn admits(self, n: i64) -> bool {
        match self {
            Capture::Depth | Capture::Holds => n >= 1,
            Capture::Fence => n >= 0,
            Capture::Pttl | Capture::Int => true,
        }
    }
}

/// One reply pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// The nil reply.
    Nil,
    /// The status reply `OK`.
    Ok,
    /// Exactly this integer.
    Int(i64),
    /// An integer, kept.
    Capture(Capture),
    /// Any reply at all.
    Any,
    /// An array of exactly these elements.
    Array(Vec<Pattern>),
}

/// What a matched reply kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Captured {
    /// The `depth` it carried.
    pub depth: Option<u32>,
    /// The `fence` it carried.
    pub fence: Option<u64>,
}

impl Pattern {
    /// Parses a pattern; the error says what was expected.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let mut rest = text.trim();
        let pattern = parse_one(&mut rest)?;
        if !rest.trim().is_empty() {
            return Err(format!("unexpected {:?} after the pattern", rest.trim()));
        }
        Ok(pattern)
    }

    /// Whether it keeps `capture` anywhere.
    pub fn captures(&self, capture: Capture) -> bool {
        match self {
            Pattern::Capture(c) => *c == capture,
            Pattern::Array(items) => items.iter().any(|p| p.captures(capture)),
            _ => false,
        }
    }

    /// Matches `reply`, adding what it keeps to `kept`.
    pub fn matches(&self, reply: &Value, kept: &mut Captured) -> bool {
        match (self, reply) {
            (Pattern::Any, _) => true,
            (Pattern::Nil, Value::Nil) => true,
            (Pattern::Ok, Value::Okay) => true,
            (Pattern::Ok, Value::SimpleString(s)) => s == "OK",
            (Pattern::Int(want), Value::Int(n)) => want == n,
            (Pattern::Capture(c), Value::Int(n)) if c.admits(*n) => {
                match c {
                    Capture::Depth => kept.depth = u32::try_from(*n).ok().or(Some(u32::MAX)),
                    Capture::Fence => kept.fence = u64::try_from(*n).ok(),
                    _ => {}
                }
                true
            }
            (Pattern::Array(want), Value::Array(items)) => {
                want.len() == items.len() && want.iter().zip(items).all(|(p, v)| p.matches(v, kept))
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Nil => f.write_str("nil"),
            Pattern::Ok => f.write_str("ok"),
            Pattern::Int(n) => write!(f, "{n}"),
            Pattern::Any => f.write_str("any"),
            Pattern::Capture(c) => f.write_str(match c {
                Capture::Depth => "depth",
                Capture::Fence => "fence",
                Capture::Holds => "holds",
                Capture::Pttl => "pttl",
                Capture::Int => "int",
            }),
            Pattern::Array(items) => {
                f.write_str("[")?;
                for (i, p) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str("]")
            }
        }
    }
}

const EXPECTED: &str =
    "expected nil, ok, an integer, depth, fence, holds, pttl, int, any, or [patterns, ...]";

fn parse_one(rest: &mut &str) -> Result<Pattern, String> {
    *rest = rest.trim_start();
    if let Some(after) = rest.strip_prefix('[') {
        *rest = after;
        let mut items = Vec::new();
        loop {
            *rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix(']') {
                *rest = after;
                return Ok(Pattern::Array(items));
            }
            if !items.is_empty() {
                *rest = rest
                    .strip_prefix(',')
                    .ok_or_else(|| format!("expected `,` or `]` before {:?}", rest))?;
            }
            items.push(parse_one(rest)?);
        }
    }
    let end = rest
        .find(|c: char| c == ',' || c == ']' || c.is_whitespace())
        .unwrap_or(rest.len());
    let (word, after) = rest.split_at(end);
    *rest = after;
    let pattern = match word {
        "nil" => Pattern::Nil,
        "ok" => Pattern::Ok,
        "any" => Pattern::Any,
        "depth" => Pattern::Capture(Capture::Depth),
        "fence" => Pattern::Capture(Capture::Fence),
        "holds" => Pattern::Capture(Capture::Holds),
        "pttl" => Pattern::Capture(Capture::Pttl),
        "int" => Pattern::Capture(Capture::Int),
        "" => return Err(format!("a pattern is missing; {EXPECTED}")),
        other => Pattern::Int(
            other
                .parse()
                .map_err(|_| format!("unknown pattern {other:?}; {EXPECTED}"))?,
        ),
    };
    Ok(pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_print_and_match_the_replies_of_the_ladder_scripts() {
        let granted = Pattern::parse("[1, depth]").expect("parses");
        assert_eq!(granted.to_string(), "[1, depth]");
        let mut kept = Captured::default();
        let reply = Value::Array(vec![Value::Int(1), Value::Int(3)]);
        assert!(granted.matches(&reply, &mut kept));
        assert_eq!(kept.depth, Some(3));
        let taken = Value::Array(vec![Value::Int(0), Value::Int(900)]);
        assert!(!granted.matches(&taken, &mut Captured::default()));
        assert!(
            Pattern::parse("ok")
                .expect("ok")
                .matches(&Value::Okay, &mut kept)
        );
        assert!(
            Pattern::parse("nil")
                .expect("nil")
                .matches(&Value::Nil, &mut kept)
        );
        assert!(
            Pattern::parse("-1")
                .expect("-1")
                .matches(&Value::Int(-1), &mut kept)
        );
        assert!(
            !Pattern::parse("holds")
                .expect("holds")
                .matches(&Value::Int(0), &mut kept)
        );
    }

    #[test]
    fn a_bad_pattern_says_what_was_expected() {
        for bad in ["", "yes", "[1, depth", "[1 2]", "1 2"] {
            let err = Pattern::parse(bad).expect_err(bad);
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(
            Pattern::parse("granted")
                .unwrap_err()
                .contains("expected nil, ok")
        );
    }
}
