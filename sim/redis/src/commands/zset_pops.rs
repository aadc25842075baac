//! Popping sorted sets: `ZPOPMIN`, `ZPOPMAX`, `ZMPOP`, and their blocking
//! forms `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`.
//!
//! A blocking pop has two forms (see [`crate::blocking`]), as the list
//! pops do: its keyspace handler never blocks (what a script or a
//! transaction runs: Redis answers the nil array of a timed-out client),
//! and its attempt (a [`BlockFn`]) serves a client at once or says how it
//! blocks. A blocked client is served only from a key that holds a
//! non-empty sorted set when it is offered; a key re-created with another
//! type leaves it waiting, as in Redis 7.0.
//!
//! Arguments are read in the order Redis's `t_zset.c` reads them:
//! `BZPOPMIN`'s timeout before its keys are looked at, `BZMPOP`'s key
//! count, end and count before its timeout.

use super::errors::syntax_error;
use super::is_option;
use super::sorted_sets::{Scored, modify, score_bulk, zset_at};
use crate::blocking::{Attempt, Block, BlockFn, timeout_seconds_arg, without_blocking};
use crate::handle::NodeHandle;
use crate::keyspace::Keyspace;
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// The end of a sorted set a pop takes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The lowest scores first (`ZPOPMIN`, `MIN`).
    Min,
    /// The highest scores first (`ZPOPMAX`, `MAX`).
    Max,
}

/// Takes up to `count` members from `side` of the sorted set at `key`,
/// with their scores, in the order popped; `None` if the key is absent,
/// WRONGTYPE if it holds another type. The key goes with its last member.
fn take(ks: &mut Keyspace, key: &[u8], side: Side, count: usize) -> Result<Option<Scored>, Reply> {
    let Some(z) = zset_at(ks, key)? else {
        return Ok(None);
    };
    let own = |(m, s): (&[u8], f64)| (m.to_vec(), s);
    let popped: Scored = match side {
        Side::Min => z.iter().take(count).map(own).collect(),
        Side::Max => z.iter().rev().take(count).map(own).collect(),
    };
    if popped.is_empty() {
        return Ok(None);
    }
    modify(ks, key, |z| {
        for (m, _) in &popped {
            z.remove(m);
        }
        ((), true)
    });
    Ok(Some(popped))
}

/// Members and scores, flat: what `ZPOPMIN` and `ZPOPMAX` answer.
fn flat(popped: Scored) -> Reply {
    Reply::Array(
        popped
            .into_iter()
            .flat_map(|(m, s)| [Reply::Bulk(m), score_bulk(s)])
            .collect(),
    )
}

/// `ZPOPMIN key [count]` and `ZPOPMAX key [count]`: the count is read
/// before the key (a bad count is an error even on a key of another
/// type); an absent key is an empty array, with or without a count.
fn zpop(ks: &mut Keyspace, a: &[Vec<u8>], side: Side) -> R {
    if a.len() > 3 {
        return Err(syntax_error());
    }
    let count = match a.get(2) {
        Some(c) => string2ll(c)
            .filter(|n| *n >= 0)
            .ok_or_else(|| Reply::err("ERR value is out of range, must be positive"))?,
        None => 1,
    };
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    // A count of 0 still checks the key's type.
    if count == 0 {
        zset_at(ks, &a[1])?;
        return Ok(Reply::Array(vec![]));
    }
    Ok(flat(take(ks, &a[1], side, count)?.unwrap_or_default()))
}

/// `ZPOPMIN key [count]`
pub(crate) fn zpopmin(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    zpop(ks, a, Side::Min)
}

/// `ZPOPMAX key [count]`
pub(crate) fn zpopmax(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    zpop(ks, a, Side::Max)
}

/// What `ZMPOP` and `BZMPOP` ask for: keys, end, count.
struct MpopArgs<'a> {
    /// The keys, tried in order.
    keys: &'a [Vec<u8>],
    /// Where to pop.
    side: Side,
    /// At most how many members.
    count: usize,
}

/// Reads `numkeys key... MIN|MAX [COUNT count]` from `a[at..]`, as
/// Redis's `zmpopGenericCommand`.
fn mpop_args(a: &[Vec<u8>], at: usize) -> Result<MpopArgs<'_>, Reply> {
    let numkeys = string2ll(&a[at])
        .filter(|n| *n >= 1)
        .ok_or_else(|| Reply::err("ERR numkeys should be greater than 0"))?;
    let where_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|w| *w < a.len())
        .ok_or_else(syntax_error)?;
    let side = if is_option(&a[where_at], "min") {
        Side::Min
    } else if is_option(&a[where_at], "max") {
        Side::Max
    } else {
        return Err(syntax_error());
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && is_option(&a[j], "count") && j + 1 < a.len() {
            let n = string2ll(&a[j + 1])
                .filter(|n| *n >= 1)
                .ok_or_else(|| Reply::err("ERR count should be greater than 0"))?;
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok(MpopArgs {
        keys: &a[at + 1..where_at],
        side,
        count: count.unwrap_or(1),
    })
}

/// `[key, [[member, score]...]]`: what `ZMPOP` and `BZMPOP` answer.
fn key_and_pairs(key: &[u8], popped: Scored) -> Reply {
    let pairs = popped
        .into_iter()
        .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), score_bulk(s)]))
        .collect();
    Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Array(pairs)])
}

