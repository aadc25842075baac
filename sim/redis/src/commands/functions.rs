//! Redis 7.0's functions: `FCALL`, `FCALL_RO`, and `FUNCTION LOAD |
//! DELETE | LIST | FLUSH | STATS | KILL | DUMP | RESTORE | HELP`.
//!
//! A function runs as an `EVAL` script does (the same engine, budget,
//! conversions and commit, see [`super::scripting::execute`]); it may
//! write unless it declared `no-writes`, and `FCALL_RO` refuses a function
//! that did not. The libraries live in the Lua engine
//! ([`crate::lua::library`]); this file is the commands around them.

use super::Arity::{AtLeast, Exactly};
use super::errors::subcommand_syntax_error;
use super::scripting::{execute, key_count, not_busy, reply_to};
use super::{Out, Subcommand, is_option, readonly_error};
use crate::client::Client;
use crate::handle::Role;
use crate::lua::library::Library;
use crate::node::Node;
use crate::resp::Reply;

/// `FCALL function numkeys key... arg...`
pub(crate) fn fcall(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, call(node, a, false))
}

/// `FCALL_RO function numkeys key... arg...`
pub(crate) fn fcall_ro(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, call(node, a, true))
}

fn not_found() -> Reply {
    Reply::err("ERR Function not found")
}

fn call(node: &Node, a: &[Vec<u8>], read_only: bool) -> Reply {
    let name = String::from_utf8_lossy(&a[1]).into_owned();
    let Some(no_writes) = node.lua.function_no_writes(&name) else {
        return not_found();
    };
    let numkeys = match super::errors::int_arg(&a[2]) {
        Ok(n) => n,
        Err(_) => return Reply::err("ERR Bad number of keys provided"),
    };
    let numkeys = match key_count(numkeys, a) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if !no_writes && read_only {
        return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
    }
    if !no_writes && node.state.borrow().role != Role::Master {
        return readonly_error();
    }
    execute(node, a, numkeys, |keys, args| {
        node.lua
            .run_function(&name, a, keys, args, read_only || no_writes)
    })
    .unwrap_or_else(not_found)
}

const fn sub(name: &'static str, arity: super::Arity) -> Subcommand {
    Subcommand { name, arity }
}

/// `FUNCTION`'s subcommands (the command table checks their arities).
pub(crate) const FUNCTION: &[Subcommand] = &[
    sub("function|delete", Exactly(3)),
    sub("function|dump", Exactly(2)),
    sub("function|flush", AtLeast(2)),
    sub("function|help", Exactly(2)),
    sub("function|kill", Exactly(2)),
    sub("function|list", AtLeast(2)),
    sub("function|load", AtLeast(3)),
    sub("function|restore", AtLeast(3)),
    sub("function|stats", Exactly(2)),
];

/// `FUNCTION subcommand ...`
pub(crate) fn function(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    let sub = &a[1];
    // The subcommands that change the libraries are write commands: a
    // replica refuses them (its libraries are its master's).
    let writes = ["load", "delete", "flush", "restore"]
        .iter()
        .any(|w| is_option(sub, w));
    if writes && node.state.borrow().role != Role::Master {
        return Out::Reply(readonly_error());
    }
    let reply = if is_option(sub, "load") {
        load(node, a)
    } else if is_option(sub, "delete") {
        let name = String::from_utf8_lossy(&a[2]);
        if node.lua.delete_library(&name) {
            node.functions_changed();
            Reply::ok()
        } else {
            Reply::err("ERR Library not found")
        }
    } else if is_option(sub, "list") {
        list(node, c, a)
    } else if is_option(sub, "flush") {
        flush(node, a)
    } else if is_option(sub, "stats") {
        stats(node)
    } else if is_option(sub, "kill") {
        // A command runs only between functions, so none is running here
        // (the real-TCP server's front answers for a busy node).
        not_busy()
    } else if is_option(sub, "dump") {
        Reply::Bulk(dump(
            &node
                .lua
                .libraries()
                .libraries
                .values()
                .cloned()
                .collect::<Vec<_>>(),
        ))
    } else if is_option(sub, "restore") {
        restore(node, a)
    } else {
        help()
    };
    // `WAIT` after a change waits for the replicas to have it.
    c.woff = node.state.borrow().offset;
    Out::Reply(reply)
}

