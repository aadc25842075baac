//! Global protection, as Redis 7.0 has it: the globals table and every
//! table reachable from it (`redis`, `string`, `math`, `table`,
//! `coroutine`, `cjson`, their metatables, the strings' metatable) are
//! read-only, and reading a global that does not exist is an error:
//!
//! * a write (`x = 1`, `_G = nil`, `redis.call = nil`, `rawset(_G, ...)`,
//!   `setmetatable(_G, nil)`) fails with `Attempt to modify a readonly
//!   table`;
//! * a read of an unknown global fails with `Script attempted to access
//!   nonexistent global variable 'x'`.
//!
//! Redis flags tables read-only with a patch to its Lua VM; stock Lua has
//! no such flag. So each protected table is replaced by an empty proxy
//! that reads through to it and refuses writes (its `__newindex`), and
//! scripts get the proxy of the globals as their environment (and as
//! `_G`). The raw functions, which bypass metatables, are replaced by Rust
//! functions that see through the proxies (`rawget`, `next`, `pairs`,
//! `ipairs`, `getmetatable`) or refuse them (`rawset`, `setmetatable`),
//! with the original functions' argument checks and error texts; so does
//! `table.insert`, the one library function that can write into a table
//! a script cannot otherwise write (`table.remove` and `table.sort` have
//! nothing to move in a proxy, which has no elements). Being Rust (C)
//! functions, their errors name the caller's line even from a tail call,
//! as Redis's do.

use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Table, Value};

use crate::lua::{arg_error, caller_error, error_message, plain_error, type_error};

/// The Lua side: builds the proxies and installs the raw functions.
/// Receives the proxy → table map, the proxy → metatable-view map, the
/// Rust raw functions and `table.insert`; returns the globals' proxy and what `getmetatable`
/// shows for strings.
const SANDBOX: &str = r#"
local shows, views, raw, table_insert = ...
local next, rawset, setmetatable, type, error = next, rawset, setmetatable, type, error
local G = _G
local function refuse()
  error('Attempt to modify a readonly table', 2)
end
local function readonly(t, index)
  local p = setmetatable({}, {__index = index or t, __newindex = refuse})
  shows[p] = t
  return p
end
local function protect(t)
  for k, v in next, t do
    if type(v) == 'table' and not shows[v] then rawset(t, k, protect(v)) end
  end
  return readonly(t)
end
local function nonexistent(_, k)
  local kt = type(k)
  if kt ~= 'string' and kt ~= 'number' then
    error('Second argument to luaProtectedTableError must be a string or number', 2)
  end
  error("Script attempted to access nonexistent global variable '" .. k .. "'", 2)
end
for name, f in next, raw do rawset(G, name, f) end
rawset(G.table, 'insert', table_insert)
setmetatable(G, {__index = nonexistent})
for k, v in next, G do
  if type(v) == 'table' and v ~= G then rawset(G, k, protect(v)) end
end
local globals = readonly(G)
rawset(G, '_G', globals)
views[globals] = readonly({__index = nonexistent})
return globals, readonly({__index = G.string})
"#;

/// Where `views` keeps what `getmetatable` shows for strings (every other
/// key is a proxy).
const STRING_VIEW: &str = "string";

