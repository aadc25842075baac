//! Locks on etcd: the locks people run on etcd, over etcd's own gRPC API.
//!
//! etcd offers what Redis does not: a lease that clients keep alive
//! instead of a TTL per key, a revision on every key that only grows, and
//! waiting by watching the key ahead of you instead of polling. Each lock
//! here is the same code against a simulated member and a real one; only
//! the [`Dialer`](crate::Dialer) behind its [`channel`] differs.
//!
//! - [`session`]: a lease kept alive every TTL/3, as clientv3's
//!   `concurrency.Session` does;
//! - [`mutex`]: clientv3's `concurrency.Mutex`, as etcd 3.4 ships it and
//!   with 3.5's re-check of the waiter's own key;
//! - [`rungs`]: the four etcd rungs (`etcd-mutex-3.4`, `etcd-mutex`,
//!   `etcd-lock-rpc`, `etcd-fenced`) as [`Lock`](crate::Lock)s.

pub mod channel;
pub mod mutex;
pub mod rungs;
pub mod session;

use crate::error::LockError;

/// A gRPC status as a lock error: unreachable, timed out or leaderless is
/// worth another try, anything else is an answer.
pub fn status_error(s: tonic::Status) -> LockError {
    use tonic::Code;
    let transient = matches!(
        s.code(),
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Unknown
            | Code::Aborted
    ) && !s.message().contains("session is expired");
    LockError::Etcd {
        message: format!("{:?}: {}", s.code(), s.message()),
        transient,
    }
}
