//! The list commands: pushes, pops, ranges, edits, moves, and the blocking
//! pops (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`).
//!
//! As everywhere in Redis, a list that becomes empty is deleted. Arguments
//! are checked in the order Redis's `t_list.c` checks them, so a command
//! with two faults gets the same error as from Redis.
//!
//! A blocking pop has two forms here (see [`crate::blocking`]): its
//! keyspace handler never blocks (what a script or a transaction runs:
//! Redis answers as if the timeout had passed), and its attempt
//! (`*_ATTEMPT`, a [`crate::blocking::BlockFn`]) serves a client at once or
//! says how it blocks and how a ready key later serves it.

use std::collections::VecDeque;

use super::errors::{arity_error, int_arg, syntax_error, wrongtype};
use super::is_option;
use crate::blocking::{Attempt, Block, BlockFn, timeout_seconds_arg, without_blocking};
use crate::handle::NodeHandle;
use crate::keyspace::{Entry, Keyspace, Value};
use crate::resp::Reply;

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// A list's elements, head first.
type List = VecDeque<Vec<u8>>;

/// An end of a list (`LEFT` is the head).
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The head (`LPUSH`, `LPOP`, `LEFT`).
    Left,
    /// The tail (`RPUSH`, `RPOP`, `RIGHT`).
    Right,
}

impl End {
    /// Reads `LEFT` or `RIGHT` (any case); anything else is a syntax error.
    fn arg(a: &[u8]) -> Result<End, Reply> {
        if is_option(a, "left") {
            Ok(End::Left)
        } else if is_option(a, "right") {
            Ok(End::Right)
        } else {
            Err(syntax_error())
        }
    }

    /// Takes the element at this end.
    fn pop(self, l: &mut List) -> Option<Vec<u8>> {
        match self {
            End::Left => l.pop_front(),
            End::Right => l.pop_back(),
        }
    }

    /// Adds an element at this end.
    fn push(self, l: &mut List, v: Vec<u8>) {
        match self {
            End::Left => l.push_front(v),
            End::Right => l.push_back(v),
        }
    }

    /// Takes up to `n` elements from this end, in the order popped.
    fn pop_many(self, l: &mut List, n: usize) -> Vec<Vec<u8>> {
        let n = n.min(l.len());
        match self {
            End::Left => l.drain(..n).collect(),
            End::Right => l.drain(l.len() - n..).rev().collect(),
        }
    }
}

/// The list stored at `key`, `None` if absent, WRONGTYPE if another type.
fn list<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a List>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::List(l),
            ..
        }) => Ok(Some(l)),
        Some(_) => Err(wrongtype()),
    }
}

/// The list at `key` for modification (see [`list`]); the caller records
/// the change with [`changed`].
fn list_mut<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a mut List>, Reply> {
    match ks.get_mut(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::List(l),
            ..
        }) => Ok(Some(l)),
        Some(_) => Err(wrongtype()),
    }
}

/// Records that the list at `key` changed: deleted if it is now empty, as
/// Redis deletes an empty list.
fn changed(ks: &mut Keyspace, key: &[u8]) {
    let empty = matches!(
        ks.peek(key),
        Some(Entry { value: Value::List(l), .. }) if l.is_empty()
    );
    ks.settle_container(key, empty, true);
}

/// Pushes `elements` at `end` of the list at `key`, creating it unless
/// `only_existing` (`LPUSHX`); answers the new length (0 if absent).
fn push(ks: &mut Keyspace, key: &[u8], elements: &[Vec<u8>], end: End, only_existing: bool) -> R {
    let len = match list_mut(ks, key)? {
        Some(l) => {
            elements.iter().for_each(|v| end.push(l, v.clone()));
            l.len()
        }
        None if only_existing => return Ok(Reply::Int(0)),
        None => {
            let mut l = List::new();
            elements.iter().for_each(|v| end.push(&mut l, v.clone()));
            let len = l.len();
            ks.set(key, Value::List(l), None);
            return Ok(Reply::Int(len as i64));
        }
    };
    ks.mark_written(key);
    Ok(Reply::Int(len as i64))
}

/// `LPUSH key element...`
pub(crate) fn lpush(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    push(ks, &a[1], &a[2..], End::Left, false)
}

/// `RPUSH key element...`
pub(crate) fn rpush(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    push(ks, &a[1], &a[2..], End::Right, false)
}

/// `LPUSHX key element...`: only onto an existing list.
pub(crate) fn lpushx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    push(ks, &a[1], &a[2..], End::Left, true)
}

