//! The error replies commands share, worded as Redis 7.0.15 words them, and
//! the argument parsers that answer with them.

use crate::resp::{Reply, string2ll};

/// `ERR wrong number of arguments for '<name>' command`
pub(crate) fn arity_error(name: &str) -> Reply {
    Reply::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// The unknown-command error, formatted as Redis 7.0 formats it: the name
/// and the first arguments, each cut to 128 characters.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Reply {
    let mut tail = String::new();
    for a in &args[1..] {
        if tail.len() >= 128 {
            break;
        }
        let room = 128 - tail.len();
        let s = String::from_utf8_lossy(a);
        let s: String = s.chars().take(room).collect();
        tail.push('\'');
        tail.push_str(&s);
        tail.push_str("' ");
    }
    let name: String = String::from_utf8_lossy(&args[0])
        .chars()
        .take(128)
        .collect();
    Reply::err(format!(
        "ERR unknown command '{name}', with args beginning with: {tail}"
    ))
}

/// The unknown-subcommand error (`ERR unknown subcommand 'x'. Try CMD HELP.`).
pub(crate) fn unknown_subcommand(args: &[Vec<u8>]) -> Reply {
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    Reply::err(format!("ERR unknown subcommand '{sub}'. Try {cmd} HELP."))
}

/// Redis's `addReplySubcommandSyntaxError`: a known subcommand given
/// arguments it does not take.
pub(crate) fn subcommand_syntax_error(args: &[Vec<u8>]) -> Reply {
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let sub = String::from_utf8_lossy(&args[1]);
    Reply::err(format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {cmd} HELP."
    ))
}

/// `WRONGTYPE ...`: the key holds another type than the command works on.
pub(crate) fn wrongtype() -> Reply {
    Reply::err("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// `ERR value is not an integer or out of range`
pub(crate) fn not_integer() -> Reply {
    Reply::err("ERR value is not an integer or out of range")
}

/// `ERR syntax error`
pub(crate) fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

/// Parses an integer argument as Redis's `getLongLongFromObjectOrReply`.
pub(crate) fn int_arg(a: &[u8]) -> Result<i64, Reply> {
    string2ll(a).ok_or_else(not_integer)
}

/// Parses a millisecond timeout as Redis's `getTimeoutFromObjectOrReply`.
pub(crate) fn timeout_arg(a: &[u8]) -> Result<i64, Reply> {
    let t =
        string2ll(a).ok_or_else(|| Reply::err("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(Reply::err("ERR timeout is negative"));
    }
    Ok(t)
}
