//! `COMMAND` and its subcommands: what the node says about the commands it
//! knows, as clients probe it (cluster clients read key positions and the
//! `readonly` flag, `redis-cli` reads `COMMAND DOCS`).
//!
//! The node answers for exactly the commands and subcommands in its table
//! that its version has, so `COMMAND COUNT` and `COMMAND LIST` are smaller
//! than redis-server's. For each, the facts (flags, key positions, ACL
//! categories, tips, key specifications, group, version) are Redis 7.0.15's,
//! kept in [`facts`](super::facts); the arity is the table's. Two things
//! are left out on purpose: the prose of Redis's docs (summaries,
//! complexity, argument lists, key-spec notes), so `COMMAND DOCS` gives a
//! command's group and version only, and a key spec carries no `notes`.
//!
//! `COMMAND GETKEYS` finds keys as Redis 7.0 does, from the key
//! specifications: each spec begins at an index or after a keyword, then
//! takes a range or a counted number of keys. `SET`'s flags depend on its
//! `GET` option, which is the one variable-flags command the node has.

use super::facts::FACTS;
use super::{Arity, COMMANDS, Command, Subcommand, is_option, lookup, unknown_subcommand};
use crate::node::Node;
use crate::resp::Reply;
use crate::version::{Feature, ServerVersion};

/// What Redis says about one command or subcommand, beyond its arity.
pub(crate) struct Facts {
    /// Full lowercase name (`get`, `client|id`).
    pub(crate) name: &'static str,
    /// Command flags (`write`, `readonly`, `fast`, `movablekeys`, ...).
    pub(crate) flags: &'static [&'static str],
    /// First key, last key and step between keys (Redis's legacy triple).
    pub(crate) keys: (i64, i64, i64),
    /// ACL categories (`@read`, `@string`, ...).
    pub(crate) acl: &'static [&'static str],
    /// Hints for clients (`nondeterministic_output`, ...).
    pub(crate) tips: &'static [&'static str],
    /// Where the keys are, for `COMMAND GETKEYS` and for clients.
    pub(crate) key_specs: &'static [KeySpec],
    /// The docs group (`string`, `connection`, ...).
    pub(crate) group: &'static str,
    /// The Redis version that introduced it.
    pub(crate) since: &'static str,
}

/// One key specification: its access flags and how to find its keys.
pub(crate) struct KeySpec {
    /// Access flags (`RW`, `RO`, `OW`, `RM`, `access`, `update`, ...).
    pub(crate) flags: &'static [&'static str],
    /// Where the search for keys begins.
    pub(crate) begin: Begin,
    /// How the keys are taken from there.
    pub(crate) find: Find,
}

/// Where a key specification's search begins.
pub(crate) enum Begin {
    /// At this argument index.
    Index(i64),
    /// Just after this keyword, searched from `start_from` (backwards from
    /// the end when negative).
    Keyword {
        keyword: &'static str,
        start_from: i64,
    },
    /// Not expressible; clients must ask `COMMAND GETKEYS`.
    Unknown,
}

/// How a key specification takes its keys once begun.
pub(crate) enum Find {
    /// A range: up to `last_key` (relative; negative counts from the end,
    /// or divides what is left by `limit`), every `key_step`-th argument.
    Range {
        last_key: i64,
        key_step: i64,
        limit: i64,
    },
    /// A count at `keynum_index`, then that many keys from `first_key`.
    Keynum {
        keynum_index: i64,
        first_key: i64,
        key_step: i64,
    },
    /// Not expressible.
    Unknown,
}

/// The key spec of a command that may delete its one key (`DELEX`,
/// `DELIFEQ`).
const DELETES_ITS_KEY: &[KeySpec] = &[KeySpec {
    flags: &["RM", "delete"],
    begin: Begin::Index(1),
    find: Find::Range {
        last_key: 0,
        key_step: 1,
        limit: 0,
    },
}];

/// Facts about the commands newer than Redis 7.0 that a node of a newer
/// version knows. Written by hand from those servers' docs; nothing here
/// is compared with a running server.
const NEWER: &[(Feature, Facts)] = &[
    (Feature::Delex, deleting_one_key("delex", "8.4.0")),
    (Feature::Delifeq, deleting_one_key("delifeq", "9.0.0")),
];

