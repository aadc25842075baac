//! The string commands beyond `GET`/`SET`: `GETEX`, `GETDEL`, `MSET`,
//! `MSETNX`, `INCRBYFLOAT`, `APPEND`, `GETRANGE`/`SUBSTR` and `SETRANGE`,
//! as Redis 7.0.15's `t_string.c` answers them (its checks in its order).

use super::errors::{arity_error, int_arg, syntax_error, wrongtype};
use super::is_option;
use crate::commands::long_double::{LongDouble, float_error};
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::Reply;

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// Redis's `proto-max-bulk-len` default (512 MB): no string may grow past it.
pub(crate) const MAX_STRING_LEN: i64 = 512 * 1024 * 1024;

/// The string stored at `key`, `None` if absent, WRONGTYPE if another type.
fn string(ks: &mut Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(Some(s.clone())),
            _ => Err(wrongtype()),
        },
    }
}

/// Redis's `checkStringLength`: a string of `size` bytes may not grow by
/// `append` past `proto-max-bulk-len`.
fn check_length(size: i64, append: i64) -> Result<(), Reply> {
    if size.saturating_add(append) > MAX_STRING_LEN {
        return Err(Reply::err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// What `GETEX` does to the key's deadline.
enum GetexTtl {
    /// Nothing (no option).
    Keep,
    /// `PERSIST`: removes it.
    Persist,
    /// `EX`/`PX` (relative, in this unit of ms) or `EXAT`/`PXAT`
    /// (absolute), with the argument.
    Set { unit_ms: i64, relative: bool },
}

/// `GETEX key [EX s|PX ms|EXAT unix-s|PXAT unix-ms|PERSIST]`: the value,
/// and the deadline changed as the option says. The options exclude each
/// other (a syntax error), a deadline already past deletes the key.
pub(crate) fn getex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let mut ttl = GetexTtl::Keep;
    let mut arg: Option<&[u8]> = None;
    let mut j = 2;
    while j < a.len() {
        let opt = &a[j];
        let has_next = j + 1 < a.len();
        let free = matches!(ttl, GetexTtl::Keep);
        let set = |unit_ms, relative| GetexTtl::Set { unit_ms, relative };
        // The same option may be repeated (the last value wins), as in Redis.
        let same = |unit: i64, rel: bool| {
            free || matches!(ttl, GetexTtl::Set { unit_ms, relative } if unit_ms == unit && relative == rel)
        };
        let chosen = if is_option(opt, "persist") && (free || matches!(ttl, GetexTtl::Persist)) {
            Some((GetexTtl::Persist, false))
        } else if is_option(opt, "ex") && has_next && same(1000, true) {
            Some((set(1000, true), true))
        } else if is_option(opt, "px") && has_next && same(1, true) {
            Some((set(1, true), true))
        } else if is_option(opt, "exat") && has_next && same(1000, false) {
            Some((set(1000, false), true))
        } else if is_option(opt, "pxat") && has_next && same(1, false) {
            Some((set(1, false), true))
        } else {
            None
        };
        let Some((t, takes_value)) = chosen else {
            return Err(syntax_error());
        };
        ttl = t;
        if takes_value {
            arg = Some(&a[j + 1]);
            j += 1;
        }
        j += 1;
    }
    let key = &a[1];
    let Some(value) = string(ks, key)? else {
        return Ok(Reply::Nil);
    };
    match (ttl, arg) {
        (GetexTtl::Set { unit_ms, relative }, Some(v)) => {
            let when = expire_ms(ks.now_ms, v, unit_ms, relative, "getex")?;
            if !relative && when <= ks.now_ms && !ks.hide_only {
                ks.remove(key);
            } else {
                ks.set_deadline(key, Some(when));
            }
        }
        (GetexTtl::Persist, _) if ks.get(key).is_some_and(|e| e.deadline.is_some()) => {
            ks.set_deadline(key, None);
        }
        _ => {}
    }
    Ok(Reply::Bulk(value))
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute deadline an
/// `EX`/`PX`/`EXAT`/`PXAT` argument names, or the invalid-expire error.
pub(crate) fn expire_ms(
    now_ms: i64,
    v: &[u8],
    unit_ms: i64,
    relative: bool,
    name: &str,
) -> Result<i64, Reply> {
    let invalid = || Reply::err(format!("ERR invalid expire time in '{name}' command"));
    let n = int_arg(v)?;
    if n <= 0 || n > i64::MAX / unit_ms {
        return Err(invalid());
    }
    let ms = n * unit_ms;
    let when = if relative {
        ms.checked_add(now_ms).ok_or_else(invalid)?
    } else {
        ms
    };
    if when <= 0 {
        return Err(invalid());
    }
    Ok(when)
}

/// `GETDEL key`: the value, and the key deleted.
pub(crate) fn getdel(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let Some(value) = string(ks, &a[1])? else {
        return Ok(Reply::Nil);
    };
    ks.remove(&a[1]);
    Ok(Reply::Bulk(value))
}

/// `MSET key value [key value ...]`: OK; each key loses its deadline.
pub(crate) fn mset(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len().is_multiple_of(2) {
        return Err(arity_error("mset"));
    }
    set_pairs(ks, a);
    Ok(Reply::ok())
}

/// `MSETNX key value [key value ...]`: 1 and every key set, or 0 and none
/// if any of them exists.
pub(crate) fn msetnx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len().is_multiple_of(2) {
        return Err(arity_error("msetnx"));
    }
    if a[1..].chunks(2).any(|kv| ks.exists(&kv[0])) {
        return Ok(Reply::Int(0));
    }
    set_pairs(ks, a);
    Ok(Reply::Int(1))
}

/// Stores each key/value pair of `a[1..]`, in order (a key named twice
/// keeps its last value).
fn set_pairs(ks: &mut Keyspace, a: &[Vec<u8>]) {
    for kv in a[1..].chunks(2) {
        ks.set(&kv[0], Value::Str(kv[1].clone()), None);
    }
}

/// `INCRBYFLOAT key increment`: in long-double arithmetic, printed as
/// Redis prints it (17 decimals, trailing zeros stripped); the key keeps
/// its deadline.
pub(crate) fn incrbyfloat(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    let (current, deadline) = match ks.get(key) {
        None => (None, None),
        Some(e) => match &e.value {
            Value::Str(s) => (Some(s.clone()), e.deadline),
            _ => return Err(wrongtype()),
        },
    };
    let value = match current {
        Some(s) => LongDouble::parse(&s).ok_or_else(float_error)?,
        None => LongDouble::ZERO,
    };
    let incr = LongDouble::parse(&a[2]).ok_or_else(float_error)?;
    let sum = value.add(incr);
    if !sum.is_finite() {
        return Err(Reply::err("ERR increment would produce NaN or Infinity"));
    }
    let text = sum.to_human_string().into_bytes();
    ks.set(key, Value::Str(text.clone()), deadline);
    Ok(Reply::Bulk(text))
}

/// `APPEND key value`: the new length.
pub(crate) fn append(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    let Some(mut s) = string(ks, key)? else {
        ks.set(key, Value::Str(a[2].clone()), None);
        return Ok(Reply::Int(a[2].len() as i64));
    };
    check_length(s.len() as i64, a[2].len() as i64)?;
    s.extend_from_slice(&a[2]);
    let len = s.len() as i64;
    replace_string(ks, key, s);
    Ok(Reply::Int(len))
}

/// Replaces the string of a live key, keeping its deadline.
fn replace_string(ks: &mut Keyspace, key: &[u8], s: Vec<u8>) {
    if let Some(e) = ks.get_mut(key) {
        e.value = Value::Str(s);
        ks.mark_written(key);
    }
}

/// `GETRANGE key start end` (and `SUBSTR`): the bytes from `start` to
/// `end`, both included, negative counting from the end.
pub(crate) fn getrange(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let mut start = int_arg(&a[2])?;
    let mut end = int_arg(&a[3])?;
    let Some(s) = string(ks, &a[1])? else {
        return Ok(Reply::Bulk(Vec::new()));
    };
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Vec::new()));
    }
    let len = s.len() as i64;
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(Reply::Bulk(Vec::new()));
    }
    Ok(Reply::Bulk(s[start as usize..=end as usize].to_vec()))
}

/// `SETRANGE key offset value`: overwrites from `offset`, padding with
/// zero bytes; the new length.
pub(crate) fn setrange(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let offset = int_arg(&a[2])?;
    if offset < 0 {
        return Err(Reply::err("ERR offset is out of range"));
    }
    let key = &a[1];
    let value = &a[3];
    let current = string(ks, key)?;
    if value.is_empty() {
        return Ok(Reply::Int(current.map_or(0, |s| s.len() as i64)));
    }
    check_length(offset, value.len() as i64)?;
    let offset = offset as usize;
    let exists = current.is_some();
    let mut s = current.unwrap_or_default();
    if s.len() < offset + value.len() {
        s.resize(offset + value.len(), 0);
    }
    s[offset..offset + value.len()].copy_from_slice(value);
    let len = s.len() as i64;
    if exists {
        replace_string(ks, key, s);
    } else {
        ks.set(key, Value::Str(s), None);
    }
    Ok(Reply::Int(len))
}
