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

mod bit;
pub(crate) mod c_args;
mod c_call;
mod errors;
pub(crate) mod library;
mod loadstring;
mod random;
pub(crate) mod shebang;
mod struct_pack;

pub use shebang::ScriptFlags;

pub use errors::error_text;
pub(crate) use errors::{
    arg_error, caller_error, error_message, plain_error, type_error, type_name,
};

use errors::{CallError, call_error, err_table, error_handler, raised_error};

use crate::busy::{Interrupt, ScriptWatch};
use crate::resp::Reply;

/// Executes one command on behalf of a script (`redis.call`).
pub type CallFn = Rc<dyn Fn(&[Vec<u8>]) -> Reply>;

/// The Lua side of the library: the error handler, `redis.call` and
/// `redis.pcall` wrappers, `cjson` (`bit`, `struct` and `cmsgpack` are
/// set from Rust). Runs once per state, before global
/// protection ([`crate::sandbox`]); returns the function that runs a script.
const LIB: &str = r#"
local raw_call, raw_call_raise, sha1hex, push_error, to_err_table, aborted, cjson_module, reply_depth_limit = ...
local error, type, select, xpcall, unpack = error, type, select, xpcall, unpack
local maxn = table.maxn
redis = {}
-- A C function, as in Redis: a script's `return redis.call(...)` is a
-- tail call that keeps the script's frame, whose line its errors name.
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
-- The arguments reach Rust packed in a table with their count: a call
-- with thousands of them (`unpack` of a long list) does not fit on the
-- stack of the Rust side's callback, which needs a few slots more than
-- Redis's C function does.
redis.pcall = function (...)
  return raw_call(select('#', ...), {...})
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
-- A script's reply as a flat list of tokens, walked with a stack of its
-- own (so any depth of nesting fits): '[' opens a table's array part and
-- ']' closes it, 'e' and 'o' are an error or a status table's text, 'v'
-- any other value, and 'x' the value Redis's Lua stack had no room for
-- (see REPLY_DEPTH_LIMIT on the Rust side, which passes the limit in).
local reply_depth_limit, rawget = reply_depth_limit, rawget
local function reply_tokens(value)
  local out, n = {}, 0
  local function put(kind, x)
    out[n + 1] = kind
    out[n + 2] = x
    n = n + 2
  end
  local tables, nexts, depth = {}, {}, 0
  local current = value
  while true do
    if depth >= reply_depth_limit then
      put('x', false)
    elseif type(current) == 'table' then
      local e, s = rawget(current, 'err'), rawget(current, 'ok')
      if type(e) == 'string' then
        put('e', e)
      elseif type(s) == 'string' then
        put('o', s)
      else
        put('[', false)
        depth = depth + 1
        tables[depth], nexts[depth] = current, 1
      end
    else
      put('v', current == nil and false or current)
    end
    -- The next element, closing every table that has none left.
    while true do
      if depth == 0 then return out end
      local j = nexts[depth]
      local x = rawget(tables[depth], j)
      if x ~= nil then
        nexts[depth] = j + 1
        current = x
        break
      end
      put(']', false)
      tables[depth] = nil
      depth = depth - 1
    end
  end
end
-- A script runs with no arguments; a library's function gets its keys
-- and arguments (a tail call: its errors name its own line).
local run = function (f, ...)
  local r
  if select('#', ...) == 0 then
    r = {xpcall(f, error_handler)}
  else
    local keys, args = ...
    r = {xpcall(function () return f(keys, args) end, error_handler)}
  end
  if r[1] then return true, reply_tokens(r[2]) end
  return false, r[2]
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
    scripts: RefCell<BTreeMap<String, (Function, ScriptFlags)>>,
    budget: Rc<Budget>,
    /// The running script may not write: it declared `no-writes`, or
    /// `EVAL_RO` runs it.
    read_only: Cell<bool>,
    /// The running script declared `allow-oom`.
    allow_oom: Cell<bool>,
    /// The running script has written (Redis's `SCRIPT_WRITE_DIRTY`).
    wrote: Cell<bool>,
    /// The function libraries (`FUNCTION LOAD`, `FCALL`).
    libraries: RefCell<library::Libraries>,
    /// What `redis.register_function` adds to while a library loads.
    pending: library::Pending,
    /// The function `FCALL` is about to run, for the real-TCP front's
    /// `FUNCTION STATS`.
    running_function: RefCell<Option<crate::busy::FunctionRun>>,
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
    /// A library's code is loading (`FUNCTION LOAD`): bounded by
    /// [`LOAD_INSTRUCTION_LIMIT`] everywhere, as Redis bounds it by time.
    loading: Cell<bool>,
}

