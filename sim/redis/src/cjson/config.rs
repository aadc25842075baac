//! A module's configuration and the functions that read and set it
//! (`encode_sparse_array`, `encode_max_depth`, ...), with lua-cjson's
//! argument checks.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Lua, Value};

use super::number::{c_long_long, to_number};
use super::{Failure, Outcome, lua_text, type_error};
use crate::lua::fmt_g;

/// What lua-cjson does with NaN and infinities when encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InvalidNumbers {
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
    pub(super) sparse_convert: bool,
    pub(super) sparse_ratio: i32,
    pub(super) sparse_safe: i32,
    pub(super) encode_max_depth: i32,
    pub(super) decode_max_depth: i32,
    pub(super) encode_invalid_numbers: InvalidNumbers,
    pub(super) decode_invalid_numbers: bool,
    pub(super) encode_keep_buffer: bool,
    pub(super) encode_number_precision: i32,
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

pub(super) fn encode_sparse_array(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
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

pub(super) fn encode_max_depth(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    integer_setting(config, args, i32::MAX, |c| &mut c.encode_max_depth)
}

pub(super) fn decode_max_depth(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    integer_setting(config, args, i32::MAX, |c| &mut c.decode_max_depth)
}

pub(super) fn encode_number_precision(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
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

pub(super) fn encode_keep_buffer(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    switch_setting(config, args, |c| &mut c.encode_keep_buffer)
}

pub(super) fn decode_invalid_numbers(_: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
    switch_setting(config, args, |c| &mut c.decode_invalid_numbers)
}

pub(super) fn encode_invalid_numbers(lua: &Lua, config: &SharedConfig, args: &[Value]) -> Outcome {
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
