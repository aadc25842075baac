//! The generic key commands: `KEYS`, `SCAN`, `RANDOMKEY`, `TOUCH`,
//! `RENAME` and `RENAMENX` (`COPY`, which may name another database, is in `crate::databases`), with Redis's glob matching
//! (`stringmatchlen`) and the `SCAN` cursor of this node.
//!
//! The cursor: Redis's is a position in its hash table, walked in
//! reversed-bit order so that a key present for a whole scan is returned
//! at least once however the table grows or shrinks. This node orders the
//! keys by a fixed hash of their names (FNV-1a, 64 bits) and the cursor is
//! the hash to resume from, so the same guarantee holds (keys added or
//! removed meanwhile move no other key) and a scan is deterministic. Keys
//! whose hashes are equal are returned in the same call.

use super::errors::{int_arg, syntax_error};
use super::is_option;
use crate::handle::NodeHandle;
use crate::keyspace::Keyspace;
use crate::resp::Reply;

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// `KEYS pattern`: the live keys matching, in key order.
pub(crate) fn keys(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Array(
        ks.live_keys()
            .into_iter()
            .filter(|k| crate::glob::matches(&a[1], k))
            .map(Reply::Bulk)
            .collect(),
    ))
}

/// Parses a `SCAN` cursor as Redis's `parseScanCursorOrReply` (`strtoul`:
/// an optional sign, a negative number wraps, an empty string is 0).
pub(crate) fn parse_cursor(arg: &[u8]) -> Result<u64, Reply> {
    let invalid = || Reply::err("ERR invalid cursor");
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if arg.is_empty() {
        return Ok(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let n = digits.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    });
    let n = n.ok_or_else(invalid)?;
    Ok(if neg { n.wrapping_neg() } else { n })
}

/// The options of `SCAN` and `HSCAN`: `MATCH`, `COUNT` and (`SCAN` only)
/// `TYPE`, as Redis's `scanGenericCommand` parses them.
pub(crate) struct ScanOptions {
    /// `COUNT`: how many candidates one call looks at (10 by default).
    pub(crate) count: i64,
    /// `MATCH`: the glob names must match.
    pattern: Option<Vec<u8>>,
    /// `TYPE`: the type keys must have.
    type_name: Option<Vec<u8>>,
}

impl ScanOptions {
    /// Parses the options after the cursor; `with_type` allows `TYPE`.
    pub(crate) fn parse(args: &[Vec<u8>], with_type: bool) -> Result<ScanOptions, Reply> {
        let mut options = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
        };
        let mut i = 0;
        while i < args.len() {
            let has_value = i + 1 < args.len();
            if is_option(&args[i], "count") && has_value {
                options.count = int_arg(&args[i + 1])?;
                if options.count < 1 {
                    return Err(syntax_error());
                }
            } else if is_option(&args[i], "match") && has_value {
                options.pattern = Some(args[i + 1].clone()).filter(|p| p != b"*");
            } else if is_option(&args[i], "type") && with_type && has_value {
                options.type_name = Some(args[i + 1].clone());
            } else {
                return Err(syntax_error());
            }
            i += 2;
        }
        Ok(options)
    }

    /// Whether a name passes `MATCH`.
    pub(crate) fn matches(&self, name: &[u8]) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| crate::glob::matches(p, name))
    }
}