/// `RPUSHX key element...`: only onto an existing list.
pub(crate) fn rpushx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    push(ks, &a[1], &a[2..], End::Right, true)
}

/// An integer at least `min`, as Redis's `getRangeLongFromObjectOrReply`
/// with a message: not an integer and out of range get the same `msg`.
fn int_at_least(a: &[u8], min: i64, msg: &str) -> Result<i64, Reply> {
    match crate::resp::string2ll(a) {
        Some(n) if n >= min => Ok(n),
        _ => Err(Reply::err(format!("ERR {msg}"))),
    }
}

/// `LPOP key [count]` and `RPOP key [count]`: one element as a bulk, or
/// with a count an array (nil array if the key is absent).
fn pop(ks: &mut Keyspace, a: &[Vec<u8>], end: End, name: &str) -> R {
    if a.len() > 3 {
        return Err(arity_error(name));
    }
    let count = match a.get(2) {
        Some(c) => Some(int_at_least(
            c,
            0,
            "value is out of range, must be positive",
        )?),
        None => None,
    };
    let key = &a[1];
    let Some(l) = list_mut(ks, key)? else {
        return Ok(if count.is_some() {
            Reply::NilArray
        } else {
            Reply::Nil
        });
    };
    let reply = match count {
        Some(0) => return Ok(Reply::Array(vec![])),
        None => end.pop(l).map_or(Reply::Nil, Reply::Bulk),
        Some(n) => bulks(end.pop_many(l, usize::try_from(n).unwrap_or(usize::MAX))),
    };
    changed(ks, key);
    Ok(reply)
}

/// An array of bulk strings.
fn bulks(elements: Vec<Vec<u8>>) -> Reply {
    Reply::Array(elements.into_iter().map(Reply::Bulk).collect())
}

/// `LPOP key [count]`
pub(crate) fn lpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    pop(ks, a, End::Left, "lpop")
}

/// `RPOP key [count]`
pub(crate) fn rpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    pop(ks, a, End::Right, "rpop")
}

/// `LLEN key`
pub(crate) fn llen(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(list(ks, &a[1])?.map_or(0, |l| l.len() as i64)))
}

/// The positions `start..=end` (negative from the tail) select in a list
/// of `len`, clamped as Redis clamps them; `None` if empty.
fn range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// `LRANGE key start stop`
pub(crate) fn lrange(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let start = int_arg(&a[2])?;
    let end = int_arg(&a[3])?;
    let Some(l) = list(ks, &a[1])? else {
        return Ok(Reply::Array(vec![]));
    };
    Ok(match range(l.len(), start, end) {
        None => Reply::Array(vec![]),
        Some((s, e)) => bulks(l.range(s..=e).cloned().collect()),
    })
}

/// The position of `index` (negative from the tail) in a list of `len`.
fn position(len: usize, index: i64) -> Option<usize> {
    let i = if index < 0 {
        (len as i64).checked_add(index)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|&i| i < len)
}

/// `LINDEX key index`
pub(crate) fn lindex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let Some(l) = list(ks, &a[1])? else {
        return Ok(Reply::Nil);
    };
    let len = l.len();
    let index = int_arg(&a[2])?;
    let Some(l) = list(ks, &a[1])? else {
        return Ok(Reply::Nil);
    };
    Ok(position(len, index).map_or(Reply::Nil, |i| Reply::Bulk(l[i].clone())))
}

