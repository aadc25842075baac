//! Keyspace notifications (`notify-keyspace-events`): what each command's
//! changes tell subscribers, on `__keyspace@<db>__:<key>` (the event as the
//! message) and `__keyevent@<db>__:<event>` (the key as the message).
//!
//! Redis calls its notifier inside each command. The node makes the same
//! events from what a command changed, right after it ran (so a script's
//! or a transaction's events are those of each command, in order), and
//! publishes them when the node commits:
//!
//! * `new` (class `n`) for each key the command added, first, as Redis adds
//!   a key before the command's own event;
//! * the command's event on each key it wrote: its name, or the name Redis
//!   gives it ([`event_name`]: `incrby` for `DECR`, `hset` for `HMSET`...),
//!   in the class of its group (`$` strings, `l` lists, `s` sets, `h`
//!   hashes, `z` sorted sets, `g` generic); commands that touch two keys
//!   name each side ([`two_key_events`]: `rename_from`/`rename_to`, `srem`
//!   then `sadd` for `SMOVE`, the pop then the push for `LMOVE`);
//! * `expire` (`g`) after a write that set a time to live;
//! * `del` (`g`) for each key the command deleted, including a container
//!   it emptied;
//! * `expired` (`x`) for each key found expired, by a command or by the
//!   node's active expiry.
//!
//! A command that changed nothing makes no event (`SREM` of a missing
//! member), as in Redis. `FLUSHALL`, `FLUSHDB` and `SWAPDB` make none per
//! key, as in Redis 7.0. A replica applies its master's changes without
//! events.

use crate::commands::is_option;
use crate::keyspace::Change;

/// The event classes a `notify-keyspace-events` value turns on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Classes {
    letters: u32,
}

impl Classes {
    /// The classes of a stored `notify-keyspace-events` value (`CONFIG SET`
    /// checked it; unknown letters are ignored).
    pub(crate) fn parse(value: &str) -> Classes {
        let mut letters = 0;
        for c in value.chars() {
            letters |= match c {
                'A' => bits("g$lshzxetd"),
                c => bits(&c.to_string()),
            };
        }
        Classes { letters }
    }

    /// Whether any event would be published: a class and at least one of
    /// `K` and `E`.
    pub(crate) fn any(self) -> bool {
        self.letters & bits("KE") != 0 && self.letters & !bits("KE") != 0
    }

    fn has(self, letter: char) -> bool {
        self.letters & bits(&letter.to_string()) != 0
    }
}

/// One bit per class letter.
fn bits(letters: &str) -> u32 {
    const ALL: &str = "KEg$lshzxetdmn";
    letters
        .chars()
        .filter_map(|c| ALL.find(c))
        .fold(0, |acc, i| acc | (1 << i))
}

/// One keyspace event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notification {
    /// Its class letter (`$`, `l`, `g`, `x`, `n`...).
    pub(crate) class: char,
    /// The event (`set`, `lpush`, `expired`...).
    pub(crate) event: &'static str,
    /// The key.
    pub(crate) key: Vec<u8>,
    /// Its database.
    pub(crate) db: usize,
    /// Redis writes it after the command's reply (see [`reply_goes_first`]).
    pub(crate) after_reply: bool,
}

impl Notification {
    /// The `(channel, message)` pairs it is published as under `classes`.
    pub(crate) fn messages(&self, classes: Classes) -> Vec<(Vec<u8>, Vec<u8>)> {
        if !classes.has(self.class) {
            return Vec::new();
        }
        let mut out = Vec::new();
        if classes.has('K') {
            let mut channel = format!("__keyspace@{}__:", self.db).into_bytes();
            channel.extend_from_slice(&self.key);
            out.push((channel, self.event.as_bytes().to_vec()));
        }
        if classes.has('E') {
            let channel = format!("__keyevent@{}__:{}", self.db, self.event).into_bytes();
            out.push((channel, self.key.clone()));
        }
        out
    }
}

