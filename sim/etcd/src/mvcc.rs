//! The multi-version store: one revision for the whole keyspace, and for
//! each key every version since the last compaction.
//!
//! As in etcd, every write transaction that changes something takes the
//! next revision, however many keys it writes; a key remembers the
//! revision that created it (`create_revision`), the one that last changed
//! it (`mod_revision`) and how many times it was written since it was
//! created (`version`). Deleting a key writes a tombstone, so a read at an
//! older revision still sees it, and a watch from an older revision still
//! gets its events. Locks rely on exactly these numbers: the lowest
//! `create_revision` under a prefix holds the lock.

use crate::errors;
use crate::keys::KeyRange;
use etcdproto::etcdserverpb::range_request::{SortOrder, SortTarget};
use etcdproto::etcdserverpb::{DeleteRangeRequest, PutRequest, RangeRequest};
use etcdproto::mvccpb::event::EventType;
use etcdproto::mvccpb::{Event, KeyValue};
use std::collections::{BTreeMap, VecDeque};
use tonic::Status;

/// How many events the store keeps for watches from past revisions; older
/// ones are compacted away, as etcd's auto-compaction would.
pub const EVENT_LOG_LIMIT: usize = 100_000;

/// One version of a key: its value, or the tombstone that deleted it.
#[derive(Debug, Clone)]
struct Version {
    kv: KeyValue,
    tombstone: bool,
}

/// What a range read found.
#[derive(Debug, Default)]
pub struct RangeResult {
    /// The keys, filtered, sorted and limited as asked.
    pub kvs: Vec<KeyValue>,
    /// Keys in the range before filters and the limit.
    pub count: i64,
    /// Whether the limit left keys out.
    pub more: bool,
}

/// The keyspace and its history.
#[derive(Debug)]
pub struct Store {
    revision: i64,
    compacted: i64,
    history: BTreeMap<Vec<u8>, Vec<Version>>,
    log: VecDeque<Event>,
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    /// An empty store at revision 1, where etcd starts.
    pub fn new() -> Store {
        Store {
            revision: 1,
            compacted: 0,
            history: BTreeMap::new(),
            log: VecDeque::new(),
        }
    }

    /// The revision of the last write.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// The revision of the last compaction (0: none).
    pub fn compacted(&self) -> i64 {
        self.compacted
    }

    /// The live version of `key` at revision `at`.
    fn version_at(&self, key: &[u8], at: i64) -> Option<&KeyValue> {
        let versions = self.history.get(key)?;
        let v = versions.iter().rev().find(|v| v.kv.mod_revision <= at)?;
        (!v.tombstone).then_some(&v.kv)
    }

    /// The live keys of `range` at revision `at`, in key order.
    fn live_at(&self, range: &KeyRange, at: i64) -> Vec<KeyValue> {
        self.history
            .range::<[u8], _>(range.bounds())
            .filter_map(|(k, _)| self.version_at(k, at).cloned())
            .collect()
    }

    /// The current value of one key.
    pub fn get(&self, key: &[u8]) -> Option<&KeyValue> {
        self.version_at(key, self.revision)
    }

    /// The revision a read at `asked` (0: latest) sees, or why it cannot.
    pub fn read_revision(&self, asked: i64) -> Result<i64, Status> {
        match asked {
            r if r <= 0 => Ok(self.revision),
            r if r > self.revision => Err(errors::future_revision()),
            r if r < self.compacted => Err(errors::compacted()),
            r => Ok(r),
        }
    }

    /// A range read, as etcd 3.4's apply step does it: count every key in
    /// the range, drop those outside the revision filters, sort, then cut
    /// at the limit.
    pub fn range(&self, req: &RangeRequest, at: i64) -> RangeResult {
        let range = KeyRange::new(&req.key, &req.range_end);
        let mut kvs = self.live_at(&range, at);
        let count = kvs.len() as i64;
        if req.count_only {
            return RangeResult {
                kvs: Vec::new(),
                count,
                more: false,
            };
        }
        kvs.retain(|kv| within_filters(req, kv));
        sort(req, &mut kvs);
        let mut more = false;
        if req.limit > 0 && kvs.len() > req.limit as usize {
            kvs.truncate(req.limit as usize);
            more = true;
        }
        if req.keys_only {
            for kv in &mut kvs {
                kv.value.clear();
            }
        }
        RangeResult { kvs, count, more }
    }