/// `LSET key index element`
pub(crate) fn lset(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    if list(ks, key)?.is_none() {
        return Err(Reply::err("ERR no such key"));
    }
    let index = int_arg(&a[2])?;
    let Some(l) = list_mut(ks, key)? else {
        return Err(Reply::err("ERR no such key"));
    };
    let Some(i) = position(l.len(), index) else {
        return Err(Reply::err("ERR index out of range"));
    };
    l[i] = a[3].clone();
    ks.mark_written(key);
    Ok(Reply::ok())
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 if the
/// pivot is not there, 0 if the key is absent.
pub(crate) fn linsert(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let after = if is_option(&a[2], "after") {
        true
    } else if is_option(&a[2], "before") {
        false
    } else {
        return Err(syntax_error());
    };
    let key = &a[1];
    let Some(l) = list_mut(ks, key)? else {
        return Ok(Reply::Int(0));
    };
    let Some(at) = l.iter().position(|e| *e == a[3]) else {
        return Ok(Reply::Int(-1));
    };
    l.insert(if after { at + 1 } else { at }, a[4].clone());
    let len = l.len();
    ks.mark_written(key);
    Ok(Reply::Int(len as i64))
}

/// `LREM key count element`: removes the first `count` (from the tail if
/// negative; all if 0) elements equal to `element`.
pub(crate) fn lrem(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let count = int_arg(&a[2])?;
    let key = &a[1];
    let Some(l) = list_mut(ks, key)? else {
        return Ok(Reply::Int(0));
    };
    let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let mut removed = 0usize;
    let mut keep = |e: &Vec<u8>| {
        let hit = *e == a[3] && (limit == 0 || removed < limit);
        removed += usize::from(hit);
        !hit
    };
    let kept: List = if count < 0 {
        let mut kept: List = l.iter().rev().filter(|e| keep(e)).cloned().collect();
        kept.make_contiguous().reverse();
        kept
    } else {
        l.iter().filter(|e| keep(e)).cloned().collect()
    };
    if removed > 0 {
        *l = kept;
        changed(ks, key);
    }
    Ok(Reply::Int(removed as i64))
}

/// `LTRIM key start stop`: keeps only `start..=stop`.
pub(crate) fn ltrim(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let start = int_arg(&a[2])?;
    let end = int_arg(&a[3])?;
    let key = &a[1];
    let Some(l) = list_mut(ks, key)? else {
        return Ok(Reply::ok());
    };
    match range(l.len(), start, end) {
        None => l.clear(),
        Some((s, e)) => {
            l.truncate(e + 1);
            l.drain(..s);
        }
    }
    // Redis counts a trim of an existing list as a change even when it
    // removes nothing (`WATCH`, the `ltrim` keyspace event).
    changed(ks, key);
    Ok(Reply::ok())
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`: the index of
/// the rank-th match (from the tail if the rank is negative), or with
/// `COUNT` an array of up to `num` of them (0: all); `MAXLEN` bounds the
/// scan.
pub(crate) fn lpos(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0i64);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is_option(&a[j], "rank") && more {
            j += 1;
            rank = int_arg(&a[j])?;
            if rank == 0 {
                return Err(Reply::err(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if is_option(&a[j], "count") && more {
            j += 1;
            count = Some(int_at_least(&a[j], 0, "COUNT can't be negative")?);
        } else if is_option(&a[j], "maxlen") && more {
            j += 1;
            maxlen = int_at_least(&a[j], 0, "MAXLEN can't be negative")?;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let from_tail = rank < 0;
    // As Redis's `-rank` on a long: the most negative rank stays negative
    // (and matches at once).
    let rank = if from_tail { rank.wrapping_neg() } else { rank };
    let Some(l) = list(ks, &a[1])? else {
        return Ok(if count.is_some() {
            Reply::Array(vec![])
        } else {
            Reply::Nil
        });
    };
    let len = l.len();
    let scan = if maxlen == 0 {
        len
    } else {
        len.min(usize::try_from(maxlen).unwrap_or(usize::MAX))
    };
    let indexes: Box<dyn Iterator<Item = usize>> = if from_tail {
        Box::new((0..len).rev().take(scan))
    } else {
        Box::new((0..len).take(scan))
    };
    let mut matches = 0i64;
    let mut found = Vec::new();
    for i in indexes {
        if l[i] != a[2] {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        found.push(Reply::Int(i as i64));
        match count {
            None => break,
            Some(c) if c != 0 && found.len() as i64 >= c => break,
            Some(_) => {}
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found),
        None => found.pop().unwrap_or(Reply::Nil),
    })
}

/// Redis's `lmoveGenericCommand`: moves the element at `from` of `src` to
/// `to` of `dst`; `None` if `src` is absent. WRONGTYPE for either key
/// comes before anything moves.
fn move_element(
    ks: &mut Keyspace,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>, Reply> {
    if list(ks, src)?.is_none() {
        return Ok(None);
    }
    list(ks, dst)?;
    let Some(value) = list_mut(ks, src)?.and_then(|l| from.pop(l)) else {
        return Ok(None);
    };
    match list_mut(ks, dst)? {
        Some(d) => {
            to.push(d, value.clone());
            ks.mark_written(dst);
        }
        None => ks.set(dst, Value::List(List::from([value.clone()])), None),
    }
    changed(ks, src);
    Ok(Some(value))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`
pub(crate) fn lmove(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let from = End::arg(&a[3])?;
    let to = End::arg(&a[4])?;
    Ok(move_element(ks, &a[1], &a[2], from, to)?.map_or(Reply::Nil, Reply::Bulk))
}

/// `RPOPLPUSH source destination`
pub(crate) fn rpoplpush(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(move_element(ks, &a[1], &a[2], End::Right, End::Left)?.map_or(Reply::Nil, Reply::Bulk))
}

/// What `LMPOP` and `BLMPOP` ask for: keys, end, count.
struct MpopArgs<'a> {
    /// The keys, tried in order.
    keys: &'a [Vec<u8>],
    /// Where to pop.
    end: End,
    /// At most how many elements.
    count: usize,
}

/// Reads `numkeys key... LEFT|RIGHT [COUNT count]` from `a[at..]`, as
/// Redis's `lmpopGenericCommand`.
fn mpop_args(a: &[Vec<u8>], at: usize) -> Result<MpopArgs<'_>, Reply> {
    let numkeys = int_at_least(&a[at], 1, "numkeys should be greater than 0")?;
    let where_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|&w| w < a.len())
        .ok_or_else(syntax_error)?;
    let end = End::arg(&a[where_at])?;
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && is_option(&a[j], "count") && j + 1 < a.len() {
            j += 1;
            count = Some(int_at_least(&a[j], 1, "count should be greater than 0")?);
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    Ok(MpopArgs {
        keys: &a[at + 1..where_at],
        end,
        count: count.map_or(1, |c| usize::try_from(c).unwrap_or(usize::MAX)),
    })
}

