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

mod config;
mod decode;
mod encode;
pub(crate) mod number;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

pub(crate) use config::SharedConfig;
pub(crate) use number::c_long_long;

use config::{
    decode_invalid_numbers, decode_max_depth, encode_invalid_numbers, encode_keep_buffer,
    encode_max_depth, encode_number_precision, encode_sparse_array,
};
use decode::decode;
use encode::encode;

use crate::lua::{arg_error, caller_error, type_name};

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

#[cfg(test)]
mod tests;
