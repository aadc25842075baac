//! `cmsgpack.pack`: Lua values as MessagePack bytes.

use mlua::{Lua, MultiValue, Table, Value};

use crate::cjson::c_int;
use crate::lua::arg_error;
use crate::sandbox::see_through;

/// `LUACMSGPACK_MAX_NESTING`: a table this deep is encoded as nil (so a
/// table that contains itself still encodes).
const MAX_NESTING: usize = 16;

/// `cmsgpack.pack(...)`: the encodings of every argument, concatenated.
pub(super) fn pack(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    if args.is_empty() {
        return Err(arg_error(lua, 0, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for v in args {
        value(lua, &mut out, v, 0)?;
    }
    Ok(MultiValue::from_iter([Value::String(
        lua.create_string(&out)?,
    )]))
}

/// Appends the encoding of `v`, found `level` tables deep.
fn value(lua: &Lua, out: &mut Vec<u8>, v: &Value, level: usize) -> mlua::Result<()> {
    match v {
        Value::String(s) => string(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => number(out, *i as f64),
        Value::Number(n) => number(out, *n),
        Value::Table(t) if level < MAX_NESTING => {
            // A library table is its contents, as in Redis.
            let t = see_through(lua, t)?;
            match array_length(&t)? {
                Some(len) => {
                    header(out, len as u64, [0x90, 0xdc, 0xdd]);
                    for j in 1..=len {
                        value(lua, out, &t.raw_get::<Value>(j)?, level + 1)?;
                    }
                }
                None => {
                    // Counted first, then encoded pair by pair: each value
                    // held from Rust takes a slot of Lua's stack, so a
                    // map of 100,000 strings must never be held at once.
                    let mut count = 0u64;
                    for pair in t.pairs::<Value, Value>() {
                        pair?;
                        count += 1;
                    }
                    header(out, count, [0x80, 0xde, 0xdf]);
                    for pair in t.pairs::<Value, Value>() {
                        let (k, v) = pair?;
                        value(lua, out, &k, level + 1)?;
                        value(lua, out, &v, level + 1)?;
                    }
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

/// `table_is_an_array`: the element count when the keys are exactly the
/// integers 1..n (each one a C `int`), `None` for a map. An empty table
/// is an empty array.
fn array_length(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut count, mut max) = (0i64, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let n = match pair?.0 {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if n <= 0.0 || n.is_infinite() || f64::from(c_int(n)) != n {
            return Ok(None);
        }
        max = max.max(n as i64);
        count += 1;
    }
    Ok((max == count).then_some(count as usize))
}

/// A string: its length's header, then its bytes.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// An array's or a map's header: the fix form up to 15 elements, then
/// 16 and 32 bits.
fn header(out: &mut Vec<u8>, n: u64, [fix, wide16, wide32]: [u8; 3]) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(wide16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(wide32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// A number: an integer when an `int64_t` holds it exactly, a float or a
/// double otherwise.
fn number(out: &mut Vec<u8>, n: f64) {
    let as_int = crate::cjson::c_long_long(n);
    if !n.is_infinite() && as_int as f64 == n {
        integer(out, as_int);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// `mp_encode_int`: the smallest encoding of `n`.
fn integer(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}
