//! Function libraries, as Redis 7.0 has them (`FUNCTION LOAD`, `FCALL`):
//! a library's code starts with `#!lua name=<lib>`, runs once when loaded
//! and registers its functions with `redis.register_function`; `FCALL`
//! then calls a function by name with its keys and arguments.
//!
//! Loading runs in an environment of its own: only `redis` exists there,
//! and it holds only `register_function`, `log`, the log levels and the
//! version (any other name is Redis's "nonexistent global" error). The
//! functions a library defines keep that environment table as theirs (Lua
//! closures inherit it), so, as Redis does, the environment is one table
//! whose lookup is switched: to the load-time names while a library
//! loads, to the scripts' globals (without `KEYS` and `ARGV`) while a
//! function runs.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};

use super::errors::CallError;
use crate::resp::Reply;

/// The flags a function may declare, in the order `FUNCTION LIST` lists
/// them (Redis's table of script flags).
pub const FUNCTION_FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Redis's text for a library or function name that is not made of
/// letters, digits and underscores (it says "Library" for both).
const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One registered function.
#[derive(Clone)]
pub struct LibraryFunction {
    /// Its name as registered (`FCALL` finds it whatever the case).
    pub name: String,
    /// The Lua function `FCALL` calls with its keys and arguments.
    pub(crate) callback: Function,
    /// Its flags, as a bit per entry of [`FUNCTION_FLAGS`].
    pub flags: u8,
    /// Its description, if it gave one.
    pub description: Option<Vec<u8>>,
}

impl LibraryFunction {
    /// Whether it declared `no-writes`.
    pub fn no_writes(&self) -> bool {
        self.flags & 1 != 0
    }

    /// Its flags' names, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        FUNCTION_FLAGS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.flags & (1 << i) != 0)
            .map(|(_, f)| *f)
            .collect()
    }
}

/// A loaded library: its code and its functions (by lowercase name).
#[derive(Clone)]
pub struct Library {
    /// The name its shebang gave.
    pub name: String,
    /// The whole code, shebang included (`FUNCTION LIST WITHCODE`, `DUMP`).
    pub code: Vec<u8>,
    /// Its functions, by name (as registered: a library may hold `f`
    /// and `F`, as in Redis).
    pub functions: BTreeMap<String, LibraryFunction>,
}

/// The libraries of a node, and which library owns each function.
#[derive(Default)]
pub struct Libraries {
    /// By library name (case-sensitive, as in Redis).
    pub libraries: BTreeMap<String, Library>,
    /// Function name (lowercase) → library name.
    owners: BTreeMap<String, String>,
}

impl Libraries {
    /// The function `name` (any case) and its library's name.
    pub fn function(&self, name: &str) -> Option<(&Library, &LibraryFunction)> {
        let lib = self
            .libraries
            .get(self.owners.get(&name.to_ascii_lowercase())?)?;
        let f = lib.functions.get(name).or_else(|| {
            lib.functions
                .values()
                .find(|f| f.name.eq_ignore_ascii_case(name))
        })?;
        Some((lib, f))
    }

    /// How many functions all libraries hold.
    pub fn function_count(&self) -> usize {
        self.libraries.values().map(|l| l.functions.len()).sum()
    }

    /// Removes the library `name`; whether it existed.
    pub fn remove(&mut self, name: &str) -> Option<Library> {
        let lib = self.libraries.remove(name)?;
        for f in lib.functions.keys() {
            self.owners.remove(&f.to_ascii_lowercase());
        }
        Some(lib)
    }

    /// Adds `lib`, replacing a library of its name (checked by the caller).
    pub fn insert(&mut self, lib: Library) {
        self.remove(&lib.name);
        for f in lib.functions.keys() {
            self.owners
                .entry(f.to_ascii_lowercase())
                .or_insert_with(|| lib.name.clone());
        }
        self.libraries.insert(lib.name.clone(), lib);
    }

    /// The first function of `lib` another library (not `replacing`)
    /// already has.
    pub fn clash<'a>(
        &self,
        lib: &'a Library,
        replacing: Option<&str>,
    ) -> Option<&'a LibraryFunction> {
        lib.functions.iter().find_map(|(key, f)| {
            let owner = self.owners.get(&key.to_ascii_lowercase())?;
            (Some(owner.as_str()) != replacing).then_some(f)
        })
    }

    /// Empties the libraries (`FUNCTION FLUSH`).
    pub fn clear(&mut self) {
        self.libraries.clear();
        self.owners.clear();
    }
}