/// The facts of a fast string command that may delete its one key.
const fn deleting_one_key(name: &'static str, since: &'static str) -> Facts {
    Facts {
        name,
        flags: &["write", "fast"],
        keys: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        tips: &[],
        key_specs: DELETES_ITS_KEY,
        group: "string",
        since,
    }
}

/// `COMMAND`'s subcommands (the command table checks their arities).
pub(crate) const COMMAND: &[Subcommand] = &[
    sub("command|count", Arity::Exactly(2)),
    sub("command|docs", Arity::AtLeast(2)),
    sub("command|getkeys", Arity::AtLeast(4)),
    sub("command|getkeysandflags", Arity::AtLeast(4)),
    sub("command|help", Arity::Exactly(2)),
    sub("command|info", Arity::AtLeast(2)),
    sub("command|list", Arity::AtLeast(2)),
];

const fn sub(name: &'static str, arity: Arity) -> Subcommand {
    Subcommand { name, arity }
}

/// `COMMAND [subcommand ...]`.
pub(crate) fn command(node: &Node, a: &[Vec<u8>]) -> Reply {
    let version = node.handle.config().version;
    let Some(sub) = a.get(1) else {
        return Reply::Array(known(version).map(info).collect());
    };
    let answer = if is_option(sub, "count") {
        Ok(Reply::Int(known(version).count() as i64))
    } else if is_option(sub, "list") {
        list(version, &a[2..])
    } else if is_option(sub, "info") {
        Ok(info_of(version, &a[2..]))
    } else if is_option(sub, "docs") {
        Ok(docs_of(version, &a[2..]))
    } else if is_option(sub, "getkeys") {
        keys_of(version, &a[2..], false)
    } else if is_option(sub, "getkeysandflags") {
        keys_of(version, &a[2..], true)
    } else if is_option(sub, "help") {
        Ok(help())
    } else {
        Err(unknown_subcommand(a))
    };
    answer.unwrap_or_else(|e| e)
}

/// The commands a node of `version` knows, in table order.
fn known(version: ServerVersion) -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().filter(move |c| c.known_to(version))
}

/// The facts for a full name (`get`, `client|id`).
/// Whether Redis 7.0 flags the command (`name`, or `container|sub`) with
/// `flag` (`denyoom`, `write`...).
pub(crate) fn has_flag(name: &str, flag: &str) -> bool {
    facts(name).is_some_and(|f| f.flags.contains(&flag))
}

fn facts(name: &str) -> Option<&'static Facts> {
    FACTS
        .binary_search_by(|f| f.name.cmp(name))
        .ok()
        .map(|i| &FACTS[i])
        .or_else(|| NEWER.iter().map(|(_, f)| f).find(|f| f.name == name))
}

/// The docs group of a command (`string`, `list`, `generic`...), which
/// says its keyspace events' class.
pub(crate) fn group_of(name: &str) -> &'static str {
    facts(name).map_or("generic", |f| f.group)
}

/// Redis writes `Exactly(n)` as `n` and `AtLeast(n)` as `-n`.
fn arity_number(arity: Arity) -> i64 {
    match arity {
        Arity::Exactly(n) => n as i64,
        Arity::AtLeast(n) => -(n as i64),
    }
}

/// One `COMMAND INFO` entry: name, arity, flags, first/last/step, ACL
/// categories, tips, key specs, subcommands.
fn info(cmd: &Command) -> Reply {
    let subcommands = cmd
        .subcommands
        .iter()
        .map(|s| entry(s.name, s.arity, Vec::new()))
        .collect();
    entry(cmd.name, cmd.arity, subcommands)
}

