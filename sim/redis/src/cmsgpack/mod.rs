//! `cmsgpack`, the MessagePack library Redis bundles (lua-cmsgpack 0.4.0):
//! `pack`, `unpack`, `unpack_one` and `unpack_limit`, with its encoding
//! choices, so the bytes are Redis's:
//!
//! * a number that a C `int64_t` holds exactly is the smallest integer
//!   encoding (fixnums, then 8, 16, 32 and 64 bits, unsigned for positive
//!   numbers); any other number is a float when a `float` holds it exactly
//!   (infinities included), a double otherwise (NaN included);
//! * a string is a fixstr, str8, str16 or str32;
//! * a table whose keys are exactly 1..n is an array, any other a map (in
//!   the table's own `next` order); tables nested 16 deep, functions,
//!   `nil` and userdata are nil;
//! * `pack` concatenates the encodings of all its arguments; `unpack`
//!   returns every value its input holds, `unpack_one` and `unpack_limit`
//!   the first ones after a byte offset, preceded by the offset after them
//!   (-1 at the end of the input).
//!
//! Its functions are Rust functions (C functions to Lua), so their errors
//! name the caller's line, as `luaL_error` does.

mod decode;
mod encode;

use mlua::{Lua, MultiValue, Table, Value};

/// The `cmsgpack` table, as `luaopen_cmsgpack` registers it.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    type Body = fn(&Lua, &[Value]) -> mlua::Result<MultiValue>;
    let functions: [(&str, Body); 4] = [
        ("pack", encode::pack),
        ("unpack", decode::unpack),
        ("unpack_one", decode::unpack_one),
        ("unpack_limit", decode::unpack_limit),
    ];
    let t = crate::lua::c_args::library(lua, &functions)?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

#[cfg(test)]
mod tests;
