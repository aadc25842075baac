//! `redis.call` as a C function, the one place the project uses `unsafe`.
//!
//! Why a C function: Redis's `redis.call` is one, and two things follow
//! that scripts can see.
//!
//! * A script's `return redis.call(...)` is a tail call, and Lua 5.1 keeps
//!   the caller's frame only when the callee is a C function: the error
//!   then names the script's line, as Redis's does. A Lua wrapper would
//!   lose it.
//! * A call with thousands of arguments (`unpack` of a long list, up to
//!   Lua's limit of 8,000 stack slots) works. A Rust function made with
//!   mlua cannot take that many: the arguments stay on its stack while it
//!   runs, and every value it then makes (a table, the reply) needs a few
//!   slots more, which Lua refuses past the limit.
//!
//! So `redis.call` is this small C function: it packs its arguments into a
//! table and calls the Rust half with the table and the count, on a fresh
//! frame of two arguments. Lua gives a C function `LUA_MINSTACK` (20) free
//! slots; it uses four.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_int};

use mlua::{Function, Lua, ffi};

/// The registry key of the Rust half: a function of `(count, args)`.
const PACKED: &CStr = c"locklab.redis_call_packed";

/// `redis.call` over `packed`, a function of the argument count and a
/// table of the arguments.
pub(super) fn redis_call(lua: &Lua, packed: Function) -> mlua::Result<Function> {
    lua.set_named_registry_value(&PACKED.to_string_lossy(), packed)?;
    // SAFETY: `pack_and_call` keeps to the Lua C API's rules (see there),
    // and the registry now holds what it calls.
    unsafe { lua.create_c_function(pack_and_call) }
}

/// The C function: packs the arguments, calls the Rust half, returns its
/// results.
///
/// # Safety
/// Called by Lua only, as a `lua_CFunction`, on a state whose registry
/// holds [`PACKED`]. Its frame owns nothing to drop, so an error the Rust
/// half raises may unwind through it as Lua's errors do.
unsafe extern "C-unwind" fn pack_and_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: every index used is on the stack, and at most four slots
    // are pushed beyond the arguments (of the 20 Lua guarantees).
    unsafe {
        let n = ffi::lua_gettop(state);
        ffi::lua_createtable(state, n, 0);
        for i in 1..=n {
            ffi::lua_pushvalue(state, i);
            ffi::lua_rawseti(state, -2, ffi::lua_Integer::from(i));
        }
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, PACKED.as_ptr());
        ffi::lua_pushinteger(state, ffi::lua_Integer::from(n));
        ffi::lua_pushvalue(state, -3);
        ffi::lua_call(state, 2, ffi::LUA_MULTRET);
        ffi::lua_gettop(state) - n - 1
    }
}