fn entry(name: &str, arity: Arity, subcommands: Vec<Reply>) -> Reply {
    let facts = facts(name);
    let (first, last, step) = facts.map_or((0, 0, 0), |f| f.keys);
    Reply::Array(vec![
        Reply::Bulk(name.as_bytes().to_vec()),
        Reply::Int(arity_number(arity)),
        statuses(facts.map_or(&[][..], |f| f.flags)),
        Reply::Int(first),
        Reply::Int(last),
        Reply::Int(step),
        statuses(facts.map_or(&[][..], |f| f.acl)),
        // Tips are bulk strings where flags and categories are statuses.
        Reply::Set(
            facts
                .map_or(&[][..], |f| f.tips)
                .iter()
                .map(|t| bulk(t))
                .collect(),
        ),
        Reply::Set(
            facts
                .map_or(&[][..], |f| f.key_specs)
                .iter()
                .map(key_spec)
                .collect(),
        ),
        // Redis answers "no subcommands" as an empty set, and a container's
        // subcommands as an array.
        if subcommands.is_empty() {
            Reply::Set(subcommands)
        } else {
            Reply::Array(subcommands)
        },
    ])
}

/// A set of status strings (flags, categories, tips), as Redis replies it.
fn statuses(items: &[&str]) -> Reply {
    Reply::Set(items.iter().map(|s| Reply::Status(s.to_string())).collect())
}

fn bulk(text: &str) -> Reply {
    Reply::Bulk(text.as_bytes().to_vec())
}

fn map(pairs: Vec<(&str, Reply)>) -> Reply {
    Reply::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
}

fn key_spec(spec: &KeySpec) -> Reply {
    let begin = match &spec.begin {
        Begin::Index(i) => ("index", map(vec![("index", Reply::Int(*i))])),
        Begin::Keyword {
            keyword,
            start_from,
        } => (
            "keyword",
            map(vec![
                ("keyword", bulk(keyword)),
                ("startfrom", Reply::Int(*start_from)),
            ]),
        ),
        Begin::Unknown => ("unknown", map(vec![])),
    };
    let find = match &spec.find {
        Find::Range {
            last_key,
            key_step,
            limit,
        } => (
            "range",
            map(vec![
                ("lastkey", Reply::Int(*last_key)),
                ("keystep", Reply::Int(*key_step)),
                ("limit", Reply::Int(*limit)),
            ]),
        ),
        Find::Keynum {
            keynum_index,
            first_key,
            key_step,
        } => (
            "keynum",
            map(vec![
                ("keynumidx", Reply::Int(*keynum_index)),
                ("firstkey", Reply::Int(*first_key)),
                ("keystep", Reply::Int(*key_step)),
            ]),
        ),
        Find::Unknown => ("unknown", map(vec![])),
    };
    map(vec![
        ("flags", statuses(spec.flags)),
        (
            "begin_search",
            map(vec![("type", bulk(begin.0)), ("spec", begin.1)]),
        ),
        (
            "find_keys",
            map(vec![("type", bulk(find.0)), ("spec", find.1)]),
        ),
    ])
}

/// A command or subcommand the node knows, by full name (`get`,
/// `client|id`), with the arity its table gives.
fn by_full_name(
    version: ServerVersion,
    name: &[u8],
) -> Option<(&'static Command, Option<&'static Subcommand>)> {
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    let (top, sub) = match lower.split_once('|') {
        Some((top, sub)) => (top.to_string(), Some(sub.to_string())),
        None => (lower, None),
    };
    let cmd = lookup(top.as_bytes()).filter(|c| c.known_to(version))?;
    match sub {
        None => Some((cmd, None)),
        Some(sub) => cmd
            .subcommands
            .iter()
            .find(|s| s.name.split_once('|').is_some_and(|(_, n)| n == sub))
            .map(|s| (cmd, Some(s))),
    }
}

/// `COMMAND INFO [name ...]`: every command, or each named one (nil for a
/// name the node does not know).
fn info_of(version: ServerVersion, names: &[Vec<u8>]) -> Reply {
    if names.is_empty() {
        return Reply::Array(known(version).map(info).collect());
    }
    Reply::Array(
        names
            .iter()
            .map(|n| match by_full_name(version, n) {
                Some((cmd, None)) => info(cmd),
                Some((_, Some(s))) => entry(s.name, s.arity, vec![]),
                None => Reply::Nil,
            })
            .collect(),
    )
}