/// How many instructions a library's code may run while it loads: about
/// the half second Redis allows (`FUNCTION LOAD timeout`), counted, not
/// timed, so that a simulation replays it.
const LOAD_INSTRUCTION_LIMIT: u64 = 50_000_000;

impl Budget {
    /// Called every [`HOOK_EVERY`] instructions: an error stops the script.
    fn check(&self) -> mlua::Result<()> {
        if self.loading.get() {
            let n = self.instructions.get() + u64::from(HOOK_EVERY);
            self.instructions.set(n);
            if n >= LOAD_INSTRUCTION_LIMIT {
                return Err(mlua::Error::external(CallError(
                    "ERR FUNCTION LOAD timeout".into(),
                )));
            }
            return Ok(());
        }
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

/// Runs one command for `redis.call` / `redis.pcall`: the reply as a Lua
/// value, and whether it is an error.
fn call_command(
    lua: &Lua,
    call: &CallFn,
    count: usize,
    args: &Table,
) -> mlua::Result<(LuaValue, bool)> {
    let mut argv: Vec<Vec<u8>> = Vec::with_capacity(count);
    for i in 1..=count {
        match args.raw_get::<LuaValue>(i)? {
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

/// Converts a command's reply to a Lua value (Redis's RESP2 → Lua rules:
/// a script sees RESP3's types in their RESP2 forms, as a Redis script
/// that never called `redis.setresp(3)`).
fn reply_to_lua(lua: &Lua, r: &Reply) -> mlua::Result<LuaValue> {
    Ok(match r {
        Reply::Map(_)
        | Reply::Set(_)
        | Reply::Push(_)
        | Reply::Double(_)
        | Reply::Bool(_)
        | Reply::Verbatim(_) => reply_to_lua(lua, &r.clone().into_resp2())?,
        Reply::Int(n) => LuaValue::Number(*n as f64),
        Reply::Bulk(b) => LuaValue::String(lua.create_string(b)?),
        Reply::Nil | Reply::NilArray | Reply::Null => LuaValue::Boolean(false),
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

/// How deep in nested tables a script's reply may go: Redis converts a
/// reply on the Lua stack, one stack slot per level of nesting, and a
/// value nested this deep finds no room (Lua's 8,000 slots, less the ones
/// in use) and becomes the error `reached lua stack limit`, in place.
/// Measured on redis-server 7.0.15: a table that contains itself gives
/// 7,995 nested arrays, then that error.
const REPLY_DEPTH_LIMIT: usize = 7_995;

/// Converts a script's return value to a reply (Redis's Lua → RESP
/// rules), from the tokens the library's `reply_tokens` made of it: a
/// reply nested deeper than the Lua stack allows never needs that many
/// values held here at once.
fn lua_to_reply(tokens: &Table) -> Reply {
    let mut open: Vec<Vec<Reply>> = Vec::new();
    let mut j = 1usize;
    loop {
        let kind: Option<mlua::LuaString> = tokens.raw_get(j).ok();
        let value: LuaValue = tokens.raw_get(j + 1).unwrap_or(LuaValue::Nil);
        j += 2;
        let Some(kind) = kind else {
            // Malformed (never made by the library): what was built.
            return open.into_iter().next().map_or(Reply::Nil, Reply::Array);
        };
        let done = match kind.as_bytes().first() {
            Some(b'[') => {
                open.push(Vec::new());
                None
            }
            Some(b']') => open.pop().map(Reply::Array),
            Some(b'x') => Some(Reply::err("ERR reached lua stack limit")),
            Some(b'e') => Some(Reply::Error(text_of(&value))),
            Some(b'o') => Some(Reply::Status(
                text_of(&value)
                    .chars()
                    .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
                    .collect(),
            )),
            _ => Some(scalar_to_reply(&value)),
        };
        if let Some(reply) = done {
            match open.last_mut() {
                Some(parent) => parent.push(reply),
                None => return reply,
            }
        }
    }
}

fn text_of(v: &LuaValue) -> String {
    match v {
        LuaValue::String(s) => s.to_string_lossy(),
        _ => String::new(),
    }
}

/// The reply of a value that is not a table.
fn scalar_to_reply(v: &LuaValue) -> Reply {
    match v {
        LuaValue::Boolean(true) => Reply::Int(1),
        LuaValue::Integer(n) => Reply::Int(*n),
        // C's `(long long)` cast, as Redis converts: out of range is LLONG_MIN.
        LuaValue::Number(n) => Reply::Int(crate::cjson::c_long_long(*n)),
        LuaValue::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
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
            loading: Cell::new(false),
        });
        let (call2, b) = (call.clone(), budget.clone());
        let raw_call = lua.create_function(move |lua, (count, args): (usize, Table)| {
            let v = call_command(lua, &call2, count, &args)?.0;
            b.interrupted()?;
            Ok(v)
        })?;
        let b = budget.clone();
        let packed_call_raise =
            lua.create_function(move |lua, (count, args): (usize, Table)| {
                let (v, failed) = call_command(lua, &call, count, &args)?;
                b.interrupted()?;
                if failed && let LuaValue::Table(t) = &v {
                    let text: String = t.raw_get("err")?;
                    return Err(mlua::Error::external(CallError(text)));
                }
                Ok(v)
            })?;
        let raw_call_raise = c_call::redis_call(&lua, packed_call_raise)?;
        let to_err_table = lua.create_function(|lua, v: LuaValue| {
            if let Some(text) = raised_error(&v) {
                return Ok(LuaValue::String(lua.create_string(&text)?));
            }
            Ok(match call_error(&v) {
                Some(text) => LuaValue::Table(err_table(lua, &text)?),
                None => v,
            })
        })?;
        let sha1hex = sha1hex_function(&lua)?;
        let push_error = lua.create_function(|lua, s: mlua::LuaString| {
            err_table(lua, &error_text(&s.to_string_lossy()))
        })?;
        let handler = error_handler(&lua)?;
        lua.globals().raw_set("__redis_error_handler", handler)?;
        // The script's `pcall` must not swallow the abort: it raises it on.
        let b = budget.clone();
        let aborted = lua.create_function(move |_, ()| Ok(b.stop.get().is_some()))?;
        let math: mlua::Table = lua.globals().raw_get("math")?;
        random::install(&lua, &math)?;
        let original: Function = lua.globals().raw_get("loadstring")?;
        let loadstring = loadstring::source_only(&lua, original)?;
        lua.globals().raw_set("loadstring", loadstring)?;
        let cjson = crate::cjson::SharedConfig::default();
        let cjson_module = crate::cjson::module(&lua, cjson.clone())?;
        let globals = lua.globals();
        // The other libraries Redis bundles, global tables as in Redis
        // (the global protection makes them read-only with the rest).
        globals.raw_set("bit", bit::module(&lua)?)?;
        globals.raw_set("struct", struct_pack::module(&lua)?)?;
        globals.raw_set("cmsgpack", crate::cmsgpack::module(&lua)?)?;
        let run: Function = lua.load(LIB).set_name("@redis_lib").call((
            raw_call,
            raw_call_raise,
            sha1hex,
            push_error,
            to_err_table.clone(),
            aborted,
            cjson_module,
            REPLY_DEPTH_LIMIT,
        ))?;
        let raw_xpcall: Function = globals.raw_get("xpcall")?;
        let xpcall = converting_xpcall(&lua, raw_xpcall, to_err_table.clone())?;
        globals.raw_set("xpcall", xpcall)?;
        let protected = crate::sandbox::protect(&lua)?;
        let pending = library::Pending::default();
        library::environment(&lua, &globals, &pending)?;
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
            read_only: Cell::new(false),
            allow_oom: Cell::new(false),
            wrote: Cell::new(false),
            budget,
            libraries: RefCell::default(),
            pending,
            running_function: RefCell::default(),
        })
    }

    /// Compiles and caches `body` (SCRIPT LOAD, EVAL). Returns its SHA1, or
    /// the compile error reply.
    pub fn load(&self, body: &[u8]) -> Result<String, Reply> {
        let sha = sha1_hex(body);
        if self.scripts.borrow().contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, shebang_len) =
            shebang::parse(body).map_err(|e| Reply::err(format!("ERR {e}")))?;
        // The shebang line is left out, its line feed kept: line numbers
        // in errors stay the user's, as in Redis.
        let code = &body[shebang_len..];
        match self.lua.load(code).set_name("@user_script").into_function() {
            Ok(f) => {
                self.scripts.borrow_mut().insert(sha.clone(), (f, flags));
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

    /// What the cached script `sha` declared in its shebang.
    pub fn flags(&self, sha: &str) -> Option<ScriptFlags> {
        self.scripts.borrow().get(sha).map(|(_, flags)| *flags)
    }

    /// Whether the running script may not write.
    pub fn is_read_only(&self) -> bool {
        self.read_only.get()
    }

    /// Whether the running script declared `allow-oom`.
    pub(crate) fn allows_oom(&self) -> bool {
        self.allow_oom.get()
    }

    /// Whether the running script has run a write command.
    pub(crate) fn has_written(&self) -> bool {
        self.wrote.get()
    }

    /// Whether a script with this SHA1 (lowercase) is cached.
    pub fn exists(&self, sha: &str) -> bool {
        self.scripts.borrow().contains_key(sha)
    }

    /// How many scripts are cached (`INFO`'s `number_of_cached_scripts`).
    pub fn script_count(&self) -> usize {
        self.scripts.borrow().len()
    }

    /// Empties the script cache (SCRIPT FLUSH).
    pub fn flush(&self) {
        self.scripts.borrow_mut().clear();
        *self.cjson.borrow_mut() = Default::default();
    }

    /// Runs a cached script with KEYS and ARGV, read-only if it declared
    /// `no-writes`. `None` if not cached.
    pub fn run(&self, sha: &str, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Option<Reply> {
        let no_writes = self.flags(sha)?.no_writes;
        self.run_as(sha, keys, argv, no_writes)
    }

    /// Runs a cached script read-only, as `EVAL_RO` does: its writes are
    /// refused. `None` if not cached.
    pub fn run_read_only(&self, sha: &str, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Option<Reply> {
        self.run_as(sha, keys, argv, true)
    }

    fn run_as(
        &self,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        read_only: bool,
    ) -> Option<Reply> {
        let (f, flags) = self.scripts.borrow().get(sha).cloned()?;
        self.allow_oom.set(flags.allow_oom);
        Some(self.call_script(sha, f, Inputs::Globals, keys, argv, read_only))
    }

    /// Runs the library function `name` (any case) with its keys and
    /// arguments, read-only if `read_only`. `None` if there is none.
    pub fn run_function(
        &self,
        name: &str,
        command: &[Vec<u8>],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        read_only: bool,
    ) -> Option<Reply> {
        let (f, running) = {
            let libs = self.libraries.borrow();
            let (_, f) = libs.function(name)?;
            let running = crate::busy::FunctionRun {
                name: f.name.clone(),
                command: command.to_vec(),
                libraries: libs.libraries.len(),
                functions: libs.function_count(),
            };
            (f.callback.clone(), running)
        };
        let name = running.name.clone();
        *self.running_function.borrow_mut() = Some(running);
        self.allow_oom.set(false);
        let reply = self.call_script(&name, f, Inputs::Arguments, keys, argv, read_only);
        Some(reply)
    }

    /// Runs a script or a function under the budget (and the real-TCP
    /// server's watch); `name` is what its errors call it.
    fn call_script(
        &self,
        sha: &str,
        f: Function,
        inputs: Inputs,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        read_only: bool,
    ) -> Reply {
        self.read_only.set(read_only);
        self.wrote.set(false);
        let b = &self.budget;
        b.instructions.set(0);
        b.stop.set(None);
        let watch = b.watch.borrow().clone();
        let function = self.running_function.borrow_mut().take();
        if let Some(w) = &watch {
            w.script_started(function);
        }
        let reply = match self.try_run(sha, f, inputs, keys, argv) {
            Ok(r) => r,
            Err(e) => Reply::err(format!("ERR Error running script: {e}")),
        };
        self.read_only.set(false);
        if let Some(w) = &watch {
            w.script_ended();
        }
        // Whatever the script's error handler made of the hook's error (a
        // `pcall` in the script may even have caught it: the hook raises it
        // again at its next check), its caller gets one plain text. A
        // killed script's caller gets the handler's text, as in Redis.
        if b.stop.get() == Some(Stop::InstructionLimit) {
            ABORTED.with(|n| n.set(n.get() + 1));
            Reply::Error(format!("{SCRIPT_ABORTED} (script: {sha})"))
        } else {
            reply
        }
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

    /// Sets the real-TCP server's busy threshold (`CONFIG SET
    /// busy-reply-threshold`); nothing in a simulation, where a script
    /// never makes the node busy.
    pub(crate) fn set_busy_threshold_ms(&self, ms: u64) {
        if let Some(w) = &*self.budget.watch.borrow() {
            w.set_threshold_ms(ms);
        }
    }

    /// A running script is about to run a write command: `false` if it
    /// must not (it is being killed, or the server is stopping). Marks it
    /// unkillable otherwise.
    pub(crate) fn claim_write(&self) -> bool {
        let claimed = match &*self.budget.watch.borrow() {
            Some(w) => w.claim_write(),
            None => true,
        };
        self.wrote.set(self.wrote.get() || claimed);
        claimed
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
        inputs: Inputs,
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
        let (ok, val): (bool, LuaValue) = match inputs {
            Inputs::Globals => {
                g.raw_set("KEYS", mk(keys)?)?;
                g.raw_set("ARGV", mk(argv)?)?;
                self.run.call(f)?
            }
            Inputs::Arguments => {
                self.set_loading(false)?;
                self.run.call((f, mk(keys)?, mk(argv)?))?
            }
        };
        if ok && let LuaValue::Table(tokens) = &val {
            return Ok(lua_to_reply(tokens));
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

/// How a script gets its keys and arguments.
#[derive(Clone, Copy)]
enum Inputs {
    /// As the globals `KEYS` and `ARGV` (`EVAL`).
    Globals,
    /// As its two arguments (`FCALL`).
    Arguments,
}

/// `redis.sha1hex`: the SHA1 of its one argument (a number as Lua prints
/// it with 17 digits).
fn sha1hex_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|_, args: MultiValue| {
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
    })
}

/// The scripts' `xpcall`: its handler gets the error as Redis's would, a
/// `redis.call` error as its table, others as their text (`convert` is
/// `to_err_table`).
fn converting_xpcall(lua: &Lua, raw_xpcall: Function, convert: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
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
    })
}

#[cfg(test)]
mod tests;
