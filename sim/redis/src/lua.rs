//! Lua scripting as Redis 7.0 does it: one Lua 5.1 state per node, scripts
//! cached by SHA1, `redis.call` / `redis.pcall` bound to the node, and
//! Redis's conversion rules between Lua values and RESP replies.
//!
//! The error handler and the error-table format are Redis 7.0's own (see
//! `script_lua.c`), so failing scripts print exactly what Redis prints, e.g.
//! `ERR user_script:1: boom script: <sha>, on @user_script:1.`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use mlua::{Function, HookTriggers, Lua, MultiValue, Table, Value as LuaValue, VmState};

use crate::busy::{Interrupt, ScriptWatch};
use crate::resp::Reply;

/// Executes one command on behalf of a script (`redis.call`).
pub type CallFn = Rc<dyn Fn(&[Vec<u8>]) -> Reply>;

/// The Lua side of the library: the error handler, `redis.call` and
/// `redis.pcall` wrappers, `cjson`. Runs once per state, before global
/// protection ([`crate::sandbox`]); returns the function that runs a script.
const LIB: &str = r#"
local raw_call, raw_call_raise, sha1hex, push_error, to_err_table, aborted, cjson_module = ...
local error, type, select, xpcall, unpack = error, type, select, xpcall, unpack
local maxn = table.maxn
redis = {}
redis.call = raw_call_raise
local raw_pcall = pcall
pcall = function (...)
  -- Redis's pcall calls its own result placeholder when given nothing.
  if select('#', ...) == 0 then return false, 'attempt to call a boolean value' end
  local r = {raw_pcall(...)}
  if not r[1] and aborted() then error(r[2], 0) end
  if not r[1] then r[2] = to_err_table(r[2]) end
  return unpack(r, 1, maxn(r))
end
redis.pcall = function (...)
  return raw_call(...)
end
redis.sha1hex = sha1hex
redis.error_reply = function (...)
  local n = select('#', ...)
  local e = ...
  if n ~= 1 or type(e) ~= 'string' then
    return push_error('wrong number or type of arguments')
  end
  if e:sub(1,1) ~= '-' then e = '-' .. e end
  return push_error(e)
end
redis.status_reply = function (...)
  local n = select('#', ...)
  local s = ...
  if n ~= 1 or type(s) ~= 'string' then
    return push_error('wrong number or type of arguments')
  end
  return {ok=s}
end
redis.log = function () end
redis.LOG_DEBUG = 0
redis.LOG_VERBOSE = 1
redis.LOG_NOTICE = 2
redis.LOG_WARNING = 3
redis.replicate_commands = function () return true end
redis.set_repl = function () end
redis.REPL_NONE = 0
redis.REPL_AOF = 1
redis.REPL_SLAVE = 2
redis.REPL_REPLICA = 2
redis.REPL_ALL = 3
redis.setresp = function () end
redis.breakpoint = function () return false end
redis.debug = function () end
redis.REDIS_VERSION = '7.0.15'
redis.REDIS_VERSION_NUM = 0x0007000f

cjson = cjson_module

-- Not in Redis 7.0.15 as Debian builds it (getfenv, setfenv and newproxy
-- went with the Lua sandbox fixes), nor in any Redis (the file functions).
dofile = nil
loadfile = nil
print = nil
getfenv = nil
setfenv = nil
newproxy = nil
local error_handler = __redis_error_handler
__redis_error_handler = nil
__redis__err__handler = error_handler
local run = function (f)
  return xpcall(f, error_handler)
end

return run
"#;

/// A node's scripting engine.
pub struct LuaEngine {
    lua: Lua,
    run: Function,
    /// The globals themselves, behind the read-only view scripts see (see
    /// `LIB`); `KEYS` and `ARGV` are set here.
    globals: Table,
    /// The configuration of the global `cjson` module (SCRIPT FLUSH resets
    /// it, as Redis's new Lua state does).
    cjson: crate::cjson::SharedConfig,
    scripts: RefCell<BTreeMap<String, Function>>,
    budget: Rc<Budget>,
}

/// How often (in VM instructions) the hook looks at a running script.
/// Coarse, so that normal scripts pay next to nothing for it.
const HOOK_EVERY: u32 = 10_000;