/// The events of one command (`args`, its name lowercased in `name`, of
/// docs group `group`) that made `changes` and added `created` in database
/// `db`.
pub(crate) fn of_command(
    name: &str,
    group: &str,
    args: &[Vec<u8>],
    changes: &[Change],
    created: &[Vec<u8>],
    db: usize,
) -> Vec<Notification> {
    let mut out: Vec<Notification> = Vec::new();
    let mut note = |class: char, event: &'static str, key: &[u8]| {
        out.push(Notification {
            class,
            event,
            key: key.to_vec(),
            db,
            after_reply: false,
        })
    };
    if matches!(name, "flushall" | "flushdb" | "swapdb") {
        return expired_only(changes, db);
    }
    if name == "move" {
        // The key leaves one database and arrives in the other: each
        // side's change is in its own database's log.
        for c in changes {
            match c {
                Change::Deleted(k) => note('g', "move_from", k),
                Change::Written(k) => note('g', "move_to", k),
                Change::Expired(..) => {}
            }
        }
        out.extend(expired_only(changes, db));
        return out;
    }
    for key in created {
        note('n', "new", key);
    }
    let written = distinct(changes, |c| match c {
        Change::Written(k) => Some(k),
        _ => None,
    });
    let deleted = distinct(changes, |c| match c {
        Change::Deleted(k) => Some(k),
        _ => None,
    });
    let class = class_of(group);
    if let Some(sides) = two_key_events(name, args) {
        for (index, class, event) in sides {
            let key = &args[index];
            if written.contains(&key) || deleted.contains(&key) {
                note(class, event, key);
            }
        }
    } else if !matches!(name, "del" | "unlink" | "getdel") {
        let event = event_name(name, args);
        // A key the command emptied (and so deleted) gets the command's
        // event before its `del`, as the last `SPOP` of a set does.
        let mut touched = written.clone();
        if !deletes_only(name) {
            touched.extend(deleted.iter().filter(|k| !written.contains(k)));
        }
        for key in &touched {
            if let Some(event) = event {
                let class = match event {
                    _ if is_generic(event) => 'g',
                    // SORT is a generic command; what it stores is a list.
                    "sortstore" => 'l',
                    _ => class,
                };
                note(class, event, key);
            }
            if sets_ttl(name, args) && written.contains(key) {
                note('g', "expire", key);
            }
        }
    }
    // A renamed key's old name goes without a `del`.
    if !matches!(name, "rename" | "renamenx") {
        for key in deleted {
            note('g', "del", key);
        }
    }
    out.extend(expired_only(changes, db));
    out
}

/// Marks the events Redis writes after the command's reply: a command
/// whose C code replies first, then notifies, has its own events after
/// the reply (a key's `new` and `expired` come before, as they happen
/// while it runs), which a RESP3 client subscribed to its own events sees.
/// An `EXPIRE` that deletes the key notifies first. (`RPOPLPUSH` and
/// `LMOVE` write the push's events before the reply and the pop's after;
/// the node writes both before.)
pub(crate) fn order_around_reply(name: &str, events: &mut [Notification]) {
    let reply_first = match name {
        "expire" | "pexpire" | "expireat" | "pexpireat" => events.iter().all(|e| e.event != "del"),
        "getset" | "getex" | "getdel" | "lpush" | "rpush" | "lpushx" | "rpushx" | "lpop"
        | "rpop" | "lset" | "lmpop" | "blmpop" | "blpop" | "brpop" | "sinterstore"
        | "sunionstore" | "sdiffstore" | "zadd" | "zincrby" | "zpopmin" | "zpopmax"
        | "bzpopmin" | "bzpopmax" | "zmpop" | "bzmpop" | "zunionstore" | "zinterstore"
        | "zdiffstore" | "zrangestore" | "hset" | "hmset" | "hsetnx" | "hincrby"
        | "hincrbyfloat" => true,
        _ => false,
    };
    for e in events {
        e.after_reply = (reply_first && !matches!(e.event, "new" | "expired"))
            // SPOP replies before deleting the set it emptied.
            || (name == "spop" && e.event == "del");
    }
}

/// The `expired` events of changes made outside commands (the node's
/// active expiry), or of a command that makes no events of its own.
pub(crate) fn expired_only(changes: &[Change], db: usize) -> Vec<Notification> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Expired(k, _) => Some(Notification {
                class: 'x',
                event: "expired",
                key: k.clone(),
                db,
                after_reply: false,
            }),
            _ => None,
        })
        .collect()
}

/// Commands whose deletions make only `del` (`DEL`, `GETDEL`, an `EXPIRE`
/// in the past, a `STORE` of an empty result).
fn deletes_only(name: &str) -> bool {
    matches!(
        name,
        "del" | "unlink" | "getdel" | "expire" | "pexpire" | "expireat" | "pexpireat"
    ) || name.ends_with("store")
        || name == "sort"
}

/// The keys the changes name, each once, in first-change order.
fn distinct<'a>(
    changes: &'a [Change],
    pick: impl Fn(&'a Change) -> Option<&'a Vec<u8>>,
) -> Vec<&'a Vec<u8>> {
    let mut keys: Vec<&Vec<u8>> = Vec::new();
    for k in changes.iter().filter_map(pick) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// The class of a command's own event, from its docs group.
fn class_of(group: &str) -> char {
    match group {
        "string" | "bitmap" | "hyperloglog" => '$',
        "list" => 'l',
        "set" => 's',
        "hash" => 'h',
        "sorted-set" => 'z',
        "stream" => 't',
        _ => 'g',
    }
}

/// Events of the generic class, whatever the command's group.
fn is_generic(event: &str) -> bool {
    matches!(
        event,
        "del"
            | "expire"
            | "persist"
            | "rename_from"
            | "rename_to"
            | "copy_to"
            | "move_from"
            | "move_to"
    )
}

