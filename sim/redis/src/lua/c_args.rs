//! Arguments of the Rust functions the bundled libraries (`bit`, `struct`,
//! `cmsgpack`) are made of, checked as Lua 5.1's `luaL_check*` functions
//! check a C function's: a numeric string is a number, a number is a
//! string (printed as `%.14g`), and anything else is `bad argument #n to
//! 'name' (<type> expected, got <type>)`.

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

use crate::cjson::{c_long_long, to_number};
use crate::lua::{fmt_g, type_error};

/// `luaL_checknumber(L, n)` (1-based).
pub(crate) fn check_number(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<f64> {
    args.get(n - 1)
        .and_then(to_number)
        .ok_or_else(|| type_error(lua, args, n, "number"))
}

/// `luaL_checkinteger(L, n)`: the number cast to C's `ptrdiff_t`.
pub(crate) fn check_integer(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<i64> {
    check_number(lua, args, n).map(c_long_long)
}

/// `luaL_optinteger(L, n, default)`: `default` when the argument is
/// missing or nil.
pub(crate) fn opt_integer(lua: &Lua, args: &[Value], n: usize, default: i64) -> mlua::Result<i64> {
    match args.get(n - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, args, n),
    }
}

/// `luaL_checklstring(L, n)`: the bytes of a string, or of a number as Lua
/// prints it.
pub(crate) fn check_bytes(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<Vec<u8>> {
    match args.get(n - 1) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(i)) => Ok(fmt_g(*i as f64, 14).into_bytes()),
        Some(Value::Number(x)) => Ok(fmt_g(*x, 14).into_bytes()),
        _ => Err(type_error(lua, args, n, "string")),
    }
}

/// A library function: its arguments in, its results out.
pub(crate) type LibraryFn<R> = fn(&Lua, &[Value]) -> mlua::Result<R>;

/// A library table of host functions, each called with its arguments as a
/// slice, as a C library's `luaL_Reg` list registers them.
pub(crate) fn library<R: IntoLuaMulti + 'static>(
    lua: &Lua,
    functions: &[(&str, LibraryFn<R>)],
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for &(name, body) in functions {
        let f = lua.create_function(move |lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            body(lua, &args)
        })?;
        t.raw_set(name, f)?;
    }
    Ok(t)
}
