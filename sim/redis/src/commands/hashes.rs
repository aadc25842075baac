//! The hash commands beyond `HSET`/`HGET`: `HSETNX`, `HINCRBYFLOAT`,
//! `HSTRLEN`, `HRANDFIELD` and `HSCAN`, as Redis 7.0.15's `t_hash.c`
//! answers them.

use super::errors::{syntax_error, wrongtype};
use super::is_option;
use super::keys::{ScanOptions, parse_cursor};
use super::long_double::{LongDouble, float_error};
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

type HashFields = indexmap::IndexMap<Vec<u8>, Vec<u8>>;

/// The hash stored at `key` (cloned), `None` if absent, WRONGTYPE if
/// another type.
fn hash(ks: &mut Keyspace, key: &[u8]) -> Result<Option<HashFields>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Hash(h) => Ok(Some(h.clone())),
            _ => Err(wrongtype()),
        },
    }
}

/// Stores `value` in `field` of the hash at `key`, creating the hash
/// (the caller has checked the key's type), keeping the key's deadline.
fn set_field(ks: &mut Keyspace, key: &[u8], field: &[u8], value: Vec<u8>) {
    match ks.get_mut(key) {
        Some(e) => {
            if let Value::Hash(h) = &mut e.value {
                h.insert(field.to_vec(), value);
            }
            ks.mark_written(key);
        }
        None => {
            let mut h = HashFields::new();
            h.insert(field.to_vec(), value);
            ks.set(key, Value::Hash(h), None);
        }
    }
}

/// `HSETNX key field value`: 1 if the field was set, 0 if it existed.
pub(crate) fn hsetnx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if hash(ks, &a[1])?.is_some_and(|h| h.contains_key(&a[2])) {
        return Ok(Reply::Int(0));
    }
    set_field(ks, &a[1], &a[2], a[3].clone());
    Ok(Reply::Int(1))
}

/// `HSTRLEN key field`: the length of the field's value, 0 if none.
pub(crate) fn hstrlen(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let len = hash(ks, &a[1])?
        .and_then(|h| h.get(&a[2]).map(Vec::len))
        .unwrap_or(0);
    Ok(Reply::Int(len as i64))
}

/// `HINCRBYFLOAT key field increment`: in long-double arithmetic, printed
/// as `INCRBYFLOAT` prints. The increment is checked before the key.
pub(crate) fn hincrbyfloat(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let incr = LongDouble::parse(&a[3]).ok_or_else(float_error)?;
    if !incr.is_finite() {
        return Err(Reply::err("ERR value is NaN or Infinity"));
    }
    let current = hash(ks, &a[1])?.and_then(|h| h.get(&a[2]).cloned());
    let value = match current {
        None => LongDouble::ZERO,
        Some(v) => {
            LongDouble::parse(&v).ok_or_else(|| Reply::err("ERR hash value is not a float"))?
        }
    };
    let sum = value.add(incr);
    if !sum.is_finite() {
        return Err(Reply::err("ERR increment would produce NaN or Infinity"));
    }
    let text = sum.to_human_string().into_bytes();
    set_field(ks, &a[1], &a[2], text.clone());
    Ok(Reply::Bulk(text))
}

/// The most fields a negative `HRANDFIELD` count returns. Redis would
/// stream any count until memory runs out; a simulation must not.
const MAX_REPEATED_PICKS: u64 = 1 << 24;

/// `HRANDFIELD key [count [WITHVALUES]]`: random fields drawn from the
/// node's seeded generator. A positive count gives distinct fields (the
/// whole hash if it has no more), a negative one may repeat them.
pub(crate) fn hrandfield(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len() == 2 {
        let Some(h) = hash(ks, &a[1])? else {
            return Ok(Reply::Nil);
        };
        let i = ks.draws.below(h.len());
        return Ok(h
            .get_index(i)
            .map_or(Reply::Nil, |(f, _)| Reply::Bulk(f.clone())));
    }
    let count = string2ll(&a[2]).ok_or_else(super::errors::not_integer)?;
    if count == i64::MIN {
        return Err(Reply::err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let with_values = match a.len() {
        3 => false,
        4 if is_option(&a[3], "withvalues") => true,
        _ => return Err(syntax_error()),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Reply::err("ERR value is out of range"));
    }
    let Some(h) = hash(ks, &a[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let picked: Vec<usize> = if count < 0 {
        (0..count.unsigned_abs().min(MAX_REPEATED_PICKS))
            .map(|_| ks.draws.below(h.len()))
            .collect()
    } else if count as u64 >= h.len() as u64 {
        (0..h.len()).collect()
    } else {
        distinct_indexes(ks, h.len(), count as usize)
    };
    Ok(Reply::Array(
        picked
            .into_iter()
            .filter_map(|i| h.get_index(i))
            .flat_map(|(f, v)| {
                let mut out = vec![Reply::Bulk(f.clone())];
                if with_values {
                    out.push(Reply::Bulk(v.clone()));
                }
                out
            })
            .collect(),
    ))
}

/// `count` distinct indexes below `len`, drawn with a partial
/// Fisher-Yates shuffle from the node's generator.
fn distinct_indexes(ks: &mut Keyspace, len: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    for i in 0..count {
        let j = i + ks.draws.below(len - i);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: the whole hash in
/// one reply and cursor 0, as Redis answers for a small (listpack) hash;
/// any cursor gives the same, as every field is returned each call.
pub(crate) fn hscan(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    parse_cursor(&a[2])?;
    // A missing key answers an empty scan before the options are read.
    let fields = match hash(ks, &a[1])? {
        None => Vec::new(),
        Some(h) => {
            let options = ScanOptions::parse(&a[3..], false)?;
            h.iter()
                .filter(|(f, _)| options.matches(f))
                .flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())])
                .collect()
        }
    };
    Ok(Reply::Array(vec![
        Reply::Bulk(b"0".to_vec()),
        Reply::Array(fields),
    ]))
}