/// The reply of a script aborted for running too long.
pub const SCRIPT_ABORTED: &str = "ERR Script aborted: it ran past the node's script limit";

thread_local! {
    /// Scripts aborted by the hook on this thread (see [`aborted_scripts`]).
    static ABORTED: Cell<u64> = const { Cell::new(0) };
}

/// How many scripts the hook has aborted on this thread, in any node. A
/// simulation runs on one thread, so a harness compares the count before
/// and after a run to learn that a runaway script cut it short (the
/// nodes live inside turmoil's hosts, out of its reach).
pub fn aborted_scripts() -> u64 {
    ABORTED.with(Cell::get)
}

/// Why a script stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// It ran past the instruction limit (a simulation's bound).
    InstructionLimit,
    /// `SCRIPT KILL` (real-TCP server only).
    Killed,
    /// The server is stopping (real-TCP server only).
    Shutdown,
}

/// Redis's error in a killed script (the handler adds where it was).
const SCRIPT_KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// What bounds a running script, checked by the count hook: in a
/// simulation the instruction limit; on the real-TCP server (which has a
/// [`ScriptWatch`]) the front's `SCRIPT KILL` and shutdown, and no limit
/// at all, as in Redis.
struct Budget {
    instruction_limit: Cell<u64>,
    /// Instructions the running script has run (in steps of the hook).
    instructions: Cell<u64>,
    /// The real-TCP server's watch on the running script.
    watch: RefCell<Option<Arc<ScriptWatch>>>,
    /// Why the last script stopped early, if it did.
    stop: Cell<Option<Stop>>,
}

impl Budget {
    /// Called every [`HOOK_EVERY`] instructions: an error stops the script.
    fn check(&self) -> mlua::Result<()> {
        if self.watch.borrow().is_some() {
            return self.interrupted();
        }
        let n = self.instructions.get() + u64::from(HOOK_EVERY);
        self.instructions.set(n);
        if n >= self.instruction_limit.get() {
            self.stop.set(Some(Stop::InstructionLimit));
            return Err(mlua::Error::runtime(
                "Script aborted: it ran past the node's script limit",
            ));
        }
        Ok(())
    }

    /// Raises `SCRIPT KILL`'s error, or stops the script for a shutdown,
    /// if the real-TCP server's front asked to. Also checked after every
    /// `redis.call`, so a killed script runs no further command.
    fn interrupted(&self) -> mlua::Result<()> {
        let asked = self.watch.borrow().as_ref().and_then(|w| w.interrupt());
        match asked {
            None => Ok(()),
            Some(Interrupt::Kill) => {
                self.stop.set(Some(Stop::Killed));
                Err(mlua::Error::external(CallError(SCRIPT_KILLED.into())))
            }
            Some(Interrupt::Shutdown) => {
                self.stop.set(Some(Stop::Shutdown));
                Err(mlua::Error::runtime(
                    "Script aborted: the server is stopping",
                ))
            }
        }
    }
}

/// The SHA1 of a script body, lowercase hex (as Redis names scripts).
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

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

/// `%.17g`, as Redis formats Lua numbers passed to commands.
pub fn fmt_g17(n: f64) -> String {
    fmt_g(n, 17)
}

/// `%.<precision>g`, as C's `printf` formats a double (glibc's texts for
/// NaN and the infinities).
pub fn fmt_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.into();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = precision.max(1);
    let e = format!("{n:.*e}", p - 1);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let p = i32::try_from(p).unwrap_or(i32::MAX);
    if (-4..p).contains(&x) {
        let decimals = (p - 1 - x).max(0) as usize;
        let s = format!("{n:.decimals$}");
        strip_zeros(&s)
    } else {
        let m = strip_zeros(mant);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", x.abs())
    }
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

fn err_table(lua: &Lua, text: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    Ok(t)
}

/// The error `redis.call` raises: the `err` text of Redis's error table.
#[derive(Debug)]
struct CallError(String);

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
fn call_error(v: &LuaValue) -> Option<String> {
    external::<CallError, _>(v, |c| c.0.clone())
}

