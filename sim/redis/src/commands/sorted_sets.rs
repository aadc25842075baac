//! The sorted-set commands, as Redis 7.0.15 answers them: `ZADD` (`NX`,
//! `XX`, `GT`, `LT`, `CH`, `INCR`), `ZINCRBY`, `ZREM`, `ZCARD`, `ZSCORE`,
//! `ZMSCORE`, `ZCOUNT`, `ZLEXCOUNT`, `ZRANK`, `ZREVRANK`, the ranges
//! (`ZRANGE` with `BYSCORE`/`BYLEX`/`REV`/`LIMIT`/`WITHSCORES`,
//! `ZRANGESTORE` and the older `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`,
//! `ZRANGEBYLEX`, `ZREVRANGEBYLEX`, `ZREVRANGE`), the removals by range,
//! `ZRANDMEMBER`, the set operations (`ZUNION`, `ZINTER`, `ZDIFF`, their
//! `STORE` forms and `ZINTERCARD`) and `ZSCAN`. The pops (`ZPOPMIN`,
//! `ZMPOP`, the blocking ones) are [`super::zset_pops`]'s.
//!
//! Scores are read as Redis reads them (`strtod`: `inf`, `-inf`, `+inf`,
//! hex floats; never NaN) and printed as Redis 7.0 prints doubles in RESP2
//! (`%.17g`: `0.10000000000000001`, `1e+20`, `3`, `inf`).

use super::errors::{int_arg, syntax_error, wrongtype};
use super::{is_option, scan, sets};
use crate::cjson::number::strtod;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::lua::fmt_g17;
use crate::resp::{Reply, string2ll};
use crate::sorted_set::{LexBound, LexRange, ScoreRange, SortedSet};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// Members with their scores, in the order a command lists them.
pub(super) type Scored = Vec<(Vec<u8>, f64)>;

/// The sorted set stored at `key`, `None` if absent, WRONGTYPE if another
/// type.
pub(super) fn zset_at<'a>(
    ks: &'a mut Keyspace,
    key: &[u8],
) -> Result<Option<&'a SortedSet>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(wrongtype()),
        },
    }
}

/// Applies `change` to the sorted set at `key` (which must hold one);
/// deletes the key if the set is left empty, records the write if
/// `change` says it changed something (its `bool`).
pub(super) fn modify<T: Default>(
    ks: &mut Keyspace,
    key: &[u8],
    change: impl FnOnce(&mut SortedSet) -> (T, bool),
) -> T {
    let Some(Value::ZSet(z)) = ks.get_mut(key).map(|e| &mut e.value) else {
        return T::default();
    };
    let (out, changed) = change(z);
    let empty = z.is_empty();
    ks.settle_container(key, empty, changed);
    out
}

/// Stores `z` at `key` as a new value (no deadline), or deletes the key if
/// `z` is empty; the reply is its size.
fn store(ks: &mut Keyspace, key: &[u8], z: SortedSet) -> Reply {
    let n = z.len() as i64;
    ks.store_container(key, Value::ZSet(z), n == 0);
    Reply::Int(n)
}

/// A score as Redis 7.0 prints a double (`%.17g`, `inf`, `-inf`).
fn score_text(score: f64) -> Vec<u8> {
    fmt_g17(score).into_bytes()
}

/// A score as a bulk reply.
pub(super) fn score_bulk(score: f64) -> Reply {
    Reply::Bulk(score_text(score))
}

/// Members, each followed by its score if `withscores`.
fn scored_reply(items: Scored, withscores: bool) -> Reply {
    let mut out = Vec::with_capacity(items.len() * if withscores { 2 } else { 1 });
    for (m, s) in items {
        out.push(Reply::Bulk(m));
        if withscores {
            out.push(score_bulk(s));
        }
    }
    Reply::Array(out)
}