/// `COMMAND DOCS [name ...]`: a map from name to the command's version
/// and group (and its subcommands'); names the node does not know are
/// left out, as Redis leaves them out.
fn docs_of(version: ServerVersion, names: &[Vec<u8>]) -> Reply {
    let docs = |name: &'static str, subs: &'static [Subcommand]| {
        let facts = facts(name);
        let mut fields = Vec::new();
        if let Some(f) = facts.filter(|f| !f.since.is_empty()) {
            fields.push(("since", bulk(f.since)));
        }
        fields.push(("group", bulk(facts.map_or("generic", |f| f.group))));
        if !subs.is_empty() {
            let nested = subs
                .iter()
                .map(|s| (bulk(s.name), sub_docs(s.name)))
                .collect();
            fields.push(("subcommands", Reply::Map(nested)));
        }
        (bulk(name), map(fields))
    };
    let pairs = if names.is_empty() {
        known(version)
            .map(|c| docs(c.name, c.subcommands))
            .collect()
    } else {
        names
            .iter()
            .filter_map(|n| by_full_name(version, n))
            .map(|(cmd, sub)| match sub {
                None => docs(cmd.name, cmd.subcommands),
                Some(s) => (bulk(s.name), sub_docs(s.name)),
            })
            .collect()
    };
    Reply::Map(pairs)
}

