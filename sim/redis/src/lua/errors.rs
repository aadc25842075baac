//! Errors as Redis 7.0's Lua makes them: its error tables and error
//! handler, the errors `redis.call` raises, and errors raised from Rust as
//! Lua's C functions raise them.

use mlua::{Function, Lua, Table, Value as LuaValue};

/// Redis's `luaPushErrorBuff`: splits `-CODE msg` (or `msg`, code `ERR`)
/// and trims newlines; returns `CODE msg`.
pub fn error_text(err: &str) -> String {
    let (code, msg) = match err.strip_prefix('-') {
        Some(rest) => match rest.find(' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => ("ERR", rest),
        },
        None => ("ERR", err),
    };
    let msg = msg.trim_matches(|c| c == '\r' || c == '\n');
    format!("{code} {msg}")
}

/// Redis's error table: `{err = text}`.
pub(super) fn err_table(lua: &Lua, text: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    Ok(t)
}

/// The error `redis.call` raises: the `err` text of Redis's error table.
#[derive(Debug)]
pub(super) struct CallError(pub(super) String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallError {}

/// An error raised from Rust as Lua would raise a string: its complete
/// text (position included, where Lua's C functions put one). A script's
/// `pcall` sees the string; uncaught, it becomes `ERR <text>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RaisedError(String);

/// The `T` an error value `v` carries, if it carries one, mapped by `f`.
fn external<T: std::error::Error + 'static, R>(v: &LuaValue, f: impl Fn(&T) -> R) -> Option<R> {
    fn walk<T: std::error::Error + 'static>(e: &mlua::Error) -> Option<&T> {
        match e {
            mlua::Error::CallbackError { cause, .. } => walk(cause),
            mlua::Error::ExternalError(x) => x.downcast_ref::<T>(),
            mlua::Error::WithContext { cause, .. } => walk(cause),
            _ => None,
        }
    }
    match v {
        LuaValue::Error(e) => walk::<T>(e).map(f),
        _ => None,
    }
}

/// The text of a `redis.call` error, if `v` is one.
pub(super) fn call_error(v: &LuaValue) -> Option<String> {
    external::<CallError, _>(v, |c| c.0.clone())
}

/// The text of a [`RaisedError`], if `v` is one.
pub(super) fn raised_error(v: &LuaValue) -> Option<String> {
    external::<RaisedError, _>(v, |c| c.0.clone())
}

/// An error raised as a C function raises it with `luaG_runerror` (e.g.
/// "Attempt to modify a readonly table"): the text alone.
pub(crate) fn plain_error(text: impl Into<String>) -> mlua::Error {
    mlua::Error::external(RaisedError(text.into()))
}

/// An error raised as a C function raises it with `luaL_error`: prefixed
/// with its caller's position (`user_script:1: `) when the caller is a Lua
/// function, as `luaL_where(L, 1)` does.
pub(crate) fn caller_error(lua: &Lua, text: &str) -> mlua::Error {
    let position = lua
        .inspect_stack(1, |d| {
            let line = d.current_line().filter(|l| *l > 0)?;
            let src = d.source().short_src.map(|s| s.into_owned())?;
            Some(format!("{src}:{line}: "))
        })
        .flatten()
        .unwrap_or_default();
    plain_error(format!("{position}{text}"))
}

/// `luaL_argerror` for the running Rust function: argument `n` is bad
/// (`bad argument #n to 'name' (why)`), the name being the one its caller
/// called it by.
pub(crate) fn arg_error(lua: &Lua, n: usize, why: &str) -> mlua::Error {
    let (name, method) = lua
        .inspect_stack(0, |d| {
            let names = d.names();
            (
                names.name.map(|s| s.into_owned()),
                names.name_what == Some("method"),
            )
        })
        .unwrap_or((None, false));
    let name = name.unwrap_or_else(|| "?".into());
    if method {
        if n == 1 {
            return caller_error(lua, &format!("calling '{name}' on bad self ({why})"));
        }
        return caller_error(lua, &format!("bad argument #{} to '{name}' ({why})", n - 1));
    }
    caller_error(lua, &format!("bad argument #{n} to '{name}' ({why})"))
}

/// Lua's name for a value's type, as `lua_typename` gives it.
pub(crate) fn type_name(v: &LuaValue) -> &'static str {
    match v {
        LuaValue::Nil => "nil",
        LuaValue::Boolean(_) => "boolean",
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        LuaValue::String(_) => "string",
        LuaValue::Table(_) => "table",
        LuaValue::Function(_) => "function",
        LuaValue::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `luaL_typerror` for argument `n` (1-based) of `args`: `<expected>
/// expected, got <type>` (`no value` past the last argument).
pub(crate) fn type_error(lua: &Lua, args: &[LuaValue], n: usize, expected: &str) -> mlua::Error {
    let got = args.get(n - 1).map_or("no value", type_name);
    arg_error(lua, n, &format!("{expected} expected, got {got}"))
}

/// The text of an error a Lua function called from Rust raised (for
/// passing it on unchanged): without the traceback mlua appends.
pub(crate) fn error_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => match m.find("\nstack traceback:") {
            Some(end) => m[..end].to_string(),
            None => m.clone(),
        },
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        mlua::Error::ExternalError(x) => x.to_string(),
        other => other.to_string(),
    }
}

/// `__redis_error_handler`: the error table Redis 7.0 makes of any error,
/// with the source and line of the script frame that raised it.
pub(super) fn error_handler(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, err: LuaValue| {
        type Info = (String, Option<String>, Option<usize>);
        let frame = |level: usize| -> Option<Info> {
            lua.inspect_stack(level, |d| {
                let s = d.source();
                (
                    s.what.to_string(),
                    s.source.map(|x| x.to_string()),
                    d.current_line(),
                )
            })
        };
        // The raiser's frame, past the C functions (`redis.call` is two)
        // and the library's Lua wrappers.
        let mut level = 1;
        let mut info = frame(level);
        while level < 3 && matches!(&info, Some((w, ..)) if w == "C") {
            level += 1;
            info = frame(level);
        }
        if matches!(&info, Some((_, Some(src), _)) if src == "@redis_lib") {
            info = frame(level + 1);
        }
        let t = match err {
            LuaValue::Table(t) => t,
            ref e if call_error(e).is_some() => err_table(lua, &call_error(e).unwrap_or_default())?,
            ref e if raised_error(e).is_some() => {
                err_table(lua, &format!("ERR {}", raised_error(e).unwrap_or_default()))?
            }
            other => {
                let text = match &other {
                    LuaValue::String(s) => s.to_string_lossy(),
                    LuaValue::Integer(n) => n.to_string(),
                    LuaValue::Number(n) => n.to_string(),
                    LuaValue::Nil => "nil".into(),
                    LuaValue::Boolean(b) => b.to_string(),
                    LuaValue::Error(e) => e.to_string(),
                    o => o.type_name().to_string(),
                };
                err_table(lua, &format!("ERR {text}"))?
            }
        };
        if let Some((_, src, line)) = info {
            if let Some(src) = src {
                t.raw_set("source", src)?;
            }
            t.raw_set("line", line.map_or(-1, |l| l as i64))?;
        }
        Ok(t)
    })
}