/// C's `isspace`.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// A score as Redis's `string2d` reads it: all of the argument a number
/// for `strtod`, no leading space, no NaN, no overflow to infinity (`inf`
/// written out is fine) or underflow to zero.
fn parse_score(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || c_space(arg[0]) {
        return None;
    }
    let (value, used) = strtod(arg)?;
    if used != arg.len() || value.is_nan() {
        return None;
    }
    let lower = arg.to_ascii_lowercase();
    let hex = lower.windows(2).any(|w| w == b"0x");
    if value.is_infinite() && !lower.windows(3).any(|w| w == b"inf") {
        return None;
    }
    let mantissa_end = if hex {
        lower.iter().position(|c| *c == b'p')
    } else {
        lower.iter().position(|c| *c == b'e')
    }
    .unwrap_or(lower.len());
    let digits = if hex {
        &lower[2.min(lower.len())..mantissa_end]
    } else {
        &lower[..mantissa_end]
    };
    let nonzero = digits
        .iter()
        .any(|c| c.is_ascii_hexdigit() && *c != b'0' && (hex || c.is_ascii_digit()));
    if value == 0.0 && nonzero {
        return None;
    }
    Some(value)
}

/// A score argument, or Redis's error for one that is not a number.
fn score_arg(arg: &[u8]) -> Result<f64, Reply> {
    parse_score(arg).ok_or_else(|| Reply::err("ERR value is not a valid float"))
}

/// One end of a score range as Redis's `zslParseRange` reads it: an
/// optional `(` (exclusive), then what `strtod` reads up to the end of the
/// C string (leading space allowed, an empty string is 0), never NaN.
fn range_end(arg: &[u8]) -> Option<(f64, bool)> {
    let c_string = &arg[..arg.iter().position(|b| *b == 0).unwrap_or(arg.len())];
    let (exclusive, body) = match c_string.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, c_string),
    };
    if body.is_empty() {
        return Some((0.0, exclusive));
    }
    let number = &body[body.iter().position(|b| !c_space(*b)).unwrap_or(body.len())..];
    let (value, used) = strtod(number)?;
    (used == number.len() && !value.is_nan()).then_some((value, exclusive))
}

/// A score range from its two ends.
fn score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
    let error = || Reply::err("ERR min or max is not a float");
    let (min, min_exclusive) = range_end(min).ok_or_else(error)?;
    let (max, max_exclusive) = range_end(max).ok_or_else(error)?;
    Ok(ScoreRange {
        min,
        min_exclusive,
        max,
        max_exclusive,
    })
}

/// One end of a lex range: `-`, `+`, `[member` or `(member`.
fn lex_end(arg: &[u8]) -> Option<LexBound> {
    match arg {
        [b'-'] => Some(LexBound::Lowest),
        [b'+'] => Some(LexBound::Highest),
        [b'[', rest @ ..] => Some(LexBound::Inclusive(rest.to_vec())),
        [b'(', rest @ ..] => Some(LexBound::Exclusive(rest.to_vec())),
        _ => None,
    }
}

/// A lex range from its two ends.
fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Reply> {
    let error = || Reply::err("ERR min or max not valid string range item");
    Ok(LexRange {
        min: lex_end(min).ok_or_else(error)?,
        max: lex_end(max).ok_or_else(error)?,
    })
}