/// Pops up to `count` elements from `end` of the list at `key`: `None` if
/// it is absent or empty.
fn pop_from(
    ks: &mut Keyspace,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, Reply> {
    let Some(l) = list_mut(ks, key)? else {
        return Ok(None);
    };
    if l.is_empty() {
        return Ok(None);
    }
    let popped = end.pop_many(l, count);
    changed(ks, key);
    Ok(Some(popped))
}

/// `[key, [element...]]`: what `LMPOP` and `BLMPOP` answer.
fn key_and_elements(key: &[u8], elements: Vec<Vec<u8>>) -> Reply {
    Reply::Array(vec![Reply::Bulk(key.to_vec()), bulks(elements)])
}

/// Pops from the first non-empty list of `m.keys`; `None` if all are
/// absent. WRONGTYPE on the first key of another type met.
fn mpop(ks: &mut Keyspace, m: &MpopArgs) -> Result<Option<Reply>, Reply> {
    for key in m.keys {
        if let Some(popped) = pop_from(ks, key, m.end, m.count)? {
            return Ok(Some(key_and_elements(key, popped)));
        }
    }
    Ok(None)
}

/// `LMPOP numkeys key... LEFT|RIGHT [COUNT count]`
pub(crate) fn lmpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let m = mpop_args(a, 1)?;
    Ok(mpop(ks, &m)?.unwrap_or(Reply::NilArray))
}

/// `BLPOP`/`BRPOP key... timeout`: the timeout first, then the first
/// non-empty list of the keys.
fn bpop_attempt(ks: &mut Keyspace, a: &[Vec<u8>], end: End) -> Result<Attempt, Reply> {
    let timeout_ms = timeout_seconds_arg(&a[a.len() - 1])?;
    let keys = &a[1..a.len() - 1];
    for key in keys {
        if let Some(popped) = pop_from(ks, key, end, 1)? {
            return Ok(Attempt::Served(key_and_element(key, popped)));
        }
    }
    Ok(Attempt::Block(Block {
        keys: keys.to_vec(),
        timeout_ms,
        serve: if end == End::Left {
            serve_blpop
        } else {
            serve_brpop
        },
        timed_out: Reply::NilArray,
    }))
}

/// `[key, element]`: what `BLPOP` and `BRPOP` answer.
fn key_and_element(key: &[u8], popped: Vec<Vec<u8>>) -> Reply {
    let mut r = vec![Reply::Bulk(key.to_vec())];
    r.extend(popped.into_iter().map(Reply::Bulk));
    Reply::Array(r)
}

/// Serves a blocked `BLPOP` from the ready `key`.
fn serve_blpop(ks: &mut Keyspace, _: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let popped = pop_from(ks, key, End::Left, 1).ok()??;
    Some(key_and_element(key, popped))
}

/// Serves a blocked `BRPOP` from the ready `key`.
fn serve_brpop(ks: &mut Keyspace, _: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let popped = pop_from(ks, key, End::Right, 1).ok()??;
    Some(key_and_element(key, popped))
}

/// `BLPOP key... timeout` for a client.
pub(crate) const BLPOP_ATTEMPT: BlockFn = |ks, a| bpop_attempt(ks, a, End::Left);

