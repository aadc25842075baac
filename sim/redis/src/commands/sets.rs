//! The set commands: `SADD`, `SREM`, `SMEMBERS`, `SISMEMBER`,
//! `SMISMEMBER`, `SCARD`, `SPOP`, `SRANDMEMBER`, `SMOVE`, `SINTER`,
//! `SINTERCARD`, `SINTERSTORE`, `SUNION`, `SUNIONSTORE`, `SDIFF`,
//! `SDIFFSTORE`, `SSCAN`, as Redis 7.0.15 answers them.
//!
//! Listing order: Redis lists a set of integers that fits its intset (at
//! most 512 members) sorted numerically, and any other set in hash-table
//! order, which changes from run to run. The node lists the first kind as
//! Redis does and the second in the order members were first added (a
//! member removed and added again goes last): deterministic, and as good
//! as any order Redis might pick.

use super::errors::{int_arg, syntax_error, wrongtype};
use super::scan;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// A set's members.
pub(crate) type Members = indexmap::IndexSet<Vec<u8>>;

/// How many integers Redis's intset holds before the set becomes a hash
/// table (`set-max-intset-entries`).
const MAX_INTSET_ENTRIES: usize = 512;

/// The set stored at `key`, `None` if absent, WRONGTYPE if another type.
fn set_at<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a Members>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Set(s) => Ok(Some(s)),
            _ => Err(wrongtype()),
        },
    }
}

/// A copy of the set at `key` (empty if absent), WRONGTYPE if another type.
fn set_copy(ks: &mut Keyspace, key: &[u8]) -> Result<Option<Members>, Reply> {
    Ok(set_at(ks, key)?.cloned())
}

/// The members in the order the node lists them (see the module docs).
pub(crate) fn listing(set: &Members) -> Vec<&Vec<u8>> {
    let mut members: Vec<&Vec<u8>> = set.iter().collect();
    if set.len() <= MAX_INTSET_ENTRIES {
        let ints: Option<Vec<i64>> = members.iter().map(|m| string2ll(m)).collect();
        if let Some(ints) = ints {
            let mut pairs: Vec<(i64, &Vec<u8>)> = ints.into_iter().zip(members).collect();
            pairs.sort_unstable_by_key(|(n, _)| *n);
            members = pairs.into_iter().map(|(_, m)| m).collect();
        }
    }
    members
}

/// The members as an array reply, in listing order.
fn members_reply(set: &Members) -> Reply {
    Reply::Array(
        listing(set)
            .into_iter()
            .map(|m| Reply::Bulk(m.clone()))
            .collect(),
    )
}

/// Applies `change` to the set at `key`, which must exist; deletes the key
/// if the set is left empty, records the write if `change` says it changed
/// something (its `bool`).
fn modify<T>(ks: &mut Keyspace, key: &[u8], change: impl FnOnce(&mut Members) -> (T, bool)) -> T {
    let Some(Value::Set(set)) = ks.get_mut(key).map(|e| &mut e.value) else {
        unreachable!("modify is called on a set key");
    };
    let (out, changed) = change(set);
    let empty = set.is_empty();
    ks.settle_container(key, empty, changed);
    out
}

/// Stores `set` at `key` as a new value (no deadline), or deletes the key
/// if the set is empty; the reply is the set's size.
fn store(ks: &mut Keyspace, key: &[u8], set: Members) -> Reply {
    let n = set.len() as i64;
    ks.store_container(key, Value::Set(set), n == 0);
    Reply::Int(n)
}

/// `SADD key member...`: how many members are new.
pub(crate) fn sadd(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    if set_at(ks, key)?.is_none() {
        ks.set(key, Value::Set(Members::new()), None);
    }
    Ok(Reply::Int(modify(ks, key, |s| {
        let added = a[2..].iter().filter(|m| s.insert((*m).clone())).count();
        (added as i64, added > 0)
    })))
}

/// `SREM key member...`: how many members were removed.
pub(crate) fn srem(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    if set_at(ks, key)?.is_none() {
        return Ok(Reply::Int(0));
    }
    Ok(Reply::Int(modify(ks, key, |s| {
        let removed = a[2..].iter().filter(|m| s.shift_remove(*m)).count();
        (removed as i64, removed > 0)
    })))
}

/// `SMEMBERS key`
pub(crate) fn smembers(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(set_at(ks, &a[1])?.map_or(Reply::Array(vec![]), members_reply))
}

