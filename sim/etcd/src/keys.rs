//! Which keys a request names: etcd's `key` plus `range_end`.
//!
//! An empty `range_end` names the key alone; `range_end` `"\0"` names every
//! key at or after `key`; any other `range_end` names `[key, range_end)`.
//! `etcdctl get --prefix foo` sends `range_end` = `foo` with its last byte
//! plus one, and `--from-key ''` sends key and range end `"\0"`.

use std::ops::Bound;

/// A key, or a range of keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRange {
    /// One key.
    One(Vec<u8>),
    /// Every key at or after this one.
    From(Vec<u8>),
    /// Keys in `[start, end)`.
    Between(Vec<u8>, Vec<u8>),
}

impl KeyRange {
    /// The range a request's `key` and `range_end` name.
    pub fn new(key: &[u8], range_end: &[u8]) -> KeyRange {
        match range_end {
            [] => KeyRange::One(key.to_vec()),
            [0] => KeyRange::From(key.to_vec()),
            end => KeyRange::Between(key.to_vec(), end.to_vec()),
        }
    }

    /// The bounds to walk an ordered map of keys with.
    pub fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        match self {
            KeyRange::One(k) => (Bound::Included(k.as_slice()), Bound::Included(k.as_slice())),
            KeyRange::From(k) => (Bound::Included(k.as_slice()), Bound::Unbounded),
            KeyRange::Between(a, b) if a.as_slice() >= b.as_slice() => {
                // An empty range: etcd answers nothing rather than failing.
                (Bound::Excluded(a.as_slice()), Bound::Excluded(a.as_slice()))
            }
            KeyRange::Between(a, b) => {
                (Bound::Included(a.as_slice()), Bound::Excluded(b.as_slice()))
            }
        }
    }

    /// Whether `key` is in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        match self {
            KeyRange::One(k) => k.as_slice() == key,
            KeyRange::From(k) => key >= k.as_slice(),
            KeyRange::Between(a, b) => key >= a.as_slice() && key < b.as_slice(),
        }
    }

    /// Whether the two ranges share a key.
    pub fn overlaps(&self, other: &KeyRange) -> bool {
        let (lo_a, hi_a) = self.interval();
        let (lo_b, hi_b) = other.interval();
        let below = |lo: &[u8], hi: &Option<Vec<u8>>, inclusive: bool| match hi {
            None => true,
            Some(h) if inclusive => lo <= h.as_slice(),
            Some(h) => lo < h.as_slice(),
        };
        below(&lo_b, &hi_a, matches!(self, KeyRange::One(_)))
            && below(&lo_a, &hi_b, matches!(other, KeyRange::One(_)))
    }

    /// `(first key, end)`: the end is the key itself for one key, `None`
    /// for no end.
    fn interval(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        match self {
            KeyRange::One(k) => (k.clone(), Some(k.clone())),
            KeyRange::From(k) => (k.clone(), None),
            KeyRange::Between(a, b) => (a.clone(), Some(b.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_range_end_names_one_key() {
        let r = KeyRange::new(b"a", b"");
        assert!(r.contains(b"a"));
        assert!(!r.contains(b"ab"));
    }

    #[test]
    fn a_zero_byte_range_end_names_every_later_key() {
        let r = KeyRange::new(b"b", b"\0");
        assert!(r.contains(b"b") && r.contains(b"zz"));
        assert!(!r.contains(b"a"));
    }

    #[test]
    fn a_prefix_range_excludes_its_end() {
        let r = KeyRange::new(b"foo", b"fop");
        assert!(r.contains(b"foo") && r.contains(b"foo/1"));
        assert!(!r.contains(b"fop"));
    }

    #[test]
    fn a_key_overlaps_the_range_that_holds_it_and_no_other() {
        let one = KeyRange::new(b"foo/1", b"");
        assert!(one.overlaps(&KeyRange::new(b"foo", b"fop")));
        assert!(!one.overlaps(&KeyRange::new(b"fop", b"\0")));
        assert!(one.overlaps(&one.clone()));
        assert!(!one.overlaps(&KeyRange::new(b"foo/2", b"")));
    }
}
