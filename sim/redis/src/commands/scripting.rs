//! The scripting commands: `EVAL`, `EVALSHA`, their read-only forms
//! `EVAL_RO` and `EVALSHA_RO`, and `SCRIPT LOAD | EXISTS | FLUSH | KILL`.
//!
//! A script that declares `flags=no-writes` in its shebang, or that runs
//! through a `_RO` form, may not write: its write commands are refused.
//! A script with a shebang that does not declare it is refused outright
//! by the `_RO` forms and by a replica.
//!
//! A script runs atomically: the keyspace's clock is frozen at its start,
//! its `redis.call`s go through [`Node::call_from_script`], and all its
//! changes are committed together when it ends, as one replication batch.
//! The Lua side (the engine, the script cache, conversions) is
//! [`crate::lua`].

use super::Arity::{AtLeast, Exactly};
use super::errors::int_arg;
use super::readonly_error;
use super::{Out, Subcommand, is_option};
use crate::client::Client;
use crate::events::Origin;
use crate::handle::Role;
use crate::lua::shebang::{self, ScriptFlags};
use crate::node::Node;
use crate::resp::Reply;

fn no_script() -> Reply {
    Reply::err("NOSCRIPT No matching script. Please use EVAL.")
}

/// `EVAL script numkeys key... arg...`
pub(crate) fn eval(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, run(node, Body::Source, Writes::AsDeclared, a))
}

/// `EVAL_RO script numkeys key... arg...`
pub(crate) fn eval_ro(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, run(node, Body::Source, Writes::Refused, a))
}

/// `EVALSHA sha1 numkeys key... arg...`
pub(crate) fn evalsha(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, run(node, Body::Sha, Writes::AsDeclared, a))
}

/// `EVALSHA_RO sha1 numkeys key... arg...`
pub(crate) fn evalsha_ro(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    reply_to(node, c, run(node, Body::Sha, Writes::Refused, a))
}

/// The script's reply; the client's write offset (for `WAIT`) moves to
/// what the script wrote.
pub(crate) fn reply_to(node: &Node, c: &mut Client, reply: Reply) -> Out {
    c.woff = node.state.borrow().offset;
    Out::Reply(reply)
}

/// Whether a script may write.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    /// Unless its shebang declares `no-writes` (`EVAL`, `EVALSHA`).
    AsDeclared,
    /// Never (`EVAL_RO`, `EVALSHA_RO`).
    Refused,
}

/// How `EVAL`-like commands name their script.
#[derive(Clone, Copy, PartialEq)]
enum Body {
    /// The script's source (loaded and cached first).
    Source,
    /// The SHA1 of a cached script.
    Sha,
}

fn run(node: &Node, body: Body, writes: Writes, a: &[Vec<u8>]) -> Reply {
    if body == Body::Sha && a[1].len() != 40 {
        return no_script();
    }
    let numkeys = match int_arg(&a[2]).and_then(|n| key_count(n, a)) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let sha = match body {
        Body::Sha => {
            let s = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
            if !node.lua.exists(&s) {
                return no_script();
            }
            s
        }
        Body::Source => match node.lua.load(&a[1]) {
            Ok(s) => s,
            Err(e) => return e,
        },
    };
    let flags = node.lua.flags(&sha).unwrap_or_default();
    let may_write = flags.declared && !flags.no_writes;
    if may_write && writes == Writes::Refused {
        return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
    }
    if may_write && node.state.borrow().role != Role::Master {
        return readonly_error();
    }
    execute(node, a, numkeys, |keys, args| match writes {
        Writes::AsDeclared => node.lua.run(&sha, keys, args),
        Writes::Refused => node.lua.run_read_only(&sha, keys, args),
    })
    .unwrap_or_else(no_script)
}

impl Node {
    /// The flags the script a command `name` (`args`) runs declares, as
    /// Redis reads them before running it (`evalGetCommandFlags`,
    /// `fcallGetCommandFlags`): an `EVAL`'s shebang, a cached script's
    /// (an unknown SHA1: none), a function's (`no-writes` only). `None`
    /// for other commands.
    pub(crate) fn declared_script_flags(
        &self,
        name: &str,
        args: &[Vec<u8>],
    ) -> Option<ScriptFlags> {
        match name {
            "eval" | "eval_ro" => shebang::parse(&args[1]).ok().map(|(flags, _)| flags),
            "evalsha" | "evalsha_ro" => {
                let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
                self.lua.flags(&sha)
            }
            "fcall" | "fcall_ro" => {
                let function = String::from_utf8_lossy(&args[1]);
                let no_writes = self.lua.function_no_writes(&function)?;
                Some(ScriptFlags {
                    declared: true,
                    no_writes,
                    allow_oom: false,
                })
            }
            _ => None,
        }
    }
}

