//! A small reader of EDN (Clojure's data notation, which Jepsen writes its
//! histories in) into JSON values, and a writer back.
//!
//! Written here rather than taken from a crate because a history's errors
//! must name the line each operation starts on, and the values must land
//! in [`serde_json::Value`] (the shape of [`crate::op::Op`]) with EDN's
//! keywords as plain text; EDN is small enough that a careful reader is
//! shorter than the glue around a general one. (The most used crate,
//! `edn-rs`, is deprecated and says it does not hold input to the EDN
//! spec.)
//!
//! Read as: `nil` → `null`; `true`/`false`; integers (with an optional
//! `N`, or hex `0x..` as Clojure reads it) → JSON integers, refused
//! beyond 64 bits; decimals (with an
//! optional `M`) → JSON numbers, refused when not finite; strings with
//! `\" \\ \n \t \r \b \f \uXXXX`; characters (`\a`, `\newline`) → one-
//! character strings; keywords → their name without the colon; symbols →
//! their name; lists, vectors and sets (`#{}`) → arrays; maps → objects
//! keyed by the key's text (keyword, string or number; a repeated key is
//! refused); a tagged value (`#inst "..."`, `#jepsen.history.Op{...}`) →
//! the value it tags; `#_` discards the next form. Commas are whitespace;
//! `;` comments to the end of the line.

use serde_json::{Map, Number, Value};

/// How deep collections may nest: deeper input is refused, not followed
/// down the stack.
const MAX_DEPTH: usize = 200;

/// Where reading stopped: the line (from 1), what was expected, and what
/// was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdnError {
    pub line: usize,
    pub expected: String,
    pub found: String,
}

type Read<T> = Result<T, EdnError>;