/// Pops from the first of `m.keys` that holds a sorted set; `None` if
/// every key is absent. WRONGTYPE on the first key of another type met.
fn mpop(ks: &mut Keyspace, m: &MpopArgs) -> Result<Option<Reply>, Reply> {
    for key in m.keys {
        if let Some(popped) = take(ks, key, m.side, m.count)? {
            return Ok(Some(key_and_pairs(key, popped)));
        }
    }
    Ok(None)
}

/// `ZMPOP numkeys key... MIN|MAX [COUNT count]`: a nil array when every
/// key is absent.
pub(crate) fn zmpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let m = mpop_args(a, 1)?;
    Ok(mpop(ks, &m)?.unwrap_or(Reply::NilArray))
}

/// `[key, member, score]`: what `BZPOPMIN` and `BZPOPMAX` answer.
fn key_member_score(key: &[u8], popped: Scored) -> Reply {
    let mut r = vec![Reply::Bulk(key.to_vec())];
    for (m, s) in popped {
        r.push(Reply::Bulk(m));
        r.push(score_bulk(s));
    }
    Reply::Array(r)
}

/// `BZPOPMIN`/`BZPOPMAX key... timeout`: the timeout first, then the
/// first key that holds a sorted set.
fn bzpop_attempt(ks: &mut Keyspace, a: &[Vec<u8>], side: Side) -> Result<Attempt, Reply> {
    let timeout_ms = timeout_seconds_arg(&a[a.len() - 1])?;
    let keys = &a[1..a.len() - 1];
    for key in keys {
        if let Some(popped) = take(ks, key, side, 1)? {
            return Ok(Attempt::Served(key_member_score(key, popped)));
        }
    }
    Ok(Attempt::Block(Block {
        keys: keys.to_vec(),
        timeout_ms,
        serve: match side {
            Side::Min => serve_bzpopmin,
            Side::Max => serve_bzpopmax,
        },
        timed_out: Reply::NilArray,
    }))
}

/// Serves a blocked `BZPOPMIN` from the ready `key`.
fn serve_bzpopmin(ks: &mut Keyspace, _: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let popped = take(ks, key, Side::Min, 1).ok()??;
    Some(key_member_score(key, popped))
}

/// Serves a blocked `BZPOPMAX` from the ready `key`.
fn serve_bzpopmax(ks: &mut Keyspace, _: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let popped = take(ks, key, Side::Max, 1).ok()??;
    Some(key_member_score(key, popped))
}

/// `BZPOPMIN key... timeout` for a client.
pub(crate) const BZPOPMIN_ATTEMPT: BlockFn = |ks, a| bzpop_attempt(ks, a, Side::Min);

/// `BZPOPMAX key... timeout` for a client.
pub(crate) const BZPOPMAX_ATTEMPT: BlockFn = |ks, a| bzpop_attempt(ks, a, Side::Max);

/// `BZPOPMIN key... timeout` in a transaction: never blocks.
pub(crate) fn bzpopmin(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(BZPOPMIN_ATTEMPT(ks, a))
}

/// `BZPOPMAX key... timeout` in a transaction: never blocks.
pub(crate) fn bzpopmax(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(BZPOPMAX_ATTEMPT(ks, a))
}

/// `BZMPOP timeout numkeys key... MIN|MAX [COUNT count]` for a client:
/// its keys, end and count are read before its timeout, as in Redis.
pub(crate) fn bzmpop_attempt(ks: &mut Keyspace, a: &[Vec<u8>]) -> Result<Attempt, Reply> {
    let m = mpop_args(a, 2)?;
    let timeout_ms = timeout_seconds_arg(&a[1])?;
    Ok(match mpop(ks, &m)? {
        Some(reply) => Attempt::Served(reply),
        None => Attempt::Block(Block {
            keys: m.keys.to_vec(),
            timeout_ms,
            serve: serve_bzmpop,
            timed_out: Reply::NilArray,
        }),
    })
}

/// Serves a blocked `BZMPOP` from the ready `key`.
fn serve_bzmpop(ks: &mut Keyspace, a: &[Vec<u8>], key: &[u8]) -> Option<Reply> {
    let m = mpop_args(a, 2).ok()?;
    let popped = take(ks, key, m.side, m.count).ok()??;
    Some(key_and_pairs(key, popped))
}

/// `BZMPOP ...` in a script or a transaction: never blocks.
pub(crate) fn bzmpop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    without_blocking(bzmpop_attempt(ks, a))
}
