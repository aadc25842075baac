//! What `SSCAN` and `ZSCAN` share: the cursor and the options as Redis's
//! `parseScanCursorOrReply` and `scanGenericCommand` check them, and the
//! reply.
//!
//! The node answers every scan in one call, cursor `0`, as Redis answers
//! a scan of a small (intset or listpack) value: a scan loop that starts at
//! 0 sees every member once, whatever the value's size.

use super::errors::{int_arg, syntax_error};
use super::is_option;
use crate::glob;
use crate::resp::Reply;

/// Checks a cursor as `strtoul` reads it (a sign is allowed, leading space
/// and trailing bytes are not, nor a value past 64 bits).
pub(crate) fn check_cursor(arg: &[u8]) -> Result<(), Reply> {
    let invalid = || Reply::err("ERR invalid cursor");
    if arg.is_empty() {
        return Ok(());
    }
    if arg[0].is_ascii_whitespace() || arg[0] == 0x0b {
        return Err(invalid());
    }
    let digits = arg
        .strip_prefix(b"-")
        .or(arg.strip_prefix(b"+"))
        .unwrap_or(arg);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let fits = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .is_some();
    if fits { Ok(()) } else { Err(invalid()) }
}

/// The `MATCH` pattern of the options after the cursor (`COUNT n`, `MATCH
/// pattern`; `None` when absent or `*`). `COUNT` is checked and otherwise
/// ignored: everything comes back at once.
pub(crate) fn pattern(opts: &[Vec<u8>]) -> Result<Option<&[u8]>, Reply> {
    let mut pattern = None;
    let mut i = 0;
    while i < opts.len() {
        let more = i + 1 < opts.len();
        if is_option(&opts[i], "count") && more {
            if int_arg(&opts[i + 1])? < 1 {
                return Err(syntax_error());
            }
        } else if is_option(&opts[i], "match") && more {
            pattern = Some(opts[i + 1].as_slice()).filter(|p| *p != b"*");
        } else {
            return Err(syntax_error());
        }
        i += 2;
    }
    Ok(pattern)
}

/// The reply of a finished scan: cursor `0` and the items. With `pairs`
/// (`ZSCAN`'s member and score) an item is kept or dropped with the one
/// after it, by whether the first matches.
pub(crate) fn reply(items: Vec<Vec<u8>>, pattern: Option<&[u8]>, pairs: bool) -> Reply {
    let step = if pairs { 2 } else { 1 };
    let kept = items
        .chunks(step)
        .filter(|c| pattern.is_none_or(|p| glob::matches(p, &c[0])))
        .flatten()
        .map(|i| Reply::Bulk(i.clone()))
        .collect();
    Reply::Array(vec![Reply::Bulk(b"0".to_vec()), Reply::Array(kept)])
}

/// The reply for a key that does not exist: cursor `0`, nothing.
pub(crate) fn empty() -> Reply {
    Reply::Array(vec![Reply::Bulk(b"0".to_vec()), Reply::Array(vec![])])
}
