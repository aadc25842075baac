//! The command table and the keyspace commands.
//!
//! Each command's arity and error texts follow Redis 7.0.15. Commands that
//! touch only the keyspace run here ([`exec_keyspace`]); those needing the
//! node (scripts, pub/sub, replication, client state) are handled in
//! [`crate::node`], after the same arity check ([`lookup`]).

use std::collections::BTreeMap;

use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// Where a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Reads the keyspace only.
    Read,
    /// Writes the keyspace (refused on a replica).
    Write,
    /// Needs the node (not allowed from scripts).
    Node,
    /// Needs the node but allowed from scripts.
    NodeScriptOk,
}

/// A command's static description.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Canonical lowercase name.
    pub name: &'static str,
    /// Redis arity: positive = exact, negative = at least |arity|.
    pub arity: i32,
    /// Where it may run.
    pub kind: Kind,
}

macro_rules! spec {
    ($n:literal, $a:expr, $k:ident) => {
        Spec {
            name: $n,
            arity: $a,
            kind: Kind::$k,
        }
    };
}

/// Every command this node knows, sorted by name.
pub const COMMANDS: &[Spec] = &[
    spec!("client", -2, Node),
    spec!("command", -1, Node),
    spec!("dbsize", 1, Read),
    spec!("decr", 2, Write),
    spec!("decrby", 3, Write),
    spec!("del", -2, Write),
    spec!("echo", 2, Read),
    spec!("eval", -3, Node),
    spec!("evalsha", -3, Node),
    spec!("exists", -2, Read),
    spec!("expire", -3, Write),
    spec!("expireat", -3, Write),
    spec!("expiretime", 2, Read),
    spec!("flushall", -1, Write),
    spec!("flushdb", -1, Write),
    spec!("get", 2, Read),
    spec!("getset", 3, Write),
    spec!("hdel", -3, Write),
    spec!("hexists", 3, Read),
    spec!("hget", 3, Read),
    spec!("hgetall", 2, Read),
    spec!("hincrby", 4, Write),
    spec!("hkeys", 2, Read),
    spec!("hlen", 2, Read),
    spec!("hmget", -3, Read),
    spec!("hmset", -4, Write),
    spec!("hset", -4, Write),
    spec!("hvals", 2, Read),
    spec!("incr", 2, Write),
    spec!("incrby", 3, Write),
    spec!("info", -1, NodeScriptOk),
    spec!("mget", -2, Read),
    spec!("persist", 2, Write),
    spec!("pexpire", -3, Write),
    spec!("pexpireat", -3, Write),
    spec!("pexpiretime", 2, Read),
    spec!("ping", -1, Read),
    spec!("psetex", 4, Write),
    spec!("psync", -3, Node),
    spec!("pttl", 2, Read),
    spec!("publish", 3, NodeScriptOk),
    spec!("quit", -1, Node),
    spec!("replicaof", 3, Node),
    spec!("role", 1, NodeScriptOk),
    spec!("script", -2, Node),
    spec!("select", 2, NodeScriptOk),
    spec!("set", -3, Write),
    spec!("setex", 4, Write),
    spec!("setnx", 3, Write),
    spec!("slaveof", 3, Node),
    spec!("strlen", 2, Read),
    spec!("subscribe", -2, Node),
    spec!("time", 1, Read),
    spec!("ttl", 2, Read),
    spec!("type", 2, Read),
    spec!("unlink", -2, Write),
    spec!("unsubscribe", -1, Node),
    spec!("wait", 3, Node),
];

/// Looks a command up by name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let mut buf = [0u8; 16];
    if name.len() > buf.len() {
        return None;
    }
    for (i, c) in name.iter().enumerate() {
        buf[i] = c.to_ascii_lowercase();
    }
    let lower = &buf[..name.len()];
    COMMANDS
        .binary_search_by(|s| s.name.as_bytes().cmp(lower))
        .ok()
        .map(|i| &COMMANDS[i])
}

