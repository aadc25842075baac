//! A connection pool, as an application process keeps one: at most
//! `connections` sessions open at once, each checked out by one caller
//! at a time and handed back when the caller is done with it, to be
//! checked out next by whichever caller asks.
//!
//! This is how sqlx's `Pool`, ActiveRecord's connection pool or
//! node-postgres' `Pool` run a statement given to the pool itself: they
//! check a connection out for that statement alone and return it after.
//! A session-level lock taken that way stays with the *connection*, not
//! with the caller: the connection goes back to the pool still holding
//! it, and the next caller in the process to get that connection is
//! inside a lock it never took (PostgreSQL's advisory locks are
//! re-entrant within a session). The `pg-advisory-pooled` rung runs its
//! statements through a pool for exactly this reason.
//!
//! A checked-out session whose connection is lost is not handed back: the
//! pool opens another in its place when it is next needed. Waiting for a
//! free connection is bounded, as a pool's acquire timeout is.

use crate::database::session::{DbError, Opener, Session};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A pool of sessions on one server, shared by the callers of one
/// process.
pub struct SessionPool {
    open: Opener,
    /// One permit per connection the pool may have checked out at once.
    permits: Arc<Semaphore>,
    /// Open sessions no one has checked out, the most recently returned
    /// last (handed out first, as sqlx does).
    idle: Mutex<Vec<Arc<dyn Session>>>,
    /// How many sessions the pool has opened, to number the next.
    opened: Mutex<u64>,
    /// The longest a caller waits for a free connection.
    acquire_timeout: Duration,
    /// How many connections it keeps at most.
    connections: u32,
    /// Where its connections' I/O runs, if not on the caller's runtime.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for SessionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPool")
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

impl SessionPool {
    /// A pool of at most `connections` sessions (at least one) made by
    /// `open`, whose callers wait at most `acquire_timeout` for one.
    pub(crate) fn new(open: Opener, connections: u32, acquire_timeout: Duration) -> SessionPool {
        let connections = connections.max(1);
        SessionPool {
            open,
            permits: Arc::new(Semaphore::new(connections as usize)),
            idle: Mutex::new(Vec::new()),
            opened: Mutex::new(0),
            acquire_timeout,
            connections,
            runtime: None,
        }
    }

    /// Opens its sessions on `runtime`, so that their connections' I/O
    /// outlives the callers' own runtimes: real mode runs each client on
    /// a runtime of its own, which ends with that client, while a
    /// session it opened may be handed to another.
    pub fn opening_on(mut self, runtime: tokio::runtime::Handle) -> SessionPool {
        self.runtime = Some(runtime);
        self
    }

    /// How many connections it keeps at most.
    pub fn connections(&self) -> u32 {
        self.connections
    }

    /// Checks a session out: an idle one if there is one, a new one if
    /// the pool has room, or the next one handed back, within the acquire
    /// timeout.
    pub(crate) async fn checkout(self: &Arc<Self>) -> Result<Checkout, DbError> {
        let permit =
            tokio::time::timeout(self.acquire_timeout, self.permits.clone().acquire_owned())
                .await
                .map_err(|_| {
                    DbError::Lost(format!(
                        "no pooled connection free within {:?}",
                        self.acquire_timeout
                    ))
                })?
                .map_err(|_| DbError::Lost("the pool is closed".into()))?;
        let idle = loop {
            let Some(session) = self.idle().pop() else {
                break None;
            };
            if !session.is_closed() {
                break Some(session);
            }
        };
        let session = match idle {
            Some(session) => session,
            None => {
                let number = {
                    let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
                    *opened += 1;
                    *opened
                };
                let opening = (self.open)(number);
                let opened = match &self.runtime {
                    Some(runtime) => runtime
                        .spawn(opening)
                        .await
                        .map_err(|e| DbError::Lost(format!("opening a connection: {e}")))?,
                    None => opening.await,
                };
                Arc::from(opened?)
            }
        };
        Ok(Checkout {
            session: Some(session),
            pool: self.clone(),
            _permit: permit,
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Session>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A session checked out of a [`SessionPool`]: handed back when dropped,
/// unless its connection ended.
pub(crate) struct Checkout {
    session: Option<Arc<dyn Session>>,
    pool: Arc<SessionPool>,
    _permit: OwnedSemaphorePermit,
}

impl Checkout {
    /// The session.
    pub(crate) fn session(&self) -> &dyn Session {
        &**self.session.as_ref().expect("held until dropped")
    }

    /// Drops the session instead of handing it back: its connection
    /// closes, and with it its session on the server.
    pub(crate) fn discard(mut self) {
        self.session = None;
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(session) = self.session.take()
            && !session.is_closed()
        {
            self.pool.idle().push(session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::BoxFuture;
    use crate::database::session::Answer;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Fake {
        number: u64,
        closed: AtomicBool,
    }

    impl Session for Fake {
        fn number(&self) -> u64 {
            self.number
        }
        fn is_closed(&self) -> bool {
            self.closed.load(Ordering::SeqCst)
        }
        fn query<'a>(&'a self, _sql: &'a str) -> BoxFuture<'a, Result<Answer, DbError>> {
            Box::pin(async { Ok(Answer::default()) })
        }
    }

    fn pool(connections: u32) -> Arc<SessionPool> {
        let open: Opener = Box::new(|number| {
            Box::pin(async move {
                Ok(Box::new(Fake {
                    number,
                    closed: AtomicBool::new(false),
                }) as Box<dyn Session>)
            })
        });
        Arc::new(SessionPool::new(
            open,
            connections,
            Duration::from_millis(50),
        ))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn a_connection_handed_back_is_the_next_one_handed_out() {
        runtime().block_on(async {
            let pool = pool(2);
            let first = pool.checkout().await.expect("one");
            assert_eq!(first.session().number(), 1);
            drop(first);
            let again = pool.checkout().await.expect("one");
            assert_eq!(again.session().number(), 1, "the same session");
            let second = pool.checkout().await.expect("room for two");
            assert_eq!(second.session().number(), 2);
        });
    }

    #[test]
    fn a_full_pool_makes_the_caller_wait_and_gives_up_after_the_acquire_timeout() {
        runtime().block_on(async {
            let pool = pool(1);
            let held = pool.checkout().await.expect("one");
            let waited = pool.checkout().await;
            assert!(matches!(waited, Err(DbError::Lost(_))));
            drop(held);
            assert!(pool.checkout().await.is_ok());
        });
    }

    #[test]
    fn a_discarded_or_closed_session_is_replaced_by_a_new_one() {
        runtime().block_on(async {
            let pool = pool(1);
            pool.checkout().await.expect("one").discard();
            let next = pool.checkout().await.expect("one");
            assert_eq!(next.session().number(), 2);
            drop(next);
            let idle = pool.idle().last().cloned().expect("handed back");
            assert_eq!(idle.number(), 2);
            // Closed while idle: skipped at the next checkout.
            pool.idle().clear();
            let closed = Arc::new(Fake {
                number: 9,
                closed: AtomicBool::new(true),
            });
            pool.idle().push(closed);
            assert_eq!(pool.checkout().await.expect("one").session().number(), 3);
        });
    }
}
