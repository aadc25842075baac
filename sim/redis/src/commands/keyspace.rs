//! The keyspace commands: strings, counters, hashes, deletion and expiry.
//!
//! Each is a plain function of the keyspace and the arguments (arity
//! already checked), so the same code answers a client and a script. They
//! judge expiry by the keyspace's frozen clock (`Keyspace::now_ms`) and
//! record their changes in it; the node commits those afterwards.

use super::errors::{arity_error, int_arg, not_integer, syntax_error, wrongtype};
use super::{KeyspaceFn, is_option};
use crate::handle::NodeHandle;
use crate::keyspace::{Entry, Keyspace, Value};
use crate::resp::{Reply, string2ll};
use crate::version::Feature;

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

type HashFields = indexmap::IndexMap<Vec<u8>, Vec<u8>>;

/// Times in seconds (`EXPIRE`, `TTL`, `SETEX`...): a unit of 1000 ms.
const SECONDS: i64 = 1000;
/// Times in milliseconds (`PEXPIRE`, `PTTL`, `PSETEX`...).
const MILLISECONDS: i64 = 1;
/// Deadlines counted from now (`EXPIRE`, `TTL`).
const FROM_NOW: bool = true;
/// Deadlines as Unix times (`EXPIREAT`, `EXPIRETIME`).
const UNIX_TIME: bool = false;

fn int_bytes(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// The string stored at `key`, `None` if absent, WRONGTYPE if a hash.
fn string<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a Vec<u8>>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(Some(s)),
            _ => Err(wrongtype()),
        },
    }
}

/// The hash stored at `key`, `None` if absent, WRONGTYPE if a string.
fn hash<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a HashFields>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(wrongtype()),
        },
    }
}

/// `GET key`
pub(crate) fn get(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(string(ks, &a[1])?.map_or(Reply::Nil, |s| Reply::Bulk(s.clone())))
}

/// `STRLEN key`
pub(crate) fn strlen(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(string(ks, &a[1])?.map_or(0, |s| s.len() as i64)))
}

/// `MGET key...`: a hash (or absent key) reads as nil, not WRONGTYPE.
pub(crate) fn mget(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Array(
        a[1..]
            .iter()
            .map(|k| match ks.get(k) {
                Some(Entry {
                    value: Value::Str(s),
                    ..
                }) => Reply::Bulk(s.clone()),
                _ => Reply::Nil,
            })
            .collect(),
    ))
}