/// The event a one-key command makes on the keys it wrote: its own name,
/// or the name Redis gives it; `None` when a write makes no event of its
/// own (`GETEX` without options changes nothing).
fn event_name(name: &str, args: &[Vec<u8>]) -> Option<&'static str> {
    let has = |opt: &str| args.iter().skip(1).any(|a| is_option(a, opt));
    Some(match name {
        // Redis 7.0 names every counter change `incrby`.
        "incr" | "incrby" | "decr" | "decrby" => "incrby",
        "set" | "setnx" | "setex" | "psetex" | "getset" | "mset" | "msetnx" => "set",
        "hset" | "hmset" | "hsetnx" => "hset",
        "lpushx" => "lpush",
        "rpushx" => "rpush",
        "blpop" => "lpop",
        "brpop" => "rpop",
        "lmpop" | "blmpop" if has("left") => "lpop",
        "lmpop" | "blmpop" => "rpop",
        "zmpop" | "bzmpop" if has("min") => "zpopmin",
        "zmpop" | "bzmpop" => "zpopmax",
        "bzpopmin" => "zpopmin",
        "bzpopmax" => "zpopmax",
        "zadd" if has("incr") => "zincr",
        "zincrby" => "zincr",
        "expire" | "pexpire" | "expireat" | "pexpireat" => "expire",
        "getex" if has("persist") => "persist",
        "getex" => return None,
        "copy" => "copy_to",
        "sort" => "sortstore",
        other => crate::commands::lookup(other.as_bytes())?.name,
    })
}

/// Whether the command, as called, also gave the key a time to live
/// (Redis sends `expire` after the write's own event).
fn sets_ttl(name: &str, args: &[Vec<u8>]) -> bool {
    let has = |opt: &str| args.iter().skip(3).any(|a| is_option(a, opt));
    match name {
        "setex" | "psetex" => true,
        "set" => has("ex") || has("px") || has("exat") || has("pxat"),
        "getex" => args
            .iter()
            .skip(2)
            .any(|a| ["ex", "px", "exat", "pxat"].iter().any(|o| is_option(a, o))),
        _ => false,
    }
}

/// For a command on two keys, each side's argument index, class and
/// event, in Redis's order.
fn two_key_events(name: &str, args: &[Vec<u8>]) -> Option<Vec<(usize, char, &'static str)>> {
    let side = |i: usize, left: &'static str, right: &'static str| {
        if is_option(&args[i], "left") {
            left
        } else {
            right
        }
    };
    Some(match name {
        "rename" | "renamenx" => vec![(1, 'g', "rename_from"), (2, 'g', "rename_to")],
        "smove" => vec![(1, 's', "srem"), (2, 's', "sadd")],
        "rpoplpush" | "brpoplpush" => vec![(2, 'l', "lpush"), (1, 'l', "rpop")],
        "lmove" | "blmove" => vec![
            (2, 'l', side(4, "lpush", "rpush")),
            (1, 'l', side(3, "lpop", "rpop")),
        ],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|a| a.as_bytes().to_vec()).collect()
    }

    fn events(n: &[Notification]) -> Vec<String> {
        n.iter()
            .map(|n| {
                format!(
                    "{} {} {}",
                    n.class,
                    n.event,
                    String::from_utf8_lossy(&n.key)
                )
            })
            .collect()
    }

    #[test]
    fn a_new_key_set_with_a_ttl_is_new_then_set_then_expire() {
        let changes = [Change::Written(b"k".to_vec())];
        let n = of_command(
            "set",
            "string",
            &args("set k v px 100"),
            &changes,
            &[b"k".to_vec()],
            0,
        );
        assert_eq!(events(&n), ["n new k", "$ set k", "g expire k"]);
    }

    #[test]
    fn a_command_that_changed_nothing_makes_no_event() {
        assert!(of_command("srem", "set", &args("srem s x"), &[], &[], 0).is_empty());
    }

    #[test]
    fn emptying_a_list_is_the_pop_then_del() {
        let changes = [
            Change::Written(b"l".to_vec()),
            Change::Deleted(b"l".to_vec()),
        ];
        let n = of_command("rpop", "list", &args("rpop l"), &changes, &[], 0);
        assert_eq!(events(&n), ["l rpop l", "g del l"]);
    }

    #[test]
    fn rename_names_both_sides() {
        let changes = [
            Change::Deleted(b"a".to_vec()),
            Change::Written(b"b".to_vec()),
        ];
        let n = of_command(
            "rename",
            "generic",
            &args("rename a b"),
            &changes,
            &[b"b".to_vec()],
            0,
        );
        assert_eq!(events(&n), ["n new b", "g rename_from a", "g rename_to b"]);
    }

    #[test]
    fn classes_follow_the_config_letters() {
        let ke = Classes::parse("KEl");
        assert!(ke.any());
        assert!(!Classes::parse("l").any());
        assert!(!Classes::parse("").any());
        let n = Notification {
            class: 'l',
            event: "lpush",
            key: b"l".to_vec(),
            db: 3,
            after_reply: false,
        };
        assert_eq!(
            n.messages(ke),
            vec![
                (b"__keyspace@3__:l".to_vec(), b"lpush".to_vec()),
                (b"__keyevent@3__:lpush".to_vec(), b"l".to_vec()),
            ]
        );
        assert!(n.messages(Classes::parse("KE$")).is_empty());
    }
}