/// Reads a library's shebang (`#!lua name=<lib>`): its name and the
/// length of the line before its line feed. The error is Redis's text,
/// without `ERR `.
pub(crate) fn parse_metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    // Split as Redis splits it (`sdssplitargs`: quotes allowed), the
    // engine's name being the first word without its `#!`.
    let parts = crate::resp::split_args(&code[..end]).ok_or("Invalid library metadata")?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let engine = parts
        .first()
        .map(|p| text(&p[2.min(p.len())..]))
        .unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("Engine '{engine}' not found"));
    }
    let mut name = None;
    for part in parts.iter().skip(1).map(|p| text(p)) {
        match part.strip_prefix("name=") {
            Some(_) if name.is_some() => {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("Invalid metadata value given: {part}")),
        }
    }
    let name = name.ok_or("Library name was not given")?;
    check_name(&name)?;
    Ok((name, end))
}

/// Letters, digits and underscores, at least one.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok { Ok(()) } else { Err(BAD_NAME.into()) }
}

/// Where the registry keeps the scripts' globals (the raw table).
const RAW_GLOBALS: &str = "simredis.raw_globals";

/// Where the registry keeps the functions' environment.
pub(crate) const ENV: &str = "simredis.library_env";

/// Where the registry keeps the switch of that environment.
pub(crate) const SET_LOADING: &str = "simredis.set_loading";

/// The library being loaded: what `redis.register_function` adds to.
pub(crate) type Pending = Rc<RefCell<Option<BTreeMap<String, LibraryFunction>>>>;

/// The Lua side of the environment: the load-time `redis` table and the
/// switch between the load-time names and the run-time globals.
const ENVIRONMENT: &str = r#"
local lookup, register, log, version, version_num, set_mt = ...
local error, tostring = error, tostring
local function refuse()
  error('Attempt to modify a readonly table', 2)
end
-- Level 2: the error names the user's line that read the name.
local function names(t)
  return set_mt({}, {__index = function(_, k)
    local v = t[k]
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    return v
  end, __newindex = refuse})
end
local load_redis = names({
  register_function = register, log = log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = version_num,
})
local loading = names({redis = load_redis})
-- A function sees the scripts' globals, but not EVAL's KEYS and ARGV.
local running = set_mt({}, {__index = function(_, k)
  local v = lookup(k)
  if v == nil or k == 'KEYS' or k == 'ARGV' then
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end
  return v
end, __newindex = refuse})
local mt = {__index = loading, __newindex = refuse}
local env = set_mt({}, mt)
return env, function(load)
  if load then mt.__index = loading else mt.__index = running end
end
"#;

/// Builds the functions' environment over the scripts' `globals` (the
/// raw table, under its protection) and keeps in the registry the table
/// to give library chunks ([`ENV`]) and the function that switches it to
/// loading (`true`) or running (`false`, [`SET_LOADING`]).
pub(crate) fn environment(lua: &Lua, globals: &Table, pending: &Pending) -> mlua::Result<()> {
    let set_mt = lua.create_function(|_, (t, mt): (Table, Table)| {
        t.set_metatable(Some(mt))?;
        Ok(t)
    })?;
    let p = pending.clone();
    let register = lua.create_function(move |_, args: MultiValue| {
        let f = registration(&args)
            .map_err(|e| mlua::Error::external(CallError(format!("ERR {e}"))))?;
        let mut pending = p.borrow_mut();
        let Some(functions) = pending.as_mut() else {
            return Err(mlua::Error::external(CallError(
                "ERR redis.register_function can only be called on FUNCTION LOAD command".into(),
            )));
        };
        let key = f.name.clone();
        if functions.contains_key(&key) {
            return Err(mlua::Error::external(CallError(
                "ERR Function already exists in the library".into(),
            )));
        }
        functions.insert(key, f);
        Ok(())
    })?;
    let log = lua.create_function(|_, _: MultiValue| Ok(()))?;
    // Kept in the registry, not held from Rust: every value Rust holds
    // takes a slot of the stack that `redis.call`'s arguments also need.
    lua.set_named_registry_value(RAW_GLOBALS, globals)?;
    let lookup = lua.create_function(|lua, k: LuaValue| {
        lua.named_registry_value::<Table>(RAW_GLOBALS)?
            .raw_get::<LuaValue>(k)
    })?;
    let (env, set_loading): (Table, Function) = lua
        .load(ENVIRONMENT)
        .set_name("@redis_lib")
        .call((lookup, register, log, "7.0.15", 0x0007_000f, set_mt))?;
    lua.set_named_registry_value(ENV, env)?;
    lua.set_named_registry_value(SET_LOADING, set_loading)
}