/// A reader over EDN text that counts lines.
pub(crate) struct Reader<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            pos: 0,
            line: 1,
        }
    }

    /// The current line, from 1.
    pub(crate) fn line(&self) -> usize {
        self.line
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        let mut chars = self.text[self.pos..].chars();
        chars.next();
        chars.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn fail<T>(&self, expected: impl Into<String>, found: impl Into<String>) -> Read<T> {
        Err(EdnError {
            line: self.line,
            expected: expected.into(),
            found: found.into(),
        })
    }

    fn found_here(&self) -> String {
        match self.peek() {
            None => "the end of the file".to_string(),
            Some(_) => {
                let rest: String = self.text[self.pos..].chars().take(20).collect();
                format!("{rest:?}")
            }
        }
    }

    /// Skips whitespace, commas and comments; `#_` discards are skipped
    /// too, which can fail like any form.
    pub(crate) fn skip_blank(&mut self) -> Read<()> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() || c == ',' => {
                    self.bump();
                }
                Some(';') => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                Some('#') if self.peek_second() == Some('_') => {
                    self.bump();
                    self.bump();
                    self.form(0)?;
                }
                _ => return Ok(()),
            }
        }
    }

    /// Whether only blanks remain.
    pub(crate) fn at_end(&mut self) -> Read<bool> {
        self.skip_blank()?;
        Ok(self.peek().is_none())
    }

    /// If the next form is a list or vector, consumes its opening bracket
    /// and returns the closing one to look for.
    pub(crate) fn open_sequence(&mut self) -> Read<Option<char>> {
        self.skip_blank()?;
        let close = match self.peek() {
            Some('[') => ']',
            Some('(') => ')',
            _ => return Ok(None),
        };
        self.bump();
        Ok(Some(close))
    }

    /// Consumes `close` if it is next (after blanks).
    pub(crate) fn close(&mut self, close: char) -> Read<bool> {
        self.skip_blank()?;
        if self.peek() == Some(close) {
            self.bump();
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads the next form (after blanks): its line and its value.
    pub(crate) fn next_form(&mut self) -> Read<(usize, Value)> {
        self.skip_blank()?;
        let line = self.line;
        if self.peek().is_none() {
            return self.fail("an EDN value", "the end of the file");
        }
        Ok((line, self.form(0)?))
    }

    fn form(&mut self, depth: usize) -> Read<Value> {
        if depth > MAX_DEPTH {
            return self.fail(
                format!("collections nested at most {MAX_DEPTH} deep"),
                "deeper nesting",
            );
        }
        self.skip_blank()?;
        let Some(c) = self.peek() else {
            return self.fail("an EDN value", "the end of the file");
        };
        match c {
            '{' => {
                self.bump();
                self.map(depth)
            }
            '[' => {
                self.bump();
                self.sequence(']', depth)
            }
            '(' => {
                self.bump();
                self.sequence(')', depth)
            }
            '"' => {
                self.bump();
                self.string().map(Value::String)
            }
            '\\' => {
                self.bump();
                self.character().map(Value::String)
            }
            ':' => {
                self.bump();
                let name = self.token();
                if name.is_empty() {
                    return self.fail("a keyword's name after ':'", self.found_here());
                }
                Ok(Value::String(name.to_string()))
            }
            '#' => {
                self.bump();
                self.dispatch(depth)
            }
            ')' | ']' | '}' => self.fail("an EDN value", format!("an unmatched {c:?}")),
            _ if c.is_ascii_digit()
                || ((c == '-' || c == '+')
                    && self.peek_second().is_some_and(|d| d.is_ascii_digit())) =>
            {
                self.number()
            }
            _ => {
                let line = self.line;
                let name = self.token();
                match name {
                    "" => self.fail("an EDN value", self.found_here()),
                    "nil" => Ok(Value::Null),
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ if !name
                        .starts_with(|c: char| c.is_alphabetic() || "*+!-_?<>=./".contains(c)) =>
                    {
                        Err(EdnError {
                            line,
                            expected: "an EDN value".into(),
                            found: format!("{name:?}"),
                        })
                    }
                    _ => Ok(Value::String(name.to_string())),
                }
            }
        }
    }

    /// Characters up to the next delimiter: a symbol's, keyword's or
    /// number's text.
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || matches!(c, ',' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';')
            {
                break;
            }
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn dispatch(&mut self, depth: usize) -> Read<Value> {
        match self.peek() {
            Some('{') => {
                self.bump();
                self.sequence('}', depth)
            }
            Some(c) if c.is_alphabetic() => {
                // A tagged value: the tag names a type (`inst`,
                // `jepsen.history.Op`); the value it tags is kept.
                self.token();
                self.form(depth + 1)
            }
            _ => self.fail(
                "a set #{...}, a tagged value #tag or a discard #_",
                format!("#{}", self.found_here().trim_matches('"')),
            ),
        }
    }

    fn sequence(&mut self, close: char, depth: usize) -> Read<Value> {
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                None => {
                    return self.fail(
                        format!("{close:?} to close the collection"),
                        "the end of the file",
                    );
                }
                Some(c) if c == close => {
                    self.bump();
                    return Ok(Value::Array(items));
                }
                Some(_) => items.push(self.form(depth + 1)?),
            }
        }
    }

    fn map(&mut self, depth: usize) -> Read<Value> {
        let mut map = Map::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                None => return self.fail("'}' to close the map", "the end of the file"),
                Some('}') => {
                    self.bump();
                    return Ok(Value::Object(map));
                }
                Some(_) => {}
            }
            let line = self.line;
            let key = match self.form(depth + 1)? {
                Value::String(text) => text,
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(EdnError {
                        line,
                        expected: "a map key that is a keyword, string or number".into(),
                        found: other.to_string(),
                    });
                }
            };
            self.skip_blank()?;
            if self.peek() == Some('}') || self.peek().is_none() {
                return self.fail(format!("a value for the key {key:?}"), self.found_here());
            }
            let value = self.form(depth + 1)?;
            if map.contains_key(&key) {
                return Err(EdnError {
                    line,
                    expected: "each key once in a map".into(),
                    found: format!("the key {key:?} again"),
                });
            }
            map.insert(key, value);
        }
    }

    fn string(&mut self) -> Read<String> {
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return self.fail("'\"' to close the string", "the end of the file");
            };
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let escaped = match self.bump() {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some('r') => '\r',
                        Some('b') => '\u{8}',
                        Some('f') => '\u{c}',
                        Some('u') => self.unicode_escape()?,
                        Some(other) => {
                            return self.fail(
                                "a string escape (\\\" \\\\ \\n \\t \\r \\b \\f \\uXXXX)",
                                format!("\\{other}"),
                            );
                        }
                        None => return self.fail("a string escape", "the end of the file"),
                    };
                    out.push(escaped);
                }
                _ => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Read<u32> {
        let start = self.pos;
        for _ in 0..4 {
            match self.peek() {
                Some(c) if c.is_ascii_hexdigit() => {
                    self.bump();
                }
                _ => return self.fail("four hex digits after \\u", self.found_here()),
            }
        }
        u32::from_str_radix(&self.text[start..self.pos], 16)
            .or_else(|_| self.fail("four hex digits after \\u", self.found_here()))
    }

    /// After `\u`: a code point, or a UTF-16 surrogate pair as Clojure
    /// writes characters beyond the basic plane.
    fn unicode_escape(&mut self) -> Read<char> {
        let high = self.hex4()?;
        if (0xD800..0xDC00).contains(&high) {
            if self.bump() != Some('\\') || self.bump() != Some('u') {
                return self.fail(
                    "a low surrogate \\uDC00-\\uDFFF after a high one",
                    self.found_here(),
                );
            }
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return self.fail("a low surrogate \\uDC00-\\uDFFF", format!("\\u{low:04X}"));
            }
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return char::from_u32(code)
                .map_or_else(|| self.fail("a Unicode character", format!("{code:X}")), Ok);
        }
        char::from_u32(high).map_or_else(
            || {
                self.fail(
                    "a Unicode character (not a lone surrogate)",
                    format!("\\u{high:04X}"),
                )
            },
            Ok,
        )
    }

    fn character(&mut self) -> Read<String> {
        // The first character is taken even if it is a delimiter (`\(`).
        let Some(first) = self.bump() else {
            return self.fail("a character after '\\'", "the end of the file");
        };
        let rest = self.token();
        let name = format!("{first}{rest}");
        let c = match name.as_str() {
            "newline" => '\n',
            "space" => ' ',
            "tab" => '\t',
            "return" => '\r',
            "formfeed" => '\u{c}',
            "backspace" => '\u{8}',
            _ if name.chars().count() == 1 => first,
            _ if name.len() == 5 && name.starts_with('u') => u32::from_str_radix(&name[1..], 16)
                .ok()
                .and_then(char::from_u32)
                .map_or_else(|| self.fail("a character \\uXXXX", format!("\\{name}")), Ok)?,
            _ => return self.fail("a character (\\a, \\newline, \\uXXXX)", format!("\\{name}")),
        };
        Ok(c.to_string())
    }

    fn number(&mut self) -> Read<Value> {
        let line = self.line;
        let text = self.token();
        let bad = |expected: &str| EdnError {
            line,
            expected: expected.into(),
            found: text.to_string(),
        };
        let digits = text.strip_suffix('N').unwrap_or(text);
        let is_integer = digits
            .strip_prefix(['-', '+'])
            .unwrap_or(digits)
            .bytes()
            .all(|b| b.is_ascii_digit());
        if is_integer {
            let unsigned = digits.strip_prefix('+').unwrap_or(digits);
            return if unsigned.starts_with('-') {
                unsigned
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| bad("an integer within 64 bits (at least -9223372036854775808)"))
            } else {
                unsigned
                    .parse::<u64>()
                    .map(Value::from)
                    .map_err(|_| bad("an integer within 64 bits (at most 18446744073709551615)"))
            };
        }
        if let Some(hex) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            // Clojure's reader takes hex (`#object[Foo 0x5e1f "..."]` in
            // Jepsen's errors), though EDN proper has none.
            return u64::from_str_radix(hex, 16)
                .map(Value::from)
                .map_err(|_| bad("a hex integer within 64 bits"));
        }
        let decimal = text.strip_suffix('M').unwrap_or(text);
        let well_formed = decimal
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
        let number = if well_formed {
            decimal.parse::<f64>().ok().and_then(Number::from_f64)
        } else {
            None
        };
        number
            .map(Value::Number)
            .ok_or_else(|| bad("a number (integer or finite decimal)"))
    }
}