/// What `ZADD`'s options ask for.
#[derive(Default, Clone, Copy)]
struct AddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member...`
pub(crate) fn zadd(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let mut o = AddOptions::default();
    let mut i = 2;
    while let Some(opt) = a.get(i) {
        match opt.to_ascii_lowercase().as_slice() {
            b"nx" => o.nx = true,
            b"xx" => o.xx = true,
            b"ch" => o.ch = true,
            b"incr" => o.incr = true,
            b"gt" => o.gt = true,
            b"lt" => o.lt = true,
            _ => break,
        }
        i += 1;
    }
    add(ks, &a[1], o, &a[i..])
}

/// `ZINCRBY key increment member`
pub(crate) fn zincrby(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let o = AddOptions {
        incr: true,
        ..AddOptions::default()
    };
    add(ks, &a[1], o, &a[2..])
}

/// `ZADD`'s work after its options: `pairs` are score, member, ...
fn add(ks: &mut Keyspace, key: &[u8], o: AddOptions, pairs: &[Vec<u8>]) -> R {
    if pairs.is_empty() || pairs.len() % 2 == 1 {
        return Err(syntax_error());
    }
    if o.nx && o.xx {
        return Err(Reply::err(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
        return Err(Reply::err(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if o.incr && pairs.len() > 2 {
        return Err(Reply::err(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores = pairs
        .chunks(2)
        .map(|p| score_arg(&p[0]))
        .collect::<Result<Vec<f64>, Reply>>()?;
    let nothing = || {
        if o.incr { Reply::Nil } else { Reply::Int(0) }
    };
    if zset_at(ks, key)?.is_none() {
        if o.xx {
            return Ok(nothing());
        }
        ks.set(key, Value::ZSet(SortedSet::new()), None);
    }
    let outcome = modify(ks, key, |z| {
        let (mut added, mut updated, mut processed) = (0, 0, 0);
        let mut last = 0.0;
        for (pair, score) in pairs.chunks(2).zip(scores) {
            let member = &pair[1];
            match z.score(member) {
                Some(current) => {
                    if o.nx {
                        continue;
                    }
                    let new = if o.incr { current + score } else { score };
                    if new.is_nan() {
                        return (None, added + updated > 0);
                    }
                    if (o.lt && new >= current) || (o.gt && new <= current) {
                        continue;
                    }
                    last = new;
                    processed += 1;
                    if new != current {
                        z.insert(member.clone(), new);
                        updated += 1;
                    }
                }
                None => {
                    if o.xx {
                        continue;
                    }
                    z.insert(member.clone(), score);
                    last = score;
                    added += 1;
                    processed += 1;
                }
            }
        }
        (Some((added, updated, processed, last)), added + updated > 0)
    });
    // `None`: an increment made a NaN (`inf` + `-inf`).
    let Some((added, updated, processed, last)) = outcome else {
        return Err(Reply::err("ERR resulting score is not a number (NaN)"));
    };
    Ok(match (o.incr, processed) {
        (true, 0) => Reply::Nil,
        (true, _) => score_bulk(last),
        (false, _) if o.ch => Reply::Int(added + updated),
        (false, _) => Reply::Int(added),
    })
}

/// `ZREM key member...`
pub(crate) fn zrem(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if zset_at(ks, &a[1])?.is_none() {
        return Ok(Reply::Int(0));
    }
    Ok(Reply::Int(modify(ks, &a[1], |z| {
        let n = a[2..].iter().filter(|m| z.remove(m)).count() as i64;
        (n, n > 0)
    })))
}

/// `ZCARD key`
pub(crate) fn zcard(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(
        zset_at(ks, &a[1])?.map_or(0, |z| z.len() as i64),
    ))
}

/// `ZSCORE key member`
pub(crate) fn zscore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let z = zset_at(ks, &a[1])?;
    Ok(z.and_then(|z| z.score(&a[2]))
        .map_or(Reply::Nil, score_bulk))
}

/// `ZMSCORE key member...`
pub(crate) fn zmscore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let z = zset_at(ks, &a[1])?;
    Ok(Reply::Array(
        a[2..]
            .iter()
            .map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, score_bulk))
            .collect(),
    ))
}

/// `ZCOUNT key min max`
pub(crate) fn zcount(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let range = score_range(&a[2], &a[3])?;
    let z = zset_at(ks, &a[1])?;
    Ok(Reply::Int(
        z.map_or(0, |z| z.in_score_range(&range).len() as i64),
    ))
}

/// `ZLEXCOUNT key min max`
pub(crate) fn zlexcount(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let range = lex_range(&a[2], &a[3])?;
    let z = zset_at(ks, &a[1])?;
    Ok(Reply::Int(
        z.map_or(0, |z| z.in_lex_range(&range).len() as i64),
    ))
}

/// `ZRANK key member`
pub(crate) fn zrank(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let z = zset_at(ks, &a[1])?;
    Ok(z.and_then(|z| z.rank(&a[2]))
        .map_or(Reply::Nil, |r| Reply::Int(r as i64)))
}

/// `ZREVRANK key member`
pub(crate) fn zrevrank(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let z = zset_at(ks, &a[1])?;
    Ok(z.and_then(|z| z.rank(&a[2]).map(|r| z.len() - 1 - r))
        .map_or(Reply::Nil, |r| Reply::Int(r as i64)))
}

/// How a range names its members.
#[derive(Clone, Copy, PartialEq)]
enum RangeKind {
    /// By rank (`ZRANGE k 0 -1`).
    Rank,
    /// By score (`BYSCORE`).
    Score,
    /// By member bytes (`BYLEX`).
    Lex,
}

/// The parsed range of a range command.
enum Range {
    /// Ranks, both inclusive, negative from the end.
    Rank(i64, i64),
    /// Scores.
    Score(ScoreRange),
    /// Member bytes.
    Lex(LexRange),
}

/// Rank bounds (negative from the end) made into a slice of a set of
/// `len` members, as Redis clamps them; `None` when empty.
fn rank_window(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let end = if end < 0 { end + len } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// The members of `z` in `range`, in the direction asked, after skipping
/// `offset` and keeping at most `limit` (negative: all), as Redis's range
/// commands select them.
fn select(z: &SortedSet, range: &Range, reverse: bool, offset: i64, limit: i64) -> Scored {
    let own = |(m, s): (&[u8], f64)| (m.to_vec(), s);
    let mut items: Scored = match range {
        Range::Rank(start, end) => {
            let Some((from, to)) = rank_window(*start, *end, z.len()) else {
                return Vec::new();
            };
            let take = to - from + 1;
            if reverse {
                z.iter().rev().skip(from).take(take).map(own).collect()
            } else {
                z.iter().skip(from).take(take).map(own).collect()
            }
        }
        Range::Score(r) => z.in_score_range(r).into_iter().map(own).collect(),
        Range::Lex(r) => z.in_lex_range(r).into_iter().map(own).collect(),
    };
    if matches!(range, Range::Rank(..)) {
        return items;
    }
    if reverse {
        items.reverse();
    }
    if offset < 0 {
        return Vec::new();
    }
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    items.into_iter().skip(offset).take(limit).collect()
}

/// The range commands, as Redis's `zrangeGenericCommand`: the key at
/// `at`, its two bounds after it, then options; `kind` and `reverse` are
/// fixed by the older commands (`ZRANGEBYSCORE`...) and chosen by options
/// for `ZRANGE` and `ZRANGESTORE` (`None`). With `dst`, the result is
/// stored there.
fn range_command(
    ks: &mut Keyspace,
    a: &[Vec<u8>],
    at: usize,
    dst: Option<&[u8]>,
    kind: Option<RangeKind>,
    reverse: Option<bool>,
) -> R {
    let (mut kind, mut reverse) = (kind, reverse);
    let (mut withscores, mut offset, mut limit) = (false, 0, -1);
    let mut j = at + 3;
    while j < a.len() {
        let opt = &a[j];
        let left = a.len() - j - 1;
        if dst.is_none() && is_option(opt, "withscores") {
            withscores = true;
        } else if is_option(opt, "limit") && left >= 2 {
            offset = int_arg(&a[j + 1])?;
            limit = int_arg(&a[j + 2])?;
            j += 2;
        } else if reverse.is_none() && is_option(opt, "rev") {
            reverse = Some(true);
        } else if kind.is_none() && is_option(opt, "bylex") {
            kind = Some(RangeKind::Lex);
        } else if kind.is_none() && is_option(opt, "byscore") {
            kind = Some(RangeKind::Score);
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let kind = kind.unwrap_or(RangeKind::Rank);
    let reverse = reverse.unwrap_or(false);
    if limit != -1 && kind == RangeKind::Rank {
        return Err(Reply::err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == RangeKind::Lex {
        return Err(Reply::err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (&a[at + 1], &a[at + 2]);
    if reverse && kind != RangeKind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let range = match kind {
        RangeKind::Rank => Range::Rank(int_arg(lo)?, int_arg(hi)?),
        RangeKind::Score => Range::Score(score_range(lo, hi)?),
        RangeKind::Lex => Range::Lex(lex_range(lo, hi)?),
    };
    let items = match zset_at(ks, &a[at])? {
        Some(z) => select(z, &range, reverse, offset, limit),
        None => Vec::new(),
    };
    match dst {
        Some(dst) => {
            let mut z = SortedSet::new();
            for (m, s) in items {
                z.insert(m, s);
            }
            Ok(store(ks, dst, z))
        }
        None => Ok(scored_reply(items, withscores)),
    }
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
pub(crate) fn zrange(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, None, None)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`
pub(crate) fn zrangestore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 2, Some(&a[1]), None, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]`
pub(crate) fn zrevrange(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, Some(RangeKind::Rank), Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
pub(crate) fn zrangebyscore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, Some(RangeKind::Score), Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
pub(crate) fn zrevrangebyscore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, Some(RangeKind::Score), Some(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`
pub(crate) fn zrangebylex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, Some(RangeKind::Lex), Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
pub(crate) fn zrevrangebylex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    range_command(ks, a, 1, None, Some(RangeKind::Lex), Some(true))
}