/// A string as `lua_tostring` gives it (a number becomes its text).
fn text(v: &LuaValue) -> Option<String> {
    match v {
        LuaValue::String(s) => Some(s.to_string_lossy()),
        LuaValue::Integer(n) => Some(n.to_string()),
        LuaValue::Number(n) => Some(super::fmt_g(*n, 14)),
        _ => None,
    }
}

/// Reads `redis.register_function`'s arguments: `(name, callback)` or one
/// table of named arguments. The error is Redis's text, without `ERR `.
fn registration(args: &MultiValue) -> Result<LibraryFunction, String> {
    let wrong = || "wrong number of arguments to redis.register_function".to_string();
    let (name, callback, flags, description) = match args.len() {
        1 => {
            let LuaValue::Table(t) = &args[0] else {
                return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
            };
            named_arguments(t)?
        }
        2 => {
            let name = text(&args[0])
                .ok_or("first argument to redis.register_function must be a string")?;
            let LuaValue::Function(f) = &args[1] else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            (name, f.clone(), 0, None)
        }
        _ => return Err(wrong()),
    };
    check_name(&name)?;
    Ok(LibraryFunction {
        name,
        callback,
        flags,
        description,
    })
}

type Named = (String, Function, u8, Option<Vec<u8>>);

/// The table form: `function_name`, `callback`, `flags`, `description`.
fn named_arguments(t: &Table) -> Result<Named, String> {
    let (mut name, mut callback, mut flags, mut description) = (None, None, 0u8, None);
    for pair in t.clone().pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        let key = match &k {
            LuaValue::String(s) => s.to_string_lossy(),
            _ => return Err("unknown argument given to redis.register_function".into()),
        };
        match key.as_str() {
            "function_name" => {
                name = Some(text(&v).ok_or(
                    "function_name argument given to redis.register_function must be a string",
                )?);
            }
            "description" => {
                description = Some(
                    text(&v)
                        .ok_or("description argument given to redis.register_function must be a string")?
                        .into_bytes(),
                );
            }
            "callback" => {
                let LuaValue::Function(f) = v else {
                    return Err(
                        "callback argument given to redis.register_function must be a function"
                            .into(),
                    );
                };
                callback = Some(f);
            }
            "flags" => {
                let LuaValue::Table(list) = v else {
                    return Err("flags argument to redis.register_function must be a table representing function flags".into());
                };
                for flag in list.sequence_values::<LuaValue>() {
                    let flag = flag.map_err(|e| e.to_string())?;
                    let i = match &flag {
                        LuaValue::String(s) => {
                            let s = s.to_string_lossy();
                            FUNCTION_FLAGS.iter().position(|f| *f == s)
                        }
                        _ => None,
                    };
                    let i = i.ok_or("unknown flag given")?;
                    flags |= 1 << i;
                }
            }
            _ => return Err("unknown argument given to redis.register_function".into()),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    Ok((name, callback, flags, description))
}

impl super::LuaEngine {
    /// `FUNCTION LOAD [REPLACE] code`: runs the library's code, which must
    /// register at least one function, and keeps the library. Returns its
    /// name, or Redis's error reply.
    pub fn load_library(&self, code: &[u8], replace: bool) -> Result<String, Reply> {
        let (name, shebang_len) =
            parse_metadata(code).map_err(|e| Reply::err(format!("ERR {e}")))?;
        if !replace && self.libraries.borrow().libraries.contains_key(&name) {
            return Err(Reply::err(format!("ERR Library '{name}' already exists")));
        }
        let functions = self.run_library_code(&code[shebang_len..])?;
        if functions.is_empty() {
            return Err(Reply::err("ERR No functions registered"));
        }
        let lib = Library {
            name: name.clone(),
            code: code.to_vec(),
            functions,
        };
        let mut libs = self.libraries.borrow_mut();
        let replacing = replace.then_some(name.as_str());
        if let Some(f) = libs.clash(&lib, replacing) {
            return Err(Reply::err(format!(
                "ERR Function {} already exists",
                f.name
            )));
        }
        libs.insert(lib);
        Ok(name)
    }

    /// Compiles and runs a library's code (after its shebang line, whose
    /// line feed is kept so that line numbers stay the user's) in the
    /// load-time environment: the functions it registered.
    fn run_library_code(&self, code: &[u8]) -> Result<BTreeMap<String, LibraryFunction>, Reply> {
        let chunk = self
            .lua
            .load(code)
            .set_name("@user_function")
            .set_environment(
                self.lua
                    .named_registry_value::<Table>(ENV)
                    .map_err(|e| Reply::err(format!("ERR {e}")))?,
            )
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                Reply::err(format!("ERR Error compiling function: {msg}"))
            })?;
        *self.pending.borrow_mut() = Some(BTreeMap::new());
        let ran = self.set_loading(true).and_then(|()| {
            self.budget.instructions.set(0);
            self.budget.stop.set(None);
            self.budget.loading.set(true);
            let ran = self.run.call::<(bool, LuaValue)>(chunk);
            self.budget.loading.set(false);
            ran
        });
        let _ = self.set_loading(false);
        let functions = self.pending.borrow_mut().take().unwrap_or_default();
        let failure = match ran {
            Ok((true, _)) => return Ok(functions),
            Ok((false, LuaValue::Table(t))) => match t.raw_get::<LuaValue>("err") {
                Ok(LuaValue::String(s)) => s.to_string_lossy(),
                _ => "(null)".into(),
            },
            Ok((false, other)) => other.to_string().unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        Err(Reply::err(format!(
            "ERR Error registering functions: {failure}"
        )))
    }

    /// Switches the functions' environment to loading (`true`: only the
    /// load-time names) or running.
    pub(crate) fn set_loading(&self, loading: bool) -> mlua::Result<()> {
        self.lua
            .named_registry_value::<Function>(SET_LOADING)?
            .call(loading)
    }

    /// The libraries, for `FUNCTION LIST`, `STATS` and `DUMP`.
    pub fn libraries(&self) -> std::cell::Ref<'_, Libraries> {
        self.libraries.borrow()
    }

    /// Removes the library `name` (`FUNCTION DELETE`); whether it existed.
    pub fn delete_library(&self, name: &str) -> bool {
        self.libraries.borrow_mut().remove(name).is_some()
    }

    /// Removes every library (`FUNCTION FLUSH`).
    pub fn flush_libraries(&self) {
        self.libraries.borrow_mut().clear();
    }

    /// Whether the function `name` (any case) declared `no-writes`;
    /// `None` if there is no such function.
    pub fn function_no_writes(&self, name: &str) -> Option<bool> {
        self.libraries
            .borrow()
            .function(name)
            .map(|(_, f)| f.no_writes())
    }

    /// Takes the libraries out (for `FUNCTION RESTORE`, which puts them
    /// back if the new ones do not load).
    pub(crate) fn take_libraries(&self) -> Libraries {
        std::mem::take(&mut *self.libraries.borrow_mut())
    }

    /// Puts libraries taken with [`Self::take_libraries`] back.
    pub(crate) fn set_libraries(&self, libs: Libraries) {
        *self.libraries.borrow_mut() = libs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shebang_names_the_library() {
        assert_eq!(
            parse_metadata(b"#!lua name=lib_1\nx"),
            Ok(("lib_1".into(), 16))
        );
        assert_eq!(parse_metadata(b"#!lua  name=x \n"), Ok(("x".into(), 14)));
        assert_eq!(
            parse_metadata(b"#!lua name=\"foo\"\n"),
            Ok(("foo".into(), 16))
        );
    }

    #[test]
    fn a_bad_shebang_gets_redis_words() {
        let e = |c: &[u8]| parse_metadata(c).unwrap_err();
        assert_eq!(e(b""), "Missing library metadata");
        assert_eq!(e(b"#!lua name=x"), "Invalid library metadata");
        assert_eq!(e(b"#!py name=x\n"), "Engine 'py' not found");
        assert_eq!(e(b"#! name=x\n"), "Engine '' not found");
        assert_eq!(e(b"#!lua\n"), "Library name was not given");
        assert_eq!(e(b"#!lua name=a-b\n"), BAD_NAME);
        assert_eq!(
            e(b"#!lua name=x a=b\n"),
            "Invalid metadata value given: a=b"
        );
        assert_eq!(
            e(b"#!lua name=x name=y\n"),
            "Invalid metadata value, name argument was given multiple times"
        );
    }
}