/// `SISMEMBER key member`
pub(crate) fn sismember(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let set = set_at(ks, &a[1])?;
    Ok(Reply::Int(i64::from(
        set.is_some_and(|s| s.contains(&a[2])),
    )))
}

/// `SMISMEMBER key member...`: 1 or 0 for each member.
pub(crate) fn smismember(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let set = set_at(ks, &a[1])?;
    Ok(Reply::Array(
        a[2..]
            .iter()
            .map(|m| Reply::Int(i64::from(set.is_some_and(|s| s.contains(m)))))
            .collect(),
    ))
}

/// `SCARD key`
pub(crate) fn scard(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(set_at(ks, &a[1])?.map_or(0, |s| s.len() as i64)))
}

/// A count that must not be negative (`SPOP`'s), as Redis's
/// `getPositiveLongFromObjectOrReply` checks it (one error for both
/// a non-integer and a negative count).
fn positive_count(arg: &[u8]) -> Result<usize, Reply> {
    let n = string2ll(arg)
        .filter(|n| *n >= 0)
        .ok_or_else(|| Reply::err("ERR value is out of range, must be positive"))?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// `SPOP key [count]`: removes and answers random members (one, as a
/// bulk, without a count; an array with one).
pub(crate) fn spop(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len() > 3 {
        return Err(syntax_error());
    }
    let key = &a[1];
    let count = match a.get(2) {
        Some(c) => Some(positive_count(c)?),
        None => None,
    };
    let Some(listed) =
        set_at(ks, key)?.map(|s| listing(s).into_iter().cloned().collect::<Vec<_>>())
    else {
        return Ok(count.map_or(Reply::Nil, |_| Reply::Array(vec![])));
    };
    let Some(count) = count else {
        let popped = listed[ks.draws.below(listed.len())].clone();
        modify(ks, key, |s| (s.shift_remove(&popped), true));
        return Ok(Reply::Bulk(popped));
    };
    if count == 0 {
        return Ok(Reply::Array(vec![]));
    }
    if count >= listed.len() {
        ks.remove(key);
        return Ok(Reply::Array(listed.into_iter().map(Reply::Bulk).collect()));
    }
    let picked: Vec<Vec<u8>> = ks
        .draws
        .distinct(listed.len(), count)
        .into_iter()
        .map(|i| listed[i].clone())
        .collect();
    modify(ks, key, |s| {
        for m in &picked {
            s.shift_remove(m);
        }
        ((), true)
    });
    Ok(Reply::Array(picked.into_iter().map(Reply::Bulk).collect()))
}

/// `SRANDMEMBER key [count]`: random members, distinct for a positive
/// count, possibly repeated for a negative one.
pub(crate) fn srandmember(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len() > 3 {
        return Err(syntax_error());
    }
    let count = match a.get(2) {
        Some(c) => {
            let n = int_arg(c)?;
            if n == i64::MIN {
                return Err(Reply::err(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                ));
            }
            Some(n)
        }
        None => None,
    };
    let Some(set) = set_at(ks, &a[1])? else {
        return Ok(count.map_or(Reply::Nil, |_| Reply::Array(vec![])));
    };
    let listed: Vec<Vec<u8>> = listing(set).into_iter().cloned().collect();
    let bulk = |i: usize| Reply::Bulk(listed[i].clone());
    Ok(match count {
        None => bulk(ks.draws.below(listed.len())),
        Some(n) if n >= 0 => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if n >= listed.len() {
                Reply::Array(listed.iter().map(|m| Reply::Bulk(m.clone())).collect())
            } else {
                let picked = ks.draws.distinct(listed.len(), n);
                Reply::Array(picked.into_iter().map(bulk).collect())
            }
        }
        Some(n) => Reply::Array(
            (0..n.unsigned_abs())
                .map(|_| bulk(ks.draws.below(listed.len())))
                .collect(),
        ),
    })
}

/// `SMOVE source destination member`
pub(crate) fn smove(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let (src, dst, member) = (&a[1], &a[2], &a[3]);
    let Some(from) = set_at(ks, src)? else {
        return Ok(Reply::Int(0));
    };
    let is_member = from.contains(member);
    set_at(ks, dst)?;
    if src == dst {
        return Ok(Reply::Int(i64::from(is_member)));
    }
    if !is_member {
        return Ok(Reply::Int(0));
    }
    modify(ks, src, |s| (s.shift_remove(member), true));
    if set_at(ks, dst)?.is_none() {
        ks.set(dst, Value::Set(Members::new()), None);
    }
    modify(ks, dst, |s| ((), s.insert(member.clone())));
    Ok(Reply::Int(1))
}