/// The removals by range: the range is read first, then the key (absent:
/// 0); the key goes when its last member does.
fn remove_range(ks: &mut Keyspace, key: &[u8], range: Range) -> R {
    let Some(z) = zset_at(ks, key)? else {
        return Ok(Reply::Int(0));
    };
    let doomed = select(z, &range, false, 0, -1);
    Ok(Reply::Int(modify(ks, key, |z| {
        for (m, _) in &doomed {
            z.remove(m);
        }
        (doomed.len() as i64, !doomed.is_empty())
    })))
}

/// `ZREMRANGEBYRANK key start stop`
pub(crate) fn zremrangebyrank(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let range = Range::Rank(int_arg(&a[2])?, int_arg(&a[3])?);
    remove_range(ks, &a[1], range)
}

/// `ZREMRANGEBYSCORE key min max`
pub(crate) fn zremrangebyscore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let range = Range::Score(score_range(&a[2], &a[3])?);
    remove_range(ks, &a[1], range)
}

/// `ZREMRANGEBYLEX key min max`
pub(crate) fn zremrangebylex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let range = Range::Lex(lex_range(&a[2], &a[3])?);
    remove_range(ks, &a[1], range)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: random members, distinct for a
/// positive count, possibly repeated for a negative one.
pub(crate) fn zrandmember(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let mut count = None;
    let mut withscores = false;
    if a.len() >= 3 {
        let n = int_arg(&a[2])?;
        if n == i64::MIN {
            return Err(Reply::err(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ));
        }
        if a.len() > 4 || (a.len() == 4 && !is_option(&a[3], "withscores")) {
            return Err(syntax_error());
        }
        if a.len() == 4 {
            withscores = true;
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
                return Err(Reply::err("ERR value is out of range"));
            }
        }
        count = Some(n);
    }
    let Some(z) = zset_at(ks, &a[1])? else {
        return Ok(count.map_or(Reply::Nil, |_| Reply::Array(vec![])));
    };
    let all: Scored = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    let Some(n) = count else {
        return Ok(Reply::Bulk(all[ks.draws.below(all.len())].0.clone()));
    };
    let picked: Scored = if n >= 0 {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n >= all.len() {
            // The whole set, as Redis's iterator walks it: from the top.
            all.into_iter().rev().collect()
        } else {
            let at = ks.draws.distinct(all.len(), n);
            at.into_iter().map(|i| all[i].clone()).collect()
        }
    } else {
        (0..n.unsigned_abs())
            .map(|_| all[ks.draws.below(all.len())].clone())
            .collect()
    };
    Ok(scored_reply(picked, withscores))
}

