//! `struct`, the library Redis bundles (Roberto Ierusalimschy's
//! `lua_struct.c`, with Redis's bounds fixes): `pack`, `unpack` and `size`
//! of binary records described by a format string, as on x86-64 Linux
//! (little endian native order; `short` 2 bytes, `int` 4, `long` and
//! `size_t` 8; alignment at most 8).
//!
//! Format characters: `>` `<` set the byte order, `!n` the maximum
//! alignment (a power of 2, 8 without `n`), ` ` is ignored; `b` `B` `h`
//! `H` `l` `L` `T` `i[n]` `I[n]` are integers (lowercase signed, `n` up to
//! 32 bytes), `x` a zero byte, `f` `d` a float and a double, `c[n]` `n`
//! bytes of a string (`c0`: all of it, or on unpacking as many as the
//! previous result says), `s` a zero-terminated string.

use mlua::{Lua, MultiValue, Table, Value};

use crate::lua::c_args::{check_bytes, check_number, library, opt_integer};
use crate::lua::{arg_error, caller_error};

/// `MAXINTSIZE`: the widest integer format, in bytes.
const MAX_INT_SIZE: usize = 32;

/// `MAXALIGN` on x86-64: what `!` alone sets.
const MAX_ALIGN: usize = 8;

/// The `struct` table, as `luaopen_struct` registers it.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    type Body = fn(&Lua, &[Value]) -> mlua::Result<MultiValue>;
    let functions: [(&str, Body); 3] = [("pack", pack), ("unpack", unpack), ("size", size)];
    library(lua, &functions)
}

/// Byte order and maximum alignment, as the format's control characters
/// leave them.
struct Header {
    big_endian: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// A format string read one option at a time.
struct Format {
    bytes: Vec<u8>,
    at: usize,
}

impl Format {
    /// The next option character, if any (a NUL byte ends the format, as
    /// it ends a C string).
    fn next_option(&mut self) -> Option<u8> {
        let c = *self.bytes.get(self.at).filter(|c| **c != 0)?;
        self.at += 1;
        Some(c)
    }

    /// `getnum`: the decimal number that follows, or `default`.
    fn number(&mut self, lua: &Lua, default: usize) -> mlua::Result<usize> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(c) = self.bytes.get(self.at).filter(|c| c.is_ascii_digit()) {
            let d = i32::from(c - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(caller_error(lua, "integral size overflow"));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a as usize)
    }

