//! `cjson` as Redis 7.0's Lua has it (lua-cjson 2.1.0): `encode`, `decode`,
//! `null`, the configuration functions and `new`, written from its
//! documented and observed behaviour (the conformance suite compares it
//! with a real `redis-server`):
//!
//! * numbers print as `%.14g` (the precision is configurable, 1 to 14);
//!   NaN and infinities are refused unless `encode_invalid_numbers` allows
//!   them;
//! * a table is an array when every key is a positive integer, unless it is
//!   excessively sparse (its largest index is over twice its element count
//!   and over 10), which is an error by default; an empty table is `{}`;
//!   holes in an array are `null`;
//! * strings are escaped as lua-cjson does: `"`, `\`, `/` (as `\/`), the
//!   control characters and DEL; other bytes pass through untouched;
//! * nesting deeper than 1000 is an error, both ways;
//! * `decode` follows lua-cjson's tokenizer: numbers are read as C's
//!   `strtod` reads them (so, by default, also `0x10`, `+1`, `007`, `inf`,
//!   `nan`), `null` becomes `cjson.null` (a NULL light userdata), a NUL byte
//!   ends the text, and errors name the token and its position.
//!
//! The functions are Rust functions (C functions to Lua), so their errors
//! name the caller's line (`user_script:1: ...`) and the name it called
//! them by, as lua-cjson's `luaL_error` and `luaL_argerror` do, even from a
//! tail call.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use crate::lua::{arg_error, caller_error, fmt_g, type_name};
use crate::sandbox::see_through;

/// What lua-cjson does with NaN and infinities when encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InvalidNumbers {
    /// An error (the default).
    Refuse,
    /// Printed as `nan`, `inf`, `-inf`.
    Print,
    /// Printed as `null`.
    AsNull,
}

/// One module's configuration (lua-cjson keeps one per `cjson.new()`).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    encode_invalid_numbers: InvalidNumbers,
    decode_invalid_numbers: bool,
    encode_keep_buffer: bool,
    encode_number_precision: i32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: InvalidNumbers::Refuse,
            decode_invalid_numbers: true,
            encode_keep_buffer: true,
            encode_number_precision: 14,
        }
    }
}

/// A module configuration shared by its functions.
pub(crate) type SharedConfig = Rc<RefCell<Config>>;

/// Past this many elements an array is refused as excessively sparse even
/// when sparseness is allowed (`encode_sparse_array(_, 0)`): its text
/// would pass Redis's 512 MB string limit anyway.
const MAX_ARRAY_LEN: i32 = 100_000_000;

/// Why a function failed, raised as lua-cjson raises it.
enum Failure {
    /// `luaL_argerror`: argument `n` is bad, for this reason.
    Arg(usize, String),
    /// `luaL_error`: this text, after the caller's position.
    Error(String),
}

impl From<String> for Failure {
    fn from(text: String) -> Failure {
        Failure::Error(text)
    }
}

/// What a function returns to Lua, or why it failed.
type Outcome = Result<Vec<Value>, Failure>;

/// A `cjson` module whose functions share `config`: the global one, or
/// one `cjson.new()` makes.
pub(crate) fn module(lua: &Lua, config: SharedConfig) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    type Body = fn(&Lua, &SharedConfig, &[Value]) -> Outcome;
    let functions: [(&str, Body); 9] = [
        ("encode", encode),
        ("decode", decode),
        ("encode_sparse_array", encode_sparse_array),
        ("encode_max_depth", encode_max_depth),
        ("decode_max_depth", decode_max_depth),
        ("encode_number_precision", encode_number_precision),
        ("encode_keep_buffer", encode_keep_buffer),
        ("encode_invalid_numbers", encode_invalid_numbers),
        ("decode_invalid_numbers", decode_invalid_numbers),
    ];
    for (name, body) in functions {
        let config = config.clone();
        let f = lua.create_function(move |lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            match body(lua, &config, &args) {
                Ok(values) => Ok(MultiValue::from_iter(values)),
                Err(Failure::Arg(n, why)) => Err(arg_error(lua, n, &why)),
                Err(Failure::Error(text)) => Err(caller_error(lua, &text)),
            }
        })?;
        t.raw_set(name, f)?;
    }
    t.raw_set(
        "new",
        lua.create_function(|lua, _: MultiValue| module(lua, SharedConfig::default()))?,
    )?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// `cjson.null`: the NULL light userdata that stands for JSON's `null`.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// `luaL_typerror` for argument `n` (1-based) of `args`.