/// Whether `argc` arguments (command name included) fit `arity`.
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = argc as i64;
    let a = i64::from(arity);
    if a > 0 { argc == a } else { argc >= -a }
}

/// `ERR wrong number of arguments for '<name>' command`
pub fn arity_error(name: &str) -> Reply {
    Reply::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// The unknown-command error, formatted as Redis 7.0 formats it.
pub fn unknown_command(args: &[Vec<u8>]) -> Reply {
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
pub fn unknown_subcommand(args: &[Vec<u8>]) -> Reply {
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    Reply::err(format!("ERR unknown subcommand '{sub}'. Try {cmd} HELP."))
}

/// `WRONGTYPE ...`
pub fn wrongtype() -> Reply {
    Reply::err("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// `ERR value is not an integer or out of range`
pub fn not_integer() -> Reply {
    Reply::err("ERR value is not an integer or out of range")
}

/// `ERR syntax error`
pub fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

/// Parses an integer argument as Redis's `getLongLongFromObjectOrReply`.
pub fn int_arg(a: &[u8]) -> Result<i64, Reply> {
    string2ll(a).ok_or_else(not_integer)
}

fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn int_bytes(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// Runs a keyspace command. `args[0]` is the command name (already looked
/// up as `spec`, arity already checked). `now_us` is the node clock in
/// microseconds (for TIME).
pub fn exec_keyspace(ks: &mut Keyspace, spec: &Spec, args: &[Vec<u8>], now_us: i64) -> Reply {
    match run(ks, spec, args, now_us) {
        Ok(r) | Err(r) => r,
    }
}

type R = Result<Reply, Reply>;

fn run(ks: &mut Keyspace, spec: &Spec, args: &[Vec<u8>], now_us: i64) -> R {
    let a = args;
    match spec.name {
        "ping" => match a.len() {
            1 => Ok(Reply::Status("PONG".into())),
            2 => Ok(Reply::Bulk(a[1].clone())),
            _ => Err(arity_error("ping")),
        },
        "echo" => Ok(Reply::Bulk(a[1].clone())),
        "time" => Ok(Reply::Array(vec![
            Reply::Bulk(int_bytes(now_us.div_euclid(1_000_000))),
            Reply::Bulk(int_bytes(now_us.rem_euclid(1_000_000))),
        ])),
        "dbsize" => Ok(Reply::Int(ks.len() as i64)),
        "flushall" | "flushdb" => {
            if a.len() > 2 || (a.len() == 2 && !eq_ic(&a[1], "sync") && !eq_ic(&a[1], "async")) {
                return Err(syntax_error());
            }
            ks.flush();
            Ok(Reply::ok())
        }
        "get" => match ks.get(&a[1]) {
            None => Ok(Reply::Nil),
            Some(e) => match &e.value {
                Value::Str(s) => Ok(Reply::Bulk(s.clone())),
                _ => Err(wrongtype()),
            },
        },
        "strlen" => match ks.get(&a[1]) {
            None => Ok(Reply::Int(0)),
            Some(e) => match &e.value {
                Value::Str(s) => Ok(Reply::Int(s.len() as i64)),
                _ => Err(wrongtype()),
            },
        },
        "mget" => Ok(Reply::Array(
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
        )),
        "set" => set(ks, a),
        "setex" | "psetex" => {
            let n = int_arg(&a[2])?;
            let secs = spec.name == "setex";
            if n <= 0 || (secs && n > i64::MAX / 1000) {
                return Err(Reply::err(format!(
                    "ERR invalid expire time in '{}' command",
                    spec.name
                )));
            }
            let ms = if secs { n * 1000 } else { n };
            let when = ms
                .checked_add(ks.now_ms)
                .filter(|w| *w > 0)
                .ok_or_else(|| {
                    Reply::err(format!(
                        "ERR invalid expire time in '{}' command",
                        spec.name
                    ))
                })?;
            ks.set(&a[1], Value::Str(a[3].clone()), Some(when));
            Ok(Reply::ok())
        }
        "setnx" => {
            if ks.exists(&a[1]) {
                Ok(Reply::Int(0))
            } else {
                ks.set(&a[1], Value::Str(a[2].clone()), None);
                Ok(Reply::Int(1))
            }
        }
        "getset" => {
            let old = match ks.get(&a[1]) {
                None => Reply::Nil,
                Some(e) => match &e.value {
                    Value::Str(s) => Reply::Bulk(s.clone()),
                    _ => return Err(wrongtype()),
                },
            };
            ks.set(&a[1], Value::Str(a[2].clone()), None);
            Ok(old)
        }
        "del" | "unlink" => Ok(Reply::Int(
            a[1..].iter().filter(|k| ks.remove(k)).count() as i64
        )),
        "exists" => Ok(Reply::Int(
            a[1..].iter().filter(|k| ks.exists(k)).count() as i64
        )),
        "type" => Ok(Reply::Status(
            ks.get(&a[1]).map_or("none", |e| e.value.type_name()).into(),
        )),
        "expire" | "pexpire" | "expireat" | "pexpireat" => expire(ks, spec.name, a),
        "ttl" | "pttl" | "expiretime" | "pexpiretime" => {
            let now = ks.now_ms;
            Ok(Reply::Int(match ks.get(&a[1]) {
                None => -2,
                Some(Entry { deadline: None, .. }) => -1,
                Some(Entry {
                    deadline: Some(d), ..
                }) => {
                    let ttl = (d - now).max(0);
                    match spec.name {
                        "ttl" => (ttl + 500) / 1000,
                        "pttl" => ttl,
                        "expiretime" => (d + 500) / 1000,
                        _ => *d,
                    }
                }
            }))
        }
        "persist" => {
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
        "incr" => incr_by(ks, &a[1], 1),
        "decr" => incr_by(ks, &a[1], -1),
        "incrby" => {
            let n = int_arg(&a[2])?;
            incr_by(ks, &a[1], n)
        }
        "decrby" => {
            let n = int_arg(&a[2])?;
            if n == i64::MIN {
                return Err(Reply::err("ERR decrement would overflow"));
            }
            incr_by(ks, &a[1], -n)
        }
        "hset" | "hmset" => {
            if a.len() % 2 == 1 {
                return Err(arity_error(spec.name));
            }
            let key = &a[1];
            let mut added = 0;
            match ks.get_mut(key) {
                Some(e) => match &mut e.value {
                    Value::Hash(h) => {
                        for fv in a[2..].chunks(2) {
                            if h.insert(fv[0].clone(), fv[1].clone()).is_none() {
                                added += 1;
                            }
                        }
                    }
                    _ => return Err(wrongtype()),
                },
                None => {
                    let mut h = BTreeMap::new();
                    for fv in a[2..].chunks(2) {
                        if h.insert(fv[0].clone(), fv[1].clone()).is_none() {
                            added += 1;
                        }
                    }
                    ks.set(key, Value::Hash(h), None);
                    return Ok(if spec.name == "hset" {
                        Reply::Int(added)
                    } else {
                        Reply::ok()
                    });
                }
            }
            ks.mark_written(key);
            Ok(if spec.name == "hset" {
                Reply::Int(added)
            } else {
                Reply::ok()
            })
        }
        "hget" => Ok(match hash(ks, &a[1])? {
            None => Reply::Nil,
            Some(h) => h.get(&a[2]).map_or(Reply::Nil, |v| Reply::Bulk(v.clone())),
        }),
        "hmget" => {
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
        "hexists" => Ok(Reply::Int(match hash(ks, &a[1])? {
            Some(h) if h.contains_key(&a[2]) => 1,
            _ => 0,
        })),
        "hlen" => Ok(Reply::Int(hash(ks, &a[1])?.map_or(0, |h| h.len() as i64))),
        "hgetall" | "hkeys" | "hvals" => {
            let h = hash(ks, &a[1])?;
            let mut out = Vec::new();
            if let Some(h) = h {
                for (f, v) in h {
                    if spec.name != "hvals" {
                        out.push(Reply::Bulk(f.clone()));
                    }
                    if spec.name != "hkeys" {
                        out.push(Reply::Bulk(v.clone()));
                    }
                }
            }
            Ok(Reply::Array(out))
        }
        "hdel" => {
            let key = &a[1];
            let (removed, empty) = match ks.get_mut(key) {
                None => return Ok(Reply::Int(0)),
                Some(e) => match &mut e.value {
                    Value::Hash(h) => {
                        let n = a[2..].iter().filter(|f| h.remove(*f).is_some()).count();
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
        "hincrby" => {
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
                        let new = cur.checked_add(incr).ok_or_else(|| {
                            Reply::err("ERR increment or decrement would overflow")
                        })?;
                        h.insert(field.clone(), int_bytes(new));
                        new
                    }
                    _ => return Err(wrongtype()),
                },
                None => {
                    let mut h = BTreeMap::new();
                    h.insert(field.clone(), int_bytes(incr));
                    ks.set(key, Value::Hash(h), None);
                    return Ok(Reply::Int(incr));
                }
            };
            ks.mark_written(key);
            Ok(Reply::Int(new))
        }
        other => Err(Reply::err(format!(
            "ERR command '{other}' is not a keyspace command"
        ))),
    }
}

use crate::keyspace::Entry;

type HashFields = BTreeMap<Vec<u8>, Vec<u8>>;

fn hash<'a>(ks: &'a mut Keyspace, key: &[u8]) -> Result<Option<&'a HashFields>, Reply> {
    match ks.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(wrongtype()),
        },
    }
}

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

fn set(ks: &mut Keyspace, a: &[Vec<u8>]) -> R {
    #[derive(PartialEq, Clone, Copy)]
    enum Unit {
        Ex,
        Px,
        ExAt,
        PxAt,
    }
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(Unit, &[u8])> = None;
    let mut j = 3;
    while j < a.len() {
        let opt = &a[j];
        let has_next = j + 1 < a.len();
        let unit = expire.map(|(u, _)| u);
        if eq_ic(opt, "nx") && !xx {
            nx = true;
        } else if eq_ic(opt, "xx") && !nx {
            xx = true;
        } else if eq_ic(opt, "get") {
            get = true;
        } else if eq_ic(opt, "keepttl") && expire.is_none() {
            keepttl = true;
        } else if !keepttl && has_next && {
            let u = if eq_ic(opt, "ex") {
                Some(Unit::Ex)
            } else if eq_ic(opt, "px") {
                Some(Unit::Px)
            } else if eq_ic(opt, "exat") {
                Some(Unit::ExAt)
            } else if eq_ic(opt, "pxat") {
                Some(Unit::PxAt)
            } else {
                None
            };
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
    if (nx && found) || (xx && !found) {
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

fn expire(ks: &mut Keyspace, name: &str, a: &[Vec<u8>]) -> R {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &a[3..] {
        if eq_ic(opt, "nx") {
            nx = true;
        } else if eq_ic(opt, "xx") {
            xx = true;
        } else if eq_ic(opt, "gt") {
            gt = true;
        } else if eq_ic(opt, "lt") {
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
    let mut when = int_arg(&a[2])?;
    let invalid = || Reply::err(format!("ERR invalid expire time in '{name}' command"));
    if name == "expire" || name == "expireat" {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(invalid());
        }
        when *= 1000;
    }
    let base = if name == "expire" || name == "pexpire" {
        ks.now_ms
    } else {
        0
    };
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
    if when <= ks.now_ms && !ks.hide_only {
        ks.remove(&a[1]);
    } else {
        ks.set_deadline(&a[1], Some(when));
    }
    Ok(Reply::Int(1))
}

/// Parses a millisecond timeout as Redis's `getTimeoutFromObjectOrReply`.
pub fn string2ll_timeout(a: &[u8]) -> Result<i64, Reply> {
    let t =
        string2ll(a).ok_or_else(|| Reply::err("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(Reply::err("ERR timeout is negative"));
    }
    Ok(t)
}
