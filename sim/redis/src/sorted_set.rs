//! A sorted set's members and scores, ordered as Redis orders them: by
//! score, then by member bytes.
//!
//! Redis keeps a small sorted set in a listpack and a large one in a skip
//! list plus a dictionary; both list members in the same order, so one
//! ordered index answers every range command alike. A score is never NaN
//! (Redis refuses NaN before storing), which is what makes the order total.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

/// A score, totally ordered: Redis never stores NaN, and `-0` is stored
/// as `0` (see [`SortedSet::insert`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A range of scores, each end inclusive or exclusive (Redis's
/// `zrangespec`: `ZRANGEBYSCORE k (1 5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    /// The lowest score.
    pub min: f64,
    /// Whether `min` itself is left out.
    pub min_exclusive: bool,
    /// The highest score.
    pub max: f64,
    /// Whether `max` itself is left out.
    pub max_exclusive: bool,
}

impl ScoreRange {
    /// Whether `score` is at or above the range's start.
    fn above_min(&self, score: f64) -> bool {
        score > self.min || (!self.min_exclusive && score == self.min)
    }

    /// Whether `score` is at or below the range's end.
    fn below_max(&self, score: f64) -> bool {
        score < self.max || (!self.max_exclusive && score == self.max)
    }
}

/// One end of a range of members (Redis's `zlexrangespec` item).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Lowest,
    /// `+`: above every member.
    Highest,
    /// `[member`: this member included.
    Inclusive(Vec<u8>),
    /// `(member`: this member left out.
    Exclusive(Vec<u8>),
}

/// A range of members by their bytes, for members of equal score
/// (`ZRANGEBYLEX k [a (c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    /// Where the range starts.
    pub min: LexBound,
    /// Where it ends.
    pub max: LexBound,
}

impl LexRange {
    /// Whether `member` lies in the range.
    pub fn contains(&self, member: &[u8]) -> bool {
        let above_min = match &self.min {
            LexBound::Lowest => true,
            LexBound::Highest => false,
            LexBound::Inclusive(m) => member >= m.as_slice(),
            LexBound::Exclusive(m) => member > m.as_slice(),
        };
        let below_max = match &self.max {
            LexBound::Lowest => false,
            LexBound::Highest => true,
            LexBound::Inclusive(m) => member <= m.as_slice(),
            LexBound::Exclusive(m) => member < m.as_slice(),
        };
        above_min && below_max
    }
}

/// The members of one sorted set with their scores.
#[derive(Debug, Clone, Default)]
pub struct SortedSet {
    scores: HashMap<Vec<u8>, Score>,
    order: BTreeSet<(Score, Vec<u8>)>,
}

impl PartialEq for SortedSet {
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order
    }
}

impl Eq for SortedSet {}

impl SortedSet {
    /// An empty sorted set.
    pub fn new() -> SortedSet {
        SortedSet::default()
    }

    /// How many members it has.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether it has no member.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `member`, if it is one.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).map(|s| s.0)
    }

    /// Sets `member`'s score (adding it if new); returns whether it was
    /// new. `-0.0` is stored as `0.0`, as Redis prints it.
    pub fn insert(&mut self, member: Vec<u8>, score: f64) -> bool {
        let score = Score(if score == 0.0 { 0.0 } else { score });
        let old = self.scores.insert(member.clone(), score);
        if let Some(old) = old {
            self.order.remove(&(old, member.clone()));
        }
        self.order.insert((score, member));
        old.is_none()
    }

    /// Removes `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(score) => {
                self.order.remove(&(score, member.to_vec()));
                true
            }
            None => false,
        }
    }

    /// The 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = *self.scores.get(member)?;
        Some(self.order.range(..(score, member.to_vec())).count())
    }

    /// The members whose score lies in `range`, in ascending order.
    pub fn in_score_range(&self, range: &ScoreRange) -> Vec<(&[u8], f64)> {
        if range.min.is_nan() || range.max.is_nan() {
            return Vec::new();
        }
        self.order
            .range((Score(range.min), Vec::new())..)
            .map(|(s, m)| (m.as_slice(), s.0))
            .skip_while(|(_, s)| !range.above_min(*s))
            .take_while(|(_, s)| range.below_max(*s))
            .collect()
    }

    /// The members that lie in `range` by their bytes, in ascending order
    /// (meaningful when all scores are equal, as Redis requires).
    pub fn in_lex_range(&self, range: &LexRange) -> Vec<(&[u8], f64)> {
        self.iter().filter(|(m, _)| range.contains(m)).collect()
    }

    /// Members and scores in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.order.iter().map(|(s, m)| (m.as_slice(), s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_ordered_by_score_then_by_bytes() {
        let mut z = SortedSet::new();
        assert!(z.insert(b"b".to_vec(), 1.0));
        assert!(z.insert(b"a".to_vec(), 1.0));
        assert!(z.insert(b"c".to_vec(), -2.5));
        let order: Vec<_> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(
            order,
            vec![
                (b"c".to_vec(), -2.5),
                (b"a".to_vec(), 1.0),
                (b"b".to_vec(), 1.0)
            ]
        );
        assert_eq!(z.rank(b"b"), Some(2));
    }

    #[test]
    fn a_new_score_moves_the_member_and_is_not_a_new_member() {
        let mut z = SortedSet::new();
        z.insert(b"a".to_vec(), 1.0);
        z.insert(b"b".to_vec(), 2.0);
        assert!(!z.insert(b"a".to_vec(), 3.0));
        assert_eq!(z.len(), 2);
        assert_eq!(z.rank(b"a"), Some(1));
        assert!(z.remove(b"a"));
        assert!(!z.remove(b"a"));
        assert_eq!(z.iter().count(), 1);
    }

    #[test]
    fn negative_zero_is_stored_as_zero() {
        let mut z = SortedSet::new();
        z.insert(b"a".to_vec(), -0.0);
        assert!(z.score(b"a").unwrap().is_sign_positive());
    }
}