fn type_error(args: &[Value], n: usize, expected: &str) -> Failure {
    let got = args.get(n - 1).map_or("no value", type_name);
    Failure::Arg(n, format!("{expected} expected, got {got}"))
}

/// A Lua error's text.
fn lua_text(e: mlua::Error) -> Failure {
    Failure::Error(e.to_string())
}

/// A C `(int)` conversion of a double as x86-64 does it: out of range (or
/// NaN) gives `INT_MIN`.
fn c_int(x: f64) -> i32 {
    if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

/// A C `(long long)` conversion of a double as x86-64 does it: out of range
/// (or NaN) gives `LLONG_MIN`.
pub(crate) fn c_long_long(x: f64) -> i64 {
    if x > -9_223_372_036_854_777_856.0 && x < 9_223_372_036_854_775_808.0 {
        x as i64
    } else {
        i64::MIN
    }
}

/// A Lua value as a number, as `lua_tonumber` converts it (numeric strings
/// included).
fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => lua_str2number(&s.as_bytes()),
        _ => None,
    }
}

/// Lua 5.1's `luaO_str2d`: `strtod` (or a hex integer), surrounded by
/// optional white space and nothing else.
fn lua_str2number(s: &[u8]) -> Option<f64> {
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = s.iter().position(|c| !is_space(c))?;
    let (mut value, used) = strtod(&s[start..])?;
    let mut end = start + used;
    if matches!(s.get(end), Some(b'x' | b'X')) {
        // `luaO_str2d` retries a failed `0x...` as an unsigned long.
        let digits = &s[end + 1..];
        let n = digits.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if n == 0 {
            return None;
        }
        value = digits[..n].iter().fold(0u64, |acc, c| {
            acc.wrapping_mul(16)
                .wrapping_add(u64::from((*c as char).to_digit(16).unwrap_or(0)))
        }) as f64;
        end += 1 + n;
    }
    s[end..].iter().all(is_space).then_some(value)
}

/// `luaL_checkinteger` then `json_integer_option`: an integer option in
/// `min..=max`, or `None` when the argument is nil or absent.
fn integer_option(args: &[Value], n: usize, min: i32, max: i32) -> Result<Option<i32>, Failure> {
    let v = match args.get(n - 1) {
        None | Some(Value::Nil) => return Ok(None),
        Some(v) => v,
    };
    let Some(x) = to_number(v) else {
        return Err(type_error(args, n, "number"));
    };
    // lua_Integer is 64-bit; lua-cjson stores it in an int.
    let value = c_long_long(x) as i32;
    if value < min || value > max {
        // lua-cjson names argument 1 whatever the option's position.
        return Err(Failure::Arg(
            1,
            format!("expected integer between {min} and {max}"),
        ));
    }
    Ok(Some(value))
}

/// `json_enum_option`: a boolean, or one of `options` by name (`luaL_checkoption`).
fn enum_option(args: &[Value], n: usize, options: &[&str]) -> Result<Option<usize>, Failure> {
    match args.get(n - 1) {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(usize::from(*b))),
        Some(v) => {
            let name = match v {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(_) | Value::Number(_) => {
                    fmt_g(to_number(v).unwrap_or(0.0), 14).into_bytes()
                }
                _ => return Err(type_error(args, n, "string")),
            };
            match options.iter().position(|o| o.as_bytes() == name) {
                Some(i) => Ok(Some(i)),
                None => Err(Failure::Arg(
                    n,
                    format!("invalid option '{}'", String::from_utf8_lossy(&name)),
                )),
            }
        }
    }
}

/// `json_arg_init`: at most `count` arguments.
fn at_most(args: &[Value], count: usize) -> Result<(), Failure> {
    if args.len() > count {
        return Err(Failure::Arg(count + 1, "found too many arguments".into()));
    }
    Ok(())
}

const ON_OFF: &[&str] = &["off", "on"];

