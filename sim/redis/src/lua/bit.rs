//! `bit`, the LuaBitOp 1.0 library Redis bundles: bitwise operations on
//! 32-bit integers. Every argument is a number (or numeric string) taken
//! modulo 2^32 the way LuaBitOp takes a double: it adds 2^52 + 2^51 and
//! keeps the low 32 bits of the sum, so a fraction rounds to nearest (ties
//! to even); every result is that 32-bit pattern read as signed.

use mlua::{Lua, Table, Value};

use crate::lua::c_args::{check_number, library};
use crate::lua::type_error;

/// A `bit` function: its arguments in, its one result out.
type Body = fn(&Lua, &[Value]) -> mlua::Result<Value>;

/// The `bit` table, as `luaopen_bit` registers it.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let functions: [(&str, Body); 12] = [
        ("tobit", tobit),
        ("bnot", bnot),
        ("band", |lua, args| fold(lua, args, |a, b| a & b)),
        ("bor", |lua, args| fold(lua, args, |a, b| a | b)),
        ("bxor", |lua, args| fold(lua, args, |a, b| a ^ b)),
        ("lshift", |lua, args| shift(lua, args, |b, n| b << n)),
        ("rshift", |lua, args| shift(lua, args, |b, n| b >> n)),
        ("arshift", |lua, args| {
            shift(lua, args, |b, n| ((b as i32) >> n) as u32)
        }),
        ("rol", |lua, args| shift(lua, args, u32::rotate_left)),
        ("ror", |lua, args| shift(lua, args, u32::rotate_right)),
        ("bswap", bswap),
        ("tohex", tohex),
    ];
    library(lua, &functions)
}

/// A double's 32 bits as LuaBitOp reads them (see the module's doc).
pub(crate) fn to_bits(n: f64) -> u32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32
}

/// Argument `n` (1-based) as 32 bits; a non-number is LuaBitOp's
/// `number expected` error.
fn bits_arg(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<u32> {
    check_number(lua, args, n)
        .map(to_bits)
        .map_err(|_| type_error(lua, args, n, "number"))
}

/// A result: the 32 bits as a signed number.
fn result(b: u32) -> Value {
    Value::Number(f64::from(b as i32))
}

fn tobit(lua: &Lua, args: &[Value]) -> mlua::Result<Value> {
    Ok(result(bits_arg(lua, args, 1)?))
}

fn bnot(lua: &Lua, args: &[Value]) -> mlua::Result<Value> {
    Ok(result(!bits_arg(lua, args, 1)?))
}

fn bswap(lua: &Lua, args: &[Value]) -> mlua::Result<Value> {
    Ok(result(bits_arg(lua, args, 1)?.swap_bytes()))
}

/// `band`, `bor`, `bxor`: LuaBitOp reads the first argument, then the
/// others from the last one back, so a bad argument is reported in that
/// order.
fn fold(lua: &Lua, args: &[Value], op: fn(u32, u32) -> u32) -> mlua::Result<Value> {
    let mut b = bits_arg(lua, args, 1)?;
    for i in (2..=args.len()).rev() {
        b = op(b, bits_arg(lua, args, i)?);
    }
    Ok(result(b))
}

/// The shifts and rotations: the count is the second argument's low five
/// bits.
fn shift(lua: &Lua, args: &[Value], op: fn(u32, u32) -> u32) -> mlua::Result<Value> {
    let b = bits_arg(lua, args, 1)?;
    let n = bits_arg(lua, args, 2)? & 31;
    Ok(result(op(b, n)))
}

/// `tohex(x [, n])`: the low `|n|` hex digits of `x` (8 by default, at
/// most 8), uppercase for a negative `n`.
fn tohex(lua: &Lua, args: &[Value]) -> mlua::Result<Value> {
    let mut b = bits_arg(lua, args, 1)?;
    let n = if args.len() < 2 {
        8
    } else {
        bits_arg(lua, args, 2)? as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let width = n.unsigned_abs().min(8) as usize;
    let mut out = vec![0u8; width];
    for slot in out.iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    Ok(Value::String(lua.create_string(&out)?))
}
