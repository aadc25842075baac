//! `CONFIG GET | SET | RESETSTAT | REWRITE`, over a table of the
//! parameters the node knows, as Redis 7.0.15's `config.c` answers them.
//!
//! Each parameter has its name, Redis 7.0.15's default, the kind of value
//! it takes (and so its validation and error texts), and whether it can be
//! changed. An alias (`hash-max-ziplist-entries` for
//! `hash-max-listpack-entries`) is an entry of its own that shares its
//! parameter's value, as in Redis 7.0: `CONFIG GET` lists both names, and
//! `CONFIG SET` of a name and its alias together is no duplicate.
//!
//! The node stores every value; it honours only `busy-reply-threshold`
//! (`lua-time-limit`), the real-TCP server's busy threshold, and
//! `notify-keyspace-events` (keyspace notifications). The others
//! are stored only: the README lists them.

use std::collections::BTreeMap;

use super::Arity::{AtLeast, Exactly};
use super::errors::syntax_error;
use super::{Out, Subcommand, is_option};
use crate::client::Client;
use crate::node::Node;
use crate::resp::{Reply, string2ll};

/// What a parameter takes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer within a range.
    Int(i64, i64),
    /// A memory size (`1mb`, `512k`, bytes) within a range; read back in
    /// bytes.
    Memory(i64, i64),
    /// One of these words.
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// `notify-keyspace-events`' class letters.
    KeyspaceEvents,
    /// `save`'s pairs of seconds and changes.
    SavePoints,
}

/// One parameter of the table.
#[derive(Debug, Clone, Copy)]
struct Param {
    /// Its name (its canonical name for an alias).
    name: &'static str,
    /// Its old name, if it has one.
    alias: Option<&'static str>,
    /// Redis 7.0.15's default, as `CONFIG GET` prints it.
    default: &'static str,
    /// What it takes.
    kind: Kind,
    /// Set at start-up only (`can't set immutable config`).
    immutable: bool,
    /// Only an exact `CONFIG GET` finds it (Redis's `HIDDEN_CONFIG`).
    hidden: bool,
}

const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// A modifiable parameter.
const fn param(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param {
        name,
        alias: None,
        default,
        kind,
        immutable: false,
        hidden: false,
    }
}

/// A modifiable parameter with an old name.
const fn aliased(
    name: &'static str,
    alias: &'static str,
    default: &'static str,
    kind: Kind,
) -> Param {
    Param {
        alias: Some(alias),
        ..param(name, default, kind)
    }
}

/// A parameter set at start-up only.
const fn immutable(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param {
        immutable: true,
        ..param(name, default, kind)
    }
}

