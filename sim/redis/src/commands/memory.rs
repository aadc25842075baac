//! `MEMORY USAGE key [SAMPLES count]` and the small `MEMORY` subcommands
//! (`HELP`, `DOCTOR`, `MALLOC-STATS`, `PURGE`).
//!
//! The node stores values as Rust collections, so no byte count of its
//! own means anything to a Redis client. `MEMORY USAGE` therefore answers
//! an estimate of what Redis 7.0 would hold for the key, built the way
//! Redis's `objectComputeSize` walks a value: the key's `sds` and dict
//! entry, the object header, then the value in the encoding Redis would
//! pick for it at the default thresholds (an integer or `embstr` string,
//! a listpack for a small hash or sorted set, an intset for a small set of
//! integers, hash tables and skiplists past that, a quicklist of 8 KiB
//! listpacks for a list). Each allocation is rounded as glibc's `malloc`
//! rounds it, since the node reports `mem_allocator:libc` in `INFO`. Like
//! Redis, a large collection is measured from its first `SAMPLES`
//! elements (5 by default, 0 for all) and extrapolated to its length.
//! The estimate depends only on the key and its value, so it is
//! deterministic.

use super::errors::{int_arg, syntax_error};
use super::is_option;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// `MEMORY`'s subcommands the node knows, with their arities.
pub(crate) const MEMORY: &[super::Subcommand] = &[
    super::Subcommand {
        name: "memory|doctor",
        arity: super::Arity::Exactly(2),
    },
    super::Subcommand {
        name: "memory|help",
        arity: super::Arity::Exactly(2),
    },
    super::Subcommand {
        name: "memory|malloc-stats",
        arity: super::Arity::Exactly(2),
    },
    super::Subcommand {
        name: "memory|purge",
        arity: super::Arity::Exactly(2),
    },
    super::Subcommand {
        name: "memory|usage",
        arity: super::Arity::AtLeast(3),
    },
];

/// The lines `MEMORY HELP` answers, as Redis 7.0 words them.
const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// What `MEMORY DOCTOR` says of an instance as small as a simulated one
/// (Redis's doctor declines to judge under 5 MB).
const DOCTOR_EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";

/// `MEMORY <subcommand> ...` (the table has checked the subcommand and
/// its arity).
pub(crate) fn memory(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let sub = &a[1];
    if is_option(sub, "usage") {
        usage(ks, a)
    } else if is_option(sub, "help") {
        Ok(Reply::Array(
            HELP.iter().map(|l| Reply::Status((*l).into())).collect(),
        ))
    } else if is_option(sub, "doctor") {
        Ok(Reply::Verbatim(DOCTOR_EMPTY.as_bytes().to_vec()))
    } else if is_option(sub, "malloc-stats") {
        // What Redis answers when built without jemalloc, as the node is.
        Ok(Reply::Bulk(
            b"Stats not supported for the current allocator".to_vec(),
        ))
    } else {
        // PURGE: there are no allocator pages to give back.
        Ok(Reply::ok())
    }
}

/// How many elements Redis samples by default.
const DEFAULT_SAMPLES: usize = 5;