/// Protects the globals of `lua` (call once, after the library is set up):
/// returns the read-only view of them to install as the scripts' globals.
pub(crate) fn protect(lua: &Lua) -> mlua::Result<Table> {
    let g = lua.globals();
    let shows = lua.create_table()?;
    let views = lua.create_table()?;
    let original = |name: &str| g.raw_get::<Function>(name);
    let (next, ipairs) = (original("next")?, original("ipairs")?);
    let (getmetatable, setmetatable) = (original("getmetatable")?, original("setmetatable")?);
    let raw = lua.create_table()?;

    let s = shows.clone();
    let protected_next = function(lua, move |lua, args| {
        let t = shown(&s, &table_arg(lua, args, 1)?)?;
        let key = args.get(1).cloned().unwrap_or(Value::Nil);
        next.call::<MultiValue>((t, key))
            .map_err(|e| plain_error(error_message(&e)))
    })?;
    raw.raw_set("next", protected_next.clone())?;

    raw.raw_set(
        "pairs",
        function(lua, move |lua, args| {
            let t = table_arg(lua, args, 1)?;
            Ok((protected_next.clone(), t, Value::Nil))
        })?,
    )?;

    let s = shows.clone();
    raw.raw_set(
        "ipairs",
        function(lua, move |lua, args| {
            let t = shown(&s, &table_arg(lua, args, 1)?)?;
            ipairs
                .call::<MultiValue>(t)
                .map_err(|e| plain_error(error_message(&e)))
        })?,
    )?;

    let s = shows.clone();
    raw.raw_set(
        "rawget",
        function(lua, move |lua, args| {
            let t = shown(&s, &table_arg(lua, args, 1)?)?;
            need_values(lua, args, 2)?;
            t.raw_get::<Value>(args[1].clone())
        })?,
    )?;

    let s = shows.clone();
    raw.raw_set(
        "rawset",
        function(lua, move |lua, args| {
            let t = table_arg(lua, args, 1)?;
            need_values(lua, args, 3)?;
            if is_proxy(&s, &t)? {
                return Err(plain_error("Attempt to modify a readonly table"));
            }
            t.raw_set(args[1].clone(), args[2].clone())
                .map_err(|e| plain_error(error_message(&e)))?;
            Ok(t)
        })?,
    )?;

    let (s, v) = (shows.clone(), views.clone());
    raw.raw_set(
        "getmetatable",
        function(lua, move |lua, args| match args.first() {
            None => Err(arg_error(lua, 1, "value expected")),
            Some(Value::Table(t)) if is_proxy(&s, t)? => v.raw_get::<Value>(t.clone()),
            Some(Value::String(_)) => v.raw_get::<Value>(STRING_VIEW),
            Some(other) => getmetatable.call::<Value>(other.clone()),
        })?,
    )?;

    let s = shows.clone();
    raw.raw_set(
        "setmetatable",
        function(lua, move |lua, args| {
            let t = table_arg(lua, args, 1)?;
            let mt = match args.get(1) {
                Some(mt @ (Value::Nil | Value::Table(_))) => mt.clone(),
                _ => return Err(arg_error(lua, 2, "nil or table expected")),
            };
            if is_proxy(&s, &t)? {
                return Err(plain_error("Attempt to modify a readonly table"));
            }
            // The original's only error left: a `__metatable` field, which
            // it words as luaL_error does (the caller's line first).
            setmetatable
                .call::<Value>((t, mt))
                .map_err(|e| caller_error(lua, &error_message(&e)))
        })?,
    )?;

    let insert = g.raw_get::<Table>("table")?.raw_get::<Function>("insert")?;
    let s = shows.clone();
    let table_insert = function(lua, move |lua, args| {
        let t = table_arg(lua, args, 1)?;
        let mut args = args.to_vec();
        if !is_proxy(&s, &t)? {
            return call_original(lua, &insert, args);
        }
        // The original's own argument checks first (on an empty stand-in,
        // as empty as the proxy), then the refusal.
        args[0] = Value::Table(lua.create_table()?);
        call_original(lua, &insert, args)?;
        Err(plain_error("Attempt to modify a readonly table"))
    })?;

    let (globals, string_view): (Table, Table) = lua
        .load(SANDBOX)
        .set_name("@redis_lib")
        .call((shows.clone(), views.clone(), raw, table_insert))?;
    views.raw_set(STRING_VIEW, string_view)?;
    lua.set_named_registry_value(SHOWS, shows)?;
    Ok(globals)
}

/// Where the registry keeps the proxy → table map, for [`see_through`].
const SHOWS: &str = "simredis.readonly_proxies";

/// The table a read-only proxy reads through to, or `t` itself (for Rust
/// code that walks tables raw, as `cjson.encode` does).
pub(crate) fn see_through(lua: &Lua, t: &Table) -> mlua::Result<Table> {
    match lua.named_registry_value::<Value>(SHOWS)? {
        Value::Table(shows) => shown(&shows, t),
        _ => Ok(t.clone()),
    }
}

/// A Lua function of Rust that takes its arguments as a slice.
fn function<R: IntoLuaMulti>(
    lua: &Lua,
    body: impl Fn(&Lua, &[Value]) -> mlua::Result<R> + 'static,
) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        body(lua, &args)
    })
}

/// Argument `n` as a table (`luaL_checktype(L, n, LUA_TTABLE)`).
fn table_arg(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<Table> {
    match args.get(n - 1) {
        Some(Value::Table(t)) => Ok(t.clone()),
        _ => Err(type_error(lua, args, n, "table")),
    }
}

/// Arguments up to `n` are present (`luaL_checkany` on each).
fn need_values(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<()> {
    if args.len() < n {
        return Err(arg_error(lua, args.len() + 1, "value expected"));
    }
    Ok(())
}

/// Whether `t` is a read-only proxy.
fn is_proxy(shows: &Table, t: &Table) -> mlua::Result<bool> {
    Ok(!shows.raw_get::<Value>(t.clone())?.is_nil())
}

/// The table a proxy reads through to, or `t` itself.
fn shown(shows: &Table, t: &Table) -> mlua::Result<Table> {
    Ok(match shows.raw_get::<Value>(t.clone())? {
        Value::Table(shown) => shown,
        _ => t.clone(),
    })
}

/// Calls a library function from Rust on behalf of the script, raising its
/// errors as it would have raised them called from the script: its
/// argument errors name the function as the script called it, its other
/// (`luaL_error`) errors start with the script's line.
fn call_original(lua: &Lua, f: &Function, args: Vec<Value>) -> mlua::Result<MultiValue> {
    f.call::<MultiValue>(MultiValue::from_iter(args))
        .map_err(|e| {
            let text = error_message(&e);
            let argument = text
                .strip_prefix("bad argument #")
                .and_then(|rest| rest.split_once(" to '?' ("))
                .and_then(|(n, why)| Some((n.parse::<usize>().ok()?, why.strip_suffix(')')?)));
            match argument {
                Some((n, why)) => arg_error(lua, n, why),
                None => caller_error(lua, &text),
            }
        })
}
