//! The session tracker, as ZooKeeper's `SessionTrackerImpl` and
//! `ExpiryQueue` run it: every packet from a session's client pushes its
//! deadline to `now + timeout`, rounded up to the next tick, and the
//! sessions whose tick has come expire together.
//!
//! Time here is milliseconds on the server's clock since it last started
//! serving: the caller reads `tokio::time` (turmoil's simulated clock
//! inside turmoil) and passes it in, so this module is plain data.
//!
//! Session ids are ZooKeeper's shape, `(server id << 56) | counter`, with
//! the counter starting at 0 rather than at the boot time (determinism);
//! the password is ZooKeeper's own function of the id, so a client sees
//! what a real server would give the same id.

use std::collections::{BTreeMap, BTreeSet};

/// The server id in the top byte of session ids (ZooKeeper's standalone
/// server uses 1).
const SERVER_ID: i64 = 1;

/// ZooKeeper's constant mixed into a session's password seed.
const SUPER_SECRET: i64 = 0xB341_5C00;

/// One session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its id.
    pub id: i64,
    /// Its negotiated timeout.
    pub timeout_ms: i32,
    /// The tick at which it expires unless touched.
    pub expires_at_ms: u64,
    /// Whether it is being closed (closed or expired, its close not yet
    /// applied): a closing session is not touched any more.
    pub closing: bool,
}

/// Every live session, and the expiry buckets.
#[derive(Debug, Clone)]
pub struct Sessions {
    tick_ms: u64,
    server_id: i64,
    sessions: BTreeMap<i64, Session>,
    buckets: BTreeMap<u64, BTreeSet<i64>>,
    next_counter: i64,
}

impl Sessions {
    /// No sessions; deadlines rounded to `tick_ms`.
    pub fn new(tick_ms: u64) -> Sessions {
        Sessions::for_server(tick_ms, SERVER_ID)
    }

    /// No sessions, for server `server_id` of an ensemble: its sessions'
    /// ids carry it in their top byte, so no two servers give out one id.
    pub fn for_server(tick_ms: u64, server_id: i64) -> Sessions {
        Sessions {
            tick_ms: tick_ms.max(1),
            server_id,
            sessions: BTreeMap::new(),
            buckets: BTreeMap::new(),
            next_counter: 0,
        }
    }

    /// `roundToNextInterval`: the first tick strictly after `t_ms`.
    fn round_up(&self, t_ms: u64) -> u64 {
        (t_ms / self.tick_ms + 1) * self.tick_ms
    }

    /// The id the next session gets.
    pub fn next_id(&self) -> i64 {
        (self.server_id << 56) | self.next_counter
    }

    /// Takes the next id without tracking it yet: an ensemble member's new
    /// session is tracked once its createSession is applied
    /// ([`Sessions::insert`]).
    pub fn reserve_id(&mut self) -> i64 {
        let id = self.next_id();
        self.next_counter += 1;
        id
    }

    /// Tracks the session `id` (its createSession applied), unless it is
    /// already tracked.
    pub fn insert(&mut self, id: i64, timeout_ms: i32, now_ms: u64) {
        if self.sessions.contains_key(&id) {
            return;
        }
        self.sessions.insert(
            id,
            Session {
                id,
                timeout_ms,
                expires_at_ms: 0,
                closing: false,
            },
        );
        self.touch(id, timeout_ms, now_ms);
    }

    /// Starts tracking a new session (`createSession`): returns its id.
    pub fn create(&mut self, timeout_ms: i32, now_ms: u64) -> i64 {
        let id = self.next_id();
        self.next_counter += 1;
        self.sessions.insert(
            id,
            Session {
                id,
                timeout_ms,
                expires_at_ms: 0,
                closing: false,
            },
        );
        self.touch(id, timeout_ms, now_ms);
        id
    }

    /// The ids of the live sessions, in order.
    pub fn ids(&self) -> Vec<i64> {
        self.sessions.keys().copied().collect()
    }

    /// The session `id`, if live.
    pub fn get(&self, id: i64) -> Option<&Session> {
        self.sessions.get(&id)
    }

    /// Pushes a session's deadline to `now + timeout` rounded up to a tick;
    /// false (and nothing changes) when the session is unknown or closing.
    pub fn touch(&mut self, id: i64, timeout_ms: i32, now_ms: u64) -> bool {
        let expires = self.round_up(now_ms + timeout_ms.max(0) as u64);
        let Some(session) = self.sessions.get_mut(&id) else {
            return false;
        };
        if session.closing {
            return false;
        }
        let old = session.expires_at_ms;
        session.timeout_ms = timeout_ms;
        if old == expires {
            return true;
        }
        session.expires_at_ms = expires;
        if let Some(bucket) = self.buckets.get_mut(&old) {
            bucket.remove(&id);
            if bucket.is_empty() {
                self.buckets.remove(&old);
            }
        }
        self.buckets.entry(expires).or_default().insert(id);
        true
    }

