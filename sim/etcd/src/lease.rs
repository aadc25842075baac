//! Leases: a TTL that a client keeps alive, and the keys that die with it.
//!
//! A lease expires on the member's own monotonic clock (tokio's, which is
//! simulated time inside turmoil), never on a wall clock: a clock jump
//! does not touch it. As in etcd, a grant below the minimum TTL is raised
//! to it, and an expired lease is revoked by a loop that looks every
//! [`REVOKE_CHECK_MS`], deleting its keys in one write.

use crate::errors;
use std::collections::{BTreeMap, BTreeSet};
use tokio::time::{Duration, Instant};
use tonic::Status;

/// What a promoted member adds to every lease's TTL: etcd's lessor is
/// promoted with the election timeout (1 s by default) as its extension,
/// which covers renewals the deposed leader may have granted last.
pub const PROMOTION_EXTEND: Duration = Duration::from_secs(1);

/// The shortest TTL etcd grants with its default timing: 1.5 election
/// timeouts of 1 s, rounded up to whole seconds.
pub const MIN_TTL_S: i64 = 2;

/// The longest TTL etcd grants.
pub const MAX_TTL_S: i64 = 9_000_000_000;

/// How often the member looks for expired leases (etcd's lessor loop).
pub const REVOKE_CHECK_MS: u64 = 500;

/// One lease.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The TTL it was granted, in seconds.
    pub granted_ttl_s: i64,
    /// When it expires unless kept alive.
    pub expiry: Instant,
    /// The keys attached to it.
    pub keys: BTreeSet<Vec<u8>>,
}

impl Lease {
    /// Whole seconds left (etcd truncates), negative once expired.
    pub fn remaining_s(&self, now: Instant) -> i64 {
        if now >= self.expiry {
            return -1;
        }
        (self.expiry - now).as_secs() as i64
    }
}

/// Every lease of a member, by ID.
#[derive(Debug, Default)]
pub struct Lessor {
    leases: BTreeMap<i64, Lease>,
    /// Where the next server-chosen ID comes from.
    next_id: i64,
}

impl Lessor {
    /// A lessor whose server-chosen IDs start at `first_id` (etcd derives
    /// them from the member ID; any unique positive number will do).
    pub fn new(first_id: i64) -> Lessor {
        Lessor {
            leases: BTreeMap::new(),
            next_id: first_id,
        }
    }

    /// Grants a lease of `ttl_s` (raised to [`MIN_TTL_S`]) with `id`, or a
    /// new ID when `id` is 0. Returns the ID and the TTL granted.
    pub fn grant(&mut self, id: i64, ttl_s: i64, now: Instant) -> Result<(i64, i64), Status> {
        if ttl_s > MAX_TTL_S {
            return Err(errors::lease_ttl_too_large());
        }
        let id = if id == 0 { self.fresh_id() } else { id };
        if self.leases.contains_key(&id) {
            return Err(errors::lease_exists());
        }
        let ttl_s = ttl_s.max(MIN_TTL_S);
        self.leases.insert(
            id,
            Lease {
                granted_ttl_s: ttl_s,
                expiry: now + Duration::from_secs(ttl_s as u64),
                keys: BTreeSet::new(),
            },
        );
        Ok((id, ttl_s))
    }

    /// A new ID no lease has, from this lessor's count.
    pub fn fresh_id(&mut self) -> i64 {
        while self.leases.contains_key(&self.next_id) || self.next_id <= 0 {
            self.next_id = self.next_id.wrapping_add(1);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// The lease with this ID, if it exists.
    pub fn get(&self, id: i64) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Whether a lease with this ID exists (expired but not yet revoked
    /// counts: etcd attaches keys to it until the revoke loop runs).
    pub fn exists(&self, id: i64) -> bool {
        self.leases.contains_key(&id)
    }

    /// Keeps a lease alive: its expiry moves to a full TTL from now.
    /// Returns the granted TTL; an expired lease cannot be renewed.
    pub fn renew(&mut self, id: i64, now: Instant) -> Result<i64, Status> {
        let lease = self
            .leases
            .get_mut(&id)
            .ok_or_else(errors::lease_not_found)?;
        if now >= lease.expiry {
            return Err(errors::lease_not_found());
        }
        lease.expiry = now + Duration::from_secs(lease.granted_ttl_s as u64);
        Ok(lease.granted_ttl_s)
    }

    /// Gives every lease its full TTL plus [`PROMOTION_EXTEND`] from now:
    /// a new leader does this on promotion, since it cannot know how long
    /// the old one had counted.
    pub fn refresh_all(&mut self, now: Instant) {
        for lease in self.leases.values_mut() {
            lease.expiry = now + PROMOTION_EXTEND + Duration::from_secs(lease.granted_ttl_s as u64);
        }
    }

    /// Removes a lease; returns its keys, which the caller deletes.
    pub fn revoke(&mut self, id: i64) -> Result<BTreeSet<Vec<u8>>, Status> {
        self.leases
            .remove(&id)
            .map(|l| l.keys)
            .ok_or_else(errors::lease_not_found)
    }

    /// The IDs of leases whose time is up.
    pub fn expired(&self, now: Instant) -> Vec<i64> {
        self.leases
            .iter()
            .filter(|(_, l)| now >= l.expiry)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Every lease ID, in order.
    pub fn ids(&self) -> Vec<i64> {
        self.leases.keys().copied().collect()
    }

    /// Attaches a key to a lease (a put with that lease).
    pub fn attach(&mut self, id: i64, key: &[u8]) {
        if let Some(l) = self.leases.get_mut(&id) {
            l.keys.insert(key.to_vec());
        }
    }

    /// Detaches a key from a lease (the key was deleted or put again).
    pub fn detach(&mut self, id: i64, key: &[u8]) {
        if let Some(l) = self.leases.get_mut(&id) {
            l.keys.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_ttl_is_raised_to_the_minimum() {
        let mut l = Lessor::new(1);
        let now = Instant::now();
        assert_eq!(l.grant(0, 1, now).unwrap().1, MIN_TTL_S);
    }

    #[test]
    fn an_expired_lease_cannot_be_renewed() {
        let mut l = Lessor::new(1);
        let now = Instant::now();
        let (id, ttl) = l.grant(0, 5, now).unwrap();
        let later = now + Duration::from_secs(ttl as u64);
        assert_eq!(l.expired(later), vec![id]);
        assert!(l.renew(id, later).is_err());
    }

    #[test]
    fn a_renewal_restarts_the_full_ttl() {
        let mut l = Lessor::new(1);
        let now = Instant::now();
        let (id, _) = l.grant(0, 10, now).unwrap();
        let later = now + Duration::from_secs(9);
        l.renew(id, later).unwrap();
        assert!(l.expired(now + Duration::from_secs(15)).is_empty());
        assert_eq!(l.get(id).unwrap().remaining_s(later), 10);
    }

    #[test]
    fn a_promotion_gives_every_lease_its_ttl_and_one_second_more() {
        let mut l = Lessor::new(1);
        let now = Instant::now();
        let (id, _) = l.grant(0, 3, now).unwrap();
        let promoted = now + Duration::from_secs(2);
        l.refresh_all(promoted);
        assert!(
            l.expired(promoted + Duration::from_millis(3_999))
                .is_empty()
        );
        assert_eq!(l.expired(promoted + Duration::from_secs(4)), vec![id]);
    }

    #[test]
    fn a_named_id_in_use_is_refused() {
        let mut l = Lessor::new(1);
        let now = Instant::now();
        l.grant(7, 10, now).unwrap();
        assert!(l.grant(7, 10, now).is_err());
    }
}