fn sub_docs(name: &str) -> Reply {
    let facts = facts(name);
    let mut fields = Vec::new();
    if let Some(f) = facts.filter(|f| !f.since.is_empty()) {
        fields.push(("since", bulk(f.since)));
    }
    fields.push(("group", bulk(facts.map_or("generic", |f| f.group))));
    map(fields)
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]`.
fn list(version: ServerVersion, filter: &[Vec<u8>]) -> Result<Reply, Reply> {
    let names = known(version)
        .flat_map(|c| std::iter::once(c.name).chain(c.subcommands.iter().map(|s| s.name)));
    let keep: Box<dyn Fn(&str) -> bool> = match filter {
        [] => Box::new(|_| true),
        [by, kind, value] if is_option(by, "filterby") => {
            if is_option(kind, "module") {
                // The node loads no modules.
                Box::new(|_| false)
            } else if is_option(kind, "aclcat") {
                let category = format!("@{}", String::from_utf8_lossy(value).to_ascii_lowercase());
                Box::new(move |name| {
                    facts(name).is_some_and(|f| f.acl.iter().any(|c| *c == category))
                })
            } else if is_option(kind, "pattern") {
                let pattern = value.clone();
                Box::new(move |name| crate::glob::matches_nocase(&pattern, name.as_bytes()))
            } else {
                return Err(Reply::err("ERR syntax error"));
            }
        }
        _ => return Err(Reply::err("ERR syntax error")),
    };
    Ok(Reply::Array(names.filter(|n| keep(n)).map(bulk).collect()))
}

/// `COMMAND GETKEYS` / `GETKEYSANDFLAGS`: the keys of a full command line,
/// found from its key specifications.
fn keys_of(version: ServerVersion, line: &[Vec<u8>], with_flags: bool) -> Result<Reply, Reply> {
    // A container with an argument names a subcommand, as Redis's lookup
    // reads the line.
    let mut name = line[0].clone();
    if lookup(&line[0]).is_some_and(|c| !c.subcommands.is_empty()) && line.len() >= 2 {
        name.push(b'|');
        name.extend_from_slice(&line[1]);
    }
    let (cmd, sub) =
        by_full_name(version, &name).ok_or_else(|| Reply::err("ERR Invalid command specified"))?;
    let full_name = sub.map_or(cmd.name, |s| s.name);
    let arity = sub.map_or(cmd.arity, |s| s.arity);
    let facts = facts(full_name).filter(|f| !f.key_specs.is_empty());
    let Some(facts) = facts else {
        return Err(Reply::err("ERR The command has no key arguments"));
    };
    let fits = match arity {
        Arity::Exactly(n) => line.len() == n,
        Arity::AtLeast(n) => line.len() >= n,
    };
    if !fits {
        return Err(Reply::err(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys = find_keys(facts, line);
    if keys.is_empty() {
        if facts.flags.contains(&"no_mandatory_keys") {
            return Ok(Reply::Array(vec![]));
        }
        return Err(Reply::err("ERR Invalid arguments specified for command"));
    }
    Ok(Reply::Array(
        keys.into_iter()
            .map(|(pos, flags)| {
                let key = Reply::Bulk(line[pos].clone());
                if with_flags {
                    Reply::Array(vec![key, statuses(flags)])
                } else {
                    key
                }
            })
            .collect(),
    ))
}

/// The keys' positions in `line` with their access flags, as Redis 7.0
/// finds them: every spec in turn; a spec that does not fit the line
/// (a count that is not a number, keys past the end) voids them all.
fn find_keys(facts: &Facts, line: &[Vec<u8>]) -> Vec<(usize, &'static [&'static str])> {
    if facts.name == "set" {
        // SET's flags depend on its GET option (the spec says
        // `variable_flags`): with GET it reads the old value.
        let get = line[3..].iter().any(|a| is_option(a, "get"));
        let flags: &'static [&'static str] = if get {
            &["RW", "access", "update"]
        } else {
            &["OW", "update"]
        };
        return vec![(1, flags)];
    }
    let mut keys = Vec::new();
    for spec in facts.key_specs {
        if spec.flags.contains(&"not_key") {
            continue;
        }
        match spec_keys(spec, line) {
            Some(Some(found)) => keys.extend(found.into_iter().map(|p| (p, spec.flags))),
            Some(None) => {}
            None => return Vec::new(),
        }
    }
    keys
}

/// One spec's key positions: `Some(None)` when its keyword is absent,
/// `None` when the spec does not fit the line.
fn spec_keys(spec: &KeySpec, line: &[Vec<u8>]) -> Option<Option<Vec<usize>>> {
    let argc = line.len() as i64;
    let mut first = match spec.begin {
        Begin::Index(i) => i,
        Begin::Keyword {
            keyword,
            start_from,
        } => {
            let found = if start_from > 0 {
                (start_from..argc).find(|&i| is_option(&line[i as usize], keyword))
            } else {
                (1..argc + start_from + 1)
                    .rev()
                    .find(|&i| is_option(&line[i as usize], keyword))
            };
            match found {
                Some(i) => i + 1,
                None => return Some(None),
            }
        }
        Begin::Unknown => return None,
    };
    let (last, step) = match spec.find {
        Find::Range {
            last_key,
            key_step,
            limit,
        } => {
            let last = if last_key >= 0 {
                first + last_key
            } else if limit == 0 {
                argc + last_key
            } else {
                first + ((argc - first) / limit + last_key)
            };
            (last, key_step)
        }
        Find::Keynum {
            keynum_index,
            first_key,
            key_step,
        } => {
            if keynum_index >= argc - first {
                return None;
            }
            let count = std::str::from_utf8(&line[(first + keynum_index) as usize])
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|n| *n >= 0)?;
            first += first_key;
            (first + count - 1, key_step)
        }
        Find::Unknown => return None,
    };
    if last >= argc || last < first || first >= argc {
        return None;
    }
    Some(Some(
        (first..=last)
            .step_by(step.max(1) as usize)
            .map(|p| p as usize)
            .collect(),
    ))
}

/// `COMMAND HELP`, as Redis 7.0 words it.
fn help() -> Reply {
    const LINES: &[&str] = &[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status(l.to_string())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_the_node_knows_has_redis_facts_or_newer_ones() {
        for cmd in COMMANDS {
            assert!(facts(cmd.name).is_some(), "no facts for {}", cmd.name);
            for sub in cmd.subcommands {
                assert!(facts(sub.name).is_some(), "no facts for {}", sub.name);
            }
        }
    }

    #[test]
    fn the_write_flag_of_the_table_agrees_with_redis() {
        for cmd in COMMANDS {
            let f = facts(cmd.name).unwrap();
            assert_eq!(
                cmd.write,
                f.flags.contains(&"write"),
                "{}: the table and Redis disagree on whether it writes",
                cmd.name
            );
        }
    }

    #[test]
    fn the_facts_are_sorted_for_binary_search() {
        assert!(FACTS.windows(2).all(|w| w[0].name < w[1].name));
    }
}