/// Writes `value` as EDN: `null` as `nil`, arrays as vectors, objects as
/// maps whose keys are keywords when their text can be one.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_key(out, key);
                out.push(' ');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Writes a map key: a keyword when the text can be one, else a string.
pub(crate) fn write_key(out: &mut String, key: &str) {
    if is_keyword_text(key) {
        out.push(':');
        out.push_str(key);
    } else {
        write_string(out, key);
    }
}

/// Writes `text` as a keyword if it can be one, else as a string (both
/// read back as the same text).
pub(crate) fn write_keyword_or_string(out: &mut String, text: &str) {
    write_key(out, text);
}

/// Whether `text` reads back as the same keyword: a letter first, then
/// letters, digits and `- _ ? ! * + . / < > =`.
pub(crate) fn is_keyword_text(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_?!*+./<>=".contains(c))
}

/// Writes `text` as an EDN string with escapes.
pub(crate) fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_one(text: &str) -> Read<Value> {
        Reader::new(text).next_form().map(|(_, v)| v)
    }

    #[test]
    fn scalars_read_as_json_values() {
        assert_eq!(read_one("nil"), Ok(Value::Null));
        assert_eq!(read_one("true"), Ok(json!(true)));
        assert_eq!(read_one("-12"), Ok(json!(-12)));
        assert_eq!(read_one("+7"), Ok(json!(7)));
        assert_eq!(read_one("18446744073709551615N"), Ok(json!(u64::MAX)));
        assert_eq!(read_one("1.5"), Ok(json!(1.5)));
        assert_eq!(read_one("0x1F"), Ok(json!(31)));
        assert_eq!(read_one("2.5M"), Ok(json!(2.5)));
        assert_eq!(read_one(":nemesis"), Ok(json!("nemesis")));
        assert_eq!(read_one("\\newline"), Ok(json!("\n")));
        assert_eq!(read_one("\\a"), Ok(json!("a")));
        assert_eq!(
            read_one(r#""a\"b\\c\n\u00e9\uD83D\uDE00""#),
            Ok(json!("a\"b\\c\né😀"))
        );
    }

    #[test]
    fn integers_beyond_64_bits_are_refused() {
        let err = read_one("18446744073709551616").unwrap_err();
        assert!(err.expected.contains("64 bits"), "{err:?}");
        assert!(read_one("-9223372036854775809").is_err());
    }

    #[test]
    fn sets_tags_comments_and_discards_read_as_their_values() {
        let text = "; a comment\n#jepsen.history.Op{:a #{1 2}, #_ :skipped :b #inst \"2020\"}";
        assert_eq!(read_one(text), Ok(json!({"a": [1, 2], "b": "2020"})));
    }

    #[test]
    fn a_repeated_key_is_refused_at_its_line() {
        let err = read_one("{:a 1\n :a 2}").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let text = "[".repeat(100_000);
        assert!(read_one(&text).is_err());
    }

    #[test]
    fn written_values_read_back_the_same() {
        let value =
            json!({"a-b": [1, -2, 1.5, null, true, "x\"\n\u{1}"], "not a keyword": {"k": "v"}});
        let mut text = String::new();
        write_value(&mut text, &value);
        assert_eq!(read_one(&text), Ok(value));
    }
}