/// `SET key value [NX|XX|IFEQ v|IFNE v] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`
///
/// `IFEQ` answers as Valkey 8.1 and Redis 8.4 document it, `IFNE` as Redis
/// 8.4 does; a node of a version without them (Redis 7.0 knows neither)
/// answers a syntax error, as that server does. Both exclude `NX`, `XX`
/// and each other; a key holding a hash is WRONGTYPE. Redis 8.4's digest
/// conditions (`IFDEQ`, `IFDNE`) are not simulated and stay a syntax error.
pub(crate) fn set(ks: &mut Keyspace, a: &[Vec<u8>], node: &NodeHandle) -> R {
    #[derive(PartialEq, Clone, Copy)]
    enum Unit {
        Ex,
        Px,
        ExAt,
        PxAt,
    }
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(Unit, &[u8])> = None;
    let mut condition: Option<(ValueIs, &[u8])> = None;
    let mut j = 3;
    while j < a.len() {
        let opt = &a[j];
        let has_next = j + 1 < a.len();
        let unit = expire.map(|(u, _)| u);
        if is_option(opt, "nx") && !xx && condition.is_none() {
            nx = true;
        } else if is_option(opt, "xx") && !nx && condition.is_none() {
            xx = true;
        } else if let Some(is) = value_condition(opt)
            && node.config().version.has(is.feature())
            && has_next
            && !nx
            && !xx
            && condition.is_none()
        {
            condition = Some((is, &a[j + 1]));
            j += 1;
        } else if is_option(opt, "get") {
            get = true;
        } else if is_option(opt, "keepttl") && expire.is_none() {
            keepttl = true;
        } else if !keepttl && has_next && {
            let u = if is_option(opt, "ex") {
                Some(Unit::Ex)
            } else if is_option(opt, "px") {
                Some(Unit::Px)
            } else if is_option(opt, "exat") {
                Some(Unit::ExAt)
            } else if is_option(opt, "pxat") {
                Some(Unit::PxAt)
            } else {
                None
            };
            // The same unit may be repeated (the last value wins), as in Redis.
            match u {
                Some(u) if unit.is_none() || unit == Some(u) => {
                    expire = Some((u, &a[j + 1]));
                    true
                }
                _ => false,
            }
        } {
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let invalid = || Reply::err("ERR invalid expire time in 'set' command");
    let when = match expire {
        None => None,
        Some((unit, v)) => {
            let n = int_arg(v)?;
            let secs = matches!(unit, Unit::Ex | Unit::ExAt);
            if n <= 0 || (secs && n > i64::MAX / 1000) {
                return Err(invalid());
            }
            let ms = if secs { n * 1000 } else { n };
            let when = if matches!(unit, Unit::Ex | Unit::Px) {
                ms.checked_add(ks.now_ms).ok_or_else(invalid)?
            } else {
                ms
            };
            if when <= 0 {
                return Err(invalid());
            }
            Some(when)
        }
    };
    let key = &a[1];
    let old = ks.get(key).map(|e| (e.value.clone(), e.deadline));
    let old_reply = if get {
        match &old {
            None => Reply::Nil,
            Some((Value::Str(s), _)) => Reply::Bulk(s.clone()),
            Some(_) => return Err(wrongtype()),
        }
    } else {
        Reply::ok()
    };
    let found = old.is_some();
    let refused_by_condition = match (condition, &old) {
        (None, _) => false,
        (Some((is, expected)), Some((Value::Str(current), _))) => {
            !is.holds(Some(current), expected)
        }
        (Some((is, expected)), None) => !is.holds(None, expected),
        (Some(_), Some(_)) => return Err(wrongtype()),
    };
    if (nx && found) || (xx && !found) || refused_by_condition {
        return Ok(if get { old_reply } else { Reply::Nil });
    }
    let deadline = if keepttl {
        old.and_then(|(_, d)| d)
    } else {
        when
    };
    ks.set(key, Value::Str(a[2].clone()), deadline);
    Ok(old_reply)
}

/// `SETEX key seconds value` (`UNIT_MS` = [`SECONDS`]) and `PSETEX key
/// milliseconds value` ([`MILLISECONDS`]).
fn setex<const UNIT_MS: i64>(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let name = if UNIT_MS == SECONDS {
        "setex"
    } else {
        "psetex"
    };
    let invalid = || Reply::err(format!("ERR invalid expire time in '{name}' command"));
    let n = int_arg(&a[2])?;
    if n <= 0 || n > i64::MAX / UNIT_MS {
        return Err(invalid());
    }
    let when = (n * UNIT_MS)
        .checked_add(ks.now_ms)
        .filter(|w| *w > 0)
        .ok_or_else(invalid)?;
    ks.set(&a[1], Value::Str(a[3].clone()), Some(when));
    Ok(Reply::ok())
}

/// `SETEX key seconds value`
pub(crate) const SETEX: KeyspaceFn = setex::<SECONDS>;
/// `PSETEX key milliseconds value`
pub(crate) const PSETEX: KeyspaceFn = setex::<MILLISECONDS>;

/// `SETNX key value`
pub(crate) fn setnx(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if ks.exists(&a[1]) {
        Ok(Reply::Int(0))
    } else {
        ks.set(&a[1], Value::Str(a[2].clone()), None);
        Ok(Reply::Int(1))
    }
}

/// `GETSET key value`
pub(crate) fn getset(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let old = string(ks, &a[1])?.map_or(Reply::Nil, |s| Reply::Bulk(s.clone()));
    ks.set(&a[1], Value::Str(a[2].clone()), None);
    Ok(old)
}

/// `DEL key...` and `UNLINK key...` (the same here: nothing is freed lazily).
pub(crate) fn del(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(
        a[1..].iter().filter(|k| ks.remove(k)).count() as i64
    ))
}

/// A value condition of Redis 8.4's `SET` and `DELEX` (and Valkey 8.1's
/// `SET ... IFEQ`): the key's current value must equal, or must differ
/// from, the given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueIs {
    /// `IFEQ`: equal to the given value (an absent key is not).
    Equal,
    /// `IFNE`: different from the given value (an absent key is).
    NotEqual,
}

impl ValueIs {
    /// Whether `current` (`None`: no key) meets the condition.
    fn holds(self, current: Option<&Vec<u8>>, expected: &[u8]) -> bool {
        let equal = current.is_some_and(|v| v.as_slice() == expected);
        match self {
            ValueIs::Equal => equal,
            ValueIs::NotEqual => !equal,
        }
    }
}