/// The position of a key in this node's `SCAN` order: FNV-1a of its name,
/// never 0 (the cursor that starts and ends a scan).
fn scan_hash(key: &[u8]) -> u64 {
    let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    h.max(1)
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`: the next keys
/// in this node's order (see the module docs) and the cursor to go on from
/// (0 when done). `COUNT` candidates are looked at, then filtered.
pub(crate) fn scan(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let cursor = parse_cursor(&a[1])?;
    let options = ScanOptions::parse(&a[2..], true)?;
    let mut ordered: Vec<(u64, Vec<u8>)> = ks
        .iter()
        .map(|(k, _)| (scan_hash(k), k.clone()))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    ordered.sort_unstable();
    let mut next = 0;
    let mut candidates: Vec<(u64, Vec<u8>)> = Vec::new();
    for (h, key) in ordered {
        let full = candidates.len() as i64 >= options.count;
        if full && candidates.last().is_none_or(|(last, _)| *last != h) {
            next = h;
            break;
        }
        candidates.push((h, key));
    }
    let mut found = Vec::new();
    for (_, key) in candidates {
        if !options.matches(&key) {
            continue;
        }
        let Some(entry) = ks.get(&key) else {
            continue;
        };
        let type_ok = options
            .type_name
            .as_ref()
            .is_none_or(|t| t.eq_ignore_ascii_case(entry.value.type_name().as_bytes()));
        if type_ok {
            found.push(Reply::Bulk(key));
        }
    }
    Ok(Reply::Array(vec![
        Reply::Bulk(next.to_string().into_bytes()),
        Reply::Array(found),
    ]))
}

/// `RANDOMKEY`: a live key drawn from the node's seeded generator, nil if
/// there is none.
pub(crate) fn randomkey(ks: &mut Keyspace, _: &[Vec<u8>], _: &NodeHandle) -> R {
    let live = ks.live_keys();
    if live.is_empty() {
        return Ok(Reply::Nil);
    }
    let i = ks.draws.below(live.len());
    Ok(Reply::Bulk(live[i].clone()))
}

/// `TOUCH key...`: how many of the keys exist (a key named twice counts
/// twice); nothing else to do, as the node keeps no access times.
pub(crate) fn touch(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(
        a[1..].iter().filter(|k| ks.exists(k)).count() as i64
    ))
}

/// `RENAME key newkey`: OK; the value moves with its deadline, replacing
/// whatever `newkey` held.
pub(crate) fn rename(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    rename_key(ks, a, false)
}

/// `RENAMENX key newkey`: 1 if renamed, 0 if `newkey` exists.
pub(crate) fn renamenx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    rename_key(ks, a, true)
}

/// Redis's `renameGenericCommand`: a missing source is `ERR no such key`,
/// a key renamed to itself is left alone.
fn rename_key(ks: &mut Keyspace, a: &[Vec<u8>], nx: bool) -> R {
    let (from, to) = (&a[1], &a[2]);
    let Some(entry) = ks.get(from).cloned() else {
        return Err(Reply::err("ERR no such key"));
    };
    let done = if nx { Reply::Int(1) } else { Reply::ok() };
    if from == to {
        return Ok(if nx { Reply::Int(0) } else { Reply::ok() });
    }
    if nx && ks.exists(to) {
        return Ok(Reply::Int(0));
    }
    ks.remove(from);
    ks.remove(to);
    ks.set(to, entry.value, entry.deadline);
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_returns_every_key_present_throughout_while_others_come_and_go() {
        let handle = crate::handle::NodeHandle::new(crate::handle::NodeConfig::new("n"));
        let mut ks = Keyspace::new();
        let value = || crate::keyspace::Value::Str(b"v".to_vec());
        for i in 0..200 {
            ks.set(format!("stay{i}").as_bytes(), value(), None);
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = b"0".to_vec();
        let mut calls = 0;
        loop {
            let args = [
                b"scan".to_vec(),
                cursor.clone(),
                b"COUNT".to_vec(),
                b"7".to_vec(),
            ];
            let Ok(Reply::Array(reply)) = scan(&mut ks, &args, &handle) else {
                panic!("not an array");
            };
            let [Reply::Bulk(next), Reply::Array(keys)] = &reply[..] else {
                panic!("not a scan reply");
            };
            for k in keys {
                if let Reply::Bulk(k) = k {
                    seen.insert(k.clone());
                }
            }
            ks.set(format!("new{calls}").as_bytes(), value(), None);
            ks.remove(format!("new{}", calls / 2).as_bytes());
            calls += 1;
            if next == b"0" {
                break;
            }
            cursor = next.clone();
        }
        assert!(calls > 10, "{calls}");
        assert!((0..200).all(|i| seen.contains(format!("stay{i}").as_bytes())));
    }

    #[test]
    fn cursors_parse_as_strtoul_reads_them() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert!(parse_cursor(b"x").is_err());
        assert!(parse_cursor(b"18446744073709551616").is_err());
    }
}
