//! `SORT` and `SORT_RO`, as Redis 7.0.15 answers them (`sort.c`).
//!
//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
//! [ASC|DESC] [ALPHA] [STORE destination]` sorts a list, set or sorted
//! set: by the elements' values as numbers (`strtod`; equal numbers in
//! byte order), or as strings with `ALPHA`; by the values a `BY` pattern
//! names (`weight_*`, or a hash field `h_*->f`) instead; not at all with a
//! `BY` pattern without `*` (a list then keeps its order, reversed by
//! `DESC`). `GET` patterns replace each element with the values they name
//! (`#`: the element). `STORE` writes the result as a list, or deletes the
//! destination when the result is empty, and answers the count.
//!
//! A set has no order of its own, so an unsorted set (`BY` a constant) is
//! sorted alphabetically all the same when the result is stored or a
//! script asks (`Keyspace::from_script`): both must be the same on a
//! replica.
//! Strings compare byte by byte, as `strcoll` does in the C locale Redis
//! runs in here.

use std::cmp::Ordering;

use super::errors::{syntax_error, wrongtype};
use super::is_option;
use super::sets::listing;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply.
type R = Result<Reply, Reply>;

/// The options of one `SORT`.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// `LIMIT offset count` (count -1: to the end).
    limit: (i64, i64),
    by: Option<&'a [u8]>,
    /// `BY` a pattern without `*`: nothing to sort by.
    dont_sort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// `SORT key ...`
pub(crate) fn sort(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    sort_generic(ks, a, false)
}

/// `SORT_RO key ...`: `SORT` without `STORE`.
pub(crate) fn sort_ro(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    sort_generic(ks, a, true)
}

fn parse_options(a: &[Vec<u8>], read_only: bool) -> Result<Options<'_>, Reply> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        by: None,
        dont_sort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let arg = &a[j];
        if is_option(arg, "asc") {
            o.desc = false;
        } else if is_option(arg, "desc") {
            o.desc = true;
        } else if is_option(arg, "alpha") {
            o.alpha = true;
        } else if is_option(arg, "limit") && left >= 2 {
            let long = |v: &[u8]| {
                string2ll(v)
                    .ok_or_else(|| Reply::err("ERR value is not an integer or out of range"))
            };
            o.limit = (long(&a[j + 1])?, long(&a[j + 2])?);
            j += 2;
        } else if !read_only && is_option(arg, "store") && left >= 1 {
            o.store = Some(&a[j + 1]);
            j += 1;
        } else if is_option(arg, "by") && left >= 1 {
            o.by = Some(&a[j + 1]);
            o.dont_sort = !a[j + 1].contains(&b'*');
            j += 1;
        } else if is_option(arg, "get") && left >= 1 {
            o.gets.push(&a[j + 1]);
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    Ok(o)
}

/// What is sorted: the elements, in the order the key holds them.
enum Source {
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    ZSet(Vec<Vec<u8>>),
}

fn source(ks: &mut Keyspace, key: &[u8]) -> Result<Source, Reply> {
    Ok(match ks.get(key).map(|e| &e.value) {
        None => Source::List(Vec::new()),
        Some(Value::List(l)) => Source::List(l.iter().cloned().collect()),
        Some(Value::Set(s)) => Source::Set(listing(s).into_iter().cloned().collect()),
        Some(Value::ZSet(z)) => Source::ZSet(z.iter().map(|(m, _)| m.to_vec()).collect()),
        Some(_) => return Err(wrongtype()),
    })
}

/// One element and what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    /// `ALPHA` with `BY`: the value the pattern names, if any.
    by_value: Option<Vec<u8>>,
}