/// The parameters the node knows, with Redis 7.0.15's defaults (those of
/// a server started without a configuration file and `--save ''`).
const PARAMS: &[Param] = &[
    param(
        "appendfsync",
        "everysec",
        Kind::Enum(&["always", "everysec", "no"]),
    ),
    param("appendonly", "no", Kind::Bool),
    immutable("appenddirname", "appendonlydir", Kind::Str),
    immutable("appendfilename", "appendonly.aof", Kind::Str),
    aliased(
        "busy-reply-threshold",
        "lua-time-limit",
        "5000",
        Kind::Int(0, LONG_MAX),
    ),
    param(
        "client-query-buffer-limit",
        "1073741824",
        Kind::Memory(1 << 20, LONG_MAX),
    ),
    immutable("databases", "16", Kind::Int(1, INT_MAX)),
    param("dir", "/", Kind::Str),
    aliased(
        "hash-max-listpack-entries",
        "hash-max-ziplist-entries",
        "512",
        Kind::Int(0, LONG_MAX),
    ),
    aliased(
        "hash-max-listpack-value",
        "hash-max-ziplist-value",
        "64",
        Kind::Memory(0, LONG_MAX),
    ),
    param("hz", "10", Kind::Int(0, INT_MAX)),
    param("latency-tracking", "yes", Kind::Bool),
    param("lazyfree-lazy-user-flush", "no", Kind::Bool),
    param("list-compress-depth", "0", Kind::Int(0, INT_MAX)),
    aliased(
        "list-max-listpack-size",
        "list-max-ziplist-size",
        "-2",
        Kind::Int(i32::MIN as i64, INT_MAX),
    ),
    param(
        "loglevel",
        "notice",
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
    ),
    param("maxclients", "10000", Kind::Int(1, u32::MAX as i64)),
    param("maxmemory", "0", Kind::Memory(0, LONG_MAX)),
    param(
        "maxmemory-policy",
        "noeviction",
        Kind::Enum(MAXMEMORY_POLICIES),
    ),
    aliased(
        "min-replicas-max-lag",
        "min-slaves-max-lag",
        "10",
        Kind::Int(0, INT_MAX),
    ),
    aliased(
        "min-replicas-to-write",
        "min-slaves-to-write",
        "0",
        Kind::Int(0, INT_MAX),
    ),
    param("notify-keyspace-events", "", Kind::KeyspaceEvents),
    param(
        "proto-max-bulk-len",
        "536870912",
        Kind::Memory(1 << 20, LONG_MAX),
    ),
    Param {
        hidden: true,
        ..param(
            "rdb-key-save-delay",
            "0",
            Kind::Int(i32::MIN as i64, INT_MAX),
        )
    },
    aliased(
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        "10",
        Kind::Int(1, INT_MAX),
    ),
    aliased("replica-read-only", "slave-read-only", "yes", Kind::Bool),
    aliased(
        "replica-serve-stale-data",
        "slave-serve-stale-data",
        "yes",
        Kind::Bool,
    ),
    param(
        "sanitize-dump-payload",
        "no",
        Kind::Enum(&["no", "yes", "clients"]),
    ),
    param("save", "", Kind::SavePoints),
    param("set-max-intset-entries", "512", Kind::Int(0, LONG_MAX)),
    param("stream-node-max-bytes", "4096", Kind::Memory(0, LONG_MAX)),
    param("stream-node-max-entries", "100", Kind::Int(0, LONG_MAX)),
    param("timeout", "0", Kind::Int(0, INT_MAX)),
    aliased(
        "zset-max-listpack-entries",
        "zset-max-ziplist-entries",
        "128",
        Kind::Int(0, LONG_MAX),
    ),
    aliased(
        "zset-max-listpack-value",
        "zset-max-ziplist-value",
        "64",
        Kind::Memory(0, LONG_MAX),
    ),
];

/// The node's current parameter values, by canonical name.
#[derive(Debug)]
pub(crate) struct Config {
    values: BTreeMap<&'static str, String>,
}

impl Config {
    /// Redis's defaults, but the busy threshold the node was started with.
    pub(crate) fn new(node: &crate::NodeConfig) -> Config {
        let mut values: BTreeMap<&'static str, String> = PARAMS
            .iter()
            .map(|p| (p.name, p.default.to_string()))
            .collect();
        values.insert(
            "busy-reply-threshold",
            node.busy_reply_threshold.as_millis().to_string(),
        );
        Config { values }
    }
}