    /// `optsize`: the size of option `opt` (0 for options without one),
    /// reading its number if it takes one.
    fn size(&mut self, lua: &Lua, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'f' => 4,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'c' => self.number(lua, 1)?,
            b'i' | b'I' => {
                let size = self.number(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(caller_error(
                        lua,
                        &format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: applies a control character; anything else is
    /// an invalid option.
    fn control(&mut self, lua: &Lua, opt: u8, h: &mut Header) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.big_endian = true,
            b'<' => h.big_endian = false,
            b'!' => {
                let a = self.number(lua, MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(caller_error(
                        lua,
                        &format!("alignment {a} is not a power of 2"),
                    ));
                }
                h.align = a;
            }
            _ => {
                let why = format!("invalid format option '{}'", opt as char);
                return Err(arg_error(lua, 1, &why));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: padding before an item of `size` at offset `len`.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// The format, argument 1.
fn format_arg(lua: &Lua, args: &[Value]) -> mlua::Result<Format> {
    Ok(Format {
        bytes: check_bytes(lua, args, 1)?,
        at: 0,
    })
}

/// Whether `opt` is one of the integer options.
fn is_integer(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// A double converted to C's `unsigned long` as `putinteger` does: a
/// negative through `long` (out of range: `LONG_MIN`), a positive
/// directly (x86-64's conversion: 2^64 and past give 0, NaN 2^63).
fn to_unsigned_long(n: f64) -> u64 {
    if n.is_nan() {
        1 << 63
    } else if n < 0.0 {
        crate::cjson::c_long_long(n) as u64
    } else if n < 18_446_744_073_709_551_616.0 {
        n as u64
    } else {
        0
    }
}

/// `struct.pack(fmt, ...)`.
fn pack(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let mut fmt = format_arg(lua, args)?;
    // lua_struct.c pushes a nil after the arguments: the first missing one
    // is that nil, not "no value".
    let args = &[args, &[Value::Nil]].concat();
    let mut h = Header::default();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(lua, opt)?;
        let pad = padding(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            o if is_integer(o) => {
                let mut value = to_unsigned_long(check_number(lua, args, arg)?);
                arg += 1;
                let mut bytes = vec![0u8; size];
                for b in bytes.iter_mut() {
                    *b = value as u8;
                    value >>= 8;
                }
                if h.big_endian {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, args, arg)? as f32;
                arg += 1;
                out.extend(ordered(&f.to_le_bytes(), h.big_endian));
            }
            b'd' => {
                let d = check_number(lua, args, arg)?;
                arg += 1;
                out.extend(ordered(&d.to_le_bytes(), h.big_endian));
            }
            b'c' | b's' => {
                let s = check_bytes(lua, args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // lua_struct.c names the argument after this one.
                    return Err(arg_error(lua, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
    }
    Ok(MultiValue::from_iter([Value::String(
        lua.create_string(&out)?,
    )]))
}

/// Little-endian bytes in the order asked for.
fn ordered(le: &[u8], big_endian: bool) -> Vec<u8> {
    let mut v = le.to_vec();
    if big_endian {
        v.reverse();
    }
    v
}

/// `getinteger`: `size` bytes as an integer (only the last eight count),
/// sign-extended from the top bit of `size` bytes when signed.
fn read_integer(bytes: &[u8], big_endian: bool, signed: bool) -> f64 {
    let mut value: u64 = 0;
    let mut push = |b: &u8| value = (value << 8) | u64::from(*b);
    if big_endian {
        bytes.iter().for_each(&mut push);
    } else {
        bytes.iter().rev().for_each(&mut push);
    }
    if !signed {
        return value as f64;
    }
    // C shifts by the count modulo 64 on x86-64.
    let shift = ((bytes.len() * 8).wrapping_sub(1) & 63) as u32;
    let mask = u64::MAX << shift;
    if value & mask != 0 {
        value |= mask;
    }
    value as i64 as f64
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position
/// after them.
fn unpack(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let mut fmt = format_arg(lua, args)?;
    let data = check_bytes(lua, args, 2)?;
    let start = opt_integer(lua, args, 3, 1)?;
    // A C `size_t`: only 0 is refused; a negative start wraps around to
    // a position past any data.
    if start == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    let mut pos = (start as usize).wrapping_sub(1);
    let too_short = || arg_error(lua, 2, "data string too short");
    let mut h = Header::default();
    let mut out: Vec<Value> = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(lua, opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if size > data.len() || pos > data.len() - size {
            return Err(too_short());
        }
        let item = &data[pos..pos + size];
        match opt {
            o if is_integer(o) => out.push(Value::Number(read_integer(
                item,
                h.big_endian,
                o.is_ascii_lowercase(),
            ))),
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = ordered(item, h.big_endian).try_into().unwrap_or_default();
                out.push(Value::Number(f64::from(f32::from_le_bytes(b))));
            }
            b'd' => {
                let b: [u8; 8] = ordered(item, h.big_endian).try_into().unwrap_or_default();
                out.push(Value::Number(f64::from_le_bytes(b)));
            }
            b'c' => {
                if size == 0 {
                    size = previous_size(lua, &mut out)?;
                    if size > data.len() || pos > data.len() - size {
                        return Err(too_short());
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|b| *b == 0) else {
                    return Err(caller_error(lua, "unfinished string in data"));
                };
                out.push(Value::String(lua.create_string(&data[pos..pos + len])?));
                size = len + 1;
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_iter(out))
}

/// `c0` on unpacking: the previous result, a number, is the size (and is
/// not returned).
fn previous_size(lua: &Lua, out: &mut Vec<Value>) -> mlua::Result<usize> {
    let n = out.last().and_then(crate::cjson::to_number);
    let Some(n) = n else {
        return Err(caller_error(lua, "format 'c0' needs a previous size"));
    };
    out.pop();
    // C's conversion of a double to size_t (a negative wraps).
    Ok(if n < 0.0 {
        crate::cjson::c_long_long(n) as usize
    } else {
        to_unsigned_long(n) as usize
    })
}

/// `struct.size(fmt)`: the bytes `pack` makes of a format with no
/// variable-length option.
fn size(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let mut fmt = format_arg(lua, args)?;
    let mut h = Header::default();
    let mut pos = 0usize;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size(lua, opt)?;
        pos += padding(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(lua, opt, &mut h)?;
        }
        pos += size;
    }
    Ok(MultiValue::from_iter([Value::Number(pos as f64)]))
}