/// The sets at `keys`, in order (`None` for an absent key); WRONGTYPE at
/// the first key of another type, whatever comes before it.
fn sets_at(ks: &mut Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Members>>, Reply> {
    keys.iter().map(|k| set_copy(ks, k)).collect()
}

/// The intersection of `keys`' sets, walking the smallest in listing
/// order; stops after `limit` members (0: no limit).
fn intersection(ks: &mut Keyspace, keys: &[Vec<u8>], limit: usize) -> Result<Members, Reply> {
    let sets = sets_at(ks, keys)?;
    let Some(mut sets) = sets.into_iter().collect::<Option<Vec<Members>>>() else {
        return Ok(Members::new());
    };
    // A stable sort keeps equal-sized sets in key order, as Redis's qsort
    // may not; only which set is walked depends on it.
    sets.sort_by_key(Members::len);
    let mut out = Members::new();
    for m in listing(&sets[0]) {
        if sets[1..].iter().all(|s| s.contains(m)) {
            out.insert(m.clone());
            if limit > 0 && out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// `SINTER key...`
pub(crate) fn sinter(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(members_reply(&intersection(ks, &a[1..], 0)?))
}

/// `SINTERSTORE destination key...`
pub(crate) fn sinterstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let set = intersection(ks, &a[2..], 0)?;
    Ok(store(ks, &a[1], set))
}

/// `SINTERCARD numkeys key... [LIMIT limit]`
pub(crate) fn sintercard(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let numkeys = string2ll(&a[1])
        .filter(|n| *n >= 1)
        .ok_or_else(|| Reply::err("ERR numkeys should be greater than 0"))?;
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > a.len() - 2 {
        return Err(Reply::err(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let mut limit = 0;
    let mut j = 2 + numkeys;
    while j < a.len() {
        if super::is_option(&a[j], "limit") && j + 1 < a.len() {
            let n = string2ll(&a[j + 1])
                .filter(|n| *n >= 0)
                .ok_or_else(|| Reply::err("ERR LIMIT can't be negative"))?;
            limit = usize::try_from(n).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    let set = intersection(ks, &a[2..2 + numkeys], limit)?;
    Ok(Reply::Int(set.len() as i64))
}

/// The union of `keys`' sets, in key order then listing order.
fn union(ks: &mut Keyspace, keys: &[Vec<u8>]) -> Result<Members, Reply> {
    let mut out = Members::new();
    for set in sets_at(ks, keys)?.into_iter().flatten() {
        out.extend(listing(&set).into_iter().cloned());
    }
    Ok(out)
}

/// The first key's set without the members of the others.
fn difference(ks: &mut Keyspace, keys: &[Vec<u8>]) -> Result<Members, Reply> {
    let sets = sets_at(ks, keys)?;
    let Some(Some(first)) = sets.first() else {
        return Ok(Members::new());
    };
    Ok(listing(first)
        .into_iter()
        .filter(|m| sets[1..].iter().flatten().all(|s| !s.contains(*m)))
        .cloned()
        .collect())
}

/// `SUNION key...`
pub(crate) fn sunion(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(members_reply(&union(ks, &a[1..])?))
}

/// `SUNIONSTORE destination key...`
pub(crate) fn sunionstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let set = union(ks, &a[2..])?;
    Ok(store(ks, &a[1], set))
}

/// `SDIFF key...`
pub(crate) fn sdiff(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(members_reply(&difference(ks, &a[1..])?))
}

/// `SDIFFSTORE destination key...`
pub(crate) fn sdiffstore(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let set = difference(ks, &a[2..])?;
    Ok(store(ks, &a[1], set))
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: every member at once
/// (see [`scan`]).
pub(crate) fn sscan(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    scan::check_cursor(&a[2])?;
    let Some(set) = set_at(ks, &a[1])? else {
        return Ok(scan::empty());
    };
    let items: Vec<Vec<u8>> = listing(set).into_iter().cloned().collect();
    let pattern = scan::pattern(&a[3..])?;
    Ok(scan::reply(items, pattern, false))
}