impl Config {
    /// `maxmemory` in bytes (0: no limit).
    pub(crate) fn maxmemory_bytes(&self) -> usize {
        self.values
            .get("maxmemory")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// An integer parameter's value (0 if unset).
    pub(crate) fn int(&self, name: &str) -> i64 {
        self.values
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// A parameter's current value, as `CONFIG GET` prints it.
    pub(crate) fn value(&self, name: &str) -> &str {
        self.values.get(name).map_or("", String::as_str)
    }
}

/// A name `CONFIG` accepts: a parameter's name or its alias.
#[derive(Debug, Clone, Copy)]
struct Name {
    /// The name as the table spells it.
    spelled: &'static str,
    /// Its parameter.
    param: &'static Param,
}

/// Every name, canonical names and aliases, in the table's order.
fn names() -> impl Iterator<Item = Name> {
    PARAMS.iter().flat_map(|p| {
        std::iter::once(Name {
            spelled: p.name,
            param: p,
        })
        .chain(p.alias.map(|a| Name {
            spelled: a,
            param: p,
        }))
    })
}

/// The name `arg` spells, case-insensitively.
fn lookup(arg: &[u8]) -> Option<Name> {
    names().find(|n| is_option(arg, n.spelled))
}

/// `CONFIG`'s subcommands (the command table checks their arities).
pub(crate) const CONFIG: &[Subcommand] = &[
    Subcommand {
        name: "config|get",
        arity: AtLeast(3),
    },
    Subcommand {
        name: "config|resetstat",
        arity: Exactly(2),
    },
    Subcommand {
        name: "config|rewrite",
        arity: Exactly(2),
    },
    Subcommand {
        name: "config|set",
        arity: AtLeast(4),
    },
];

/// `CONFIG GET pattern... | SET name value... | RESETSTAT | REWRITE`
pub(crate) fn config(node: &Node, _: &mut Client, a: &[Vec<u8>]) -> Out {
    let sub = &a[1];
    let reply = if is_option(sub, "get") {
        get(node, &a[2..])
    } else if is_option(sub, "set") {
        set(node, &a[2..]).unwrap_or_else(|e| e)
    } else if is_option(sub, "resetstat") {
        // The counters of commands and errors start again from zero.
        node.state.borrow_mut().stats = Default::default();
        Reply::ok()
    } else {
        // `rewrite`: like a Redis started without a configuration file.
        Reply::err("ERR The server is running without a config file")
    };
    Out::Reply(reply)
}

/// `CONFIG GET pattern...`: each matching name once, with its value. A
/// pattern without glob characters names one parameter exactly (a hidden
/// one too) and is answered as it was spelled; a glob matches every name
/// but hidden ones, case-insensitively. (Redis lists them in its hash
/// table's order, which changes from run to run; the node uses the
/// table's.)
fn get(node: &Node, patterns: &[Vec<u8>]) -> Reply {
    let mut found: Vec<(Vec<u8>, &'static Param)> = Vec::new();
    let seen = |found: &Vec<(Vec<u8>, &Param)>, name: &[u8]| {
        found.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    for pattern in patterns {
        if !pattern.iter().any(|c| matches!(c, b'[' | b'*' | b'?')) {
            if let Some(n) = lookup(pattern)
                && !seen(&found, pattern)
            {
                found.push((pattern.clone(), n.param));
            }
            continue;
        }
        for n in names().filter(|n| !n.param.hidden) {
            if !seen(&found, n.spelled.as_bytes())
                && crate::glob::matches_nocase(pattern, n.spelled.as_bytes())
            {
                found.push((n.spelled.as_bytes().to_vec(), n.param));
            }
        }
    }
    let config = &node.state.borrow().config;
    Reply::Array(
        found
            .into_iter()
            .flat_map(|(name, p)| {
                let value = config.values.get(p.name).cloned().unwrap_or_default();
                [Reply::Bulk(name), Reply::Bulk(value.into_bytes())]
            })
            .collect(),
    )
}

/// `CONFIG SET name value [name value ...]`: all or nothing. The names
/// are checked first, in order (unknown, immutable, given twice: the first
/// problem is answered), then each value, in order.
fn set(node: &Node, args: &[Vec<u8>]) -> Result<Reply, Reply> {
    if !args.len().is_multiple_of(2) {
        return Err(syntax_error());
    }
    let mut named: Vec<(Name, &Vec<u8>)> = Vec::new();
    for pair in args.chunks(2) {
        let (arg, value) = (&pair[0], &pair[1]);
        let Some(n) = lookup(arg) else {
            return Err(Reply::err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                String::from_utf8_lossy(arg)
            )));
        };
        if n.param.immutable {
            return Err(set_failed(arg, "can't set immutable config"));
        }
        // A name and its alias are different entries, as in Redis 7.0.
        if named.iter().any(|(m, _)| m.spelled == n.spelled) {
            return Err(set_failed(arg, "duplicate parameter"));
        }
        named.push((n, value));
    }
    let mut values = Vec::with_capacity(named.len());
    for (n, v) in &named {
        let value = validate(n.param.kind, v).map_err(|e| set_failed(n.spelled.as_bytes(), &e))?;
        values.push((n.param.name, value));
    }
    for (name, value) in values {
        apply(node, name, &value);
        node.state.borrow_mut().config.values.insert(name, value);
    }
    Ok(Reply::ok())
}

/// Makes a new value take effect, for the parameters the node honours:
/// `busy-reply-threshold` (`lua-time-limit`), the real-TCP server's busy
/// threshold, and `notify-keyspace-events`.
fn apply(node: &Node, name: &str, value: &str) {
    if name == "notify-keyspace-events" {
        node.state.borrow_mut().notify_classes = crate::notifications::Classes::parse(value);
    }
    if name == "busy-reply-threshold"
        && let Ok(ms) = value.parse::<u64>()
    {
        node.lua.set_busy_threshold_ms(ms);
    }
}

/// `ERR CONFIG SET failed (possibly related to argument '...') - ...`
fn set_failed(name: &[u8], why: &str) -> Reply {
    Reply::err(format!(
        "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
        String::from_utf8_lossy(name)
    ))
}

/// Checks a value for a parameter of `kind`; returns it as `CONFIG GET`
/// will print it, or the reason Redis gives.
fn validate(kind: Kind, v: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(v);
    match kind {
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(min, max) => {
            let n = string2ll(v).ok_or("argument couldn't be parsed into an integer")?;
            in_range(n, min, max)
        }
        Kind::Memory(min, max) => {
            let n = memory_value(v).ok_or("argument must be a memory value")?;
            in_range(n, min, max)
        }
        Kind::Enum(words) => words
            .iter()
            .find(|w| is_option(v, w))
            .map(|w| w.to_string())
            .ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                )
            }),
        Kind::Str => Ok(text.into_owned()),
        Kind::KeyspaceEvents => keyspace_events(v),
        Kind::SavePoints => save_points(&text),
    }
}

