//! How a command's reply changes for a RESP3 connection.
//!
//! Handlers answer in RESP2 shapes (a script's `redis.call` sees those);
//! a command whose Redis 7.0 reply has a RESP3 type of its own names one
//! of these functions in its table entry ([`super::Command::resp3`]), and
//! the node applies it to a RESP3 client's reply. Null needs nothing:
//! every nil is encoded `_` on a RESP3 connection.

use crate::resp::Reply;

/// Turns a RESP2 reply into its RESP3 form; the request's arguments say
/// which form when options change it (`ZRANGE ... WITHSCORES`).
pub(crate) type Resp3Fn = fn(&[Vec<u8>], Reply) -> Reply;

/// A flat array of field, value, field, value... becomes a map
/// (`HGETALL`, `CONFIG GET`).
pub(crate) fn map(_: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(items) => {
            let mut it = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Reply::Map(pairs)
        }
        other => other,
    }
}

/// With `WITHVALUES` as the last of four arguments, a flat array of field, value,
/// field, value... becomes an array of `[field, value]` pairs
/// (`HRANDFIELD`); without it the reply stays as it is.
pub(crate) fn with_values(a: &[Vec<u8>], r: Reply) -> Reply {
    // Only the option's place counts: a key may be called `withvalues`.
    let with_values = a.len() == 4 && a[3].eq_ignore_ascii_case(b"withvalues");
    match r {
        Reply::Array(items) if with_values => {
            let mut it = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                pairs.push(Reply::Array(vec![f, v]));
            }
            Reply::Array(pairs)
        }
        other => other,
    }
}

/// An array becomes a set (`SMEMBERS`, `SINTER`, `SUNION`, `SDIFF`).
pub(crate) fn set(_: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(items) => Reply::Set(items),
        other => other,
    }
}

/// `SPOP key count`'s array becomes a set; `SPOP key`'s one member (or
/// nil) stays as it is.
pub(crate) fn spop(a: &[Vec<u8>], r: Reply) -> Reply {
    if a.len() == 3 { set(a, r) } else { r }
}

/// A bulk string holding a score becomes a double (`ZSCORE`,
/// `ZINCRBY`, `ZADD ... INCR`; `ZADD`'s count stays an integer).
pub(crate) fn double(_: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Bulk(b) => Reply::Double(String::from_utf8_lossy(&b).into_owned()),
        other => other,
    }
}

/// An array of optional scores becomes an array of doubles and nulls
/// (`ZMSCORE`).
pub(crate) fn doubles(a: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(items) => Reply::Array(items.into_iter().map(|i| double(a, i)).collect()),
        other => other,
    }
}

/// A flat array of member, score, member, score... becomes an array of
/// `[member, double]` pairs.
fn pairs(r: Reply) -> Reply {
    match r {
        Reply::Array(items) => {
            let mut it = items.into_iter();
            let mut out = Vec::new();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                out.push(Reply::Array(vec![m, double(&[], s)]));
            }
            Reply::Array(out)
        }
        other => other,
    }
}

/// Whether `WITHSCORES` is among the options, which start at `a[from]`
/// (a key or a bound named `withscores` is not the option).
fn asks_scores(a: &[Vec<u8>], from: usize) -> bool {
    a.iter()
        .skip(from)
        .any(|x| x.eq_ignore_ascii_case(b"withscores"))
}

/// With `WITHSCORES`, a range's flat array becomes `[member, double]`
/// pairs (`ZRANGE`, `ZRANGEBYSCORE`, `ZREVRANGE`, `ZREVRANGEBYSCORE`:
/// options after the key and its two bounds); without it, it stays.
pub(crate) fn range_with_scores(a: &[Vec<u8>], r: Reply) -> Reply {
    if asks_scores(a, 4) { pairs(r) } else { r }
}

/// With `WITHSCORES`, a set operation's flat array becomes `[member,
/// double]` pairs (`ZUNION`, `ZINTER`, `ZDIFF`: options after the key
/// count and the keys).
pub(crate) fn set_operation_with_scores(a: &[Vec<u8>], r: Reply) -> Reply {
    // The command ran, so the key count is a valid one.
    let numkeys = a
        .get(1)
        .and_then(|n| crate::resp::string2ll(n))
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    if asks_scores(a, 2 + numkeys) {
        pairs(r)
    } else {
        r
    }
}

/// `ZRANDMEMBER key count WITHSCORES`'s flat array becomes `[member,
/// double]` pairs.
pub(crate) fn zrandmember(a: &[Vec<u8>], r: Reply) -> Reply {
    if a.len() == 4 { pairs(r) } else { r }
}

/// `ZPOPMIN`/`ZPOPMAX`: with a count, `[member, double]` pairs; without
/// one, Redis 7.0 keeps the flat `[member, double]`.
pub(crate) fn zpop(a: &[Vec<u8>], r: Reply) -> Reply {
    if a.len() == 3 {
        return pairs(r);
    }
    match r {
        Reply::Array(mut items) => {
            if let Some(score) = items.get_mut(1) {
                *score = double(a, std::mem::replace(score, Reply::Nil));
            }
            Reply::Array(items)
        }
        other => other,
    }
}

/// `BZPOPMIN`/`BZPOPMAX`'s `[key, member, score]`: the score a double.
pub(crate) fn bzpop(a: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(mut items) => {
            if let Some(score) = items.get_mut(2) {
                *score = double(a, std::mem::replace(score, Reply::Nil));
            }
            Reply::Array(items)
        }
        other => other,
    }
}

/// `ZMPOP`/`BZMPOP`'s `[key, [[member, score]...]]`: each score a
/// double.
pub(crate) fn zmpop(a: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(mut items) => {
            if let Some(Reply::Array(popped)) = items.get_mut(1) {
                for pair in popped.iter_mut() {
                    if let Reply::Array(p) = pair
                        && let Some(score) = p.get_mut(1)
                    {
                        *score = double(a, std::mem::replace(score, Reply::Nil));
                    }
                }
            }
            Reply::Array(items)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn a_flat_array_becomes_a_map_of_its_pairs() {
        let r = map(&[], Reply::Array(vec![bulk("f"), bulk("v")]));
        assert_eq!(r, Reply::Map(vec![(bulk("f"), bulk("v"))]));
    }

    #[test]
    fn scores_pair_up_only_with_withscores() {
        let args = [
            b"zrange".to_vec(),
            b"withscores".to_vec(),
            b"0".to_vec(),
            b"-1".to_vec(),
            b"WithScores".to_vec(),
        ];
        let r = range_with_scores(&args, Reply::Array(vec![bulk("m"), bulk("1.5")]));
        assert_eq!(
            r,
            Reply::Array(vec![Reply::Array(vec![
                bulk("m"),
                Reply::Double("1.5".into())
            ])])
        );
        let plain = Reply::Array(vec![bulk("m")]);
        assert_eq!(range_with_scores(&args[..4], plain.clone()), plain);
    }
}
