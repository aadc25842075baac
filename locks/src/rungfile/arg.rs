//! One argument of a call: literal text with `{placeholder}`s, parsed
//! from the file and filled in per call.

use std::time::Duration;

/// One argument: literal text with placeholders filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Value(Placeholder),
}

/// A value an argument can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `{key}`: the lock's key.
    Key,
    /// `{token}`: the owner mark (see [`OwnerMark`](super::OwnerMark)).
    Token,
    /// `{owner}`: the owner's `client:task` id.
    Owner,
    /// `{ttl_ms}`: the TTL in whole ms (at least 1).
    TtlMs,
    /// `{channel}`: the lock's release channel (pub/sub wake-up).
    Channel,
}

const PLACEHOLDERS: [(&str, Placeholder); 5] = [
    ("key", Placeholder::Key),
    ("token", Placeholder::Token),
    ("owner", Placeholder::Owner),
    ("ttl_ms", Placeholder::TtlMs),
    ("channel", Placeholder::Channel),
];

/// The values of one call.
pub struct Values<'a> {
    /// The lock's key.
    pub key: &'a str,
    /// The owner mark.
    pub token: &'a str,
    /// The owner's id.
    pub owner: &'a str,
    /// The TTL.
    pub ttl: Duration,
}

impl Arg {
    pub(super) fn parse(text: &str) -> Result<Arg, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                literal.push('{');
                rest = after;
            } else if let Some(after) = rest.strip_prefix("}}") {
                literal.push('}');
                rest = after;
            } else if c == '{' {
                let end = rest.find('}').ok_or_else(|| {
                    format!("{text:?}: `{{` without `}}`; write `{{{{` for a literal brace")
                })?;
                let name = &rest[1..end];
                let value = PLACEHOLDERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| {
                        format!(
                            "{text:?}: unknown placeholder {{{name}}}; expected one of {}, or `{{{{` for a literal brace",
                            PLACEHOLDERS
                                .iter()
                                .map(|(n, _)| format!("{{{n}}}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?;
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Value(value));
                rest = &rest[end + 1..];
            } else if c == '}' {
                return Err(format!(
                    "{text:?}: `}}` without `{{`; write `}}}}` for a literal brace"
                ));
            } else {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if !literal.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Arg(pieces))
    }

    /// Whether it carries `value`.
    pub fn uses(&self, value: Placeholder) -> bool {
        self.0.contains(&Piece::Value(value))
    }

    /// The argument with its placeholders filled in.
    pub fn fill(&self, values: &Values<'_>) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Value(Placeholder::Key) => out.push_str(values.key),
                Piece::Value(Placeholder::Token) => out.push_str(values.token),
                Piece::Value(Placeholder::Owner) => out.push_str(values.owner),
                Piece::Value(Placeholder::TtlMs) => {
                    out.push_str(&crate::rungs::common::ttl_ms(values.ttl).to_string())
                }
                Piece::Value(Placeholder::Channel) => {
                    out.push_str(&crate::notify::channel(values.key))
                }
            }
        }
        out
    }
}