/// How a set operation combines the scores a member has in several inputs.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// `acc` combined with `value`; a NaN sum (`inf` + `-inf`) is 0, as
    /// in Redis.
    fn apply(self, acc: f64, value: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let s = acc + value;
                if s.is_nan() { 0.0 } else { s }
            }
            Aggregate::Min => acc.min(value),
            Aggregate::Max => acc.max(value),
        }
    }
}

/// Which set operation.
#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

/// An input of a set operation: a sorted set, or a set (each member
/// scored 1), or nothing for an absent key.
fn input(ks: &mut Keyspace, key: &[u8]) -> Result<Scored, Reply> {
    Ok(match ks.get(key).map(|e| &e.value) {
        None => Vec::new(),
        Some(Value::ZSet(z)) => z.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
        Some(Value::Set(s)) => sets::listing(s)
            .into_iter()
            .map(|m| (m.clone(), 1.0))
            .collect(),
        Some(_) => return Err(wrongtype()),
    })
}

/// `weight` × `score`, NaN (0 × inf) counted as 0, as in Redis.
fn weighted(weight: f64, score: f64) -> f64 {
    let v = weight * score;
    if v.is_nan() { 0.0 } else { v }
}

/// The set operations, as Redis's `zunionInterDiffGenericCommand`: the
/// key count at `numkeys_at`, the keys, then `WEIGHTS`, `AGGREGATE`,
/// `WITHSCORES` (without `dst`) or `LIMIT` (`ZINTERCARD`).
fn set_operation(
    ks: &mut Keyspace,
    a: &[Vec<u8>],
    numkeys_at: usize,
    dst: Option<&[u8]>,
    op: SetOp,
    cardinality_only: bool,
) -> R {
    let name = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let numkeys = int_arg(&a[numkeys_at])?;
    if numkeys < 1 {
        return Err(Reply::err(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let first_key = numkeys_at + 1;
    if numkeys > (a.len() - first_key) as i64 {
        return Err(syntax_error());
    }
    let numkeys = numkeys as usize;
    let keys = &a[first_key..first_key + numkeys];
    let mut inputs = keys
        .iter()
        .map(|k| input(ks, k))
        .collect::<Result<Vec<Scored>, Reply>>()?;
    let mut weights = vec![1.0; numkeys];
    let mut aggregate = Aggregate::Sum;
    let (mut withscores, mut limit) = (false, 0usize);
    let mut j = first_key + numkeys;
    while j < a.len() {
        let remaining = a.len() - j;
        let opt = &a[j];
        let weighted_op = op != SetOp::Diff && !cardinality_only;
        if weighted_op && remaining > numkeys && is_option(opt, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                *w = parse_score(&a[j + 1 + i])
                    .ok_or_else(|| Reply::err("ERR weight value is not a float"))?;
            }
            j += 1 + numkeys;
        } else if weighted_op && remaining >= 2 && is_option(opt, "aggregate") {
            aggregate = match a[j + 1].to_ascii_lowercase().as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(syntax_error()),
            };
            j += 2;
        } else if dst.is_none() && !cardinality_only && is_option(opt, "withscores") {
            withscores = true;
            j += 1;
        } else if cardinality_only && remaining >= 2 && is_option(opt, "limit") {
            let n = string2ll(&a[j + 1])
                .filter(|n| *n >= 0)
                .ok_or_else(|| Reply::err("ERR LIMIT can't be negative"))?;
            limit = usize::try_from(n).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    let mut weighted_inputs: Vec<(f64, Scored)> =
        weights.into_iter().zip(inputs.drain(..)).collect();
    if op != SetOp::Diff {
        weighted_inputs.sort_by_key(|(_, s)| s.len());
    }
    let result = combine(&weighted_inputs, op, aggregate);
    if cardinality_only {
        let n = if limit > 0 {
            result.len().min(limit)
        } else {
            result.len()
        };
        return Ok(Reply::Int(n as i64));
    }
    match dst {
        Some(dst) => Ok(store(ks, dst, result)),
        None => Ok(scored_reply(
            result.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
            withscores,
        )),
    }
}

/// The members and scores a set operation yields from its (weighted)
/// inputs.
fn combine(inputs: &[(f64, Scored)], op: SetOp, aggregate: Aggregate) -> SortedSet {
    let mut out = SortedSet::new();
    match op {
        SetOp::Union => {
            let mut acc: indexmap::IndexMap<&[u8], f64> = indexmap::IndexMap::new();
            for (w, items) in inputs {
                for (m, s) in items {
                    let v = weighted(*w, *s);
                    acc.entry(m.as_slice())
                        .and_modify(|a| *a = aggregate.apply(*a, v))
                        .or_insert(v);
                }
            }
            for (m, s) in acc {
                out.insert(m.to_vec(), s);
            }
        }
        SetOp::Inter => {
            let Some(((w0, first), rest)) = inputs.split_first() else {
                return out;
            };
            let lookups: Vec<(f64, std::collections::HashMap<&[u8], f64>)> = rest
                .iter()
                .map(|(w, items)| (*w, items.iter().map(|(m, s)| (m.as_slice(), *s)).collect()))
                .collect();
            'members: for (m, s) in first {
                let mut score = weighted(*w0, *s);
                for (w, map) in &lookups {
                    let Some(other) = map.get(m.as_slice()) else {
                        continue 'members;
                    };
                    score = aggregate.apply(score, weighted(*w, *other));
                }
                out.insert(m.clone(), score);
            }
        }
        SetOp::Diff => {
            let Some(((_, first), rest)) = inputs.split_first() else {
                return out;
            };
            for (m, s) in first {
                if rest
                    .iter()
                    .all(|(_, items)| items.iter().all(|(o, _)| o != m))
                {
                    out.insert(m.clone(), *s);
                }
            }
        }
    }
    out
}

/// `ZUNIONSTORE destination numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]`
pub(crate) fn zunionstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 2, Some(&a[1]), SetOp::Union, false)
}

