//! `OBJECT REFCOUNT key`, `OBJECT FREQ key` and `OBJECT HELP`.
//!
//! The node keeps values, not Redis objects, so of an object's internals
//! it answers only what follows from the value: a string holding an
//! integer from 0 to 9999 is one of the integers Redis shares between keys
//! (its reference count reads as `INT_MAX`), any other value is owned by
//! its key alone (count 1). Access frequencies are tracked only under an
//! LFU eviction policy, which the node never has, so `FREQ` answers
//! Redis's error for that case. `ENCODING` and `IDLETIME` are not
//! offered: the node keeps neither encodings nor access times.

use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// `OBJECT`'s subcommands the node knows, with their arities.
pub(crate) const OBJECT: &[super::Subcommand] = &[
    super::Subcommand {
        name: "object|freq",
        arity: super::Arity::Exactly(3),
    },
    super::Subcommand {
        name: "object|help",
        arity: super::Arity::Exactly(2),
    },
    super::Subcommand {
        name: "object|refcount",
        arity: super::Arity::Exactly(3),
    },
];

/// The lines `OBJECT HELP` answers, as Redis 7.0 words them.
const HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// The reference count Redis reports for a shared object.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Redis shares the integers below this (`OBJ_SHARED_INTEGERS`).
const SHARED_INTEGERS: i64 = 10_000;

/// `OBJECT <subcommand> ...` (the table has checked the subcommand and
/// its arity). A missing key is nil.
pub(crate) fn object(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    if super::is_option(&a[1], "help") {
        return Ok(Reply::Array(
            HELP.iter().map(|l| Reply::Status((*l).into())).collect(),
        ));
    }
    let Some(entry) = ks.get(&a[2]) else {
        return Ok(Reply::Nil);
    };
    if super::is_option(&a[1], "freq") {
        return Err(Reply::err(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    Ok(Reply::Int(refcount(&entry.value)))
}

/// How many references Redis would report for `value`.
fn refcount(value: &Value) -> i64 {
    match value {
        Value::Str(s) if s.len() <= 20 => match string2ll(s) {
            Some(n) if (0..SHARED_INTEGERS).contains(&n) => SHARED_REFCOUNT,
            _ => 1,
        },
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_integers_are_shared() {
        assert_eq!(refcount(&Value::Str(b"9999".to_vec())), SHARED_REFCOUNT);
        assert_eq!(refcount(&Value::Str(b"10000".to_vec())), 1);
        assert_eq!(refcount(&Value::Str(b"-1".to_vec())), 1);
        assert_eq!(refcount(&Value::Str(b"abc".to_vec())), 1);
    }
}