/// Checks a script's key count against the command `a` (name, script,
/// numkeys, keys, arguments), as `EVAL` and `FCALL` check it.
pub(crate) fn key_count(numkeys: i64, a: &[Vec<u8>]) -> Result<usize, Reply> {
    if numkeys > (a.len() - 3) as i64 {
        return Err(Reply::err(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(Reply::err("ERR Number of keys can't be negative"));
    }
    Ok(numkeys as usize)
}

/// What `EVAL` and `FCALL` share once the script is found and allowed to
/// run: the keyspace's clock frozen at its start, its own database, the
/// count of aborted scripts, and its changes committed together (or
/// dropped if the server stopped inside it). `a` is the command (name,
/// script, numkeys, keys, arguments); `run` gets the keys and arguments
/// and gives `None` if the script is gone.
pub(crate) fn execute(
    node: &Node,
    a: &[Vec<u8>],
    numkeys: usize,
    run: impl FnOnce(&[Vec<u8>], &[Vec<u8>]) -> Option<Reply>,
) -> Option<Reply> {
    let k = 3 + numkeys;
    // Inside `EXEC` the clock stays frozen at the transaction's start.
    if !node.in_exec.get() {
        node.state.borrow_mut().dbs.set_now(node.handle.now_ms());
    }
    // A script's `SELECT` changes only the script's database (Redis 7.0):
    // the caller's comes back when it ends.
    let db = node.selected.get();
    let ran = run(&a[3..k], &a[k..]);
    if ran.is_some() && node.lua.last_aborted() {
        node.handle.count_aborted_script();
    }
    node.selected.set(db);
    if node.lua.stopped_by_shutdown() {
        // The server stopped inside the script (SHUTDOWN NOSAVE, a signal):
        // as when Redis exits mid-script, its writes reach neither the disk
        // nor the replicas.
        {
            let mut st = node.state.borrow_mut();
            st.dbs.discard_changes();
            st.notifications.clear();
        }
        return ran;
    }
    node.commit(Origin::Client);
    ran
}

/// `SCRIPT`'s subcommands (the command table checks their arities).
pub(crate) const SCRIPT: &[Subcommand] = &[
    Subcommand {
        name: "script|exists",
        arity: AtLeast(3),
    },
    Subcommand {
        name: "script|flush",
        arity: AtLeast(2),
    },
    Subcommand {
        name: "script|kill",
        arity: Exactly(2),
    },
    Subcommand {
        name: "script|load",
        arity: Exactly(3),
    },
];

/// `SCRIPT LOAD script | EXISTS sha1... | FLUSH [SYNC|ASYNC] | KILL`
pub(crate) fn script(node: &Node, _: &mut Client, a: &[Vec<u8>]) -> Out {
    Out::Reply(script_subcommand(node, a).unwrap_or_else(|e| e))
}

fn script_subcommand(node: &Node, a: &[Vec<u8>]) -> Result<Reply, Reply> {
    let sub = &a[1];
    if is_option(sub, "load") {
        let sha = node.lua.load(&a[2])?;
        Ok(Reply::Bulk(sha.into_bytes()))
    } else if is_option(sub, "exists") {
        Ok(Reply::Array(
            a[2..]
                .iter()
                .map(|s| {
                    let s = String::from_utf8_lossy(s).to_ascii_lowercase();
                    Reply::Int(i64::from(node.lua.exists(&s)))
                })
                .collect(),
        ))
    } else if is_option(sub, "flush") {
        if a.len() > 3 || (a.len() == 3 && !is_option(&a[2], "sync") && !is_option(&a[2], "async"))
        {
            return Err(Reply::err(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ));
        }
        node.lua.flush();
        Ok(Reply::ok())
    } else {
        // `kill`: a command runs only between scripts, so none is running
        // here. A script that runs past the busy threshold is killed by the
        // real-TCP server's front, which answers for the busy node
        // (`crate::busy`).
        Err(not_busy())
    }
}

/// `NOTBUSY ...`: `SCRIPT KILL` with no script running.
pub(crate) fn not_busy() -> Reply {
    Reply::err("NOTBUSY No scripts in execution right now.")
}