    /// Starts a write transaction at the next revision.
    pub fn write(&mut self) -> WriteTxn<'_> {
        let rev = self.revision + 1;
        WriteTxn {
            store: self,
            rev,
            events: Vec::new(),
        }
    }

    /// The events of revisions `from` and later, in order; `None` if
    /// compaction has removed some of them.
    pub fn events_since(&self, from: i64) -> Option<Vec<Event>> {
        if from <= self.compacted {
            return None;
        }
        Some(
            self.log
                .iter()
                .filter(|e| e.kv.as_ref().is_some_and(|kv| kv.mod_revision >= from))
                .cloned()
                .collect(),
        )
    }

    /// Forgets every version older than `rev` that a read at `rev` or
    /// later cannot see.
    pub fn compact(&mut self, rev: i64) -> Result<(), Status> {
        if rev <= self.compacted {
            return Err(errors::compacted());
        }
        if rev > self.revision {
            return Err(errors::future_revision());
        }
        self.compacted = rev;
        self.history.retain(|_, versions| {
            let keep_from = versions
                .iter()
                .rposition(|v| v.kv.mod_revision <= rev)
                .unwrap_or(0);
            versions.drain(..keep_from);
            !(versions.len() == 1 && versions[0].tombstone && versions[0].kv.mod_revision <= rev)
        });
        self.log
            .retain(|e| e.kv.as_ref().is_some_and(|kv| kv.mod_revision > rev));
        Ok(())
    }

    fn record(&mut self, events: Vec<Event>, rev: i64) {
        self.revision = rev;
        self.log.extend(events);
        while self.log.len() > EVENT_LOG_LIMIT {
            let oldest = self.log.pop_front();
            if let Some(kv) = oldest.and_then(|e| e.kv) {
                self.compacted = self.compacted.max(kv.mod_revision - 1);
            }
        }
    }
}

fn within_filters(req: &RangeRequest, kv: &KeyValue) -> bool {
    let above = |v: i64, min: i64| min == 0 || v >= min;
    let below = |v: i64, max: i64| max == 0 || v <= max;
    above(kv.mod_revision, req.min_mod_revision)
        && below(kv.mod_revision, req.max_mod_revision)
        && above(kv.create_revision, req.min_create_revision)
        && below(kv.create_revision, req.max_create_revision)
}

fn sort(req: &RangeRequest, kvs: &mut [KeyValue]) {
    let target = SortTarget::try_from(req.sort_target).unwrap_or(SortTarget::Key);
    let mut order = SortOrder::try_from(req.sort_order).unwrap_or(SortOrder::None);
    // The store answers in key order already; etcd sorts ascending by
    // default only when the target is not the key.
    if target != SortTarget::Key && order == SortOrder::None {
        order = SortOrder::Ascend;
    }
    if order == SortOrder::None {
        return;
    }
    match target {
        SortTarget::Key => kvs.sort_by(|a, b| a.key.cmp(&b.key)),
        SortTarget::Version => kvs.sort_by_key(|kv| kv.version),
        SortTarget::Create => kvs.sort_by_key(|kv| kv.create_revision),
        SortTarget::Mod => kvs.sort_by_key(|kv| kv.mod_revision),
        SortTarget::Value => kvs.sort_by(|a, b| a.value.cmp(&b.value)),
    }
    if order == SortOrder::Descend {
        kvs.reverse();
    }
}

/// A write transaction: its writes share one revision, and its reads see
/// them. Dropped without [`WriteTxn::commit`], it still holds its writes
/// in the history, so commit is the only way out; see [`Store::write`].
#[derive(Debug)]
pub struct WriteTxn<'a> {
    store: &'a mut Store,
    rev: i64,
    events: Vec<Event>,
}

