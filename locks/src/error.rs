//! What can go wrong with a lock operation.

use std::time::Duration;

/// The error of an acquire, release, extend or validity check.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock was not acquired within the wait budget (someone else holds
    /// it; or, on the rungs that are not reentrant, the caller itself).
    #[error("lock {resource:?} not acquired within {waited:?} ({attempts} attempts)")]
    NotAcquired {
        /// The lock's name.
        resource: String,
        /// How long the caller waited, by its own clock.
        waited: Duration,
        /// How many times it tried.
        attempts: u32,
    },
    /// The caller no longer holds the lock it tried to release or extend:
    /// its lease expired, or another owner holds the key now.
    #[error("lock {resource:?} is not held by this owner (expired or taken by another)")]
    NotHeld {
        /// The lock's name.
        resource: String,
    },
    /// The lease's validity ran out by the holder's own clock (Redlock), or
    /// its watchdog could not renew it: the holder must stop writing.
    #[error("lease on {resource:?} is no longer valid: {why}")]
    LeaseLost {
        /// The lock's name.
        resource: String,
        /// What the check found.
        why: String,
    },
    /// The rung has no such operation (e.g. extending a lock with no expiry).
    #[error("{rung} does not support {operation}")]
    Unsupported {
        /// The rung's id.
        rung: &'static str,
        /// The operation asked for.
        operation: &'static str,
    },
    /// Redis answered with an error, or the connection failed or timed out.
    /// The outcome on the server is unknown.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// An etcd request failed: the gRPC status, and whether the same
    /// request may succeed later (the member was unreachable, timed out or
    /// had no leader) rather than being refused for good.
    #[error("etcd: {message}")]
    Etcd {
        /// The status code and message.
        message: String,
        /// Whether trying again may work.
        transient: bool,
    },
    /// A ZooKeeper request failed: the error ZooKeeper names (or the
    /// client's own, such as a lost connection), and whether the same
    /// request may succeed later (the connection was lost, the server was
    /// unreachable) rather than being refused for good (the session expired,
    /// the node is gone).
    #[error("zookeeper: {message}")]
    ZooKeeper {
        /// The error's name and what was asked.
        message: String,
        /// Whether trying again may work.
        transient: bool,
    },
    /// A database statement failed: the server's SQLSTATE and message (or
    /// the client's own, such as a lost connection), and whether the same
    /// statement may succeed later (the connection was lost, the server was
    /// shutting down) rather than being refused for good.
    #[error("database: {message}")]
    Database {
        /// The SQLSTATE and message, or what happened to the connection.
        message: String,
        /// Whether trying again may work.
        transient: bool,
    },
    /// A reply did not have the shape the lock's script promises.
    #[error("unexpected reply from {command}: {reply}")]
    Protocol {
        /// The command or script that answered.
        command: &'static str,
        /// The reply, printed.
        reply: String,
    },
}

impl LockError {
    /// Whether the server may have done what was asked although the caller
    /// saw an error (a timeout or a broken connection): neither success nor
    /// failure can be assumed.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self,
            LockError::Redis(_)
                | LockError::Etcd {
                    transient: true,
                    ..
                }
                | LockError::ZooKeeper {
                    transient: true,
                    ..
                }
                | LockError::Database {
                    transient: true,
                    ..
                }
        )
    }

    /// Whether the same request may succeed later: a connection refused,
    /// broken or timed out, or a server that says to wait (`LOADING`,
    /// `MASTERDOWN`, `TRYAGAIN`, `READONLY` after a failover, ...). An
    /// acquire goes on trying through these until its wait budget is spent.
    /// The redis crate's own retry advice decides, so that an answer that
    /// can never change (a wrong type, a script error, a reply of the wrong
    /// shape) still ends the acquire at once.
    pub fn transient(&self) -> bool {
        match self {
            LockError::Redis(e) => !matches!(e.retry_method(), redis::RetryMethod::NoRetry),
            LockError::Etcd { transient, .. }
            | LockError::ZooKeeper { transient, .. }
            | LockError::Database { transient, .. } => *transient,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn io_error(kind: io::ErrorKind) -> LockError {
        LockError::Redis(redis::RedisError::from(io::Error::new(kind, "test")))
    }

    #[test]
    fn connection_failures_and_timeouts_are_transient_and_their_outcome_unknown() {
        for kind in [
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::TimedOut,
            io::ErrorKind::UnexpectedEof,
        ] {
            let err = io_error(kind);
            assert!(err.transient(), "{kind:?}");
            assert!(err.outcome_unknown(), "{kind:?}");
        }
    }

    #[test]
    fn answers_that_cannot_change_are_not_transient() {
        let wrong_type = LockError::Redis(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "not an integer",
        )));
        assert!(!wrong_type.transient());
        let protocol = LockError::Protocol {
            command: "x",
            reply: "y".into(),
        };
        assert!(!protocol.transient());
        let not_held = LockError::NotHeld {
            resource: "k".into(),
        };
        assert!(!not_held.transient());
    }
}