/// `FUNCTION LOAD [REPLACE] code`
fn load(node: &Node, a: &[Vec<u8>]) -> Reply {
    let (options, code) = a[2..].split_at(a.len() - 3);
    let mut replace = false;
    for o in options {
        if !is_option(o, "replace") {
            return Reply::err(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(o)
            ));
        }
        replace = true;
    }
    match node.lua.load_library(&code[0], replace) {
        Ok(name) => {
            node.functions_changed();
            Reply::Bulk(name.into_bytes())
        }
        Err(e) => e,
    }
}

/// `FUNCTION FLUSH [ASYNC|SYNC]`
fn flush(node: &Node, a: &[Vec<u8>]) -> Reply {
    if a.len() > 3 {
        return subcommand_syntax_error(a);
    }
    if a.len() == 3 && !is_option(&a[2], "sync") && !is_option(&a[2], "async") {
        return Reply::err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    node.lua.flush_libraries();
    node.functions_changed();
    Reply::ok()
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`
fn list(node: &Node, _: &Client, a: &[Vec<u8>]) -> Reply {
    let (mut pattern, mut with_code) = (None, false);
    let mut i = 2;
    while i < a.len() {
        if is_option(&a[i], "withcode") && !with_code {
            with_code = true;
        } else if is_option(&a[i], "libraryname") && pattern.is_none() {
            let Some(p) = a.get(i + 1) else {
                return Reply::err("ERR library name argument was not given");
            };
            pattern = Some(p.clone());
            i += 1;
        } else {
            return Reply::err(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&a[i])
            ));
        }
        i += 1;
    }
    let libs = node.lua.libraries();
    let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    let listed = libs
        .libraries
        .values()
        .filter(|lib| {
            pattern
                .as_ref()
                .is_none_or(|p| crate::glob::matches(p, lib.name.as_bytes()))
        })
        .map(|lib| {
            let functions = lib
                .functions
                .values()
                .map(|f| {
                    Reply::Map(vec![
                        (bulk("name"), bulk(&f.name)),
                        (
                            bulk("description"),
                            f.description.clone().map_or(Reply::Nil, Reply::Bulk),
                        ),
                        (
                            bulk("flags"),
                            Reply::Set(
                                f.flag_names()
                                    .into_iter()
                                    .map(|n| Reply::Status(n.into()))
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect();
            let mut fields = vec![
                (bulk("library_name"), bulk(&lib.name)),
                (bulk("engine"), bulk("LUA")),
                (bulk("functions"), Reply::Array(functions)),
            ];
            if with_code {
                fields.push((bulk("library_code"), Reply::Bulk(lib.code.clone())));
            }
            Reply::Map(fields)
        })
        .collect();
    Reply::Array(listed)
}

/// `FUNCTION STATS`: no function is ever running when a command runs
/// (the real-TCP server's front answers for a busy one, with
/// [`stats_reply`]).
fn stats(node: &Node) -> Reply {
    let libs = node.lua.libraries();
    stats_reply(Reply::Nil, libs.libraries.len(), libs.function_count())
}

/// `FUNCTION STATS`'s reply: the running function (or nil) and the
/// engine's counts.
pub(crate) fn stats_reply(running: Reply, libraries: usize, functions: usize) -> Reply {
    let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    Reply::Map(vec![
        (bulk("running_script"), running),
        (
            bulk("engines"),
            Reply::Map(vec![(
                bulk("LUA"),
                Reply::Map(vec![
                    (bulk("libraries_count"), Reply::Int(libraries as i64)),
                    (bulk("functions_count"), Reply::Int(functions as i64)),
                ]),
            )]),
        ),
    ])
}

/// The payload's trailer: a format version, then a checksum of all that
/// comes before it.
const DUMP_VERSION: u16 = 1;

/// Marks one library's code in the payload (Redis's function opcode).
const LIBRARY_OPCODE: u8 = 0xf5;

/// `FUNCTION DUMP`'s payload, the node's own format: per library its
/// opcode, its code's length (4 bytes, little-endian) and code; then the
/// format version (2 bytes) and the FNV-1a hash of everything before it
/// (8 bytes).
pub(crate) fn dump(libraries: &[Library]) -> Vec<u8> {
    let mut out = Vec::new();
    for lib in libraries {
        out.push(LIBRARY_OPCODE);
        out.extend_from_slice(&(lib.code.len() as u32).to_le_bytes());
        out.extend_from_slice(&lib.code);
    }
    out.extend_from_slice(&DUMP_VERSION.to_le_bytes());
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn bad_payload() -> Reply {
    Reply::err("ERR DUMP payload version or checksum are wrong")
}

/// The libraries' code in a payload [`dump`] made.
pub(crate) fn read_dump(payload: &[u8]) -> Result<Vec<Vec<u8>>, Reply> {
    if payload.len() < 10 {
        return Err(bad_payload());
    }
    let (body, sum) = payload.split_at(payload.len() - 8);
    let (libs, version) = body.split_at(body.len() - 2);
    if version != DUMP_VERSION.to_le_bytes() || sum != fnv1a(body).to_le_bytes() {
        return Err(bad_payload());
    }
    let mut codes = Vec::new();
    let mut rest = libs;
    while let Some((&op, tail)) = rest.split_first() {
        let malformed = || Reply::err("ERR given type is not a function");
        if op != LIBRARY_OPCODE || tail.len() < 4 {
            return Err(malformed());
        }
        let (len, tail) = tail.split_at(4);
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        if tail.len() < len {
            return Err(malformed());
        }
        codes.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    Ok(codes)
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`
fn restore(node: &Node, a: &[Vec<u8>]) -> Reply {
    if a.len() > 4 {
        return subcommand_syntax_error(a);
    }
    let policy = match a.get(3) {
        None => Policy::Append,
        Some(p) if is_option(p, "flush") => Policy::Flush,
        Some(p) if is_option(p, "append") => Policy::Append,
        Some(p) if is_option(p, "replace") => Policy::Replace,
        Some(_) => {
            return Reply::err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    };
    let codes = match read_dump(&a[2]) {
        Ok(c) => c,
        Err(e) => return e,
    };
    match restore_libraries(node, &codes, policy) {
        Ok(()) => {
            node.functions_changed();
            Reply::ok()
        }
        Err(e) => e,
    }
}

/// What `FUNCTION RESTORE` does with the libraries already there.
#[derive(Clone, Copy, PartialEq)]
enum Policy {
    Flush,
    Append,
    Replace,
}

/// Loads `codes` beside (or instead of) the libraries there; on any error
/// the libraries stay as they were.
fn restore_libraries(node: &Node, codes: &[Vec<u8>], policy: Policy) -> Result<(), Reply> {
    let old = node.lua.take_libraries();
    let loaded = codes
        .iter()
        .try_for_each(|code| node.lua.load_library(code, false).map(|_| ()));
    let new = node.lua.take_libraries();
    if let Err(e) = loaded {
        node.lua.set_libraries(old);
        return Err(e);
    }
    let mut merged = old;
    if policy == Policy::Flush {
        merged.clear();
    }
    let backup_names: Vec<String> = merged.libraries.keys().cloned().collect();
    let mut result = Ok(());
    let mut removed = Vec::new();
    for lib in new.libraries.values() {
        if merged.libraries.contains_key(&lib.name) {
            if policy == Policy::Replace {
                removed.extend(merged.remove(&lib.name));
            } else {
                result = Err(Reply::err(format!(
                    "ERR Library {} already exists",
                    lib.name
                )));
                break;
            }
        }
    }
    if result.is_ok() {
        for lib in new.libraries.values() {
            if let Some(f) = merged.clash(lib, None) {
                result = Err(Reply::err(format!(
                    "ERR Function {} already exists",
                    f.name
                )));
                break;
            }
            merged.insert(lib.clone());
        }
    }
    if result.is_err() {
        // Back to what was there: the restored libraries out, the
        // replaced ones in.
        for lib in new.libraries.keys() {
            if !backup_names.contains(lib) {
                merged.remove(lib);
            }
        }
        for lib in removed {
            merged.insert(lib);
        }
    }
    node.lua.set_libraries(merged);
    result
}

/// `FUNCTION HELP`, as Redis 7.0 words it.
fn help() -> Reply {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status(l.to_string())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_with_a_wrong_checksum_is_refused() {
        let payload = dump(&[]);
        assert_eq!(read_dump(&payload), Ok(vec![]));
        let mut bad = payload.clone();
        bad[0] ^= 1;
        assert_eq!(read_dump(&bad), Err(bad_payload()));
        assert_eq!(read_dump(b"garbage"), Err(bad_payload()));
    }
}