    /// Marks a session closing (its close is under way).
    pub fn set_closing(&mut self, id: i64) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.closing = true;
        }
    }

    /// Forgets a session (its close was applied).
    pub fn remove(&mut self, id: i64) {
        if let Some(s) = self.sessions.remove(&id)
            && let Some(bucket) = self.buckets.get_mut(&s.expires_at_ms)
        {
            bucket.remove(&id);
            if bucket.is_empty() {
                self.buckets.remove(&s.expires_at_ms);
            }
        }
    }

    /// The sessions whose deadline has come by `now_ms`, oldest bucket
    /// first, marked closing.
    pub fn expire(&mut self, now_ms: u64) -> Vec<i64> {
        let due: Vec<u64> = self.buckets.range(..=now_ms).map(|(t, _)| *t).collect();
        let mut expired = Vec::new();
        for t in due {
            for id in self.buckets.remove(&t).unwrap_or_default() {
                if let Some(s) = self.sessions.get_mut(&id) {
                    s.closing = true;
                    expired.push(id);
                }
            }
        }
        expired
    }

    /// After the server restarts at `now_ms`: every session gets its full
    /// timeout again from now (ZooKeeper reloads them and restarts their
    /// clocks).
    pub fn restart(&mut self, now_ms: u64) {
        self.buckets.clear();
        let ids: Vec<(i64, i32)> = self
            .sessions
            .values()
            .map(|s| (s.id, s.timeout_ms))
            .collect();
        for (id, timeout_ms) in ids {
            if let Some(s) = self.sessions.get_mut(&id) {
                s.expires_at_ms = 0;
                // A close that never got applied (an ensemble's leader
                // lost office first) is tried again on the new deadline.
                s.closing = false;
            }
            self.touch(id, timeout_ms, now_ms);
        }
    }

    /// The earliest deadline, if any session is tracked.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.buckets.keys().next().copied()
    }
}

/// A session's password: `new java.util.Random(id ^ 0xB3415C00).nextBytes`
/// of 16 bytes, as ZooKeeper derives it.
pub fn password(id: i64) -> Vec<u8> {
    let mut random = JavaRandom::new(id ^ SUPER_SECRET);
    let mut out = Vec::with_capacity(16);
    while out.len() < 16 {
        let mut word = random.next_int();
        for _ in 0..4.min(16 - out.len()) {
            out.push(word as u8);
            word >>= 8;
        }
    }
    out
}

/// `java.util.Random`'s linear congruential generator.
struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    const MULTIPLIER: i64 = 0x5_DEEC_E66D;
    const MASK: i64 = (1 << 48) - 1;

    fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed ^ Self::MULTIPLIER) & Self::MASK,
        }
    }

    fn next_int(&mut self) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.seed >> 16) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_rounded_up_to_the_next_tick() {
        let mut sessions = Sessions::new(500);
        let id = sessions.create(10_000, 1234);
        assert_eq!(sessions.get(id).map(|s| s.expires_at_ms), Some(11_500));
        assert!(sessions.expire(11_499).is_empty());
        assert_eq!(sessions.expire(11_500), vec![id]);
    }

    #[test]
    fn a_touch_postpones_expiry_and_a_closing_session_is_not_touched() {
        let mut sessions = Sessions::new(500);
        let id = sessions.create(4_000, 0);
        assert!(sessions.touch(id, 4_000, 3_000));
        assert!(sessions.expire(4_500).is_empty());
        assert_eq!(sessions.expire(7_500), vec![id]);
        assert!(!sessions.touch(id, 4_000, 7_600));
        sessions.remove(id);
        assert!(!sessions.touch(id, 4_000, 7_600));
    }

    #[test]
    fn a_restart_gives_every_session_its_full_timeout_again() {
        let mut sessions = Sessions::new(500);
        let id = sessions.create(4_000, 90_000);
        sessions.restart(0);
        assert_eq!(sessions.next_deadline_ms(), Some(4_500));
        assert_eq!(sessions.expire(4_500), vec![id]);
    }

    #[test]
    fn session_ids_carry_the_server_id_and_count_up() {
        let mut sessions = Sessions::new(500);
        let first = sessions.create(4_000, 0);
        let second = sessions.create(4_000, 0);
        assert_eq!(first, 0x0100_0000_0000_0000);
        assert_eq!(second, first + 1);
    }

    #[test]
    fn passwords_are_javas_random_bytes_of_the_id() {
        // new Random(0x100000000000000L ^ 0xB3415C00L).nextBytes(new byte[16])
        let expected = [
            242, 42, 205, 74, 151, 230, 157, 109, 32, 164, 155, 182, 56, 234, 219, 56,
        ];
        assert_eq!(password(0x0100_0000_0000_0000), expected);
        assert_ne!(password(1), password(2));
    }
}