/// `BRPOP key... timeout` for a client.
pub(crate) const BRPOP_ATTEMPT: BlockFn = |ks, a| bpop_attempt(ks, a, End::Right);

/// `BLPOP key... timeout` in a transaction: never blocks.
pub(crate) fn blpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(BLPOP_ATTEMPT(ks, a))
}

/// `BRPOP key... timeout` in a transaction: never blocks.
pub(crate) fn brpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(BRPOP_ATTEMPT(ks, a))
}

/// The ends and timeout of `BLMOVE src dst from to timeout` or
/// `BRPOPLPUSH src dst timeout`, in the order Redis reads them.
fn blmove_args(a: &[Vec<u8>]) -> Result<(End, End, i64), Reply> {
    if a.len() == 4 {
        return Ok((End::Right, End::Left, timeout_seconds_arg(&a[3])?));
    }
    let from = End::arg(&a[3])?;
    let to = End::arg(&a[4])?;
    Ok((from, to, timeout_seconds_arg(&a[5])?))
}

/// `BLMOVE` and `BRPOPLPUSH` for a client: moves at once if the source
/// exists, else blocks on it.
pub(crate) fn blmove_attempt(ks: &mut Keyspace, a: &[Vec<u8>]) -> Result<Attempt, Reply> {
    let (from, to, timeout_ms) = blmove_args(a)?;
    match move_element(ks, &a[1], &a[2], from, to)? {
        Some(v) => Ok(Attempt::Served(Reply::Bulk(v))),
        None => Ok(Attempt::Block(Block {
            keys: vec![a[1].clone()],
            timeout_ms,
            serve: serve_blmove,
            // Redis 7.0 answers every list client that timed out so.
            timed_out: Reply::NilArray,
        })),
    }
}

/// Serves a blocked `BLMOVE` or `BRPOPLPUSH` from its ready source: a
/// destination of another type answers WRONGTYPE and unblocks it, as in
/// Redis 7.0.
fn serve_blmove(ks: &mut Keyspace, a: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let (from, to, _) = blmove_args(a).ok()?;
    if list(ks, key).ok()?.is_none_or(|l| l.is_empty()) {
        return None;
    }
    Some(match move_element(ks, key, &a[2], from, to) {
        Ok(v) => v.map_or(Reply::Nil, Reply::Bulk),
        Err(e) => e,
    })
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout` (and
/// `BRPOPLPUSH`) in a transaction: never blocks, and answers nil (not the
/// nil array of a client that timed out), as Redis does.
pub(crate) fn blmove(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    match blmove_attempt(ks, a)? {
        Attempt::Served(reply) => Ok(reply),
        Attempt::Block(_) => Ok(Reply::Nil),
    }
}

/// `BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT count]` for a client:
/// its keys, end and count are read before its timeout, as in Redis.
pub(crate) fn blmpop_attempt(ks: &mut Keyspace, a: &[Vec<u8>]) -> Result<Attempt, Reply> {
    let m = mpop_args(a, 2)?;
    let timeout_ms = timeout_seconds_arg(&a[1])?;
    Ok(match mpop(ks, &m)? {
        Some(reply) => Attempt::Served(reply),
        None => Attempt::Block(Block {
            keys: m.keys.to_vec(),
            timeout_ms,
            serve: serve_blmpop,
            timed_out: Reply::NilArray,
        }),
    })
}

/// Serves a blocked `BLMPOP` from the ready `key`.
fn serve_blmpop(ks: &mut Keyspace, a: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let m = mpop_args(a, 2).ok()?;
    let popped = pop_from(ks, key, m.end, m.count).ok()??;
    Some(key_and_elements(key, popped))
}

/// `BLMPOP ...` in a script or a transaction: never blocks.
pub(crate) fn blmpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(blmpop_attempt(ks, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_clamp_as_redis() {
        assert_eq!(range(5, 0, -1), Some((0, 4)));
        assert_eq!(range(5, -100, 100), Some((0, 4)));
        assert_eq!(range(5, 3, 1), None);
        assert_eq!(range(5, 5, 10), None);
        assert_eq!(range(0, 0, -1), None);
        assert_eq!(range(5, i64::MIN, i64::MAX), Some((0, 4)));
    }

    #[test]
    fn positions_count_from_either_end() {
        assert_eq!(position(3, 0), Some(0));
        assert_eq!(position(3, -1), Some(2));
        assert_eq!(position(3, 3), None);
        assert_eq!(position(3, -4), None);
        assert_eq!(position(3, i64::MIN), None);
    }
}
