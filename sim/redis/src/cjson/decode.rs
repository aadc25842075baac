//! `cjson.decode`: JSON text as a Lua value, with lua-cjson's tokenizer
//! and its errors.

use mlua::{Lua, Table, Value};

use super::config::{Config, SharedConfig};
use super::number::{strtod, to_number};
use super::{Failure, Outcome, null, type_error};
use crate::lua::fmt_g;

pub(super) fn decode(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    if args.len() != 1 {
        return Err(Failure::Arg(1, "expected 1 argument".into()));
    }
    let text = match &args[0] {
        Value::String(s) => s.as_bytes().to_vec(),
        v @ (Value::Integer(_) | Value::Number(_)) => {
            fmt_g(to_number(v).unwrap_or(0.0), 14).into_bytes()
        }
        _ => return Err(type_error(args, 1, "string")),
    };
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(Failure::Error(
            "JSON parser does not support UTF-16 or UTF-32".into(),
        ));
    }
    let config = config.borrow().clone();
    let mut p = Parser {
        lua,
        config: &config,
        text: &text,
        pos: 0,
        depth: 0,
    };
    let token = p.next_token();
    let v = p.value(token)?;
    let token = p.next_token();
    if !matches!(token.kind, Kind::End) {
        return Err(p.expected("the end", &token).into());
    }
    Ok(vec![v])
}

/// A token's kind; the names are lua-cjson's, which its errors print.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// An invalid token, with lua-cjson's description of it.
    Error(&'static str),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::ObjBegin => "T_OBJ_BEGIN",
            Kind::ObjEnd => "T_OBJ_END",
            Kind::ArrBegin => "T_ARR_BEGIN",
            Kind::ArrEnd => "T_ARR_END",
            Kind::Str(_) => "T_STRING",
            Kind::Number(_) => "T_NUMBER",
            Kind::Boolean(_) => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error(what) => what,
        }
    }
}

struct Token {
    kind: Kind,
    /// Where it starts (0-based), or where an invalid one went wrong.
    at: usize,
}

struct Parser<'a> {
    lua: &'a Lua,
    config: &'a Config,
    text: &'a [u8],
    pos: usize,
    depth: i32,
}