impl ValueIs {
    /// The `SET` option that asks for this condition.
    fn feature(self) -> Feature {
        match self {
            ValueIs::Equal => Feature::SetIfeq,
            ValueIs::NotEqual => Feature::SetIfne,
        }
    }
}

/// The condition an option names: `IFEQ` or `IFNE`, case-insensitively.
fn value_condition(opt: &[u8]) -> Option<ValueIs> {
    if is_option(opt, "ifeq") {
        Some(ValueIs::Equal)
    } else if is_option(opt, "ifne") {
        Some(ValueIs::NotEqual)
    } else {
        None
    }
}

/// `DELEX key [IFEQ value | IFNE value]`, as Redis 8.4 documents it: 1 when
/// the key was deleted, 0 when it is absent or the condition fails. Without
/// a condition it deletes a key of any type; with one, a key that is not a
/// string is WRONGTYPE. The digest conditions (`IFDEQ`, `IFDNE`) are not
/// simulated: they answer a syntax error, as any other option does.
pub(crate) fn delex(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    let condition = match a.len() {
        2 => None,
        4 => Some((value_condition(&a[2]).ok_or_else(syntax_error)?, &a[3])),
        _ => return Err(syntax_error()),
    };
    let Some((is, expected)) = condition else {
        return Ok(Reply::Int(i64::from(ks.remove(key))));
    };
    let meets = is.holds(string(ks, key)?, expected);
    Ok(Reply::Int(i64::from(
        meets && ks.exists(key) && ks.remove(key),
    )))
}

/// `DELIFEQ key value`, as Valkey 9.0 documents it: deletes the key and
/// answers 1 when it holds exactly `value`; 0 when it is absent or holds
/// another value; WRONGTYPE when it is not a string.
pub(crate) fn delifeq(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let meets = ValueIs::Equal.holds(string(ks, &a[1])?, &a[2]);
    Ok(Reply::Int(i64::from(meets && ks.remove(&a[1]))))
}

/// `EXISTS key...` (a key named twice counts twice)
pub(crate) fn exists(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(
        a[1..].iter().filter(|k| ks.exists(k)).count() as i64
    ))
}

/// `TYPE key`
pub(crate) fn type_of(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Status(
        ks.get(&a[1]).map_or("none", |e| e.value.type_name()).into(),
    ))
}

/// `FLUSHALL [SYNC|ASYNC]` and `FLUSHDB [SYNC|ASYNC]` (one database here).
pub(crate) fn flush(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if a.len() > 2 || (a.len() == 2 && !is_option(&a[1], "sync") && !is_option(&a[1], "async")) {
        return Err(syntax_error());
    }
    ks.flush();
    Ok(Reply::ok())
}

/// `INCR key`
pub(crate) fn incr(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    incr_by(ks, &a[1], 1)
}

/// `DECR key`
pub(crate) fn decr(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    incr_by(ks, &a[1], -1)
}

/// `INCRBY key increment`
pub(crate) fn incrby(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let n = int_arg(&a[2])?;
    incr_by(ks, &a[1], n)
}

/// `DECRBY key decrement`
pub(crate) fn decrby(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let n = int_arg(&a[2])?;
    if n == i64::MIN {
        return Err(Reply::err("ERR decrement would overflow"));
    }
    incr_by(ks, &a[1], -n)
}

/// Adds `incr` to the integer at `key` (0 if absent), keeping its deadline.
fn incr_by(ks: &mut Keyspace, key: &[u8], incr: i64) -> R {
    let (old, deadline) = match ks.get(key) {
        None => (0, None),
        Some(e) => match &e.value {
            Value::Str(s) => (string2ll(s).ok_or_else(not_integer)?, e.deadline),
            _ => return Err(wrongtype()),
        },
    };
    let new = old
        .checked_add(incr)
        .ok_or_else(|| Reply::err("ERR increment or decrement would overflow"))?;
    ks.set(key, Value::Str(int_bytes(new)), deadline);
    Ok(Reply::Int(new))
}

