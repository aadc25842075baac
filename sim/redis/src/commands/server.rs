//! The server commands: about the connection and the node rather than its
//! keys (`PING`, `ECHO`, `TIME`, `DBSIZE`, `INFO`, `SELECT`, `COMMAND`,
//! `CLIENT`, `QUIT`, `SHUTDOWN`).
//!
//! `PING`, `ECHO`, `TIME` and `DBSIZE` run like keyspace commands (they are
//! allowed in scripts, and a client's call records its `WAIT` offset, as
//! every keyspace command does); `INFO` and `SELECT` read node state;
//! `CLIENT`, `COMMAND`, `QUIT` and `SHUTDOWN` belong to the connection.

use super::Arity::{AtLeast, Exactly};
use super::errors::{arity_error, int_arg, subcommand_syntax_error, syntax_error};
use super::{Out, Subcommand, is_option};
use crate::client::{Client, ClientView};
use crate::handle::NodeHandle;
use crate::keyspace::Keyspace;
use crate::node::Node;
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// `PING [message]`
pub(crate) fn ping(_: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    match a.len() {
        1 => Ok(Reply::Status("PONG".into())),
        2 => Ok(Reply::Bulk(a[1].clone())),
        _ => Err(arity_error("ping")),
    }
}

/// `ECHO message`
pub(crate) fn echo(_: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Bulk(a[1].clone()))
}

/// `TIME`: the node's own clock (seconds and microseconds), read now.
pub(crate) fn time(_: &mut Keyspace, _: &[Vec<u8>], node: &NodeHandle) -> R {
    let now_us = node.now_us();
    let part = |n: i64| Reply::Bulk(n.to_string().into_bytes());
    Ok(Reply::Array(vec![
        part(now_us.div_euclid(1_000_000)),
        part(now_us.rem_euclid(1_000_000)),
    ]))
}

/// `DBSIZE`: keys stored, expired ones not yet reclaimed included.
pub(crate) fn dbsize(ks: &mut Keyspace, _: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(ks.len() as i64))
}

/// `SELECT index`: the database the caller's next commands use (a
/// client's, or a script's own: see [`Node::selected`]).
pub(crate) fn select(node: &Node, a: &[Vec<u8>]) -> Reply {
    match crate::databases::db_index(&a[1]) {
        Ok(db) => {
            node.selected.set(db);
            Reply::ok()
        }
        Err(e) => e,
    }
}

/// `CLIENT REPLY ON|OFF|SKIP`: only `ON` answers (`OFF` and `SKIP`
/// silence this very reply too).
fn client_reply(c: &mut Client, mode: &[u8]) -> R {
    use crate::client::Replies;
    if is_option(mode, "on") {
        c.replies = Replies::On;
        Ok(Reply::ok())
    } else if is_option(mode, "off") {
        c.replies = Replies::Off;
        Ok(Reply::ok())
    } else if is_option(mode, "skip") {
        if c.replies != Replies::Off {
            c.replies = Replies::SkipNext;
        }
        Ok(Reply::ok())
    } else {
        Err(Reply::err("ERR syntax error"))
    }
}

/// `QUIT`: OK, then the connection closes.
pub(crate) fn quit(_: &Node, _: &mut Client, _: &[Vec<u8>]) -> Out {
    Out::Quit(Reply::ok())
}

/// `CLIENT`'s subcommands (the command table checks their arities).
pub(crate) const CLIENT: &[Subcommand] = &[
    Subcommand {
        name: "client|getname",
        arity: Exactly(2),
    },
    Subcommand {
        name: "client|id",
        arity: Exactly(2),
    },
    Subcommand {
        name: "client|info",
        arity: Exactly(2),
    },
    Subcommand {
        name: "client|kill",
        arity: AtLeast(3),
    },
    Subcommand {
        name: "client|list",
        arity: AtLeast(2),
    },
    Subcommand {
        name: "client|no-evict",
        arity: Exactly(3),
    },
    Subcommand {
        name: "client|reply",
        arity: Exactly(3),
    },
    Subcommand {
        name: "client|setname",
        arity: Exactly(3),
    },
    Subcommand {
        name: "client|tracking",
        arity: AtLeast(3),
    },
    Subcommand {
        name: "client|unblock",
        arity: AtLeast(3),
    },
];

