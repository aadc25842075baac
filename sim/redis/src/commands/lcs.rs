//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest
//! common subsequence of two strings, as Redis 7.0.15's `lcsCommand`
//! computes it (the same table and the same walk back, so the same
//! subsequence and ranges when several are equally long).

use super::errors::{int_arg, syntax_error};
use super::is_option;
use super::strings::MAX_STRING_LEN;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::Reply;

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// The string at `key` for `LCS`: empty if absent; another type is an error.
fn lcs_string(ks: &mut Keyspace, key: &[u8]) -> Result<Vec<u8>, ()> {
    match ks.get(key) {
        None => Ok(Vec::new()),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(s.clone()),
            _ => Err(()),
        },
    }
}

/// One matched range: `(a_start, a_end, b_start, b_end)`, ends included.
type Range = (usize, usize, usize, usize);

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`
pub(crate) fn lcs(ks: &mut Keyspace, args: &[Vec<u8>], _: &NodeHandle) -> R {
    let (a, b) = match (lcs_string(ks, &args[1]), lcs_string(ks, &args[2])) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            return Err(Reply::err(
                "ERR The specified keys must contain string values",
            ));
        }
    };
    let (mut get_len, mut get_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len = 0i64;
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        if is_option(opt, "idx") {
            get_idx = true;
        } else if is_option(opt, "len") {
            get_len = true;
        } else if is_option(opt, "withmatchlen") {
            with_match_len = true;
        } else if is_option(opt, "minmatchlen") && j + 1 < args.len() {
            min_match_len = int_arg(&args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    if get_len && get_idx {
        return Err(Reply::err(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1);
    if cells * 4 > MAX_STRING_LEN as u64 {
        return Err(Reply::err(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let width = b.len() + 1;
    let mut table = vec![0u32; cells as usize];
    for i in 1..=a.len() {
        for k in 1..=b.len() {
            table[i * width + k] = if a[i - 1] == b[k - 1] {
                table[(i - 1) * width + k - 1] + 1
            } else {
                table[(i - 1) * width + k].max(table[i * width + k - 1])
            };
        }
    }
    let len = table[a.len() * width + b.len()];
    if get_len {
        return Ok(Reply::Int(i64::from(len)));
    }
    let (common, ranges) = walk_back(&a, &b, &table, width, len as usize);
    if !get_idx {
        return Ok(Reply::Bulk(common));
    }
    let matches = ranges
        .into_iter()
        .filter(|r| min_match_len == 0 || (r.1 - r.0 + 1) as i64 >= min_match_len)
        .map(|(a0, a1, b0, b1)| {
            let mut item = vec![
                Reply::Array(vec![Reply::Int(a0 as i64), Reply::Int(a1 as i64)]),
                Reply::Array(vec![Reply::Int(b0 as i64), Reply::Int(b1 as i64)]),
            ];
            if with_match_len {
                item.push(Reply::Int((a1 - a0 + 1) as i64));
            }
            Reply::Array(item)
        })
        .collect();
    Ok(Reply::Array(vec![
        Reply::Bulk(b"matches".to_vec()),
        Reply::Array(matches),
        Reply::Bulk(b"len".to_vec()),
        Reply::Int(i64::from(len)),
    ]))
}

/// Walks the table back from its corner as Redis does: the common
/// subsequence, and the matched ranges from the strings' ends to their
/// starts.
fn walk_back(a: &[u8], b: &[u8], table: &[u32], width: usize, len: usize) -> (Vec<u8>, Vec<Range>) {
    let mut common = vec![0u8; len];
    let mut idx = len;
    let mut ranges = Vec::new();
    // The range being grown; `None` is Redis's `arange_start == alen`.
    let mut current: Option<Range> = None;
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            common[idx - 1] = a[i - 1];
            match current.as_mut() {
                None => current = Some((i - 1, i - 1, j - 1, j - 1)),
                Some(r) if r.0 == i && r.2 == j => {
                    r.0 -= 1;
                    r.2 -= 1;
                }
                Some(_) => emit = true,
            }
            if current.is_some_and(|r| r.0 == 0 || r.2 == 0) {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if current.is_some() {
                emit = true;
            }
        }
        if emit {
            ranges.extend(current.take());
        }
    }
    (common, ranges)
}