impl Parser<'_> {
    /// The byte at `i`; past the end, the C string's terminating NUL.
    fn byte(&self, i: usize) -> u8 {
        self.text.get(i).copied().unwrap_or(0)
    }

    fn expected(&self, what: &str, token: &Token) -> String {
        format!(
            "Expected {what} but found {} at character {}",
            token.kind.name(),
            token.at + 1
        )
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let at = self.pos;
        let c = self.byte(at);
        let single = match c {
            b'{' => Some(Kind::ObjBegin),
            b'}' => Some(Kind::ObjEnd),
            b'[' => Some(Kind::ArrBegin),
            b']' => Some(Kind::ArrEnd),
            b',' => Some(Kind::Comma),
            b':' => Some(Kind::Colon),
            _ => None,
        };
        if let Some(kind) = single {
            self.pos += 1;
            return Token { kind, at };
        }
        let rest = &self.text[at.min(self.text.len())..];
        match c {
            0 => Token {
                kind: Kind::End,
                at,
            },
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => {
                if !self.config.decode_invalid_numbers && is_invalid_number(rest) {
                    return Token {
                        kind: Kind::Error("invalid number"),
                        at,
                    };
                }
                self.number()
            }
            _ if rest.starts_with(b"true") => self.word(Kind::Boolean(true), 4),
            _ if rest.starts_with(b"false") => self.word(Kind::Boolean(false), 5),
            _ if rest.starts_with(b"null") => self.word(Kind::Null, 4),
            b'+' | b'i' | b'I' | b'n' | b'N'
                if self.config.decode_invalid_numbers && is_invalid_number(rest) =>
            {
                self.number()
            }
            _ => Token {
                kind: Kind::Error("invalid token"),
                at,
            },
        }
    }

    fn word(&mut self, kind: Kind, len: usize) -> Token {
        let at = self.pos;
        self.pos += len;
        Token { kind, at }
    }

    fn number(&mut self) -> Token {
        let at = self.pos;
        match strtod(&self.text[at..]) {
            Some((n, used)) => {
                self.pos += used;
                Token {
                    kind: Kind::Number(n),
                    at,
                }
            }
            None => Token {
                kind: Kind::Error("invalid number"),
                at,
            },
        }
    }

    fn string(&mut self) -> Token {
        let at = self.pos;
        self.pos += 1;
        let mut s = Vec::new();
        loop {
            let c = self.byte(self.pos);
            match c {
                b'"' => break,
                0 => {
                    return Token {
                        kind: Kind::Error("unexpected end of string"),
                        at: self.pos,
                    };
                }
                b'\\' => {
                    let unescaped = match self.byte(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 0x0c,
                        b'r' => b'\r',
                        b'u' => {
                            match self.unicode_escape() {
                                Some((ch, len)) => {
                                    let mut buf = [0u8; 4];
                                    s.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                                    self.pos += len;
                                }
                                None => {
                                    return Token {
                                        kind: Kind::Error("invalid unicode escape code"),
                                        at: self.pos,
                                    };
                                }
                            }
                            continue;
                        }
                        _ => {
                            return Token {
                                kind: Kind::Error("invalid escape code"),
                                at: self.pos,
                            };
                        }
                    };
                    s.push(unescaped);
                    self.pos += 2;
                }
                _ => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        Token {
            kind: Kind::Str(s),
            at,
        }
    }

    /// Four hex digits at `i`, if they are.
    fn hex4(&self, i: usize) -> Option<u32> {
        (i..i + 4).try_fold(0u32, |acc, j| {
            Some(acc * 16 + (self.byte(j) as char).to_digit(16)?)
        })
    }

    /// `\uXXXX` (or a surrogate pair `\uD8XX\uDCXX`) at the position: the
    /// character and the escape's length.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let p = self.pos;
        let unit = self.hex4(p + 2)?;
        if unit & 0xF800 != 0xD800 {
            return Some((char::from_u32(unit)?, 6));
        }
        if unit & 0x400 != 0 || self.byte(p + 6) != b'\\' || self.byte(p + 7) != b'u' {
            return None;
        }
        let low = self.hex4(p + 8)?;
        if low & 0xFC00 != 0xDC00 {
            return None;
        }
        let cp = (((unit & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
        Some((char::from_u32(cp)?, 12))
    }

    /// One level deeper; lua-cjson's error past the limit.
    fn descend(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > self.config.decode_max_depth {
            return Err(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            ));
        }
        Ok(())
    }

    fn value(&mut self, token: Token) -> Result<Value, String> {
        Ok(match token.kind {
            Kind::Str(s) => Value::String(self.lua.create_string(&s).map_err(|e| e.to_string())?),
            Kind::Number(n) => Value::Number(n),
            Kind::Boolean(b) => Value::Boolean(b),
            Kind::Null => null(),
            Kind::ObjBegin => Value::Table(self.object()?),
            Kind::ArrBegin => Value::Table(self.array()?),
            _ => return Err(self.expected("value", &token)),
        })
    }

    /// Opens an object or array whose first byte was just read: one level
    /// deeper, its table, and its first token (`None` when it is empty and
    /// so closed already by `end`).
    fn open(&mut self, end: &Kind) -> Result<(Table, Option<Token>), String> {
        self.descend()?;
        let t = self.lua.create_table().map_err(|e| e.to_string())?;
        let token = self.next_token();
        if token.kind == *end {
            self.depth -= 1;
            return Ok((t, None));
        }
        Ok((t, Some(token)))
    }

    /// After an element: the next element's first token after a comma, or
    /// `None` at `end` (which closes the container).
    fn after_element(&mut self, end: &Kind, expected: &str) -> Result<Option<Token>, String> {
        let after = self.next_token();
        if after.kind == *end {
            self.depth -= 1;
            return Ok(None);
        }
        if after.kind != Kind::Comma {
            return Err(self.expected(expected, &after));
        }
        Ok(Some(self.next_token()))
    }

    fn object(&mut self) -> Result<Table, String> {
        let (t, mut token) = self.open(&Kind::ObjEnd)?;
        while let Some(key) = token {
            let Kind::Str(key) = &key.kind else {
                return Err(self.expected("object key string", &key));
            };
            let key = self.lua.create_string(key).map_err(|e| e.to_string())?;
            let colon = self.next_token();
            if colon.kind != Kind::Colon {
                return Err(self.expected("colon", &colon));
            }
            let first = self.next_token();
            let v = self.value(first)?;
            t.raw_set(key, v).map_err(|e| e.to_string())?;
            token = self.after_element(&Kind::ObjEnd, "comma or object end")?;
        }
        Ok(t)
    }

    fn array(&mut self) -> Result<Table, String> {
        let (t, mut token) = self.open(&Kind::ArrEnd)?;
        let mut i: i64 = 1;
        while let Some(first) = token {
            let v = self.value(first)?;
            t.raw_set(i, v).map_err(|e| e.to_string())?;
            i += 1;
            token = self.after_element(&Kind::ArrEnd, "comma or array end")?;
        }
        Ok(t)
    }
}

/// lua-cjson's `json_is_invalid_number`: a number strict JSON does not
/// allow (a leading `+` or zero, hex, `inf`, `nan`).
fn is_invalid_number(s: &[u8]) -> bool {
    let byte = |i: usize| s.get(i).copied().unwrap_or(0);
    if byte(0) == b'+' {
        return true;
    }
    let p = usize::from(byte(0) == b'-');
    let c = byte(p);
    if c == b'0' {
        let c2 = byte(p + 1);
        return c2 | 0x20 == b'x' || c2.is_ascii_digit();
    }
    if c <= b'9' {
        return false;
    }
    let word = |w: &[u8]| s.len() >= p + 3 && s[p..p + 3].eq_ignore_ascii_case(w);
    word(b"inf") || word(b"nan")
}