/// `ZINTERSTORE destination numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]`
pub(crate) fn zinterstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 2, Some(&a[1]), SetOp::Inter, false)
}

/// `ZDIFFSTORE destination numkeys key...`
pub(crate) fn zdiffstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 2, Some(&a[1]), SetOp::Diff, false)
}

/// `ZUNION numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub(crate) fn zunion(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 1, None, SetOp::Union, false)
}

/// `ZINTER numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub(crate) fn zinter(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 1, None, SetOp::Inter, false)
}

/// `ZDIFF numkeys key... [WITHSCORES]`
pub(crate) fn zdiff(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 1, None, SetOp::Diff, false)
}

/// `ZINTERCARD numkeys key... [LIMIT limit]`
pub(crate) fn zintercard(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_operation(ks, a, 1, None, SetOp::Inter, true)
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: every member and
/// score at once (see [`scan`]).
pub(crate) fn zscan(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    scan::check_cursor(&a[2])?;
    let Some(z) = zset_at(ks, &a[1])? else {
        return Ok(scan::empty());
    };
    let items: Vec<Vec<u8>> = z
        .iter()
        .flat_map(|(m, s)| [m.to_vec(), score_text(s)])
        .collect();
    let pattern = scan::pattern(&a[3..])?;
    Ok(scan::reply(items, pattern, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_read_as_redis_reads_them() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_score(b"1x"), None);
    }

    #[test]
    fn range_ends_take_parentheses_spaces_and_empty_strings() {
        assert_eq!(range_end(b"(1.5"), Some((1.5, true)));
        assert_eq!(range_end(b""), Some((0.0, false)));
        assert_eq!(range_end(b"("), Some((0.0, true)));
        assert_eq!(range_end(b" 2"), Some((2.0, false)));
        assert_eq!(range_end(b"x"), None);
        assert_eq!(range_end(b"nan"), None);
    }

    #[test]
    fn scores_print_as_redis_7_prints_doubles() {
        assert_eq!(score_text(0.1), b"0.10000000000000001");
        assert_eq!(score_text(1e20), b"1e+20");
        assert_eq!(score_text(3.0), b"3");
        assert_eq!(score_text(f64::INFINITY), b"inf");
    }
}
