//! `loadstring` as Redis 7.0's Lua has it: it never loads precompiled
//! bytecode. Redis's Lua reads every chunk as source, so a chunk that
//! `string.dump` made (it starts with the escape byte, 27) fails to parse
//! at its first byte, and `loadstring` returns `nil` and that syntax
//! error. Stock Lua 5.1 would run it, and bytecode can break out of any
//! sandbox; the fix went into Redis with its Lua hardening.

use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Value};

use super::type_error;

/// The longest a `[string "..."]` chunk id shows of its source, as
/// Redis's Lua prints it.
const SOURCE_SHOWN: usize = 63;

/// Lua 5.1's `luaO_chunkid`: how an error names the chunk called `name`.
fn chunk_id(name: &[u8]) -> String {
    // A C string: the name ends at its first NUL.
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if let Some(rest) = name.strip_prefix(b"=") {
        return text(&rest[..rest.len().min(SOURCE_SHOWN + 16)]);
    }
    if let Some(rest) = name.strip_prefix(b"@") {
        return text(rest);
    }
    let line = name
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .unwrap_or(name.len());
    let shown = line.min(SOURCE_SHOWN);
    if shown < name.len() {
        format!("[string \"{}...\"]", text(&name[..shown]))
    } else {
        format!("[string \"{}\"]", text(name))
    }
}

/// Wraps the library's `loadstring` (`original`) so that a binary chunk
/// fails as Redis's does; every other chunk goes to `original`.
pub(crate) fn source_only(lua: &Lua, original: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        let chunk = match args.first() {
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            Some(Value::Integer(_) | Value::Number(_)) => lua
                .coerce_string(args[0].clone())?
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default(),
            _ => return Err(type_error(lua, &args, 1, "string")),
        };
        let name = match args.get(1) {
            None | Some(Value::Nil) => None,
            Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
                lua.coerce_string(v.clone())?.map(|s| s.as_bytes().to_vec())
            }
            Some(_) => return Err(type_error(lua, &args, 2, "string")),
        };
        if chunk.first() == Some(&27) {
            let id = chunk_id(name.as_deref().unwrap_or(&chunk));
            let error = format!("{id}:1: unexpected symbol near 'char(27)'");
            return (Value::Nil, Value::String(lua.create_string(error)?)).into_lua_multi(lua);
        }
        original.call::<MultiValue>(MultiValue::from_iter(args))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_id_shows_a_source_up_to_its_first_line_and_63_bytes() {
        assert_eq!(chunk_id(b"\x1bLuaQ\0\x01"), "[string \"\x1bLuaQ\"]");
        assert_eq!(chunk_id(b"=named"), "named");
        assert_eq!(chunk_id(b"@file.lua"), "file.lua");
        assert_eq!(chunk_id(b"a\nb"), "[string \"a...\"]");
        let long = "y".repeat(80);
        assert_eq!(
            chunk_id(long.as_bytes()),
            format!("[string \"{}...\"]", &long[..63])
        );
    }
}