fn encode_sparse_array(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    at_most(args, 3)?;
    let mut c = config.borrow_mut();
    if let Some(v) = enum_option(args, 1, ON_OFF)? {
        c.sparse_convert = v == 1;
    }
    if let Some(v) = integer_option(args, 2, 0, i32::MAX)? {
        c.sparse_ratio = v;
    }
    if let Some(v) = integer_option(args, 3, 0, i32::MAX)? {
        c.sparse_safe = v;
    }
    Ok(vec![
        Value::Boolean(c.sparse_convert),
        Value::Integer(i64::from(c.sparse_ratio)),
        Value::Integer(i64::from(c.sparse_safe)),
    ])
}

/// A configuration function of one integer option.
fn integer_setting(
    config: &SharedConfig,
    args: &[Value],
    max: i32,
    field: fn(&mut Config) -> &mut i32,
) -> Outcome {
    at_most(args, 1)?;
    let mut c = config.borrow_mut();
    if let Some(v) = integer_option(args, 1, 1, max)? {
        *field(&mut c) = v;
    }
    Ok(vec![Value::Integer(i64::from(*field(&mut c)))])
}

fn encode_max_depth(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    integer_setting(config, args, i32::MAX, |c| &mut c.encode_max_depth)
}

fn decode_max_depth(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    integer_setting(config, args, i32::MAX, |c| &mut c.decode_max_depth)
}

fn encode_number_precision(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    integer_setting(config, args, 14, |c| &mut c.encode_number_precision)
}

/// A configuration function of one on/off option.
fn switch_setting(
    config: &SharedConfig,
    args: &[Value],
    field: fn(&mut Config) -> &mut bool,
) -> Outcome {
    at_most(args, 1)?;
    let mut c = config.borrow_mut();
    if let Some(v) = enum_option(args, 1, ON_OFF)? {
        *field(&mut c) = v == 1;
    }
    Ok(vec![Value::Boolean(*field(&mut c))])
}

fn encode_keep_buffer(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    switch_setting(config, args, |c| &mut c.encode_keep_buffer)
}

fn decode_invalid_numbers(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    switch_setting(config, args, |c| &mut c.decode_invalid_numbers)
}

fn encode_invalid_numbers(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    at_most(args, 1)?;
    let mut c = config.borrow_mut();
    if let Some(v) = enum_option(args, 1, &["off", "on", "null"])? {
        c.encode_invalid_numbers = match v {
            0 => InvalidNumbers::Refuse,
            1 => InvalidNumbers::Print,
            _ => InvalidNumbers::AsNull,
        };
    }
    Ok(vec![match c.encode_invalid_numbers {
        InvalidNumbers::Refuse => Value::Boolean(false),
        InvalidNumbers::Print => Value::Boolean(true),
        InvalidNumbers::AsNull => Value::String(lua.create_string("null").map_err(lua_text)?),
    }])
}

// ===== encoding =====

/// The error lua-cjson raises for a value it cannot serialise.
fn cannot_serialise(v: &Value, reason: &str) -> String {
    format!("Cannot serialise {}: {reason}", type_name(v))
}

fn encode(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    if args.len() != 1 {
        return Err(Failure::Arg(1, "expected 1 argument".into()));
    }
    let config = config.borrow().clone();
    let mut out = Vec::new();
    Encoder {
        lua,
        config: &config,
        out: &mut out,
    }
    .value(&args[0], 0)?;
    let s = lua.create_string(&out).map_err(lua_text)?;
    Ok(vec![Value::String(s)])
}

struct Encoder<'a> {
    lua: &'a Lua,
    config: &'a Config,
    out: &'a mut Vec<u8>,
}

