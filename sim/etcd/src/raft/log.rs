//! A member's log and its commit index.
//!
//! Without snapshots or compaction the whole log stays in memory, entry
//! `i` at position `i - 1`, so every lookup is a slice index.

use super::message::Entry;

/// The entries and how far they are known to be committed.
#[derive(Clone, Debug, Default)]
pub(crate) struct RaftLog {
    entries: Vec<Entry>,
    committed: u64,
}

/// Why a leader's entries could not be appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AppendError {
    /// The entry before them is missing here, or has another term.
    PrevMismatch,
    /// They would overwrite a committed entry: only a misbehaving or
    /// forged leader sends that, so the message is dropped.
    ConflictsWithCommitted,
    /// The entries' indexes do not run on from `prev_index` one by one.
    Malformed,
}

impl RaftLog {
    /// Every entry, index 1 first.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The index of the last entry (0 when empty).
    pub(crate) fn last_index(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The term of the last entry (0 when empty).
    pub(crate) fn last_term(&self) -> u64 {
        self.entries.last().map_or(0, |entry| entry.term)
    }

    /// The highest index known to be committed.
    pub(crate) fn committed(&self) -> u64 {
        self.committed
    }

    /// The term of entry `index`: 0 for index 0 (the empty prefix every
    /// log shares), `None` past the end.
    pub(crate) fn term(&self, index: u64) -> Option<u64> {
        if index == 0 {
            return Some(0);
        }
        self.entry(index).map(|entry| entry.term)
    }

    /// Entry `index`, if present.
    pub(crate) fn entry(&self, index: u64) -> Option<&Entry> {
        let position = usize::try_from(index.checked_sub(1)?).ok()?;
        self.entries.get(position)
    }

    /// Whether this log has entry `index` with term `term`, so that
    /// (Log Matching) it agrees with the sender up to there.
    pub(crate) fn matches(&self, index: u64, term: u64) -> bool {
        self.term(index) == Some(term)
    }

    /// Whether a log ending at (`last_index`, `last_term`) is at least as
    /// up to date as this one: a later last term, or the same last term
    /// and at least as long.
    pub(crate) fn is_up_to_date(&self, last_index: u64, last_term: u64) -> bool {
        (last_term, last_index) >= (self.last_term(), self.last_index())
    }

    /// The entries from `from` on, at most `limit` of them.
    pub(crate) fn slice(&self, from: u64, limit: usize) -> Vec<Entry> {
        let start = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        let start = start.min(self.entries.len());
        let end = start.saturating_add(limit).min(self.entries.len());
        self.entries[start..end].to_vec()
    }

    /// The committed entries after `applied`.
    pub(crate) fn committed_after(&self, applied: u64) -> Vec<Entry> {
        let count = self.committed.saturating_sub(applied);
        self.slice(applied + 1, usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// A leader's own new entry, at the end.
    pub(crate) fn push(&mut self, term: u64, data: Vec<u8>) -> u64 {
        let index = self.last_index() + 1;
        self.entries.push(Entry { term, index, data });
        index
    }

    /// A follower's append: `entries` follow (`prev_index`, `prev_term`).
    /// Entries already here with the same term are kept (a duplicate or
    /// stale message must not cut off what a later one appended); from
    /// the first conflicting one on, this log's suffix is replaced.
    /// Returns the index of the last entry the message vouches for.
    pub(crate) fn append_after(
        &mut self,
        prev_index: u64,
        prev_term: u64,
        entries: &[Entry],
    ) -> Result<u64, AppendError> {
        let consecutive = entries
            .iter()
            .zip(prev_index.saturating_add(1)..)
            .all(|(entry, index)| entry.index == index);
        if !consecutive {
            return Err(AppendError::Malformed);
        }
        if !self.matches(prev_index, prev_term) {
            return Err(AppendError::PrevMismatch);
        }
        let last_new = prev_index + entries.len() as u64;
        let Some(conflict) = entries
            .iter()
            .position(|entry| self.term(entry.index) != Some(entry.term))
        else {
            return Ok(last_new);
        };
        let first_new = &entries[conflict];
        if first_new.index <= self.committed {
            return Err(AppendError::ConflictsWithCommitted);
        }
        self.entries.truncate((first_new.index - 1) as usize);
        self.entries.extend_from_slice(&entries[conflict..]);
        Ok(last_new)
    }

    /// Raises the commit index to `index` (never lowers it, and never
    /// past the last entry, which a valid leader never asks for).
    pub(crate) fn commit_to(&mut self, index: u64) -> bool {
        let index = index.min(self.last_index());
        if index > self.committed {
            self.committed = index;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of_terms(terms: &[u64]) -> RaftLog {
        let mut log = RaftLog::default();
        for &term in terms {
            log.push(term, Vec::new());
        }
        log
    }

    fn entries(first_index: u64, terms: &[u64]) -> Vec<Entry> {
        terms
            .iter()
            .zip(first_index..)
            .map(|(&term, index)| Entry {
                term,
                index,
                data: Vec::new(),
            })
            .collect()
    }

    fn terms_of(log: &RaftLog) -> Vec<u64> {
        log.entries().iter().map(|entry| entry.term).collect()
    }

    #[test]
    fn an_append_whose_predecessor_is_missing_is_refused() {
        let mut log = log_of_terms(&[1, 1]);
        assert_eq!(
            log.append_after(3, 1, &entries(4, &[1])),
            Err(AppendError::PrevMismatch)
        );
        assert_eq!(
            log.append_after(2, 2, &entries(3, &[2])),
            Err(AppendError::PrevMismatch)
        );
    }

    #[test]
    fn entries_that_skip_an_index_are_malformed() {
        let mut log = log_of_terms(&[1]);
        assert_eq!(
            log.append_after(1, 1, &entries(3, &[1])),
            Err(AppendError::Malformed)
        );
    }

    #[test]
    fn a_conflicting_suffix_is_replaced() {
        let mut log = log_of_terms(&[1, 1, 1, 1]);
        assert_eq!(log.append_after(2, 1, &entries(3, &[2])), Ok(3));
        assert_eq!(terms_of(&log), vec![1, 1, 2]);
    }

    #[test]
    fn a_stale_append_keeps_the_entries_after_it() {
        let mut log = log_of_terms(&[1, 1, 1, 1]);
        assert_eq!(log.append_after(1, 1, &entries(2, &[1])), Ok(2));
        assert_eq!(terms_of(&log), vec![1, 1, 1, 1]);
    }

    #[test]
    fn a_committed_entry_is_never_overwritten() {
        let mut log = log_of_terms(&[1, 1, 1]);
        log.commit_to(2);
        assert_eq!(
            log.append_after(1, 1, &entries(2, &[2])),
            Err(AppendError::ConflictsWithCommitted)
        );
        assert_eq!(terms_of(&log), vec![1, 1, 1]);
    }

    #[test]
    fn the_commit_index_never_goes_back_nor_past_the_end() {
        let mut log = log_of_terms(&[1, 1]);
        assert!(log.commit_to(5));
        assert_eq!(log.committed(), 2);
        assert!(!log.commit_to(1));
        assert_eq!(log.committed(), 2);
    }

    #[test]
    fn up_to_date_compares_last_terms_then_lengths() {
        let log = log_of_terms(&[1, 2]);
        assert!(log.is_up_to_date(1, 3));
        assert!(log.is_up_to_date(2, 2));
        assert!(!log.is_up_to_date(5, 1));
        assert!(!log.is_up_to_date(1, 2));
    }
}
