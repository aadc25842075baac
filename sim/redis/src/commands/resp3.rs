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
#[allow(dead_code)] // for the set and sorted-set commands
pub(crate) fn set(_: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(items) => Reply::Set(items),
        other => other,
    }
}

/// A bulk string holding a score becomes a double (`ZSCORE`,
/// `ZINCRBY`).
#[allow(dead_code)] // for the set and sorted-set commands
pub(crate) fn double(_: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Bulk(b) => Reply::Double(String::from_utf8_lossy(&b).into_owned()),
        other => other,
    }
}

/// An array of optional scores becomes an array of doubles and nulls
/// (`ZMSCORE`).
#[allow(dead_code)] // for the set and sorted-set commands
pub(crate) fn doubles(a: &[Vec<u8>], r: Reply) -> Reply {
    match r {
        Reply::Array(items) => Reply::Array(items.into_iter().map(|i| double(a, i)).collect()),
        other => other,
    }
}

/// With `WITHSCORES` among the arguments, a flat array of member, score,
/// member, score... becomes an array of `[member, double]` pairs
/// (`ZRANGE`, `ZRANGEBYSCORE`, `ZREVRANGE`...); without it the reply
/// stays as it is.
#[allow(dead_code)] // for the set and sorted-set commands
pub(crate) fn with_scores(a: &[Vec<u8>], r: Reply) -> Reply {
    let with_scores = a[1..].iter().any(|x| x.eq_ignore_ascii_case(b"withscores"));
    match r {
        Reply::Array(items) if with_scores => {
            let mut it = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                pairs.push(Reply::Array(vec![m, double(a, s)]));
            }
            Reply::Array(pairs)
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
        let args = [b"zrange".to_vec(), b"z".to_vec(), b"WithScores".to_vec()];
        let r = with_scores(&args, Reply::Array(vec![bulk("m"), bulk("1.5")]));
        assert_eq!(
            r,
            Reply::Array(vec![Reply::Array(vec![
                bulk("m"),
                Reply::Double("1.5".into())
            ])])
        );
        let plain = Reply::Array(vec![bulk("m")]);
        assert_eq!(with_scores(&args[..2], plain.clone()), plain);
    }
}