impl WriteTxn<'_> {
    /// The revision reads in this transaction see.
    pub fn read_revision(&self) -> i64 {
        if self.events.is_empty() {
            self.store.revision
        } else {
            self.rev
        }
    }

    /// The store as this transaction sees it.
    pub fn store(&self) -> &Store {
        self.store
    }

    /// Writes a key. The caller has checked the request (lease, ignore
    /// flags against the key's presence).
    pub fn put(&mut self, req: &PutRequest) -> Option<KeyValue> {
        let prev = self.store.version_at(&req.key, self.rev).cloned();
        let value = match (&prev, req.ignore_value) {
            (Some(p), true) => p.value.clone(),
            _ => req.value.clone(),
        };
        let lease = match (&prev, req.ignore_lease) {
            (Some(p), true) => p.lease,
            _ => req.lease,
        };
        let kv = KeyValue {
            key: req.key.clone(),
            create_revision: prev.as_ref().map_or(self.rev, |p| p.create_revision),
            mod_revision: self.rev,
            version: prev.as_ref().map_or(1, |p| p.version + 1),
            value,
            lease,
        };
        self.push(kv.clone(), false);
        self.events.push(Event {
            r#type: EventType::Put as i32,
            kv: Some(kv),
            prev_kv: prev.clone(),
        });
        prev
    }

    /// Deletes every live key in the request's range; returns them.
    pub fn delete_range(&mut self, req: &DeleteRangeRequest) -> Vec<KeyValue> {
        let range = KeyRange::new(&req.key, &req.range_end);
        let doomed = self.store.live_at(&range, self.rev);
        for prev in &doomed {
            let tomb = KeyValue {
                key: prev.key.clone(),
                mod_revision: self.rev,
                ..KeyValue::default()
            };
            self.push(tomb.clone(), true);
            self.events.push(Event {
                r#type: EventType::Delete as i32,
                kv: Some(tomb),
                prev_kv: Some(prev.clone()),
            });
        }
        doomed
    }

    fn push(&mut self, kv: KeyValue, tombstone: bool) {
        let versions = self.store.history.entry(kv.key.clone()).or_default();
        // A second write of one key in one transaction replaces the first.
        if versions
            .last()
            .is_some_and(|v| v.kv.mod_revision == self.rev)
        {
            versions.pop();
        }
        versions.push(Version { kv, tombstone });
    }

    /// Ends the transaction: the revision moves on if anything changed.
    /// Returns the events, in the order they happened.
    pub fn commit(self) -> Vec<Event> {
        let events = self.events;
        if !events.is_empty() {
            self.store.record(events.clone(), self.rev);
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(store: &mut Store, key: &str, value: &str) -> i64 {
        let mut txn = store.write();
        txn.put(&PutRequest {
            key: key.into(),
            value: value.into(),
            ..PutRequest::default()
        });
        txn.commit();
        store.revision()
    }

    fn get_all(store: &Store, prefix: &str, at: i64) -> Vec<KeyValue> {
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().unwrap() += 1;
        let req = RangeRequest {
            key: prefix.into(),
            range_end: end,
            ..RangeRequest::default()
        };
        store.range(&req, at).kvs
    }

    #[test]
    fn each_write_takes_the_next_revision_and_keeps_the_create_revision() {
        let mut s = Store::new();
        assert_eq!(put(&mut s, "a", "1"), 2);
        assert_eq!(put(&mut s, "a", "2"), 3);
        let kv = s.get(b"a").unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (2, 3, 2));
    }

    #[test]
    fn a_read_at_an_old_revision_sees_a_deleted_key() {
        let mut s = Store::new();
        put(&mut s, "k/a", "1");
        let mut txn = s.write();
        txn.delete_range(&DeleteRangeRequest {
            key: "k/a".into(),
            ..DeleteRangeRequest::default()
        });
        txn.commit();
        assert!(get_all(&s, "k/", s.revision()).is_empty());
        assert_eq!(get_all(&s, "k/", 2).len(), 1);
    }

    #[test]
    fn a_transaction_that_writes_nothing_keeps_the_revision() {
        let mut s = Store::new();
        let mut txn = s.write();
        txn.delete_range(&DeleteRangeRequest {
            key: "missing".into(),
            ..DeleteRangeRequest::default()
        });
        assert!(txn.commit().is_empty());
        assert_eq!(s.revision(), 1);
    }

    #[test]
    fn a_recreated_key_starts_a_new_life() {
        let mut s = Store::new();
        put(&mut s, "a", "1");
        let mut txn = s.write();
        txn.delete_range(&DeleteRangeRequest {
            key: "a".into(),
            ..DeleteRangeRequest::default()
        });
        txn.commit();
        put(&mut s, "a", "2");
        let kv = s.get(b"a").unwrap();
        assert_eq!((kv.create_revision, kv.version), (4, 1));
    }

    #[test]
    fn compaction_forgets_what_no_later_read_can_see() {
        let mut s = Store::new();
        put(&mut s, "a", "1");
        put(&mut s, "a", "2");
        s.compact(3).unwrap();
        assert_eq!(
            s.read_revision(2).unwrap_err().message(),
            errors::compacted().message()
        );
        assert_eq!(s.get(b"a").unwrap().value, b"2");
        assert!(s.events_since(3).is_none());
        assert!(s.events_since(4).is_some());
    }
}