fn sort_generic(ks: &mut Keyspace, a: &[Vec<u8>], read_only: bool) -> R {
    let mut o = parse_options(a, read_only)?;
    let src = source(ks, &a[1])?;
    if o.dont_sort && matches!(src, Source::Set(_)) && (o.store.is_some() || ks.from_script) {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let (elements, keeps_order) = match src {
        Source::List(v) => (v, true),
        Source::ZSet(v) => (v, true),
        Source::Set(v) => (v, false),
    };
    let (start, end) = limit_range(o.limit, elements.len() as i64);
    let mut items: Vec<Vec<u8>> = elements;
    if o.dont_sort && keeps_order && o.desc {
        // Lists and sorted sets keep their order, reversed by DESC.
        items.reverse();
    }
    let mut sorted_items: Vec<Item> = items
        .into_iter()
        .map(|element| Item {
            element,
            score: 0.0,
            by_value: None,
        })
        .collect();
    if !o.dont_sort {
        let mut conversion_error = false;
        for item in &mut sorted_items {
            let by_value = match o.by {
                Some(pattern) => match lookup_by_pattern(ks, pattern, &item.element) {
                    Some(v) => v,
                    None => continue,
                },
                None => item.element.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    item.by_value = Some(by_value);
                }
            } else {
                match sort_score(&by_value) {
                    Some(s) => item.score = s,
                    None => conversion_error = true,
                }
            }
        }
        if conversion_error {
            return Err(Reply::err(
                "ERR One or more scores can't be converted into double",
            ));
        }
        let by_pattern = o.by.is_some();
        sorted_items.sort_by(|x, y| {
            let cmp = compare(x, y, o.alpha, by_pattern);
            if o.desc { cmp.reverse() } else { cmp }
        });
    }
    let range = if end < start {
        &sorted_items[0..0]
    } else {
        &sorted_items[start as usize..=end as usize]
    };
    let output: Vec<Option<Vec<u8>>> = if o.gets.is_empty() {
        range.iter().map(|i| Some(i.element.clone())).collect()
    } else {
        range
            .iter()
            .flat_map(|i| {
                o.gets
                    .iter()
                    .map(|p| lookup_by_pattern(ks, p, &i.element))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    match o.store {
        None => Ok(Reply::Array(
            output
                .into_iter()
                .map(|v| v.map_or(Reply::Nil, Reply::Bulk))
                .collect(),
        )),
        Some(dst) => {
            let count = output.len() as i64;
            let list: std::collections::VecDeque<Vec<u8>> =
                output.into_iter().map(Option::unwrap_or_default).collect();
            let empty = list.is_empty();
            ks.store_container(dst, Value::List(list), empty);
            Ok(Reply::Int(count))
        }
    }
}

/// Redis's `LIMIT` clamping: the first and last index of the result, in
/// the sorted elements (last < first: nothing).
fn limit_range((offset, count): (i64, i64), len: i64) -> (i64, i64) {
    let start = offset.max(0).min(len);
    let count = count.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        return (len - 1, len - 2);
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// A value as `SORT` reads a number: C's `strtod` of the whole string
/// (leading spaces allowed, nothing after); `None` when it is not one, or
/// out of range, or NaN.
fn sort_score(v: &[u8]) -> Option<f64> {
    let skipped = v.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let text = &v[skipped..];
    if text.is_empty() {
        // strtod reads nothing and stops at the end: 0, no error.
        return Some(0.0);
    }
    let (x, used) = crate::cjson::number::strtod(text)?;
    if used != text.len() || x.is_nan() {
        return None;
    }
    let spelled_infinity = text.iter().any(|b| b.eq_ignore_ascii_case(&b'i'));
    if x.is_infinite() && !spelled_infinity {
        return None;
    }
    if (x == 0.0 || x.is_subnormal()) && mantissa_is_nonzero(text) {
        return None;
    }
    Some(x)
}

/// Whether a decimal or hex number's digits before its exponent are not
/// all zero (a zero result from them underflowed: `ERANGE`).
fn mantissa_is_nonzero(text: &[u8]) -> bool {
    let hex = text
        .windows(2)
        .any(|w| w[0] == b'0' && w[1].eq_ignore_ascii_case(&b'x'));
    let body: Vec<u8> = if hex {
        let at = text
            .iter()
            .position(|b| b.eq_ignore_ascii_case(&b'x'))
            .map_or(0, |i| i + 1);
        text[at..]
            .iter()
            .take_while(|b| !b.eq_ignore_ascii_case(&b'p'))
            .copied()
            .collect()
    } else {
        text.iter()
            .take_while(|b| !b.eq_ignore_ascii_case(&b'e'))
            .copied()
            .collect()
    };
    body.iter()
        .any(|b| b.is_ascii_hexdigit() && *b != b'0' && (hex || b.is_ascii_digit()))
}

/// Redis's `sortCompare` (before `DESC`).
fn compare(x: &Item, y: &Item, alpha: bool, by_pattern: bool) -> Ordering {
    if !alpha {
        return x
            .score
            .partial_cmp(&y.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| x.element.cmp(&y.element));
    }
    if by_pattern {
        // An element the pattern names nothing for sorts first.
        return match (&x.by_value, &y.by_value) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(a), Some(b)) => a.cmp(b),
        };
    }
    x.element.cmp(&y.element)
}

/// Redis's `lookupKeyByPattern`: the value `pattern` names for `element`
/// (`#`: the element; the first `*` replaced by it; `->field` reads a
/// hash's field), or `None` (no `*`, no such key or field, another type).
fn lookup_by_pattern(ks: &mut Keyspace, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&i| i + 2 < pattern.len());
    let key_end = arrow.unwrap_or(pattern.len());
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    match (&ks.get(&key)?.value, arrow) {
        (Value::Hash(h), Some(i)) => h.get(&pattern[i + 2..]).cloned(),
        (Value::Str(s), None) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_clamps_as_redis_does() {
        assert_eq!(limit_range((0, -1), 5), (0, 4));
        assert_eq!(limit_range((1, 2), 5), (1, 2));
        assert_eq!(limit_range((-3, 2), 5), (0, 1));
        assert_eq!(limit_range((10, 2), 5), (4, 3));
        assert_eq!(limit_range((3, 100), 5), (3, 4));
        assert_eq!(limit_range((0, 0), 5), (0, -1));
    }

    #[test]
    fn scores_are_read_as_strtod_reads_a_whole_string() {
        assert_eq!(sort_score(b"12"), Some(12.0));
        assert_eq!(sort_score(b" 1.5"), Some(1.5));
        assert_eq!(sort_score(b""), Some(0.0));
        assert_eq!(sort_score(b"0x10"), Some(16.0));
        assert_eq!(sort_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(sort_score(b"1e400"), None);
        assert_eq!(sort_score(b"1e-400"), None);
        assert_eq!(sort_score(b"0e5"), Some(0.0));
        assert_eq!(sort_score(b"nan"), None);
        assert_eq!(sort_score(b"12a"), None);
        assert_eq!(sort_score(b"abc"), None);
    }
}