/// `MEMORY USAGE key [SAMPLES count]`: the estimate in bytes, nil for a
/// missing key. Options are checked before the key, as Redis does.
fn usage(ks: &mut Keyspace, a: &[Vec<u8>]) -> R {
    let mut samples = DEFAULT_SAMPLES;
    let mut j = 3;
    while j < a.len() {
        if is_option(&a[j], "samples") && j + 1 < a.len() {
            let n = int_arg(&a[j + 1])?;
            if n < 0 {
                return Err(syntax_error());
            }
            // 0 asks for every element.
            samples = if n == 0 {
                usize::MAX
            } else {
                usize::try_from(n).unwrap_or(usize::MAX)
            };
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    // Redis finds the key without expiring it, so a key past its deadline
    // but not yet removed still has a size.
    let Some(entry) = ks.peek(&a[2]) else {
        return Ok(Reply::Nil);
    };
    let bytes = key_bytes(&a[2]) + value_bytes(&entry.value, samples);
    Ok(Reply::Int(i64::try_from(bytes).unwrap_or(i64::MAX)))
}

/// What glibc's `malloc` really hands out for a request of `n` bytes
/// (`malloc_usable_size`): 16-byte chunks with an 8-byte header, 24 at
/// least.
fn alloc(n: usize) -> usize {
    if n + 8 <= 32 {
        24
    } else {
        ((n + 8 + 15) & !15) - 8
    }
}

/// The header of an `sds` string of `len` bytes (its type follows the
/// length; the smallest type is never used for an empty one).
fn sds_header(len: usize) -> usize {
    match len {
        1..32 => 1,
        0 | 32..256 => 3,
        256..65_536 => 5,
        _ if len as u64 <= u64::from(u32::MAX) => 9,
        _ => 17,
    }
}

/// An `sds` string holding `s`, its terminating zero included.
fn sds(s: &[u8]) -> usize {
    alloc(sds_header(s.len()) + s.len() + 1)
}

/// A dict entry (key, value and next pointers).
const DICT_ENTRY: usize = 24;
/// A Redis object header (`robj`).
const ROBJ: usize = 16;
/// A dict with its two tables' headers.
const DICT: usize = 56;

/// The key's `sds` and its entry in the database's dict.
fn key_bytes(key: &[u8]) -> usize {
    sds(key) + DICT_ENTRY
}

/// The integer `s` spells, if Redis would store it as one (no sign
/// oddities, at most 20 characters).
fn as_integer(s: &[u8]) -> Option<i64> {
    if s.len() > 20 {
        return None;
    }
    string2ll(s)
}

/// One listpack entry holding `s`: its encoding byte(s), the data, and
/// the back-length that lets a listpack be walked backwards.
fn listpack_entry(s: &[u8]) -> usize {
    let body = match as_integer(s) {
        Some(0..=127) => 1,
        Some(-4096..=4095) => 2,
        Some(n) if i16::try_from(n).is_ok() => 3,
        Some(-8_388_608..=8_388_607) => 4,
        Some(n) if i32::try_from(n).is_ok() => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    let backlen = match body {
        0..128 => 1,
        128..16_384 => 2,
        16_384..2_097_152 => 3,
        2_097_152..268_435_456 => 4,
        _ => 5,
    };
    body + backlen
}

/// A listpack's header (total bytes, element count) and end marker.
const LISTPACK_FRAME: usize = 7;

/// A whole listpack holding `entries`.
fn listpack<'a>(entries: impl Iterator<Item = &'a [u8]>) -> usize {
    alloc(LISTPACK_FRAME + entries.map(listpack_entry).sum::<usize>())
}

/// The bucket array of a dict of `len` entries (a power of two, at least
/// four, of 8-byte pointers).
fn buckets(len: usize) -> usize {
    alloc(8 * len.max(4).next_power_of_two())
}

/// The per-element bytes of `items`, measured on the first `samples` and
/// extrapolated to `len` (Redis's sampling of large collections).
fn sampled(len: usize, samples: usize, items: impl Iterator<Item = usize>) -> usize {
    let (mut total, mut seen) = (0usize, 0usize);
    for size in items.take(samples) {
        total += size;
        seen += 1;
    }
    if seen == 0 {
        return 0;
    }
    // Redis divides first, then multiplies; so does the estimate.
    (total as f64 / seen as f64 * len as f64) as usize
}

/// Redis 7.0's default thresholds for the small encodings.
const LISTPACK_ENTRIES: usize = 128;
const LISTPACK_VALUE: usize = 64;
const INTSET_ENTRIES: usize = 512;
/// How many bytes a quicklist node's listpack holds at most (`-2`: 8 KiB).
const QUICKLIST_NODE_BYTES: usize = 8192;

/// The value's bytes in the encoding Redis would give it.
fn value_bytes(value: &Value, samples: usize) -> usize {
    match value {
        Value::Str(s) => string_bytes(s),
        Value::Hash(h) => {
            let small = h.len() <= LISTPACK_ENTRIES
                && h.iter()
                    .all(|(f, v)| f.len() <= LISTPACK_VALUE && v.len() <= LISTPACK_VALUE);
            if small {
                ROBJ + listpack(h.iter().flat_map(|(f, v)| [f.as_slice(), v.as_slice()]))
            } else {
                let per = h.iter().map(|(f, v)| sds(f) + sds(v) + DICT_ENTRY);
                ROBJ + DICT + buckets(h.len()) + sampled(h.len(), samples, per)
            }
        }
        Value::List(l) => {
            // Entries fill 8 KiB listpacks; each node has its own header.
            let per = l.iter().map(|e| listpack_entry(e));
            let data = sampled(l.len(), samples, per);
            let nodes = data.div_ceil(QUICKLIST_NODE_BYTES).max(1);
            ROBJ + 40 + nodes * (alloc(32) + LISTPACK_FRAME) + data
        }
        Value::Set(s) => {
            let ints: Option<Vec<i64>> = s.iter().map(|m| as_integer(m)).collect();
            match ints {
                Some(ints) if s.len() <= INTSET_ENTRIES => {
                    let width = if ints.iter().all(|n| i16::try_from(*n).is_ok()) {
                        2
                    } else if ints.iter().all(|n| i32::try_from(*n).is_ok()) {
                        4
                    } else {
                        8
                    };
                    ROBJ + alloc(8 + width * s.len())
                }
                _ => {
                    let per = s.iter().map(|m| sds(m) + DICT_ENTRY);
                    ROBJ + DICT + buckets(s.len()) + sampled(s.len(), samples, per)
                }
            }
        }
        Value::ZSet(z) => {
            let small =
                z.len() <= LISTPACK_ENTRIES && z.iter().all(|(m, _)| m.len() <= LISTPACK_VALUE);
            let scores: Vec<Vec<u8>> = z.iter().map(|(_, s)| score_bytes(s)).collect();
            if small {
                let entries = z
                    .iter()
                    .zip(&scores)
                    .flat_map(|((m, _), s)| [m, s.as_slice()]);
                ROBJ + listpack(entries)
            } else {
                // A skiplist node (score, backward pointer, one level on
                // average plus a third) beside the member's dict entry.
                let per = z
                    .iter()
                    .map(|(m, _)| sds(m) + alloc(24 + 16 + 16 / 3) + DICT_ENTRY);
                ROBJ + DICT + buckets(z.len()) + alloc(32) + sampled(z.len(), samples, per)
            }
        }
    }
}

/// A score as a listpack stores it: an integer when it is one, its
/// shortest text otherwise.
fn score_bytes(score: f64) -> Vec<u8> {
    if score.fract() == 0.0 && score.abs() < 1e17 {
        format!("{}", score as i64).into_bytes()
    } else {
        format!("{score}").into_bytes()
    }
}

/// A string value: an integer lives in the object itself, a short string
/// (44 bytes at most) shares one allocation with it (`embstr`), a longer
/// one has an `sds` of its own.
fn string_bytes(s: &[u8]) -> usize {
    if as_integer(s).is_some() {
        ROBJ
    } else if s.len() <= 44 {
        alloc(ROBJ + 3 + s.len() + 1)
    } else {
        ROBJ + sds(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_round_up_as_glibc_does() {
        assert_eq!(alloc(1), 24);
        assert_eq!(alloc(24), 24);
        assert_eq!(alloc(25), 40);
        assert_eq!(alloc(40), 40);
        assert_eq!(alloc(41), 56);
    }

    #[test]
    fn longer_values_never_measure_smaller() {
        let short = string_bytes(b"abc");
        let long = string_bytes(&[b'x'; 100]);
        assert!(short < long);
        assert_eq!(string_bytes(b"12345"), ROBJ);
    }

    #[test]
    fn sampling_extrapolates_from_the_first_elements() {
        assert_eq!(sampled(10, 2, [4, 6, 100].into_iter()), 50);
        assert_eq!(sampled(3, usize::MAX, [4, 6, 100].into_iter()), 110);
        assert_eq!(sampled(0, 5, std::iter::empty()), 0);
    }
}
