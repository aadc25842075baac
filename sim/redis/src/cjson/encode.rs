//! `cjson.encode`: a Lua value as JSON text.

use mlua::{Lua, Table, Value};

use super::config::{Config, InvalidNumbers, SharedConfig};
use super::number::c_int;
use super::{Failure, Outcome, lua_text};
use crate::lua::{fmt_g, type_name};
use crate::sandbox::see_through;

/// Past this many elements an array is refused as excessively sparse even
/// when sparseness is allowed (`encode_sparse_array(_, 0)`): its text
/// would pass Redis's 512 MB string limit anyway.
const MAX_ARRAY_LEN: i32 = 100_000_000;

/// The error lua-cjson raises for a value it cannot serialise.
fn cannot_serialise(v: &Value, reason: &str) -> String {
    format!("Cannot serialise {}: {reason}", type_name(v))
}

pub(super) fn encode(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
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