impl Encoder<'_> {
    fn value(&mut self, v: &Value, depth: i32) -> Result<(), String> {
        match v {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(i) => self.number(*i as f64, v)?,
            Value::Number(n) => self.number(*n, v)?,
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(t) => {
                // A library table is its contents, as in Redis.
                let t = &see_through(self.lua, t).map_err(|e| e.to_string())?;
                let depth = depth + 1;
                if depth > self.config.encode_max_depth {
                    return Err(format!("Cannot serialise, excessive nesting ({depth})"));
                }
                match self.array_length(t, v)? {
                    Some(len) => self.array(t, len, depth)?,
                    None => self.object(t, depth)?,
                }
            }
            other => return Err(cannot_serialise(other, "type not supported")),
        }
        Ok(())
    }

    fn string(&mut self, s: &[u8]) {
        self.out.push(b'"');
        for &c in s {
            match c {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                0x08 => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                0x0c => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..0x20 | 0x7f => self.out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
                _ => self.out.push(c),
            }
        }
        self.out.push(b'"');
    }

    /// A number (`v` is the value it came from, for the error).
    fn number(&mut self, n: f64, v: &Value) -> Result<(), String> {
        if n.is_finite() {
            let s = fmt_g(n, self.config.encode_number_precision as usize);
            self.out.extend_from_slice(s.as_bytes());
            return Ok(());
        }
        match self.config.encode_invalid_numbers {
            InvalidNumbers::Refuse => Err(cannot_serialise(v, "must not be NaN or Inf")),
            InvalidNumbers::AsNull => {
                self.out.extend_from_slice(b"null");
                Ok(())
            }
            InvalidNumbers::Print => {
                let s = if n.is_nan() {
                    "nan".to_string()
                } else {
                    fmt_g(n, 14)
                };
                self.out.extend_from_slice(s.as_bytes());
                Ok(())
            }
        }
    }

    /// lua-cjson's `lua_array_length`: `Some(n)` for an array of `n`
    /// elements, `None` for an object. Its integer arithmetic is C's `int`.
    fn array_length(&self, t: &Table, v: &Value) -> Result<Option<i32>, String> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair.map_err(|e| e.to_string())?;
            let k = match k {
                Value::Integer(i) => i as f64,
                Value::Number(n) => n,
                _ => return Ok(None),
            };
            if k == 0.0 || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            if k > f64::from(max) {
                max = c_int(k);
            }
            items = items.wrapping_add(1);
        }
        let c = self.config;
        if c.sparse_ratio > 0 && max > items.wrapping_mul(c.sparse_ratio) && max > c.sparse_safe {
            if !c.sparse_convert {
                return Err(cannot_serialise(v, "excessively sparse array"));
            }
            return Ok(None);
        }
        if max > MAX_ARRAY_LEN {
            return Err(cannot_serialise(v, "excessively sparse array"));
        }
        Ok((max > 0).then_some(max))
    }

    fn array(&mut self, t: &Table, len: i32, depth: i32) -> Result<(), String> {
        self.out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                self.out.push(b',');
            }
            let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            self.value(&item, depth)?;
        }
        self.out.push(b']');
        Ok(())
    }

    fn object(&mut self, t: &Table, depth: i32) -> Result<(), String> {
        self.out.push(b'{');
        let mut first = true;
        for pair in t.pairs::<Value, Value>() {
            let (k, item) = pair.map_err(|e| e.to_string())?;
            if !first {
                self.out.push(b',');
            }
            first = false;
            match &k {
                Value::Integer(i) => {
                    self.out.push(b'"');
                    self.number(*i as f64, &k)?;
                    self.out.extend_from_slice(b"\":");
                }
                Value::Number(n) => {
                    self.out.push(b'"');
                    self.number(*n, &k)?;
                    self.out.extend_from_slice(b"\":");
                }
                Value::String(s) => {
                    self.string(&s.as_bytes());
                    self.out.push(b':');
                }
                other => {
                    return Err(cannot_serialise(
                        other,
                        "table key must be a number or string",
                    ));
                }
            }
            self.value(&item, depth)?;
        }
        self.out.push(b'}');
        Ok(())
    }
}

// ===== decoding =====