/// `EXPIRE key seconds`, `PEXPIRE key ms`, `EXPIREAT key unix-seconds`
/// and `PEXPIREAT key unix-ms`, each `[NX|XX|GT|LT]`: the deadline in
/// `UNIT_MS` ([`SECONDS`] or [`MILLISECONDS`]), [`FROM_NOW`] or as a
/// [`UNIX_TIME`].
fn expire<const UNIT_MS: i64, const RELATIVE: bool>(
    ks: &mut Keyspace,
    a: &[Vec<u8>],
    _: &NodeHandle,
) -> R {
    let name = match (UNIT_MS == SECONDS, RELATIVE) {
        (true, FROM_NOW) => "expire",
        (false, FROM_NOW) => "pexpire",
        (true, UNIX_TIME) => "expireat",
        (false, UNIX_TIME) => "pexpireat",
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &a[3..] {
        if is_option(opt, "nx") {
            nx = true;
        } else if is_option(opt, "xx") {
            xx = true;
        } else if is_option(opt, "gt") {
            gt = true;
        } else if is_option(opt, "lt") {
            lt = true;
        } else {
            return Err(Reply::err(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::err(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::err(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Reply::err(format!("ERR invalid expire time in '{name}' command"));
    let mut when = int_arg(&a[2])?;
    if !(i64::MIN / UNIT_MS..=i64::MAX / UNIT_MS).contains(&when) {
        return Err(invalid());
    }
    when *= UNIT_MS;
    let base = if RELATIVE { ks.now_ms } else { 0 };
    if when > i64::MAX - base {
        return Err(invalid());
    }
    when += base;
    let cur = match ks.get(&a[1]) {
        None => return Ok(Reply::Int(0)),
        Some(e) => e.deadline,
    };
    if (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && cur.is_none_or(|c| when <= c))
        || (lt && cur.is_some_and(|c| when >= c))
    {
        return Ok(Reply::Int(0));
    }
    // A deadline already past deletes the key, except on a replica, which
    // waits for its master's deletion.
    if when <= ks.now_ms && !ks.hide_only {
        ks.remove(&a[1]);
    } else {
        ks.set_deadline(&a[1], Some(when));
    }
    Ok(Reply::Int(1))
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`
pub(crate) const EXPIRE: KeyspaceFn = expire::<SECONDS, FROM_NOW>;
/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`
pub(crate) const PEXPIRE: KeyspaceFn = expire::<MILLISECONDS, FROM_NOW>;
/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`
pub(crate) const EXPIREAT: KeyspaceFn = expire::<SECONDS, UNIX_TIME>;
/// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`
pub(crate) const PEXPIREAT: KeyspaceFn = expire::<MILLISECONDS, UNIX_TIME>;

/// `TTL key`, `PTTL key`, `EXPIRETIME key` and `PEXPIRETIME key`: the
/// deadline in `UNIT_MS` (rounded), [`FROM_NOW`] or as a [`UNIX_TIME`]; -2
/// if the key is absent, -1 if it has no deadline.
fn ttl<const UNIT_MS: i64, const RELATIVE: bool>(
    ks: &mut Keyspace,
    a: &[Vec<u8>],
    _: &NodeHandle,
) -> R {
    let now = ks.now_ms;
    Ok(Reply::Int(match ks.get(&a[1]) {
        None => -2,
        Some(Entry { deadline: None, .. }) => -1,
        Some(Entry {
            deadline: Some(d), ..
        }) => {
            let remaining = (d - now).max(0);
            let ms = if RELATIVE { remaining } else { *d };
            (ms + UNIT_MS / 2) / UNIT_MS
        }
    }))
}

/// `TTL key`: seconds left.
pub(crate) const TTL: KeyspaceFn = ttl::<SECONDS, FROM_NOW>;
/// `PTTL key`: milliseconds left.
pub(crate) const PTTL: KeyspaceFn = ttl::<MILLISECONDS, FROM_NOW>;
/// `EXPIRETIME key`: the deadline in Unix seconds.
pub(crate) const EXPIRETIME: KeyspaceFn = ttl::<SECONDS, UNIX_TIME>;
/// `PEXPIRETIME key`: the deadline in Unix milliseconds.
pub(crate) const PEXPIRETIME: KeyspaceFn = ttl::<MILLISECONDS, UNIX_TIME>;

/// `PERSIST key`
pub(crate) fn persist(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let has = matches!(
        ks.get(&a[1]),
        Some(Entry {
            deadline: Some(_),
            ..
        })
    );
    if has {
        ks.set_deadline(&a[1], None);
    }
    Ok(Reply::Int(i64::from(has)))
}

/// `HSET key field value [field value ...]`: the number of new fields.
pub(crate) fn hset(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let added = set_fields(ks, a, "hset")?;
    Ok(Reply::Int(added))
}

/// `HMSET key field value [field value ...]`: OK.
pub(crate) fn hmset(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    set_fields(ks, a, "hmset")?;
    Ok(Reply::ok())
}

/// HSET and HMSET: stores the field/value pairs; returns how many fields
/// are new.
fn set_fields(ks: &mut Keyspace, a: &[Vec<u8>], name: &str) -> Result<i64, Reply> {
    if a.len() % 2 == 1 {
        return Err(arity_error(name));
    }
    let key = &a[1];
    let insert_all = |h: &mut HashFields| {
        a[2..]
            .chunks(2)
            .filter(|fv| h.insert(fv[0].clone(), fv[1].clone()).is_none())
            .count() as i64
    };
    match ks.get_mut(key) {
        Some(e) => match &mut e.value {
            Value::Hash(h) => {
                let added = insert_all(h);
                ks.mark_written(key);
                Ok(added)
            }
            _ => Err(wrongtype()),
        },
        None => {
            let mut h = HashFields::new();
            let added = insert_all(&mut h);
            ks.set(key, Value::Hash(h), None);
            Ok(added)
        }
    }
}

/// `HGET key field`
pub(crate) fn hget(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(match hash(ks, &a[1])? {
        None => Reply::Nil,
        Some(h) => h.get(&a[2]).map_or(Reply::Nil, |v| Reply::Bulk(v.clone())),
    })
}

/// `HMGET key field...`
pub(crate) fn hmget(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let h = hash(ks, &a[1])?;
    Ok(Reply::Array(
        a[2..]
            .iter()
            .map(|f| {
                h.and_then(|h| h.get(f))
                    .map_or(Reply::Nil, |v| Reply::Bulk(v.clone()))
            })
            .collect(),
    ))
}

/// `HEXISTS key field`
pub(crate) fn hexists(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(match hash(ks, &a[1])? {
        Some(h) if h.contains_key(&a[2]) => 1,
        _ => 0,
    }))
}

/// `HLEN key`
pub(crate) fn hlen(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    Ok(Reply::Int(hash(ks, &a[1])?.map_or(0, |h| h.len() as i64)))
}

/// `HGETALL key`: fields and values, interleaved, in field order.
pub(crate) fn hgetall(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    list_hash(ks, &a[1], |f, v| vec![f, v])
}

/// `HKEYS key`
pub(crate) fn hkeys(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    list_hash(ks, &a[1], |f, _| vec![f])
}

/// `HVALS key`
pub(crate) fn hvals(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    list_hash(ks, &a[1], |_, v| vec![v])
}

/// Lists a hash in field order, `pick` choosing what each field shows.
fn list_hash(ks: &mut Keyspace, key: &[u8], pick: fn(Reply, Reply) -> Vec<Reply>) -> R {
    let h = hash(ks, key)?;
    Ok(Reply::Array(
        h.into_iter()
            .flatten()
            .flat_map(|(f, v)| pick(Reply::Bulk(f.clone()), Reply::Bulk(v.clone())))
            .collect(),
    ))
}

/// `HDEL key field...`: deleting the last field deletes the key.
pub(crate) fn hdel(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let key = &a[1];
    let (removed, empty) = match ks.get_mut(key) {
        None => return Ok(Reply::Int(0)),
        Some(e) => match &mut e.value {
            Value::Hash(h) => {
                // The fields after it move up, as in a listpack.
                let n = a[2..]
                    .iter()
                    .filter(|f| h.shift_remove(*f).is_some())
                    .count();
                (n, h.is_empty())
            }
            _ => return Err(wrongtype()),
        },
    };
    if empty {
        ks.remove(key);
    } else if removed > 0 {
        ks.mark_written(key);
    }
    Ok(Reply::Int(removed as i64))
}

/// `HINCRBY key field increment`
pub(crate) fn hincrby(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let incr = int_arg(&a[3])?;
    let key = &a[1];
    let field = &a[2];
    let new = match ks.get_mut(key) {
        Some(e) => match &mut e.value {
            Value::Hash(h) => {
                let cur = match h.get(field) {
                    Some(v) => string2ll(v)
                        .ok_or_else(|| Reply::err("ERR hash value is not an integer"))?,
                    None => 0,
                };
                let new = cur
                    .checked_add(incr)
                    .ok_or_else(|| Reply::err("ERR increment or decrement would overflow"))?;
                h.insert(field.clone(), int_bytes(new));
                new
            }
            _ => return Err(wrongtype()),
        },
        None => {
            let mut h = HashFields::new();
            h.insert(field.clone(), int_bytes(incr));
            ks.set(key, Value::Hash(h), None);
            return Ok(Reply::Int(incr));
        }
    };
    ks.mark_written(key);
    Ok(Reply::Int(new))
}