/// `argument must be between min and max inclusive` unless `n` is.
fn in_range(n: i64, min: i64, max: i64) -> Result<String, String> {
    if (min..=max).contains(&n) {
        Ok(n.to_string())
    } else {
        Err(format!(
            "argument must be between {min} and {max} inclusive"
        ))
    }
}

/// A memory size as Redis's `memtoull` reads it: digits, then an optional
/// unit (`b`, `k`, `kb`, `m`, `mb`, `g`, `gb`; `k` is 1000, `kb` 1024).
fn memory_value(v: &[u8]) -> Option<i64> {
    let digits = v.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = String::from_utf8_lossy(&v[digits..]).to_ascii_lowercase();
    let factor: i64 = match unit.as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n: i64 = std::str::from_utf8(&v[..digits]).ok()?.parse().ok()?;
    n.checked_mul(factor)
}

/// `notify-keyspace-events`: class letters, printed back as Redis's
/// `keyspaceEventsFlagsToString` does (`A` for every class).
fn keyspace_events(v: &[u8]) -> Result<String, String> {
    const CLASSES: &str = "g$lshzxetd";
    let mut set: Vec<char> = Vec::new();
    for &c in v {
        let c = c as char;
        match c {
            'A' => set.extend(CLASSES.chars()),
            'K' | 'E' | 'm' | 'n' => set.push(c),
            _ if CLASSES.contains(c) => set.push(c),
            _ => {
                return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string());
            }
        }
    }
    let has = |c: char| set.contains(&c);
    let mut out = String::new();
    if CLASSES.chars().all(has) {
        out.push('A');
    } else {
        out.extend(CLASSES.chars().filter(|c| has(*c)));
    }
    if has('n') && !out.starts_with('A') {
        out.push('n');
    }
    out.extend(['K', 'E', 'm'].into_iter().filter(|c| has(*c)));
    Ok(out)
}

/// `save`: pairs of seconds and changes, or empty.
fn save_points(text: &str) -> Result<String, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !words.len().is_multiple_of(2)
        || words
            .iter()
            .any(|w| string2ll(w.as_bytes()).is_none_or(|n| n < 0))
    {
        return Err("Invalid save parameters".to_string());
    }
    Ok(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_knows_each_name_once() {
        let mut all: Vec<&str> = names().map(|n| n.spelled).collect();
        all.sort_unstable();
        let before = all.len();
        all.dedup();
        assert_eq!(before, all.len());
    }

    #[test]
    fn memory_values_and_events_print_as_redis_prints_them() {
        assert_eq!(memory_value(b"1mb"), Some(1 << 20));
        assert_eq!(memory_value(b"2k"), Some(2000));
        assert_eq!(memory_value(b"1x"), None);
        assert_eq!(keyspace_events(b"KEA").unwrap(), "AKE");
        assert_eq!(keyspace_events(b"Kx").unwrap(), "xK");
        assert_eq!(keyspace_events(b"").unwrap(), "");
        assert!(keyspace_events(b"Kq").is_err());
    }
}