fn decode(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
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

/// C's `strtod` (glibc, "C" locale) at the start of `s`: the value and the
/// bytes it used, or `None` when no number starts there.
pub(crate) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let byte = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    let negative = byte(0) == b'-';
    if matches!(byte(0), b'+' | b'-') {
        i = 1;
    }
    let sign = |x: f64| if negative { -x } else { x };
    let starts = |at: usize, w: &[u8]| {
        s.len() >= at + w.len() && s[at..at + w.len()].eq_ignore_ascii_case(w)
    };
    if starts(i, b"inf") {
        let used = if starts(i, b"infinity") { i + 8 } else { i + 3 };
        return Some((sign(f64::INFINITY), used));
    }
    if starts(i, b"nan") {
        let mut used = i + 3;
        if byte(used) == b'(' {
            let n = s[used + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            if byte(used + 1 + n) == b')' {
                used += n + 2;
            }
        }
        return Some((sign(f64::NAN), used));
    }
    if byte(i) == b'0' && byte(i + 1) | 0x20 == b'x' {
        let hex_start = i + 2;
        if byte(hex_start).is_ascii_hexdigit()
            || (byte(hex_start) == b'.' && byte(hex_start + 1).is_ascii_hexdigit())
        {
            let (v, used) = hex_float(&s[hex_start..]);
            return Some((sign(v), hex_start + used));
        }
        // "0x" with no digits: only the 0 is a number.
        return Some((sign(0.0), i + 1));
    }
    let start = i;
    let int_digits = s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if byte(i) == b'.' {
        frac_digits = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if int_digits + frac_digits > 0 {
            i += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if byte(i) | 0x20 == b'e' {
        let mut j = i + 1;
        if matches!(byte(j), b'+' | b'-') {
            j += 1;
        }
        let exp_digits = s[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp_digits > 0 {
            i = j + exp_digits;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).ok()?;
    let v: f64 = text.parse().ok()?;
    Some((sign(v), i))
}

/// The digits of a hex float after `0x` (`h.hhhp±d`): its value and the
/// bytes used. Keeps 64 significant bits (and a sticky bit for the rest),
/// so the value is rounded once, to nearest, as glibc's is (subnormal
/// results aside).
fn hex_float(s: &[u8]) -> (f64, usize) {
    let mut mantissa: u64 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut i = 0;
    let mut seen_point = false;
    loop {
        let c = s.get(i).copied().unwrap_or(0);
        if c == b'.' && !seen_point {
            seen_point = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else {
            break;
        };
        if mantissa >> 60 == 0 {
            mantissa = mantissa * 16 + u64::from(d);
            if seen_point {
                exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_point {
                exp += 4;
            }
        }
        i += 1;
    }
    if s.get(i).copied().unwrap_or(0) | 0x20 == b'p' {
        let mut j = i + 1;
        let negative = s.get(j) == Some(&b'-');
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let digits = s[j.min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let e = s[j..j + digits]
                .iter()
                .fold(0i64, |acc, c| (acc * 10 + i64::from(c - b'0')).min(100_000));
            exp += if negative { -e } else { e };
            i = j + digits;
        }
    }
    if sticky {
        mantissa |= 1;
    }
    let mut v = mantissa as f64;
    // Scale by 2^exp in steps that cannot overflow on the way.
    while exp > 0 {
        let step = exp.min(1000);
        v *= 2f64.powi(step as i32);
        exp -= step;
    }
    while exp < 0 {
        let step = exp.max(-1000);
        v *= 2f64.powi(step as i32);
        exp -= step;
    }
    (v, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtod_reads_what_glibc_reads() {
        let cases: &[(&str, f64, usize)] = &[
            ("1", 1.0, 1),
            ("-2.5e3x", -2500.0, 6),
            ("1.", 1.0, 2),
            ("1e", 1.0, 1),
            ("1e+", 1.0, 1),
            ("0x10", 16.0, 4),
            ("0x", 0.0, 1),
            ("0x1p4", 16.0, 5),
            ("0x.8", 0.5, 4),
            ("+7", 7.0, 2),
            ("007", 7.0, 3),
            ("1e400", f64::INFINITY, 5),
            ("-Infinity", f64::NEG_INFINITY, 9),
            ("infinit", f64::INFINITY, 3),
        ];
        for (text, value, used) in cases {
            assert_eq!(strtod(text.as_bytes()), Some((*value, *used)), "{text}");
        }
        let (nan, used) = strtod(b"nan(12)x").unwrap();
        assert!(nan.is_nan());
        assert_eq!(used, 7);
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"."), None);
        assert_eq!(strtod(b"e5"), None);
    }

    #[test]
    fn numbers_convert_to_c_integers_as_x86_does() {
        assert_eq!(c_long_long(1e300), i64::MIN);
        assert_eq!(c_long_long(f64::NAN), i64::MIN);
        assert_eq!(c_long_long(-3.9), -3);
        assert_eq!(c_int(2f64.powi(40)), i32::MIN);
        assert_eq!(c_int(12.0), 12);
    }

    #[test]
    fn lua_reads_numeric_strings_as_lua_does() {
        assert_eq!(lua_str2number(b" 0x10 "), Some(16.0));
        assert_eq!(lua_str2number(b"5"), Some(5.0));
        assert_eq!(lua_str2number(b"5x"), None);
        assert_eq!(lua_str2number(b""), None);
    }
}