/// The text of a [`RaisedError`], if `v` is one.
fn raised_error(v: &LuaValue) -> Option<String> {
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

/// Runs one command for `redis.call` / `redis.pcall`: the reply as a Lua
/// value, and whether it is an error.
fn call_command(lua: &Lua, call: &CallFn, args: MultiValue) -> mlua::Result<(LuaValue, bool)> {
    let mut argv: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    for a in args {
        match a {
            LuaValue::String(s) => argv.push(s.as_bytes().to_vec()),
            LuaValue::Integer(n) => argv.push(n.to_string().into_bytes()),
            LuaValue::Number(n) => argv.push(fmt_g17(n).into_bytes()),
            _ => {
                let t = err_table(
                    lua,
                    "ERR Lua redis lib command arguments must be strings or integers",
                )?;
                return Ok((LuaValue::Table(t), true));
            }
        }
    }
    if argv.is_empty() {
        let t = err_table(
            lua,
            "ERR Please specify at least one argument for this redis lib call",
        )?;
        return Ok((LuaValue::Table(t), true));
    }
    let reply = call(&argv);
    let failed = reply.is_error();
    Ok((reply_to_lua(lua, &reply)?, failed))
}

/// Converts a command's reply to a Lua value (Redis's RESP → Lua rules).
fn reply_to_lua(lua: &Lua, r: &Reply) -> mlua::Result<LuaValue> {
    Ok(match r {
        Reply::Int(n) => LuaValue::Number(*n as f64),
        Reply::Bulk(b) => LuaValue::String(lua.create_string(b)?),
        Reply::Nil | Reply::NilArray => LuaValue::Boolean(false),
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_str())?;
            LuaValue::Table(t)
        }
        Reply::Error(e) => {
            let t = err_table(lua, &error_text(&format!("-{e}")))?;
            t.raw_set("ignore_error_stats_update", true)?;
            LuaValue::Table(t)
        }
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// Converts a script's return value to a reply (Redis's Lua → RESP rules).
fn lua_to_reply(v: &LuaValue) -> Reply {
    match v {
        LuaValue::Boolean(true) => Reply::Int(1),
        LuaValue::Integer(n) => Reply::Int(*n),
        // C's `(long long)` cast, as Redis converts: out of range is LLONG_MIN.
        LuaValue::Number(n) => Reply::Int(crate::cjson::c_long_long(*n)),
        LuaValue::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
        LuaValue::Table(t) => {
            if let Ok(LuaValue::String(e)) = t.raw_get::<LuaValue>("err") {
                return Reply::Error(e.to_string_lossy());
            }
            if let Ok(LuaValue::String(s)) = t.raw_get::<LuaValue>("ok") {
                let s: String = s
                    .to_string_lossy()
                    .chars()
                    .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
                    .collect();
                return Reply::Status(s);
            }
            let mut items = Vec::new();
            let mut j = 1usize;
            loop {
                match t.raw_get::<LuaValue>(j) {
                    Ok(LuaValue::Nil) | Err(_) => break,
                    Ok(v) => items.push(lua_to_reply(&v)),
                }
                j += 1;
            }
            Reply::Array(items)
        }
        _ => Reply::Nil,
    }
}

impl LuaEngine {
    /// A fresh Lua state whose `redis.call` runs commands through `call`.
    pub fn new(call: CallFn) -> LuaEngine {
        Self::try_new(call).expect("the Lua library always loads")
    }

    fn try_new(call: CallFn) -> mlua::Result<LuaEngine> {
        let lua = Lua::new_with(
            mlua::StdLib::TABLE | mlua::StdLib::STRING | mlua::StdLib::MATH,
            mlua::LuaOptions::default(),
        )?;
        let budget = Rc::new(Budget {
            instruction_limit: Cell::new(crate::handle::SCRIPT_INSTRUCTION_LIMIT),
            instructions: Cell::new(0),
            watch: RefCell::new(None),
            stop: Cell::new(None),
        });
        let (call2, b) = (call.clone(), budget.clone());
        let raw_call = lua.create_function(move |lua, args: MultiValue| {
            let v = call_command(lua, &call2, args)?.0;
            b.interrupted()?;
            Ok(v)
        })?;
        let b = budget.clone();
        let raw_call_raise = lua.create_function(move |lua, args: MultiValue| {
            let (v, failed) = call_command(lua, &call, args)?;
            b.interrupted()?;
            if failed && let LuaValue::Table(t) = &v {
                let text: String = t.raw_get("err")?;
                return Err(mlua::Error::external(CallError(text)));
            }
            Ok(v)
        })?;
        let to_err_table = lua.create_function(|lua, v: LuaValue| {
            if let Some(text) = raised_error(&v) {
                return Ok(LuaValue::String(lua.create_string(&text)?));
            }
            Ok(match call_error(&v) {
                Some(text) => LuaValue::Table(err_table(lua, &text)?),
                None => v,
            })
        })?;
        let sha1hex = lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::RuntimeError(
                    "wrong number of arguments".into(),
                ));
            }
            let bytes = match &args[0] {
                LuaValue::String(s) => s.as_bytes().to_vec(),
                LuaValue::Integer(n) => n.to_string().into_bytes(),
                LuaValue::Number(n) => fmt_g17(*n).into_bytes(),
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?;
        let push_error = lua.create_function(|lua, s: mlua::LuaString| {
            err_table(lua, &error_text(&s.to_string_lossy()))
        })?;
        let handler = lua.create_function(|lua, err: LuaValue| {
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
            let mut info = frame(1);
            if matches!(&info, Some((w, ..)) if w == "C") {
                info = frame(2);
            }
            if matches!(&info, Some((_, Some(src), _)) if src == "@redis_lib") {
                info = frame(3);
            }
            let t = match err {
                LuaValue::Table(t) => t,
                ref e if call_error(e).is_some() => {
                    err_table(lua, &call_error(e).unwrap_or_default())?
                }
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
        })?;
        lua.globals().raw_set("__redis_error_handler", handler)?;
        // The script's `pcall` must not swallow the abort: it raises it on.
        let b = budget.clone();
        let aborted = lua.create_function(move |_, ()| Ok(b.stop.get().is_some()))?;
        let cjson = crate::cjson::SharedConfig::default();
        let cjson_module = crate::cjson::module(&lua, cjson.clone())?;
        let globals = lua.globals();
        let run: Function = lua.load(LIB).set_name("@redis_lib").call((
            raw_call,
            raw_call_raise,
            sha1hex,
            push_error,
            to_err_table.clone(),
            aborted,
            cjson_module,
        ))?;
        // A script's xpcall handler gets the error as Redis's would: a
        // `redis.call` error as its table, others as their text.
        let raw_xpcall: Function = globals.raw_get("xpcall")?;
        let convert = to_err_table.clone();
        let xpcall = lua.create_function(move |lua, args: MultiValue| {
            let mut args = args.into_iter();
            let (Some(f), Some(handler)) = (args.next(), args.next()) else {
                return Err(arg_error(lua, 2, "value expected"));
            };
            let convert = convert.clone();
            let handler = lua.create_function(move |_, e: LuaValue| match &handler {
                LuaValue::Function(h) => h.call::<LuaValue>(convert.call::<LuaValue>(e)?),
                // Lua's own answer to a handler that is not a function.
                _ => Err(mlua::Error::runtime("error in error handling")),
            })?;
            raw_xpcall.call::<MultiValue>((f, handler))
        })?;
        globals.raw_set("xpcall", xpcall)?;
        let protected = crate::sandbox::protect(&lua)?;
        // Scripts (and whatever they load) see the read-only view.
        lua.set_globals(protected)?;
        // Commands run synchronously inside the node, so an endless script
        // would stop the whole node (and a simulation) for ever: the count
        // hook is the only place left to stop it (or, on the real-TCP
        // server, to let SCRIPT KILL and SHUTDOWN NOSAVE reach it).
        let b = budget.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            move |_, _| b.check().map(|()| VmState::Continue),
        )?;
        Ok(LuaEngine {
            lua,
            run,
            globals,
            cjson,
            scripts: RefCell::new(BTreeMap::new()),
            budget,
        })
    }

    /// Compiles and caches `body` (SCRIPT LOAD, EVAL). Returns its SHA1, or
    /// the compile error reply.
    pub fn load(&self, body: &[u8]) -> Result<String, Reply> {
        let sha = sha1_hex(body);
        if self.scripts.borrow().contains_key(&sha) {
            return Ok(sha);
        }
        match self.lua.load(body).set_name("@user_script").into_function() {
            Ok(f) => {
                self.scripts.borrow_mut().insert(sha.clone(), f);
                Ok(sha)
            }
            Err(e) => {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                Err(Reply::err(format!(
                    "ERR Error compiling script (new function): {msg}"
                )))
            }
        }
    }

    /// Whether a script with this SHA1 (lowercase) is cached.
    pub fn exists(&self, sha: &str) -> bool {
        self.scripts.borrow().contains_key(sha)
    }

    /// Empties the script cache (SCRIPT FLUSH).
    pub fn flush(&self) {
        self.scripts.borrow_mut().clear();
        *self.cjson.borrow_mut() = Default::default();
    }

    /// Runs a cached script with KEYS and ARGV. `None` if not cached.
    pub fn run(&self, sha: &str, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Option<Reply> {
        let f = self.scripts.borrow().get(sha).cloned()?;
        let b = &self.budget;
        b.instructions.set(0);
        b.stop.set(None);
        let watch = b.watch.borrow().clone();
        if let Some(w) = &watch {
            w.script_started();
        }
        let reply = match self.try_run(sha, f, keys, argv) {
            Ok(r) => r,
            Err(e) => Reply::err(format!("ERR Error running script: {e}")),
        };
        if let Some(w) = &watch {
            w.script_ended();
        }
        // Whatever the script's error handler made of the hook's error (a
        // `pcall` in the script may even have caught it: the hook raises it
        // again at its next check), its caller gets one plain text. A
        // killed script's caller gets the handler's text, as in Redis.
        Some(if b.stop.get() == Some(Stop::InstructionLimit) {
            ABORTED.with(|n| n.set(n.get() + 1));
            Reply::Error(format!("{SCRIPT_ABORTED} (script: {sha})"))
        } else {
            reply
        })
    }

    /// Bounds every script to at most `instructions` Lua VM instructions;
    /// a script past it is aborted and its caller gets [`SCRIPT_ABORTED`].
    /// Without a call, [`crate::handle::SCRIPT_INSTRUCTION_LIMIT`] holds.
    /// Not applied once the engine is watched (the real-TCP server).
    pub fn set_instruction_limit(&self, instructions: u64) {
        self.budget.instruction_limit.set(instructions);
    }

    /// Puts the engine under the real-TCP server's watch: scripts are no
    /// longer bounded by instructions (Redis bounds them by nothing), the
    /// front sees them run and may kill them or stop the server.
    pub(crate) fn watch(&self, watch: Arc<ScriptWatch>) {
        *self.budget.watch.borrow_mut() = Some(watch);
    }

    /// A running script is about to run a write command: `false` if it
    /// must not (it is being killed, or the server is stopping). Marks it
    /// unkillable otherwise.
    pub(crate) fn claim_write(&self) -> bool {
        match &*self.budget.watch.borrow() {
            Some(w) => w.claim_write(),
            None => true,
        }
    }

    /// Whether the last script run stopped early (instruction limit,
    /// `SCRIPT KILL`, or the server stopping).
    pub fn last_aborted(&self) -> bool {
        self.budget.stop.get().is_some()
    }

    /// Whether the last script run was stopped because the server stops.
    pub(crate) fn stopped_by_shutdown(&self) -> bool {
        self.budget.stop.get() == Some(Stop::Shutdown)
    }

    fn try_run(
        &self,
        sha: &str,
        f: Function,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> mlua::Result<Reply> {
        let g = &self.globals;
        let mk = |items: &[Vec<u8>]| -> mlua::Result<Table> {
            let t = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, it) in items.iter().enumerate() {
                t.raw_set(i + 1, self.lua.create_string(it)?)?;
            }
            Ok(t)
        };
        g.raw_set("KEYS", mk(keys)?)?;
        g.raw_set("ARGV", mk(argv)?)?;
        let (ok, val): (bool, LuaValue) = self.run.call(f)?;
        if ok {
            return Ok(lua_to_reply(&val));
        }
        Ok(match &val {
            LuaValue::Table(t) => {
                let msg = match t.raw_get::<LuaValue>("err")? {
                    LuaValue::String(s) => s.to_string_lossy(),
                    _ => "(null)".into(),
                };
                let source = t.raw_get::<LuaValue>("source")?;
                let line = t.raw_get::<LuaValue>("line")?;
                match (source, line) {
                    (LuaValue::String(s), LuaValue::Integer(_) | LuaValue::Number(_)) => {
                        let line = match t.raw_get::<LuaValue>("line")? {
                            LuaValue::Integer(n) => n,
                            LuaValue::Number(n) => n as i64,
                            _ => 0,
                        };
                        Reply::Error(format!(
                            "{msg} script: {sha}, on {}:{line}.",
                            s.to_string_lossy()
                        ))
                    }
                    _ => Reply::Error(msg),
                }
            }
            other => Reply::err(format!(
                "ERR Error running script {sha}, {}",
                other.to_string().unwrap_or_default()
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> LuaEngine {
        LuaEngine::new(Rc::new(|args: &[Vec<u8>]| match args[0].as_slice() {
            b"ping" => Reply::Status("PONG".into()),
            b"get" => Reply::Nil,
            b"echo" => Reply::Bulk(args[1].clone()),
            _ => Reply::err("ERR unknown"),
        }))
    }

    fn eval(e: &LuaEngine, body: &str) -> Reply {
        match e.load(body.as_bytes()) {
            Ok(sha) => e.run(&sha, &[], &[]).unwrap(),
            Err(r) => r,
        }
    }

    #[test]
    fn lua_values_convert_to_replies_as_in_redis() {
        let e = engine();
        assert_eq!(eval(&e, "return 3.99"), Reply::Int(3));
        assert_eq!(eval(&e, "return true"), Reply::Int(1));
        assert_eq!(eval(&e, "return false"), Reply::Nil);
        assert_eq!(
            eval(&e, "return {1,'a',nil,4}"),
            Reply::Array(vec![Reply::Int(1), Reply::Bulk(b"a".to_vec())])
        );
        assert_eq!(eval(&e, "return redis.call('get','x')"), Reply::Nil);
        assert_eq!(
            eval(&e, "return redis.call('ping')"),
            Reply::Status("PONG".into())
        );
    }

    #[test]
    fn a_runaway_script_is_aborted_after_the_instruction_limit_and_the_engine_goes_on() {
        let e = engine();
        e.set_instruction_limit(1_000_000);
        let before = aborted_scripts();
        for body in [
            "while true do end",
            "while true do pcall(function () while true do end end) end",
        ] {
            let sha = sha1_hex(body.as_bytes());
            assert_eq!(
                eval(&e, body),
                Reply::Error(format!("{SCRIPT_ABORTED} (script: {sha})"))
            );
            assert!(e.last_aborted());
        }
        assert_eq!(eval(&e, "return 1"), Reply::Int(1));
        assert!(!e.last_aborted());
        // What a simulation run checks to refuse judging a cut-short run.
        assert_eq!(aborted_scripts() - before, 2);
    }

    #[test]
    fn numbers_passed_to_commands_print_as_percent_17g() {
        assert_eq!(fmt_g17(30.0), "30");
        assert_eq!(fmt_g17(0.1), "0.10000000000000001");
        assert_eq!(fmt_g17(1e20), "1e+20");
        assert_eq!(fmt_g17(-2.5), "-2.5");
        let e = engine();
        assert_eq!(
            eval(&e, "return redis.call('echo', 1.5)"),
            Reply::Bulk(b"1.5".to_vec())
        );
    }

    #[test]
    fn script_errors_carry_the_script_sha_and_line() {
        let e = engine();
        let body = "error('x')";
        let sha = sha1_hex(body.as_bytes());
        assert_eq!(
            eval(&e, body),
            Reply::Error(format!(
                "ERR user_script:1: x script: {sha}, on @user_script:1."
            ))
        );
        let body = "\nreturn redis.call('nope')";
        let sha = sha1_hex(body.as_bytes());
        assert_eq!(
            eval(&e, body),
            Reply::Error(format!("ERR unknown script: {sha}, on @user_script:2."))
        );
    }
}