/// `CLIENT ID | GETNAME | INFO | KILL filter value ... | NO-EVICT on|off
/// | SETNAME name | TRACKING off | UNBLOCK id [TIMEOUT|ERROR]`
pub(crate) fn client(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    if is_option(&a[1], "kill") {
        return super::kill::client_kill(node, c, a);
    }
    if is_option(&a[1], "unblock") {
        return Out::Reply(client_unblock(node, a).unwrap_or_else(|e| e));
    }
    if is_option(&a[1], "info") {
        c.refresh_view();
        return Out::Reply(Reply::Verbatim(
            client_line(&c.view, node.is_blocked(c.id)).into_bytes(),
        ));
    }
    if is_option(&a[1], "list") {
        c.refresh_view();
        return Out::Reply(client_list(node, a).unwrap_or_else(|e| e));
    }
    Out::Reply(client_subcommand(c, a).unwrap_or_else(|e| e))
}

fn client_subcommand(c: &mut Client, a: &[Vec<u8>]) -> R {
    let sub = &a[1];
    if is_option(sub, "reply") {
        return client_reply(c, &a[2]);
    }
    if is_option(sub, "id") {
        Ok(Reply::Int(c.id as i64))
    } else if is_option(sub, "getname") {
        Ok(c.name.clone().map_or(Reply::Nil, Reply::Bulk))
    } else if is_option(sub, "no-evict") {
        // Nothing is ever evicted here (no maxmemory): the switch is
        // accepted and changes nothing.
        on_off(&a[2]).map(|_| Reply::ok())
    } else if is_option(sub, "tracking") {
        // Client-side caching is not simulated: turning it off (the
        // state every client is in) is all the node accepts.
        match on_off(&a[2])? {
            false => Ok(Reply::ok()),
            true => Err(Reply::err(
                "ERR CLIENT TRACKING on is not supported by the simulated node",
            )),
        }
    } else {
        // `setname`
        c.set_name(&a[2])?;
        Ok(Reply::ok())
    }
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 if client `id` was blocked on
/// keys (it then answers as if timed out, or with the `UNBLOCKED` error),
/// else 0. The reason is checked before the id, as Redis checks them.
fn client_unblock(node: &Node, a: &[Vec<u8>]) -> R {
    if a.len() > 4 {
        return Err(subcommand_syntax_error(a));
    }
    let with_error = match a.get(3) {
        None => false,
        Some(r) if is_option(r, "timeout") => false,
        Some(r) if is_option(r, "error") => true,
        Some(_) => {
            return Err(Reply::err(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    };
    let id = int_arg(&a[2])?;
    let unblocked = u64::try_from(id).is_ok_and(|id| node.unblock_client(id, with_error));
    Ok(Reply::Int(i64::from(unblocked)))
}

/// `on` or `off`, any case; else Redis's syntax error.
fn on_off(arg: &[u8]) -> Result<bool, Reply> {
    if is_option(arg, "on") {
        Ok(true)
    } else if is_option(arg, "off") {
        Ok(false)
    } else {
        Err(syntax_error())
    }
}

/// Which clients `CLIENT LIST TYPE` names (`getClientType`; the node's
/// replicas and its master link are not clients here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    PubSub,
    Master,
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]`: a line
/// per connected client (in the order they connected, or of the ids
/// given, unknown ids skipped), as `CLIENT INFO` prints its own.
fn client_list(node: &Node, a: &[Vec<u8>]) -> R {
    let views: Vec<_> = node.state.borrow().client_views.values().cloned().collect();
    let chosen: Vec<_> = if a.len() == 4 && is_option(&a[2], "type") {
        let wanted = client_type(&a[3]).ok_or_else(|| {
            Reply::err(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(&a[3])
            ))
        })?;
        let pubsub = |v: &ClientView| v.subscriptions.get() != (0, 0);
        views
            .into_iter()
            .filter(|v| match wanted {
                ClientType::PubSub => pubsub(v),
                ClientType::Normal => !pubsub(v),
                ClientType::Replica | ClientType::Master => false,
            })
            .collect()
    } else if a.len() > 3 && is_option(&a[2], "id") {
        let mut ids = Vec::with_capacity(a.len() - 3);
        for arg in &a[3..] {
            ids.push(string2ll(arg).ok_or_else(|| Reply::err("ERR Invalid client ID"))?);
        }
        ids.into_iter()
            .filter_map(|id| views.iter().find(|v| v.id as i64 == id).cloned())
            .collect()
    } else if a.len() != 2 {
        return Err(syntax_error());
    } else {
        views
    };
    let text: String = chosen
        .iter()
        .map(|v| client_line(v, node.is_blocked(v.id)))
        .collect();
    Ok(Reply::Verbatim(text.into_bytes()))
}

/// `getClientTypeByName`.
fn client_type(name: &[u8]) -> Option<ClientType> {
    [
        ("normal", ClientType::Normal),
        ("slave", ClientType::Replica),
        ("replica", ClientType::Replica),
        ("pubsub", ClientType::PubSub),
        ("master", ClientType::Master),
    ]
    .into_iter()
    .find(|(n, _)| is_option(name, n))
    .map(|(_, t)| t)
}

/// One client's line, with the fields Redis 7.0.15 prints. The node has
/// no socket addresses, file descriptors or buffers to measure: `addr`
/// and `laddr` are fixed loopback addresses (a port and descriptor made
/// from the id), sizes are Redis's for an idle client, `age` and `idle` 0.
fn client_line(v: &ClientView, blocked: bool) -> String {
    let name = v
        .name
        .borrow()
        .as_deref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let (sub, psub) = v.subscriptions.get();
    let mut flags = String::new();
    if sub + psub > 0 {
        flags.push('P');
    }
    if v.multi.get().is_some() {
        flags.push('x');
    }
    if blocked {
        flags.push('b');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = v.multi.get().map_or(-1, |n| n as i64);
    format!(
        "id={id} addr=127.0.0.1:{port} laddr=127.0.0.1:6379 fd={fd} name={name} age=0 idle=0 flags={flags} db={db} sub={sub} psub={psub} ssub=0 multi={multi} qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=22298 events=r cmd={cmd} user=default redir=-1 resp={resp}\n",
        id = v.id,
        port = 40000 + v.id,
        fd = v.id + 7,
        db = v.db.get(),
        cmd = v.command.get(),
        resp = v.resp.get(),
    )
}

/// What `SHUTDOWN`'s arguments ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownRequest {
    /// `SHUTDOWN ABORT`: cancel a shutdown in progress (there never is
    /// one: this node stops at once).
    Abort,
    /// Stop the server; `nosave` is the only way to stop it while a script
    /// is busy.
    Stop {
        /// `NOSAVE` was given.
        nosave: bool,
    },
}

/// Parses `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]` as Redis 7.0's
/// `shutdownCommand` does.
pub(crate) fn shutdown_request(a: &[Vec<u8>]) -> Result<ShutdownRequest, Reply> {
    let (mut nosave, mut save, mut flags, mut abort) = (false, false, false, false);
    for arg in &a[1..] {
        if is_option(arg, "nosave") {
            nosave = true;
        } else if is_option(arg, "save") {
            save = true;
        } else if is_option(arg, "now") || is_option(arg, "force") {
            flags = true;
        } else if is_option(arg, "abort") {
            abort = true;
        } else {
            return Err(syntax_error());
        }
    }
    if (abort && (nosave || save || flags)) || (nosave && save) {
        return Err(syntax_error());
    }
    Ok(if abort {
        ShutdownRequest::Abort
    } else {
        ShutdownRequest::Stop { nosave }
    })
}

/// `ERR No shutdown in progress.`: `SHUTDOWN ABORT` with nothing to abort.
pub(crate) fn no_shutdown_in_progress() -> Reply {
    Reply::err("ERR No shutdown in progress.")
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: the node stops (its
/// persistence flushed, as Redis flushes its AOF) and the caller's
/// connection closes without a reply. There is nothing to save (the node
/// has no RDB) and no replica to wait for.
pub(crate) fn shutdown(node: &Node, _: &mut Client, a: &[Vec<u8>]) -> Out {
    match shutdown_request(a) {
        Ok(ShutdownRequest::Stop { .. }) => {
            node.shut_down();
            Out::Shutdown
        }
        Ok(ShutdownRequest::Abort) => Out::Reply(no_shutdown_in_progress()),
        Err(e) => Out::Reply(e),
    }
}
